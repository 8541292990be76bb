package core

// Never the same bytes twice (issue 24): frees every resource must refuse,
// because accepting them hands out memory that someone still holds, or
// tells the caller a block went back when it did not.

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
)

// sameBytesSubs are the sub-allocators over a cuda upstream, and the
// expandable resource, each with the largest request it serves here.
func sameBytesSubs(t *testing.T, r cudart.Runtime) []struct {
	name string
	res  Resource
	max  uintptr
} {
	cuda, err := newCuda(r)
	require.NoError(t, err)
	var out []struct {
		name string
		res  Resource
		max  uintptr
	}
	add := func(name string, res Resource, err error, max uintptr) {
		require.NoError(t, err, name)
		t.Cleanup(func() { assert.NoError(t, res.(interface{ Close() error }).Close(), name) })
		out = append(out, struct {
			name string
			res  Resource
			max  uintptr
		}{name, res, max})
	}
	p, err := newPool(r, cuda, PoolOptions{})
	add("pool", p, err, 1<<20)
	a, err := newArena(r, cuda, ArenaOptions{ArenaSize: 64 << 20})
	add("arena", a, err, 1<<20)
	f, err := newFixedSize(r, cuda, FixedSizeOptions{BlockSize: 64 << 10, BlocksToPreallocate: 16})
	add("fixed_size", f, err, 64<<10)
	b, err := newBinning(r, cuda, 8, 14)
	add("binning", b, err, 1<<20)
	e, err := newExpandable(r, ExpandableOptions{})
	add("expandable", e, err, 1<<20)
	return out
}

// TestInteriorPointersRefused: a pointer inside a live block, at any
// offset (1..255 included: the heap's index is per 256-byte unit, so
// p+1..p+255 found p's slot and were taken for p, freeing the block under
// its owner and handing out p+1 next), is refused, and the next
// allocations neither overlap the block nor lose their alignment.
func TestInteriorPointersRefused(t *testing.T) {
	r := testRuntime(t)
	for _, c := range sameBytesSubs(t, r) {
		for _, n := range []uintptr{1000, 5000, 300 << 10} {
			if n > c.max {
				continue
			}
			t.Run(fmt.Sprintf("%s/%d", c.name, n), func(t *testing.T) {
				p, err := c.res.Allocate(DefaultStream, n, DefaultAlignment)
				require.NoError(t, err)
				for off := uintptr(1); off < 256; off++ {
					require.Error(t, c.res.Deallocate(DefaultStream, p+off, n, DefaultAlignment), "offset %d", off)
					require.Error(t, c.res.Deallocate(DefaultStream, p+off, n-off, DefaultAlignment), "offset %d, the rest", off)
				}
				for off := uintptr(256); off < n && off <= 1024; off += 256 {
					require.Error(t, c.res.Deallocate(DefaultStream, p+off, n-off, DefaultAlignment), "offset %d", off)
				}
				q, err := c.res.Allocate(DefaultStream, n, DefaultAlignment)
				require.NoError(t, err)
				s, err := c.res.Allocate(DefaultStream, 256, DefaultAlignment)
				require.NoError(t, err)
				assert.Zero(t, q%DefaultAlignment, "%#x", q)
				assert.Zero(t, s%DefaultAlignment, "%#x", s)
				assert.False(t, q < p+n && p < q+n, "%#x overlaps the live block %#x", q, p)
				assert.False(t, s < p+n && p < s+256, "%#x overlaps the live block %#x", s, p)
				require.NoError(t, c.res.Deallocate(DefaultStream, s, 256, DefaultAlignment))
				require.NoError(t, c.res.Deallocate(DefaultStream, q, n, DefaultAlignment))
				require.NoError(t, c.res.Deallocate(DefaultStream, p, n, DefaultAlignment))
				requireIs(t, c.res.Deallocate(DefaultStream, p, n, DefaultAlignment), ErrInvalidPointer, "twice")
			})
		}
	}
}
