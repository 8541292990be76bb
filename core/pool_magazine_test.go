package core

// Tests of the pool's magazines (deferred coalescing, in package heap).

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core/internal/heap"
)

// magHeld returns the blocks and bytes sitting in the magazines of h.
func magHeld(h *heap.Heap) (blocks int, bytes uintptr) { return h.MagazineHeld() }

// TestPoolMagazineInvalidFrees: a block waiting in a magazine is free: a
// second free of it, or a free with another size, fails at once, also when
// goroutines race to free one pointer (exactly one of them wins).
func TestPoolMagazineInvalidFrees(t *testing.T) {
	sim := simDevice(t)
	cs := newStream(t, sim)
	for _, c := range []struct {
		name   string
		size   uintptr
		stream Stream
	}{
		{"small/default", 1000, DefaultStream},
		{"small/created", 1000, cs},
		{"64KiB/default", 64 << 10, DefaultStream}, // a big slot
		{"1MiB/created", 1 << 20, cs},              // the largest magazine size
		{"2MiB/default", 2 << 20, DefaultStream},   // past the magazine
	} {
		t.Run(c.name, func(t *testing.T) {
			up := newCountingUpstream(t)
			p, err := NewPool(up, PoolOptions{InitialSize: 32 << 20})
			require.NoError(t, err)
			defer p.Close()
			x, err := p.Allocate(c.stream, c.size, 256)
			require.NoError(t, err)
			// (An allocation on the default stream may keep a few more
			// blocks of its class in the front.)
			n0, _ := magHeld(&p.h)
			require.NoError(t, p.Deallocate(c.stream, x, c.size, 256))
			n, _ := magHeld(&p.h)
			if c.size <= heap.MagazineMaxBlock {
				require.Equal(t, n0+1, n, "the block waits in a magazine (or the front)")
			} else {
				require.Zero(t, n, "too large for a magazine")
			}
			requireIs(t, p.Deallocate(c.stream, x, c.size, 256), ErrInvalidPointer, "double free")
			requireIs(t, p.Deallocate(DefaultStream, x, c.size, 256), ErrInvalidPointer, "double free on another stream")
			requireIs(t, p.Deallocate(c.stream, x, 2*c.size, 256), ErrInvalidPointer, "a free block has no size to mismatch")
			requireIs(t, p.Deallocate(c.stream, x+256, 256, 256), ErrInvalidPointer, "interior pointer")

			// Reuse: the same block comes back, and is live again.
			y, err := p.Allocate(c.stream, c.size, 256)
			require.NoError(t, err)
			require.Equal(t, x, y)
			requireIs(t, p.Deallocate(c.stream, y, c.size+256, 256), ErrInvalidArgument, "wrong size of a live block")
			// Racing double frees: one wins, the others fail.
			const racers = 8
			var wg sync.WaitGroup
			errs := make([]error, racers)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = p.Deallocate(c.stream, y, c.size, 256)
				}()
			}
			wg.Wait()
			ok := 0
			for _, err := range errs {
				if err == nil {
					ok++
				} else {
					requireIs(t, err, ErrInvalidPointer)
				}
			}
			assert.Equal(t, 1, ok, "exactly one racing free succeeds")
			assert.Zero(t, p.UsedBytes())
		})
	}
}

// TestPoolMagazineUsedBytes: blocks in magazines count as free in
// UsedBytes, the pool size does not change, and stats (which flushes)
// agrees.
func TestPoolMagazineUsedBytes(t *testing.T) {
	for _, c := range []struct {
		name  string
		sizes []uintptr
	}{
		{"one size", []uintptr{4096, 4096, 4096, 4096}},
		{"mixed", []uintptr{1, 256, 257, 5000, 64 << 10, 1 << 20, 3 << 20}},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := newCountingUpstream(t)
			p := oneShard(t, func() (*Pool, error) { return NewPool(up, PoolOptions{InitialSize: 16 << 20}) })
			defer p.Close()
			var ptrs []uintptr
			var want uintptr
			for _, n := range c.sizes {
				x, err := p.Allocate(DefaultStream, n, 256)
				require.NoError(t, err)
				ptrs = append(ptrs, x)
				want += up256(n)
			}
			size := p.PoolSize()
			require.Equal(t, want, p.UsedBytes())
			for i := 0; i < len(ptrs); i += 2 {
				require.NoError(t, p.Deallocate(DefaultStream, ptrs[i], c.sizes[i], 256))
				want -= up256(c.sizes[i])
				assert.Equal(t, want, p.UsedBytes(), "after freeing block %d", i)
			}
			n, _ := magHeld(&p.h)
			require.NotZero(t, n, "some frees wait in the magazine")
			assert.Equal(t, size, p.PoolSize(), "a free never changes the pool size")
			st := p.h.Stats()
			n, _ = magHeld(&p.h)
			assert.Zero(t, n, "stats flushes the magazines")
			assert.Equal(t, size-want, st.FreeBytes)
			assert.Equal(t, want, p.UsedBytes())
			for i := 1; i < len(ptrs); i += 2 {
				require.NoError(t, p.Deallocate(DefaultStream, ptrs[i], c.sizes[i], 256))
			}
			assert.Zero(t, p.UsedBytes())
			st = p.h.Stats()
			assert.Equal(t, st.Chunks, st.FreeBlocks, "everything merged back into whole chunks")
		})
	}
}

// TestPoolMagazineReleaseClose: Release returns chunks whose blocks all
// wait in magazines (they merge first), and Close returns everything with
// full magazines.
func TestPoolMagazineReleaseClose(t *testing.T) {
	for _, mode := range []string{"release", "close"} {
		t.Run(mode, func(t *testing.T) {
			up := newCountingUpstream(t)
			p, err := NewPool(up, PoolOptions{})
			require.NoError(t, err)
			var ptrs []uintptr
			for i := 0; i < 300; i++ {
				x, err := p.Allocate(DefaultStream, 8<<10, 256)
				require.NoError(t, err)
				ptrs = append(ptrs, x)
			}
			big, err := p.Allocate(DefaultStream, 2<<20, 256) // past the magazine
			require.NoError(t, err)
			for _, x := range ptrs {
				require.NoError(t, p.Deallocate(DefaultStream, x, 8<<10, 256))
			}
			n, _ := magHeld(&p.h)
			require.NotZero(t, n)
			if mode == "release" {
				require.NoError(t, p.Deallocate(DefaultStream, big, 2<<20, 256))
				require.NoError(t, p.Release())
				assert.Zero(t, p.PoolSize(), "every chunk was wholly free")
				assert.Zero(t, up.liveCount())
				n, _ = magHeld(&p.h)
				assert.Zero(t, n)
				// Still usable after Release.
				x, err := p.Allocate(DefaultStream, 8<<10, 256)
				require.NoError(t, err)
				require.NoError(t, p.Deallocate(DefaultStream, x, 8<<10, 256))
			}
			require.NoError(t, p.Close())
			assert.Zero(t, up.liveCount(), "Close returns every chunk, magazines or live blocks in them")
			requireIs(t, p.Deallocate(DefaultStream, ptrs[0], 8<<10, 256), ErrClosed)
		})
	}
}

// TestPoolMagazineNoGrowth: the pool never grows while blocks waiting in
// magazines could serve a request once merged, whatever the stream: with
// every block of the pool freed into magazines, a request for the whole
// pool succeeds without growing.
func TestPoolMagazineNoGrowth(t *testing.T) {
	sim := simDevice(t)
	const size = 8 << 20
	for _, c := range []struct {
		name     string
		block    uintptr
		created  bool // frees and the large request on a created stream
		maxBound bool // a maximum size (growth would fail)
	}{
		{"4KiB", 4 << 10, false, false},
		{"4KiB/created", 4 << 10, true, false},
		{"64KiB", 64 << 10, false, true},
		{"512KiB/created/max", 512 << 10, true, true},
		{"mixed", 0, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := newCountingUpstream(t)
			opts := PoolOptions{InitialSize: size}
			if c.maxBound {
				opts.MaximumSize = size
			}
			p, err := NewPool(up, opts)
			require.NoError(t, err)
			defer p.Close()
			s := DefaultStream
			if c.created {
				s = newStream(t, sim)
			}
			rng := rand.New(rand.NewPCG(3, 4))
			type blk struct{ p, n uintptr }
			var live []blk
			var used uintptr
			for {
				n := c.block
				if n == 0 {
					n = uintptr(rng.IntN(96<<10)) + 1
				}
				bs := p.h.BlockSize(up256(n)) // its size class's
				if used+bs > size {
					break
				}
				x, err := p.Allocate(s, n, 256)
				require.NoError(t, err)
				live = append(live, blk{x, n})
				used += bs
			}
			rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
			for _, b := range live {
				require.NoError(t, p.Deallocate(s, b.p, b.n, 256))
			}
			blocks, _ := magHeld(&p.h)
			require.NotZero(t, blocks)
			calls := up.calls
			x, err := p.Allocate(s, size, 256)
			require.NoError(t, err)
			assert.Equal(t, uintptr(size), p.PoolSize(), "no growth")
			assert.Equal(t, calls, up.calls, "no upstream call")
			require.NoError(t, p.Deallocate(s, x, size, 256))
		})
	}
}

// TestPoolMagazineAcrossStreams: a block in stream A's magazine is reused
// by A at once with no CUDA call, and reaches stream B only through the
// stream-ordering machinery: from the legacy default stream after one
// record and one wait; from a created stream only after A's next call
// records A's event (B grows meanwhile), then after one wait.
func TestPoolMagazineAcrossStreams(t *testing.T) {
	sim := simDevice(t)
	const size = 64 << 10
	for _, created := range []bool{false, true} {
		name := "default"
		if created {
			name = "created"
		}
		t.Run(name, func(t *testing.T) {
			rt := newOrderingRuntime(t)
			up := newCountingUpstream(t)
			opts := PoolOptions{InitialSize: 2 * size, MaximumSize: 2 * size}
			if created {
				opts.MaximumSize = 4 * size // B grows by 2 * size
			}
			p, err := newPool(rt, up, opts)
			require.NoError(t, err)
			defer p.Close()
			a, b := DefaultStream, newStream(t, sim)
			if created {
				a = newStream(t, sim)
			}
			x, err := p.Allocate(a, size, 256)
			require.NoError(t, err)
			w, err := p.Allocate(a, size, 256)
			require.NoError(t, err)

			// Same stream: the magazine serves it, no CUDA call.
			require.NoError(t, p.Deallocate(a, x, size, 256))
			before := rt.counts()
			y, err := p.Allocate(a, size, 256)
			require.NoError(t, err)
			require.Equal(t, x, y)
			assert.Equal(t, before, rt.counts(), "reuse on the freeing stream costs no CUDA call")

			require.NoError(t, sim.PauseStream(a))
			defer sim.ResumeStream(a) // before Close, which synchronizes
			require.NoError(t, sim.MemsetAsync(x, 0xAA, size, a))
			require.NoError(t, p.Deallocate(a, x, size, 256))
			n, _ := magHeld(&p.h)
			require.Equal(t, 1, n, "x waits in A's magazine")

			before = rt.counts()
			z, err := p.Allocate(b, size, 256)
			require.NoError(t, err)
			if !created {
				require.Equal(t, x, z, "the default stream's block, once ordered")
				after := rt.counts()
				assert.Equal(t, before[0]+1, after[0], "one record on the default stream")
				assert.Equal(t, before[1]+1, after[1], "one wait on B")
				assert.Equal(t, before[2:], after[2:], "no host synchronization")
			} else {
				require.NotEqual(t, x, z, "nothing orders B after A yet: B grows")
				assert.Equal(t, uintptr(4*size), p.PoolSize())
				// B's growth left it a block of its own: take it first.
				own, err := p.Allocate(b, size, 256)
				require.NoError(t, err)
				defer func() { require.NoError(t, p.Deallocate(b, own, size, 256)) }()
				recs := rt.recordsOnStream(a)
				// A's next call records A's event and flushes its magazine.
				require.NoError(t, p.Deallocate(a, w, size, 256))
				assert.Equal(t, recs+1, rt.recordsOnStream(a))
				n, _ := magHeld(&p.h)
				assert.Zero(t, n, "settling flushed A's magazine")
				before = rt.counts()
				v, err := p.Allocate(b, size, 256)
				require.NoError(t, err)
				assert.Contains(t, []uintptr{x, w}, v, "a block freed on A")
				after := rt.counts()
				assert.Equal(t, before[0], after[0], "no record")
				assert.Equal(t, before[1]+1, after[1], "one wait on B")
				assert.Equal(t, before[2:], after[2:], "no host synchronization")
				w, z = z, v
			}
			require.Error(t, sim.StreamQuery(b), "B waits for A, which is paused")
			require.NoError(t, sim.MemsetAsync(z, 0xBB, size, b))
			require.NoError(t, sim.ResumeStream(a))
			require.NoError(t, expect(sim, z, size, 0xBB, b), "B's fill ran after A's")
			require.NoError(t, p.Deallocate(b, z, size, 256))
			if !created {
				require.NoError(t, p.Deallocate(a, w, size, 256))
			} else {
				require.NoError(t, p.Deallocate(b, w, size, 256))
			}
			assert.Empty(t, rt.misuses())
		})
	}
}

// TestPoolMagazineRandomized runs random workloads, single and concurrent,
// on several streams, with sizes on both sides of the magazine's and the
// big slots' limits and a pool small enough that magazines flush for every
// reason (bound, failed carve, settle, defrag, synchronization, Release):
// live blocks never overlap, UsedBytes is exact while one goroutine runs,
// and at the end every chunk is one free block again.
func TestPoolMagazineRandomized(t *testing.T) {
	sim := simDevice(t)
	for _, c := range []struct {
		name       string
		goroutines int
		maxSize    uintptr
		max        uintptr
		streams    int
	}{
		{"small", 1, 8 << 10, 0, 1},
		{"mixed", 1, 1536 << 10, 64 << 20, 3},
		{"mixed/concurrent", 4, 1536 << 10, 0, 3},
		{"small/concurrent/max", 4, 16 << 10, 8 << 20, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := newCountingUpstream(t)
			p, err := NewPool(up, PoolOptions{MaximumSize: c.max})
			require.NoError(t, err)
			defer p.Close()
			streams := []Stream{DefaultStream}
			for len(streams) < c.streams {
				streams = append(streams, newStream(t, sim))
			}
			var mu sync.Mutex
			live := map[uintptr]uintptr{} // every goroutine's live blocks
			overlap := func(x, n uintptr) string {
				mu.Lock()
				defer mu.Unlock()
				for q, m := range live {
					if x < q+up256(m) && q < x+up256(n) {
						return "overlap"
					}
				}
				live[x] = n
				return ""
			}
			steps := raceScale(4000)
			var wg sync.WaitGroup
			errs := make([]error, c.goroutines)
			for g := 0; g < c.goroutines; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(g), 7))
					type blk struct{ p, n uintptr }
					var mine []blk
					var used uintptr
					for i := 0; i < steps; i++ {
						n := uintptr(rng.Int64N(int64(c.maxSize))) + 1
						if rng.IntN(4) == 0 {
							n = uintptr(rng.IntN(8))*256 + 1 // many of one size: magazine hits
						}
						if len(mine) == 0 || rng.IntN(100) < 55 {
							x, err := p.Allocate(streams[rng.IntN(len(streams))], n, 256)
							if err != nil {
								if !errors.Is(err, ErrOutOfMemory) {
									errs[g] = err
									t.Errorf("goroutine %d: Allocate(%d): %v", g, n, err)
									return
								}
								continue
							}
							if overlap(x, n) != "" {
								errs[g] = assert.AnError
								t.Errorf("goroutine %d: [%#x, +%d) overlaps a live block", g, x, n)
								return
							}
							mine = append(mine, blk{x, n})
							used += up256(n)
						} else {
							k := rng.IntN(len(mine))
							b := mine[k]
							mine[k] = mine[len(mine)-1]
							mine = mine[:len(mine)-1]
							mu.Lock()
							delete(live, b.p)
							mu.Unlock()
							if err := p.Deallocate(streams[rng.IntN(len(streams))], b.p, b.n, 256); err != nil {
								errs[g] = err
								t.Errorf("goroutine %d: Deallocate: %v", g, err)
								return
							}
							used -= up256(b.n)
						}
						if c.goroutines == 1 && i%97 == 0 {
							if got := p.UsedBytes(); got != used {
								t.Errorf("step %d: UsedBytes %d, live %d", i, got, used)
								return
							}
						}
						if g == 0 && i%1000 == 999 {
							if err := p.Release(); err != nil {
								errs[g] = err
								t.Errorf("Release: %v", err)
								return
							}
						}
					}
					for _, b := range mine {
						mu.Lock()
						delete(live, b.p)
						mu.Unlock()
						if err := p.Deallocate(DefaultStream, b.p, b.n, 256); err != nil {
							t.Errorf("final Deallocate: %v", err)
						}
					}
				}()
			}
			wg.Wait()
			for _, err := range errs {
				require.NoError(t, err)
			}
			assert.Zero(t, p.UsedBytes())
			// Every byte is free, and (once a synchronization has settled
			// what each stream holds) the largest chunk serves one
			// allocation of its whole size without growing: no block was
			// lost in a magazine.
			st, bst := p.h.Stats(), p.big.Stats()
			assert.Equal(t, p.PoolSize(), st.FreeBytes+bst.FreeBytes)
			n, _ := magHeld(&p.h)
			assert.Zero(t, n, "stats flushed every magazine")
			if c.max != 0 {
				assert.LessOrEqual(t, p.PoolSize(), c.max)
			}
			require.NoError(t, p.h.Synchronize())
			require.NoError(t, p.big.Synchronize())
			largest := max(p.h.LargestChunk(), p.big.LargestChunk())
			size := p.PoolSize()
			x, err := p.Allocate(DefaultStream, largest, 256)
			require.NoError(t, err)
			assert.Equal(t, size, p.PoolSize(), "no growth")
			require.NoError(t, p.Deallocate(DefaultStream, x, largest, 256))
		})
	}
}

// TestArenaGlobalHeapNoMagazine: the arena's global heap keeps its frees
// coalesced (its magazines stay off).
func TestArenaGlobalHeapNoMagazine(t *testing.T) {
	a, err := NewArena(newCountingUpstream(t), ArenaOptions{ArenaSize: 64 << 20})
	require.NoError(t, err)
	defer a.Close()
	x, err := a.Allocate(DefaultStream, 2<<20, 256)
	require.NoError(t, err)
	require.NoError(t, a.Deallocate(DefaultStream, x, 2<<20, 256))
	n, _ := magHeld(&a.global)
	assert.Zero(t, n)
	requireIs(t, a.Deallocate(DefaultStream, x, 2<<20, 256), ErrInvalidPointer)
}

// up256 rounds n up to 256 bytes, as the pool does.
func up256(n uintptr) uintptr { return (n + 255) &^ 255 }
