package heap

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestClasses: every size falls in the class whose range holds it, class
// ranges follow one another without gap, and the exact classes are the
// sizes themselves.
func TestClasses(t *testing.T) {
	for c := 1; c < numClasses; c++ {
		require.Equal(t, c, classOf(classLow(c)), "class %d", c)
		require.Less(t, classLow(c-1), classLow(c), "class %d", c)
		require.Equal(t, c-1, classOf(classLow(c)-1), "the unit before class %d", c)
	}
	for u := uintptr(1); u < exactClasses; u++ {
		require.Equal(t, int(u), classOf(u))
	}
	for _, u := range []uintptr{64, 65, 100, 1000, 4096, 1 << 20, 1<<40 + 12345, 1<<(64-UnitShift) - 1} {
		c := classOf(u)
		require.LessOrEqual(t, classLow(c), u, "%d units", u)
		if c+1 < numClasses {
			require.Less(t, u, classLow(c+1), "%d units", u)
		}
	}
}

// TestClassIndexFit: take returns a block of at least the request from
// the smallest class that holds one, and nothing when none fits.
func TestClassIndexFit(t *testing.T) {
	// One P: frees of small blocks land in the list of the freeing
	// goroutine's shard, and best fit is per list (the race detector moves
	// goroutines between Ps often enough to split them).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	h := newTestHeap(t, 64<<20, 64<<20, false)
	var ptrs []uintptr
	// Blocks of 1, 3, 70 and 5000 units, each followed by a 256-byte
	// separator, then the rest of the chunk.
	for _, n := range []uintptr{256, 3 << 8, 70 << 8, 5000 << 8} {
		p, err := h.Allocate(0, n)
		require.NoError(t, err)
		sep, err := h.Allocate(0, 256)
		require.NoError(t, err)
		ptrs = append(ptrs, p)
		_ = sep
	}
	sizes := []uintptr{256, 3 << 8, 70 << 8, 5000 << 8}
	for i, p := range ptrs {
		require.NoError(t, h.Deallocate(0, p, sizes[i]))
	}
	for _, c := range []struct{ ask, want uintptr }{
		{256, ptrs[0]},       // exact
		{512, ptrs[1]},       // the 3-unit block is the smallest that fits
		{65 << 8, ptrs[2]},   // 70 units
		{4000 << 8, ptrs[3]}, // 5000 units
	} {
		p, err := h.Allocate(0, c.ask)
		require.NoError(t, err)
		require.Equal(t, c.want, p, "best fit for %d bytes", c.ask)
	}
}
