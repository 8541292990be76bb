package core

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFixedSizeOptions(t *testing.T) {
	up := newCountingUpstream(t)
	f, err := NewFixedSize(up, FixedSizeOptions{})
	require.NoError(t, err)
	assert.Equal(t, uintptr(1<<20), f.BlockSize(), "default block size 1 MiB")
	assert.Equal(t, []uintptr{128 << 20}, up.sizes, "128 blocks fetched at construction")
	require.NoError(t, f.Close())

	f, err = NewFixedSize(up, FixedSizeOptions{BlockSize: 1000, BlocksToPreallocate: 3})
	require.NoError(t, err)
	assert.Equal(t, uintptr(1024), f.BlockSize(), "rounded up to 256")
	assert.Equal(t, uintptr(3*1024), up.sizes[1])
	require.NoError(t, f.Close())

	_, err = NewFixedSize(up, FixedSizeOptions{BlocksToPreallocate: -1})
	requireIs(t, err, ErrInvalidArgument)
	_, err = NewFixedSize(nil, FixedSizeOptions{})
	requireIs(t, err, ErrInvalidArgument)
	up.setFail(true)
	_, err = NewFixedSize(up, FixedSizeOptions{})
	requireIs(t, err, ErrOutOfMemory)
	assert.Zero(t, up.liveCount())
}

func TestFixedSizeBlocks(t *testing.T) {
	up := newCountingUpstream(t)
	f := oneShard(t, func() (*FixedSize, error) {
		return NewFixedSize(up, FixedSizeOptions{BlockSize: 4096, BlocksToPreallocate: 4})
	})
	defer f.Close()
	_, err := f.Allocate(DefaultStream, 4097, 256)
	requireIs(t, err, ErrOutOfMemory)
	assert.Contains(t, err.Error(), "Maximum allocation size exceeded")
	seen := map[uintptr]bool{}
	var live []uintptr
	for i := 0; i < 6; i++ {
		x, err := f.Allocate(DefaultStream, uintptr(1+i*700), 256)
		require.NoError(t, err)
		require.False(t, seen[x])
		seen[x] = true
		live = append(live, x)
	}
	assert.Equal(t, []uintptr{4 * 4096, 4 * 4096}, up.sizes, "a second chunk when the first ran out")
	assert.Equal(t, live[0]+4096, live[1], "blocks are handed out in address order")
	requireIs(t, f.Deallocate(DefaultStream, live[0]+1024, 100, 256), ErrInvalidPointer, "inside a block")
	requireIs(t, f.Deallocate(DefaultStream, live[0], 5000, 256), ErrInvalidArgument, "more than a block")
	for i, x := range live {
		require.NoError(t, f.Deallocate(DefaultStream, x, uintptr(1+i*700), 256))
	}
	x, err := f.Allocate(DefaultStream, 10, 256)
	require.NoError(t, err)
	assert.Equal(t, live[len(live)-1], x, "last freed, first reused")
	require.NoError(t, f.Deallocate(DefaultStream, x, 10, 256))
	require.NoError(t, f.Close())
	assert.Zero(t, up.liveCount())
}

// TestFixedSizeExhaustion: a fixed-size resource whose upstream is full
// fails with ErrOutOfMemory and works again after frees.
func TestFixedSizeExhaustion(t *testing.T) {
	up := newCountingUpstream(t)
	up.limit = 8 * 4096
	f, err := NewFixedSize(up, FixedSizeOptions{BlockSize: 4096, BlocksToPreallocate: 8})
	require.NoError(t, err)
	defer f.Close()
	var live []uintptr
	for i := 0; i < 8; i++ {
		x, err := f.Allocate(DefaultStream, 4096, 256)
		require.NoError(t, err)
		live = append(live, x)
	}
	_, err = f.Allocate(DefaultStream, 4096, 256)
	requireIs(t, err, ErrOutOfMemory)
	assert.Contains(t, err.Error(), "fetching 8 blocks of 4096 bytes from the upstream")
	require.NoError(t, f.Deallocate(DefaultStream, live[5], 4096, 256))
	x, err := f.Allocate(DefaultStream, 4096, 256)
	require.NoError(t, err)
	assert.Equal(t, live[5], x)
	for _, x := range live {
		require.NoError(t, f.Deallocate(DefaultStream, x, 4096, 256))
	}
}

// TestFixedSizeIndex: the chunk index finds every block of many chunks
// spread over the address space, and nothing outside them.
func TestFixedSizeIndex(t *testing.T) {
	up := newCountingUpstream(t)
	f, err := NewFixedSize(up, FixedSizeOptions{BlockSize: 768, BlocksToPreallocate: 3})
	require.NoError(t, err)
	defer f.Close()
	var live []uintptr
	for i := 0; i < 600; i++ {
		x, err := f.Allocate(DefaultStream, 700, 256)
		require.NoError(t, err)
		live = append(live, x)
	}
	require.NoError(t, checkSpans(func() []span {
		s := make([]span, len(live))
		for i, x := range live {
			s[i] = span{x, 768, DefaultStream}
		}
		return s
	}()))
	for _, x := range live {
		require.NotNil(t, f.findChunk(x))
		require.NotNil(t, f.findChunk(x+767))
	}
	for _, x := range live {
		require.NoError(t, f.Deallocate(DefaultStream, x, 700, 256))
	}
	assert.Nil(t, f.findChunk(0x1000))
}

// TestFixedIndexLayouts: the granule index answers every address like a
// scan of the chunks, for chunks packed end to end, with gaps, starting on
// and off granule boundaries, and spanning directories, for a chunk size
// that is a power of two (a chunk touches two granules) and one that is not
// (up to three).
func TestFixedIndexLayouts(t *testing.T) {
	require.Equal(t, uintptr(64), unsafe.Sizeof(fixedSlot{}), "a slot is one cache line")
	for _, size := range []uintptr{1 << 13, 3 << 12} { // granules of 8 KiB
		dirSpan := uintptr(fixedDirSize) << 13
		for _, c := range []struct {
			name  string
			bases []uintptr
		}{
			{"packed", []uintptr{1 << 20, 1<<20 + size, 1<<20 + 2*size, 1<<20 + 3*size}},
			{"on granules", []uintptr{0, 2 << 13, 4 << 13, 6 << 13, 6<<13 + size}},
			{"gaps", []uintptr{1<<20 + 256, 1<<20 + size + 4096, 1<<21 + 7936}},
			{"across directories", []uintptr{dirSpan - size + 256, dirSpan + 256, 3*dirSpan - 8192 - 512, 3*dirSpan - 512 + size}},
			{"high addresses", []uintptr{0x7f00_0000_0000, 0x7f00_0000_0000 + size}},
			// Directories too far apart for the flat table: binary search.
			{"far apart", []uintptr{1 << 20, 1<<20 + size, 1 << 40, 0x7f00_0000_0000 + 256}},
		} {
			t.Run(fmt.Sprintf("%d/%s", size, c.name), func(t *testing.T) {
				var x fixedIndex
				x.size = size
				x.g = uint(bits.Len64(uint64(size))) - 1
				require.Equal(t, uint(13), x.g)
				x.dirs.Store(&fixedDirs{})
				var cs []*fixedChunk
				for i, b := range c.bases {
					require.True(t, i == 0 || b >= c.bases[i-1]+size, "chunks must not overlap")
					ch := x.add(b, int32(i), 1)
					require.Equal(t, b, ch.base)
					require.Equal(t, int32(i), ch.id)
					cs = append(cs, ch)
				}
				want := func(p uintptr) *fixedChunk {
					for _, ch := range cs {
						if p >= ch.base && p-ch.base < size {
							return ch
						}
					}
					return nil
				}
				for _, ch := range cs {
					for _, p := range []uintptr{ch.base - 256, ch.base - 1, ch.base, ch.base + 1, ch.base + 8191, ch.base + 8192, ch.base + size - 1, ch.base + size, ch.base + size + 8192} {
						require.Same(t, want(p), x.find(p), "%#x", p)
					}
					for off := uintptr(0); off < size+16384; off += 256 {
						p := ch.base - 8192 + off
						require.Same(t, want(p), x.find(p), "%#x", p)
					}
				}
				require.Nil(t, x.find(0x5000_0000_0000))
				d := x.dirs.Load()
				assert.Equal(t, c.name != "far apart", d.flat != nil, "flat table")
			})
		}
	}
}

// TestFixedSizeRacingFrees: when goroutines race to free the same blocks,
// each block is freed exactly once and every other attempt gets
// ErrInvalidPointer; no block is handed out twice afterwards.
func TestFixedSizeRacingFrees(t *testing.T) {
	for _, via := range []string{"fixed_size", "binning"} {
		t.Run(via, func(t *testing.T) {
			up := newCountingUpstream(t)
			var r Resource
			if via == "fixed_size" {
				f, err := NewFixedSize(up, FixedSizeOptions{BlockSize: 1024, BlocksToPreallocate: 64})
				require.NoError(t, err)
				defer f.Close()
				r = f
			} else {
				b, err := NewBinning(up, 8, 12)
				require.NoError(t, err)
				defer b.Close()
				r = b
			}
			const n, racers = 512, 4
			for round := 0; round < raceScale(20); round++ {
				live := make([]uintptr, n)
				for i := range live {
					p, err := r.Allocate(DefaultStream, 1000, 256)
					require.NoError(t, err)
					live[i] = p
				}
				var wg sync.WaitGroup
				wins := make([][]int, racers)
				errs := make([]error, racers)
				for g := 0; g < racers; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i, p := range live {
							err := r.Deallocate(DefaultStream, p, 1000, 256)
							if err == nil {
								wins[g] = append(wins[g], i)
							} else if !errors.Is(err, ErrInvalidPointer) {
								errs[g] = err
								return
							}
						}
					}()
				}
				wg.Wait()
				require.NoError(t, errors.Join(errs...))
				freed := make([]int, n)
				for _, w := range wins {
					for _, i := range w {
						freed[i]++
					}
				}
				for i, k := range freed {
					require.Equal(t, 1, k, "block %d freed %d times", i, k)
				}
				seen := map[uintptr]bool{}
				for range live {
					p, err := r.Allocate(DefaultStream, 1000, 256)
					require.NoError(t, err)
					require.False(t, seen[p], "%#x handed out twice", p)
					seen[p] = true
				}
				for p := range seen {
					require.NoError(t, r.Deallocate(DefaultStream, p, 1000, 256))
				}
			}
		})
	}
}

// TestFixedSizeSettlesFreedBlocks: a stream that frees a block of 1 MiB or
// more (or 1 MiB of smaller ones) while other streams share the resource
// records its event at once, so that another stream takes the block rather
// than growing (each stream kept its peak to itself, TestSoakStreams).
func TestFixedSizeSettlesFreedBlocks(t *testing.T) {
	r := testRuntime(t)
	for _, c := range []struct {
		block uintptr
		frees int // blocks freed by a before b asks
	}{{1 << 20, 1}, {256 << 10, 4}} {
		t.Run(fmt.Sprint(c.block), func(t *testing.T) {
			up := newCountingUpstream(t)
			f := oneShard(t, func() (*FixedSize, error) {
				return NewFixedSize(up, FixedSizeOptions{BlockSize: c.block, BlocksToPreallocate: c.frees})
			})
			defer f.Close()
			a, b := newStream(t, r), newStream(t, r)
			var xs []uintptr
			for range c.frees {
				x, err := f.Allocate(a, c.block, 256) // the first chunk's blocks
				require.NoError(t, err)
				xs = append(xs, x)
			}
			var ys []uintptr
			for range c.frees {
				y, err := f.Allocate(b, c.block, 256) // a second chunk's blocks
				require.NoError(t, err)
				ys = append(ys, y)
			}
			require.Len(t, up.sizes, 2)
			for _, x := range xs {
				require.NoError(t, f.Deallocate(a, x, c.block, 256))
			}
			z, err := f.Allocate(b, c.block, 256)
			require.NoError(t, err)
			assert.Len(t, up.sizes, 2, "b took a block a freed, without growing")
			assert.Contains(t, xs, z)
			for _, y := range append(ys, z) {
				require.NoError(t, f.Deallocate(b, y, c.block, 256))
			}
		})
	}
}

// TestFixedSizeReleaseFree: releaseFree gives back the chunks whose every
// block is free (on any stream), keeps those with a block in use, and the
// resource goes on: a block of a chunk given back is no longer live, new
// chunks (at the same addresses, with the same ids) serve as before.
func TestFixedSizeReleaseFree(t *testing.T) {
	r := testRuntime(t)
	up := newCountingUpstream(t)
	f := oneShard(t, func() (*FixedSize, error) {
		return NewFixedSize(up, FixedSizeOptions{BlockSize: 4096, BlocksToPreallocate: 2})
	})
	s := newStream(t, r)
	var xs []uintptr
	for range 6 { // three chunks: xs[0:2], xs[2:4], xs[4:6]
		x, err := f.Allocate(DefaultStream, 4096, 256)
		require.NoError(t, err)
		xs = append(xs, x)
	}
	require.Equal(t, 3, up.liveCount())
	require.NoError(t, f.Deallocate(DefaultStream, xs[0], 4096, 256))
	require.NoError(t, f.Deallocate(DefaultStream, xs[1], 4096, 256))
	require.NoError(t, f.Deallocate(DefaultStream, xs[2], 4096, 256)) // xs[3] stays live
	require.NoError(t, f.Deallocate(s, xs[4], 4096, 256))
	require.NoError(t, f.Deallocate(s, xs[5], 4096, 256))
	gave, err := f.releaseFree()
	require.NoError(t, err)
	assert.True(t, gave)
	assert.Equal(t, 1, up.liveCount(), "the two wholly free chunks went back")
	assert.Equal(t, uintptr(2*4096), f.HeldBytes())
	assert.Zero(t, f.freeBytes()-4096, "the kept chunk's free block is still listed")
	requireIs(t, f.Deallocate(DefaultStream, xs[0], 4096, 256), ErrInvalidPointer, "a block of a chunk given back")
	gave, err = f.releaseFree()
	require.NoError(t, err)
	assert.False(t, gave, "nothing wholly free")

	seen := map[uintptr]bool{xs[3]: true}
	var ys []uintptr
	for range 5 {
		y, err := f.Allocate(DefaultStream, 4096, 256)
		require.NoError(t, err)
		require.False(t, seen[y], "%#x handed out twice", y)
		seen[y] = true
		ys = append(ys, y)
	}
	assert.Equal(t, 3, up.liveCount())
	for _, y := range append(ys, xs[3]) {
		require.NoError(t, f.Deallocate(DefaultStream, y, 4096, 256))
	}
	require.NoError(t, f.Close())
	assert.Zero(t, up.liveCount())
}

// TestFixedSizeReleaseRacing: goroutines on their own streams allocate and
// free while another gives wholly free chunks back, again and again: no
// block is handed out twice, none is lost, and every chunk returns at
// Close.
func TestFixedSizeReleaseRacing(t *testing.T) {
	r := testRuntime(t)
	up := newCountingUpstream(t)
	f, err := NewFixedSize(up, FixedSizeOptions{BlockSize: 4096, BlocksToPreallocate: 4})
	require.NoError(t, err)
	const workers = 6
	var (
		mu       sync.Mutex
		live     = map[uintptr]bool{}
		wg       sync.WaitGroup
		stop     = make(chan struct{})
		released int
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			gave, err := f.releaseFree()
			if err != nil {
				t.Errorf("releaseFree: %v", err)
				return
			}
			if gave {
				released++
			}
		}
	}()
	var workersWG sync.WaitGroup
	for w := range workers {
		s := newStream(t, r)
		workersWG.Add(1)
		go func() {
			defer workersWG.Done()
			var mine []uintptr
			for i := range raceScale(3000) {
				if len(mine) > 0 && ((i+w*7)/40)%2 == 1 { // phases: take up to 40 blocks, give them back
					p := mine[len(mine)-1]
					mine = mine[:len(mine)-1]
					mu.Lock()
					delete(live, p)
					mu.Unlock()
					if err := f.Deallocate(s, p, 4096, 256); err != nil {
						t.Errorf("deallocate: %v", err)
						return
					}
					continue
				}
				p, err := f.Allocate(s, 4096, 256)
				if err != nil {
					t.Errorf("allocate: %v", err)
					return
				}
				mu.Lock()
				twice := live[p]
				live[p] = true
				mu.Unlock()
				if twice {
					t.Errorf("%#x handed out twice", p)
					return
				}
				mine = append(mine, p)
			}
			for _, p := range mine {
				mu.Lock()
				delete(live, p)
				mu.Unlock()
				if err := f.Deallocate(s, p, 4096, 256); err != nil {
					t.Errorf("deallocate: %v", err)
				}
			}
		}()
	}
	workersWG.Wait()
	close(stop)
	wg.Wait()
	t.Logf("%d releases", released)
	require.NoError(t, r.DeviceSynchronize())
	gave, err := f.releaseFree()
	require.NoError(t, err)
	_ = gave
	assert.Zero(t, f.HeldBytes(), "every block free: every chunk given back")
	assert.Zero(t, up.liveCount())
	require.NoError(t, f.Close())
	assert.Zero(t, up.liveCount())
}
