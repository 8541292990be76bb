package heap

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core/internal/errs"
	"github.com/rmmgo/rmmgo/core/internal/relaxed"
	"github.com/rmmgo/rmmgo/cudart"
)

// TestSlotWords: the slot words round-trip, and a word that does not hold
// the size (a node id of 2^23 or more in a leaf, a block of 4 GiB or more
// in a big slot) makes claim read the node: a right size frees, a wrong
// one is refused and leaves the block live.
func TestSlotWords(t *testing.T) {
	for _, c := range []struct {
		id       int32
		size     uintptr
		wantSize uintptr // 0: not packed
	}{
		{1, 256, 256},
		{1<<23 - 1, 255 << 8, 255 << 8},
		{1 << 23, 256, 0},
		{1<<31 - 1, 4096, 0},
	} {
		var x relaxed.Uint32
		x.Store(leafWord(c.id, c.size))
		id, size := slotRef{leaf: &x, w: uint64(x.Load())}.decode()
		assert.Equal(t, c.id, id, "leaf id %d", c.id)
		assert.Equal(t, c.wantSize, size, "leaf size %d", c.size)
	}
	for _, c := range []struct {
		id       int32
		size     uintptr
		wantSize uintptr
	}{
		{7, bigBlock, bigBlock},
		{1<<31 - 1, 1 << 30, 1 << 30},
		{3, 4 << 30, 0},
	} {
		addr := uintptr(0x7f0000000000) + 5<<UnitShift
		w := bigWord(c.id, c.size, addr)
		assert.Equal(t, uint64(5), w>>56, "the block's unit in its region")
		id, size := slotRef{big: new(relaxed.Uint64), w: w}.decode()
		assert.Equal(t, c.id, id)
		assert.Equal(t, c.wantSize, size)
	}
	for _, n := range []uintptr{4096, 128 << 10} {
		h := newTestHeap(t, 1<<20, 0, true)
		x, err := h.Allocate(cudart.DefaultStream, n)
		require.NoError(t, err)
		// Put the word back without its size, as for a large id or block.
		r := h.chunks.Load().dir.lookup(x, n >= bigBlock)
		id, _ := r.decode()
		if r.big != nil {
			r.big.Store(uint64(uint32(id)) | uint64(x>>UnitShift&(leafSlots-1))<<56)
		} else {
			r.leaf.Store(uint32(id))
		}
		requireIs(t, h.Deallocate(cudart.DefaultStream, x, n+256), errs.InvalidArgument)
		require.NoError(t, h.Deallocate(cudart.DefaultStream, x, n))
		requireIs(t, h.Deallocate(cudart.DefaultStream, x, n), errs.InvalidPointer)
	}
}

// TestHeapInvalidFrees: memory the heap did not hand out, a block freed
// already (waiting in a magazine or merged into the index), an interior
// pointer and a live block freed with another size are refused, and leave
// the heap as it was.
func TestHeapInvalidFrees(t *testing.T) {
	for _, mags := range []bool{false, true} {
		for _, size := range []uintptr{256, 64 << 10, MagazineMaxBlock, 2 << 20} {
			h := newTestHeap(t, 32<<20, 0, mags)
			s := h.rt.NewStream()
			x, err := h.Allocate(s, size)
			require.NoError(t, err)
			requireIs(t, h.Deallocate(s, x, size+256), errs.InvalidArgument, "wrong size of a live block")
			requireIs(t, h.Deallocate(s, x+256, 256), errs.InvalidPointer, "interior pointer")
			requireIs(t, h.Deallocate(s, 0x1000, 256), errs.InvalidPointer, "outside every chunk")
			require.NoError(t, h.Deallocate(s, x, size))
			blocks, _ := h.MagazineHeld()
			assert.Equal(t, mags && size <= MagazineMaxBlock, blocks == 1, "magazines %v, %d bytes", mags, size)
			requireIs(t, h.Deallocate(s, x, size), errs.InvalidPointer, "double free")
			requireIs(t, h.Deallocate(cudart.DefaultStream, x, size), errs.InvalidPointer, "double free on another stream")
			assert.Zero(t, h.used())
			y, err := h.Allocate(s, size)
			require.NoError(t, err)
			assert.Equal(t, x, y, "the block comes back")
			require.NoError(t, h.Deallocate(s, y, size))
		}
	}
}

// TestHeapCrossStream: memory freed on the legacy default stream reaches a
// created stream after one record (on the default stream) and one wait;
// memory freed on a created stream A reaches B only after A's next call
// records A's event (B grows meanwhile), then after one wait; and the
// freeing stream reuses its memory with no CUDA call at all.
func TestHeapCrossStream(t *testing.T) {
	const size = 64 << 10
	for _, created := range []bool{false, true} {
		h := newTestHeap(t, 2*size, 0, true)
		a, b := cudart.DefaultStream, h.rt.NewStream()
		if created {
			a = h.rt.NewStream()
		}
		x, err := h.Allocate(a, size)
		require.NoError(t, err)
		w, err := h.Allocate(a, size)
		require.NoError(t, err)
		require.NoError(t, h.Deallocate(a, x, size))
		before := h.rt.Counts()
		y, err := h.Allocate(a, size)
		require.NoError(t, err)
		require.Equal(t, x, y)
		assert.Equal(t, before, h.rt.Counts(), "reuse on the freeing stream costs no CUDA call")

		require.NoError(t, h.Deallocate(a, x, size))
		before = h.rt.Counts()
		z, err := h.Allocate(b, size)
		require.NoError(t, err)
		after := h.rt.Counts()
		if !created {
			assert.Equal(t, x, z, "the default stream's block, once ordered")
			assert.Equal(t, before.Records+1, after.Records, "one record on the default stream")
			assert.Equal(t, 1, h.rt.RecordsOn(cudart.DefaultStream))
			assert.Equal(t, before.Waits+1, after.Waits, "one wait on B")
			assert.Zero(t, h.growths())
		} else {
			assert.NotEqual(t, x, z, "nothing orders B after A yet: B grows")
			assert.Equal(t, 1, h.growths())
			assert.Zero(t, h.rt.RecordsOn(a), "B never records on A")
			// A's next call records A's event: B asked for its memory.
			require.NoError(t, h.Deallocate(a, w, size))
			assert.Equal(t, 1, h.rt.RecordsOn(a))
			own, err := h.Allocate(b, size) // what B's growth left in B's list
			require.NoError(t, err)
			before = h.rt.Counts()
			v, err := h.Allocate(b, size)
			require.NoError(t, err)
			assert.Contains(t, []uintptr{x, w}, v, "a block freed on A")
			after = h.rt.Counts()
			assert.Equal(t, before.Records, after.Records, "no further record")
			assert.Equal(t, before.Waits+1, after.Waits, "one wait on B")
			require.NoError(t, h.Deallocate(b, own, size))
			require.NoError(t, h.Deallocate(b, v, size))
			w = 0
		}
		assert.Zero(t, after.Syncs, "no device synchronization")
		require.NoError(t, h.Deallocate(b, z, size))
		if w != 0 {
			require.NoError(t, h.Deallocate(a, w, size))
		}
		assert.Zero(t, h.used())
	}
}

// TestHeapDestroyedStream: memory freed on a stream that is destroyed
// before anyone asked for it is never ordered through the dead handle: a
// heap that cannot grow synchronizes the device instead, and then serves
// the request from it.
func TestHeapDestroyedStream(t *testing.T) {
	const size = 1 << 20
	h := newTestHeap(t, size, size, true)
	s := h.rt.NewStream()
	x, err := h.Allocate(s, size)
	require.NoError(t, err)
	require.NoError(t, h.Deallocate(s, x, size))
	h.rt.DestroyStream(s)
	y, err := h.Allocate(cudart.DefaultStream, size)
	require.NoError(t, err)
	assert.Equal(t, x, y)
	assert.Equal(t, 1, h.rt.Counts().Syncs, "one device synchronization")
	assert.Zero(t, h.rt.RecordsOn(s))
	require.NoError(t, h.Deallocate(cudart.DefaultStream, y, size))

	// A failing synchronization is the allocation's failure, not a crash.
	z, err := h.Allocate(cudart.DefaultStream, size)
	require.NoError(t, err)
	s2 := h.rt.NewStream()
	_, err = h.Allocate(s2, size)
	requireIs(t, err, errs.OutOfMemory, "the heap is full and cannot grow")
	require.NoError(t, h.Deallocate(s2, z, size)) // freed on s2, ordered for s2 only
	h.rt.DestroyStream(s2)
	h.rt.FailSync(true)
	_, err = h.Allocate(cudart.DefaultStream, size)
	requireIs(t, err, errs.CUDA)
	h.rt.FailSync(false)
	_, err = h.Allocate(h.rt.NewStream(), size+256)
	requireIs(t, err, errs.OutOfMemory)
}

// TestHeapReleaseChunks: ReleaseChunks takes out exactly the chunks whose
// blocks are all free, in whatever lists and magazines they wait, and all
// of them (live blocks or not) with all set.
func TestHeapReleaseChunks(t *testing.T) {
	h := newTestHeap(t, 1<<20, 0, true)
	s := h.rt.NewStream()
	var small []uintptr
	for i := 0; i < 64; i++ {
		x, err := h.Allocate(s, 8<<10)
		require.NoError(t, err)
		small = append(small, x)
	}
	big, err := h.Allocate(cudart.DefaultStream, 4<<20) // a chunk of its own
	require.NoError(t, err)
	size := h.Size()
	require.Equal(t, uintptr(5<<20), size)
	for i, x := range small {
		st := s
		if i%2 == 0 {
			st = cudart.DefaultStream
		}
		require.NoError(t, h.Deallocate(st, x, 8<<10))
	}
	spans := h.ReleaseChunks(false)
	require.Len(t, spans, 1, "the small blocks' chunk, freed on two streams")
	assert.Equal(t, uintptr(1<<20), spans[0].Size)
	assert.Equal(t, size-spans[0].Size, h.Size())
	blocks, _ := h.MagazineHeld()
	assert.Zero(t, blocks)
	assert.Equal(t, uintptr(4<<20), h.used())
	requireIs(t, h.Deallocate(s, small[1], 8<<10), errs.InvalidPointer, "its chunk is gone")
	all := h.ReleaseChunks(true)
	require.Len(t, all, 1, "the big block's chunk, live or not")
	assert.Zero(t, h.Size())
	_ = big
}

// TestHeapRandomized runs random workloads, one goroutine and several, on
// several streams (one of them destroyed and replaced now and then), with
// sizes on both sides of the magazine's and the big slots' limits and a
// heap small enough that it defragments, synchronizes and releases: live
// blocks never overlap, the used bytes are exact while one goroutine runs,
// no block is lost, and the stand-in runtime sees no misuse.
func TestHeapRandomized(t *testing.T) {
	for _, c := range []struct {
		name       string
		goroutines int
		maxSize    uintptr
		max        uintptr
		mags       bool
	}{
		{"small", 1, 8 << 10, 0, true},
		{"mixed/max", 1, 1536 << 10, 48 << 20, true},
		{"mixed/nomags", 1, 1536 << 10, 0, false},
		{"mixed/concurrent", 4, 1536 << 10, 0, true},
		{"small/concurrent/max", 4, 16 << 10, 8 << 20, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newTestHeap(t, 0, c.max, c.mags)
			var live liveSet
			steps := 3000
			if raceEnabled {
				steps = 600
			}
			var wg sync.WaitGroup
			for g := 0; g < c.goroutines; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(g), 11))
					streams := []cudart.Stream{cudart.DefaultStream, h.rt.NewStream(), h.rt.NewStream()}
					type blk struct {
						p, n uintptr
					}
					var mine []blk
					var used uintptr
					for i := 0; i < steps; i++ {
						n := up256(uintptr(rng.Int64N(int64(c.maxSize))) + 1)
						if rng.IntN(4) == 0 {
							n = uintptr(rng.IntN(8)+1) * 256 // many of one size: magazine hits
						}
						s := streams[rng.IntN(len(streams))]
						if len(mine) == 0 || rng.IntN(100) < 55 {
							x, err := h.Allocate(s, n)
							if err != nil {
								if !errors.Is(err, errs.OutOfMemory) {
									t.Errorf("goroutine %d: Allocate(%d): %v", g, n, err)
									return
								}
								continue
							}
							if err := live.add(x, n); err != nil {
								t.Errorf("goroutine %d: %v", g, err)
								return
							}
							mine = append(mine, blk{x, n})
							used += n
						} else {
							k := rng.IntN(len(mine))
							b := mine[k]
							mine[k] = mine[len(mine)-1]
							mine = mine[:len(mine)-1]
							live.remove(b.p)
							if err := h.Deallocate(s, b.p, b.n); err != nil {
								t.Errorf("goroutine %d: Deallocate: %v", g, err)
								return
							}
							used -= b.n
						}
						if c.goroutines == 1 && i%97 == 0 && h.used() != used {
							t.Errorf("step %d: used %d, live %d", i, h.used(), used)
							return
						}
						if i%500 == 499 {
							// A stream ends and another takes its place.
							k := 1 + rng.IntN(len(streams)-1)
							h.rt.DestroyStream(streams[k])
							streams[k] = h.rt.NewStream()
						}
						if g == 0 && i%1000 == 999 {
							h.ReleaseChunks(false)
						}
					}
					for _, b := range mine {
						live.remove(b.p)
						if err := h.Deallocate(cudart.DefaultStream, b.p, b.n); err != nil {
							t.Errorf("final Deallocate: %v", err)
						}
					}
				}()
			}
			wg.Wait()
			require.False(t, t.Failed())
			assert.Zero(t, h.used())
			st := h.Stats()
			assert.Equal(t, h.Size(), st.FreeBytes)
			blocks, _ := h.MagazineHeld()
			assert.Zero(t, blocks, "Stats flushed every magazine")
			if c.max != 0 {
				assert.LessOrEqual(t, h.Size(), c.max)
			}
			// Once a synchronization has settled what each stream holds,
			// the largest chunk serves one allocation of its whole size
			// without growing: no block was lost.
			require.NoError(t, h.Synchronize())
			largest, size, grows := h.LargestChunk(), h.Size(), h.growths()
			if largest == 0 {
				return
			}
			x, err := h.Allocate(cudart.DefaultStream, largest)
			require.NoError(t, err)
			assert.Equal(t, size, h.Size(), "no growth")
			assert.Equal(t, grows, h.growths())
			require.NoError(t, h.Deallocate(cudart.DefaultStream, x, largest))
		})
	}
}

// TestAllocateMore: the blocks after a batch's first come only from what
// the stream's lists hold: no growth, distinct blocks, none of another
// stream's memory.
func TestAllocateMore(t *testing.T) {
	h := newTestHeap(t, 1<<20, 0, true)
	first, err := h.Allocate(cudart.DefaultStream, 64<<10)
	require.NoError(t, err)
	out := make([]uintptr, 32)
	n := h.AllocateMore(cudart.DefaultStream, 64<<10, out)
	assert.Equal(t, 15, n, "the rest of the first chunk, and no more")
	assert.Zero(t, h.growths())
	seen := map[uintptr]bool{first: true}
	for _, p := range out[:n] {
		assert.False(t, seen[p])
		seen[p] = true
		require.NoError(t, h.Deallocate(cudart.DefaultStream, p, 64<<10))
	}
	require.NoError(t, h.Deallocate(cudart.DefaultStream, first, 64<<10))
	// A created stream has no memory of its own yet: nothing.
	s := h.rt.NewStream()
	assert.Zero(t, h.AllocateMore(s, 64<<10, out))
	assert.Zero(t, h.growths())
}

// TestReclaimBeforeGrowing: the heap asks its owner's caches before it
// grows, once an allocation, and reports a futile reclaim.
func TestReclaimBeforeGrowing(t *testing.T) {
	h := newTestHeap(t, 1<<20, 1<<20, true)
	var held []uintptr
	for i := 0; i < 4; i++ {
		p, err := h.Allocate(cudart.DefaultStream, 256<<10)
		require.NoError(t, err)
		held = append(held, p)
	}
	reclaims, futile := 0, 0
	h.SetReclaim(func(need uintptr) bool {
		reclaims++
		for _, p := range held {
			require.NoError(t, h.Deallocate(cudart.DefaultStream, p, 256<<10))
		}
		gave := len(held) > 0
		held = nil
		return gave
	}, func() { futile++ })
	p, err := h.Allocate(cudart.DefaultStream, 1<<20)
	require.NoError(t, err, "the reclaimed MiB serves it")
	assert.Equal(t, 1, reclaims)
	assert.Zero(t, h.growths())
	_, err = h.Allocate(cudart.DefaultStream, 256<<10)
	require.ErrorIs(t, err, errs.OutOfMemory)
	assert.Equal(t, 2, reclaims)
	assert.Zero(t, futile, "nothing was given back: not futile, just empty")
	require.NoError(t, h.Deallocate(cudart.DefaultStream, p, 1<<20))
}
