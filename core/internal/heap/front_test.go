package heap

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core/internal/cachepolicy"
	"github.com/rmmgo/rmmgo/core/internal/errs"
	"github.com/rmmgo/rmmgo/cudart"
)

// newFrontHeap is newTestHeap with magazines and the front on.
func newFrontHeap(t testing.TB, initial, max uintptr) *testHeap {
	h := newTestHeap(t, 0, max, true)
	h.EnableFront()
	if initial > 0 {
		h.AddChunk(h.take(initial), initial)
	}
	return h
}

// TestFrontClasses: classes of 256-byte steps up to 4 KiB, then four per
// power of two; every size maps to the smallest class that holds it, and
// frontSizeOf inverts frontClass.
func TestFrontClasses(t *testing.T) {
	for _, c := range []struct{ units, class, size uintptr }{
		{1, 0, 1}, {16, 15, 16}, {17, 16, 20}, {20, 16, 20}, {21, 17, 24},
		{32, 19, 32}, {33, 20, 40}, {4096, frontClasses - 1, 4096},
	} {
		cl, sz := frontClass(c.units)
		assert.Equal(t, int(c.class), cl, "class of %d units", c.units)
		assert.Equal(t, c.size, sz, "size of %d units", c.units)
	}
	prev := uintptr(0)
	for u := uintptr(1); u <= frontMaxUnits; u++ {
		c, sz := frontClass(u)
		require.GreaterOrEqual(t, sz, u)
		require.Equal(t, sz, frontSizeOf(c))
		if sz != prev {
			// A class's size rounds nothing up: it maps to itself.
			c2, sz2 := frontClass(sz)
			require.Equal(t, c, c2)
			require.Equal(t, sz, sz2)
			require.Less(t, (sz-u)*4, max(sz, 64), "waste under a quarter above 4 KiB")
		}
		prev = sz
	}
}

// TestFrontReuseAndChecks: a block freed on the default stream waits in
// the front and serves the next request of its class at once, however its
// size rounds; a second free, a free with another size and an interior
// pointer are refused while it waits and once it is live again; the
// rounding is not in use.
func TestFrontReuseAndChecks(t *testing.T) {
	for _, size := range []uintptr{256, 4608, 60 << 10, 64 << 10, 900 << 10} {
		h := newFrontHeap(t, 32<<20, 0)
		blk := h.BlockSize(size)
		x, err := h.Allocate(cudart.DefaultStream, size)
		require.NoError(t, err)
		assert.Equal(t, blk-size, h.RoundingBytes(), "%d bytes", size)
		requireIs(t, h.Deallocate(cudart.DefaultStream, x, size+256), errs.InvalidArgument, "wrong size of a live block")
		require.NoError(t, h.Deallocate(cudart.DefaultStream, x, size))
		assert.Zero(t, h.RoundingBytes())
		n, b := h.frontHeld()
		assert.Equal(t, 1, n)
		assert.Equal(t, blk, b)
		assert.Zero(t, h.used(), "a block in the front is free")
		requireIs(t, h.Deallocate(cudart.DefaultStream, x, size), errs.InvalidPointer, "double free")
		requireIs(t, h.Deallocate(h.rt.NewStream(), x, size), errs.InvalidPointer, "double free on another stream")
		requireIs(t, h.Deallocate(cudart.DefaultStream, x+256, 256), errs.InvalidPointer, "interior pointer")
		// Another size of the same class takes it.
		other := blk - (blk-size)/2&^255
		y, err := h.Allocate(cudart.DefaultStream, other)
		require.NoError(t, err)
		assert.Equal(t, x, y, "the class's block comes back")
		assert.Equal(t, blk-other, h.RoundingBytes())
		requireIs(t, h.Deallocate(cudart.DefaultStream, y, size+blk), errs.InvalidArgument)
		require.NoError(t, h.Deallocate(cudart.DefaultStream, y, other))
		// Stats drains the front: everything is free in the lists.
		st := h.Stats()
		assert.Equal(t, h.Size(), st.FreeBytes)
		n, _ = h.frontHeld()
		assert.Zero(t, n)
	}
}

// TestFrontBoundAndDrain: the front and the magazines together never hold
// more than the magazines' budget, whatever the frees; before the heap
// grows, the front's blocks come back (a request for the whole heap is
// served without growing); the quotas go back with them.
func TestFrontBoundAndDrain(t *testing.T) {
	const size = 16 << 20
	h := newFrontHeap(t, size, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	type blk struct{ p, n uintptr }
	var live []blk
	var used uintptr
	for {
		n := uintptr(rng.IntN(64<<10)) + 1
		n = up256(n)
		if used+h.BlockSize(n) > size {
			break
		}
		p, err := h.Allocate(cudart.DefaultStream, n)
		require.NoError(t, err)
		live = append(live, blk{p, n})
		used += h.BlockSize(n)
	}
	rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	budget := cachepolicy.Magazines(size)
	for _, b := range live {
		require.NoError(t, h.Deallocate(cudart.DefaultStream, b.p, b.n))
		_, held := h.MagazineHeld()
		require.LessOrEqual(t, held, budget, "front and magazines within the budget")
	}
	_, held := h.frontHeld()
	require.NotZero(t, held)
	x, err := h.Allocate(cudart.DefaultStream, size)
	require.NoError(t, err, "the front's blocks came back before growing")
	assert.Zero(t, h.growths())
	b, avail := h.MagazineBudget()
	assert.Equal(t, int64(b), avail, "every quota given back")
	require.NoError(t, h.Deallocate(cudart.DefaultStream, x, size))
}

// TestFrontConcurrent: goroutines on every P allocate and free on the
// default stream (into each other's shards, as they move between Ps); no
// block is handed out twice, and everything comes back.
func TestFrontConcurrent(t *testing.T) {
	h := newFrontHeap(t, 8<<20, 64<<20)
	var mu sync.Mutex
	owner := map[uintptr]int{}
	var wg sync.WaitGroup
	g := max(4, runtime.GOMAXPROCS(0))
	for k := 0; k < g; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(k), 7))
			type blk struct{ p, n uintptr }
			var mine []blk
			for i := 0; i < 3000; i++ {
				if len(mine) == 0 || rng.IntN(2) == 0 {
					n := up256(uintptr(rng.IntN(8<<10)) + 1)
					p, err := h.Allocate(cudart.DefaultStream, n)
					if err != nil {
						t.Errorf("Allocate: %v", err)
						return
					}
					mu.Lock()
					if o, ok := owner[p]; ok {
						t.Errorf("%#x handed out to %d and %d", p, o, k)
					}
					owner[p] = k
					mu.Unlock()
					mine = append(mine, blk{p, n})
					continue
				}
				j := rng.IntN(len(mine))
				b := mine[j]
				mine[j] = mine[len(mine)-1]
				mine = mine[:len(mine)-1]
				mu.Lock()
				delete(owner, b.p)
				mu.Unlock()
				if err := h.Deallocate(cudart.DefaultStream, b.p, b.n); err != nil {
					t.Errorf("Deallocate: %v", err)
					return
				}
				if i%500 == 0 {
					runtime.Gosched() // move between Ps
				}
			}
			for _, b := range mine {
				mu.Lock()
				delete(owner, b.p)
				mu.Unlock()
				if err := h.Deallocate(cudart.DefaultStream, b.p, b.n); err != nil {
					t.Errorf("final Deallocate: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	require.False(t, t.Failed())
	assert.Zero(t, h.used())
	assert.Zero(t, h.RoundingBytes())
	st := h.Stats()
	assert.Equal(t, h.Size(), st.FreeBytes)
}
