package heap

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core/internal/streamorder"
	"github.com/rmmgo/rmmgo/core/internal/streamorder/ordertest"
	"github.com/rmmgo/rmmgo/cudart"
)

const xg = 2 << 20 // the granule of these tests

// newReservedHeap returns a heap whose one chunk, of size bytes, is a hole.
func newReservedHeap(t testing.TB, size uintptr, mags bool) (*Heap, uintptr, *ordertest.Runtime) {
	t.Helper()
	rt := ordertest.New()
	h := new(Heap)
	h.Init("expandable", rt, nil, mags)
	base := uintptr(0x7e00_0000_0000)
	h.AddReservedChunk(base, size)
	t.Cleanup(func() {
		require.NoError(t, h.Close())
		require.Empty(t, rt.Misuses())
	})
	return h, base, rt
}

// checkTiling checks that the chunk is tiled by its nodes, that the holes
// are exactly the nodes marked as holes, and that the byte counts agree;
// it returns the holes as spans.
func checkTiling(t testing.TB, h *Heap) []Span {
	t.Helper()
	h.holes.mu.Lock()
	defer h.holes.mu.Unlock()
	ls := h.eng.LockAll()
	defer streamorder.UnlockAll(ls)
	pg := h.nodes.load()
	var holes []Span
	var holeBytes, freeBytes uintptr
	for _, c := range h.chunks.Load().sorted {
		at, prev := c.base, int32(0)
		for id := c.first; id != 0; id = pg.at(id).next {
			n := pg.at(id)
			require.Equal(t, at, n.addr, "node %d", id)
			require.Equal(t, prev, n.prev.Load(), "node %d's prev", id)
			require.NotZero(t, n.size)
			switch o := n.owner.Load(); {
			case o == holeOwner:
				if len(holes) > 0 {
					require.NotEqual(t, holes[len(holes)-1].Base+holes[len(holes)-1].Size, n.addr, "two holes side by side")
				}
				holes = append(holes, Span{n.addr, n.size})
				holeBytes += n.size
			case o > 0:
				freeBytes += n.size
			default:
				require.Zero(t, o, "node %d", id)
			}
			at, prev = n.addr+n.size, id
		}
		require.Equal(t, c.base+c.size, at)
	}
	require.Len(t, h.holes.ids, len(holes))
	for i, id := range h.holes.ids {
		require.Equal(t, holes[i].Base, pg.at(id).addr)
	}
	require.Equal(t, holeBytes, h.HoleBytes())
	var listed uintptr
	for _, l := range ls {
		listed += l.Free.Load()
		if l.mag != nil {
			listed -= l.mag.bytes // magazine blocks look allocated
		}
	}
	require.Equal(t, freeBytes, listed)
	return holes
}

func TestHeapHolesFillAndMerge(t *testing.T) {
	h, base, _ := newReservedHeap(t, 64*xg, false)
	assert.Equal(t, []Span{{base, 64 * xg}}, checkTiling(t, h))
	_, err := h.Allocate(cudart.DefaultStream, 256)
	requireIs(t, err, errNoRoom, "a heap of holes has nothing to give")

	// Memory at the start of the hole, with an allocation from it.
	p, err := h.Fill(cudart.DefaultStream, base, 2*xg, xg)
	require.NoError(t, err)
	assert.Equal(t, base, p)
	assert.Equal(t, []Span{{base + 2*xg, 62 * xg}}, checkTiling(t, h))
	assert.EqualValues(t, xg, h.FreeBytes())

	// Memory in the middle: the hole splits in two.
	q, err := h.Fill(cudart.DefaultStream, base+10*xg, xg, 0)
	require.NoError(t, err)
	assert.Zero(t, q)
	assert.Equal(t, []Span{{base + 2*xg, 8 * xg}, {base + 11*xg, 53 * xg}}, checkTiling(t, h))

	// Memory next to free memory merges with it: 1 + 2 granules in one block.
	q, err = h.Fill(cudart.DefaultStream, base+2*xg, 2*xg, 3*xg)
	require.NoError(t, err)
	assert.Equal(t, base+xg, q, "the new memory extends the free block before it")
	assert.Equal(t, []Span{{base + 4*xg, 6 * xg}, {base + 11*xg, 53 * xg}}, checkTiling(t, h))

	// Filling a hole whole joins the free memory on both sides.
	require.NoError(t, h.Deallocate(cudart.DefaultStream, q, 3*xg))
	require.NoError(t, h.Deallocate(cudart.DefaultStream, p, xg))
	q, err = h.Fill(cudart.DefaultStream, base+4*xg, 6*xg, 11*xg)
	require.NoError(t, err)
	assert.Equal(t, base, q)
	assert.Equal(t, []Span{{base + 11*xg, 53 * xg}}, checkTiling(t, h))
	assert.Zero(t, h.FreeBytes())

	// Not in a hole.
	_, err = h.Fill(cudart.DefaultStream, base, xg, 0)
	require.Error(t, err)
	_, err = h.Fill(cudart.DefaultStream, base+10*xg, 2*xg, 0)
	require.Error(t, err)
	require.NoError(t, h.Deallocate(cudart.DefaultStream, q, 11*xg))
	checkTiling(t, h)
}

func TestHeapDig(t *testing.T) {
	for _, mags := range []bool{false, true} {
		t.Run(fmt.Sprintf("magazines=%v", mags), func(t *testing.T) {
			h, base, _ := newReservedHeap(t, 64*xg, mags)
			_, err := h.Fill(cudart.DefaultStream, base, 16*xg, 0)
			require.NoError(t, err)
			// 16 granules: blocks of 1.5 granules, every other one freed.
			const n = 3 * xg / 2
			var ps []uintptr
			for i := 0; i < 10; i++ {
				p, err := h.Allocate(cudart.DefaultStream, n)
				require.NoError(t, err)
				ps = append(ps, p)
			}
			// Blocks end at 15 granules: the last one is wholly free.
			assert.Equal(t, []Span{{base + 15*xg, xg}}, h.Dig(xg))
			for i := 1; i < 10; i += 2 {
				require.NoError(t, h.Deallocate(cudart.DefaultStream, ps[i], n))
			}
			dug := h.Dig(xg)
			// Free: [1.5, 3) [4.5, 6) [7.5, 9) [10.5, 12) [13.5, 15) granules:
			// whole granules [2, 3) [5, 6) [8, 9) [11, 12) [14, 15), the last
			// merged with the hole after it.
			want := []Span{{base + 2*xg, xg}, {base + 5*xg, xg}, {base + 8*xg, xg}, {base + 11*xg, xg}, {base + 14*xg, xg}}
			assert.Equal(t, want, dug)
			assert.Equal(t, []Span{{base + 2*xg, xg}, {base + 5*xg, xg}, {base + 8*xg, xg}, {base + 11*xg, xg}, {base + 14*xg, 50 * xg}}, checkTiling(t, h))
			assert.EqualValues(t, 5*n, h.Size()-h.HoleBytes()-h.FreeBytes(), "live blocks untouched")
			hs := h.Holes()
			require.Len(t, hs, 5)
			assert.Equal(t, HoleInfo{Span{base + 2*xg, xg}, xg / 2, 0}, hs[0])
			assert.Equal(t, HoleInfo{Span{base + 14*xg, 50 * xg}, xg / 2, 0}, hs[4])
			// The live blocks still free and allocate as before.
			for i := 0; i < 10; i += 2 {
				require.NoError(t, h.Deallocate(cudart.DefaultStream, ps[i], n))
			}
			dug = h.Dig(xg)
			assert.Equal(t, []Span{{base, 2 * xg}, {base + 3*xg, 2 * xg}, {base + 6*xg, 2 * xg}, {base + 9*xg, 2 * xg}, {base + 12*xg, 2 * xg}}, dug)
			assert.Equal(t, []Span{{base, 64 * xg}}, checkTiling(t, h), "all one hole again")
			assert.Zero(t, h.FreeBytes())
			assert.EqualValues(t, 64*xg, h.HoleBytes())
		})
	}
}

// TestHeapHolesRandom: random allocations, frees, fills and digs, on
// several streams, with the tiling checked throughout and no two live
// blocks overlapping.
func TestHeapHolesRandom(t *testing.T) {
	h, base, rt := newReservedHeap(t, 256*xg, true)
	rng := rand.New(rand.NewPCG(1, 2))
	streams := []cudart.Stream{cudart.DefaultStream, rt.NewStream(), rt.NewStream()}
	var live liveSet
	type block struct {
		p, n uintptr
		s    cudart.Stream
	}
	var blocks []block
	for step := 0; step < 3000; step++ {
		s := streams[rng.IntN(len(streams))]
		switch r := rng.IntN(100); {
		case r < 50:
			n := up256(uintptr(rng.IntN(3 * xg)))
			if n == 0 {
				n = 256
			}
			p, err := h.Allocate(s, n)
			if err != nil {
				requireIs(t, err, errNoRoom)
				hs := h.Holes()
				hole := hs[rng.IntN(len(hs))]
				k := min(hole.Size, (n+xg-1)/xg*xg)
				p, err = h.Fill(s, hole.Base, k, n)
				require.NoError(t, err)
				if p == 0 {
					continue
				}
			}
			require.NoError(t, live.add(p, n))
			blocks = append(blocks, block{p, n, s})
		case r < 95 && len(blocks) > 0:
			i := rng.IntN(len(blocks))
			b := blocks[i]
			require.NoError(t, h.Deallocate(b.s, b.p, b.n))
			live.remove(b.p)
			blocks[i] = blocks[len(blocks)-1]
			blocks = blocks[:len(blocks)-1]
		default:
			for _, d := range h.Dig(xg) {
				require.Zero(t, d.Base%xg)
				require.Zero(t, d.Size%xg)
				for _, b := range blocks {
					require.False(t, b.p < d.Base+d.Size && d.Base < b.p+b.n, "a live block in a dug range")
				}
			}
		}
		if step%100 == 0 {
			checkTiling(t, h)
		}
	}
	for _, b := range blocks {
		require.NoError(t, h.Deallocate(b.s, b.p, b.n))
	}
	h.Dig(xg)
	assert.Equal(t, []Span{{base, 256 * xg}}, checkTiling(t, h))
}

// TestHeapHolesConcurrent: digs and fills while other goroutines allocate
// and free (for the race detector).
func TestHeapHolesConcurrent(t *testing.T) {
	h, base, _ := newReservedHeap(t, 128*xg, true)
	_, err := h.Fill(cudart.DefaultStream, base, 32*xg, 0)
	require.NoError(t, err)
	var live liveSet
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 7))
			var mine [][2]uintptr
			for i := 0; i < 2000; i++ {
				if len(mine) > 0 && (rng.IntN(2) == 0 || len(mine) > 32) {
					j := rng.IntN(len(mine))
					live.remove(mine[j][0])
					if err := h.Deallocate(cudart.DefaultStream, mine[j][0], mine[j][1]); err != nil {
						t.Error(err)
						return
					}
					mine[j] = mine[len(mine)-1]
					mine = mine[:len(mine)-1]
					continue
				}
				n := up256(uintptr(rng.IntN(256 << 10)))
				if n == 0 {
					n = 256
				}
				p, err := h.Allocate(cudart.DefaultStream, n)
				if err != nil {
					continue // out of room until the filler maps more
				}
				if err := live.add(p, n); err != nil {
					t.Error(err)
					return
				}
				mine = append(mine, [2]uintptr{p, n})
			}
			for _, b := range mine {
				live.remove(b[0])
				_ = h.Deallocate(cudart.DefaultStream, b[0], b[1])
			}
		}(uint64(w))
	}
	digger := make(chan struct{})
	go func() {
		defer close(digger)
		for {
			select {
			case <-stop:
				return
			default:
			}
			h.Dig(xg)
			if hs := h.Holes(); len(hs) > 0 {
				if _, err := h.Fill(cudart.DefaultStream, hs[0].Base, min(hs[0].Size, 4*xg), 0); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-digger
	checkTiling(t, h)
	assert.Empty(t, live.m)
}
