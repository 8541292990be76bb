package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A chunk a live sub-allocator took from a base resource cannot be freed
// through the base resource (or an adaptor over it), even with the chunk's
// size: a pool's first block starts where its chunk does and may fill it,
// and such a free was accepted, so the base resource handed the memory out
// again while the pool still held it (issue 24 B). The sub-allocator's own
// give-back passes.
func TestLentChunkRefused(t *testing.T) {
	const chunk = 1 << 20
	subs := map[string]func(up Resource) (Resource, uintptr, error){
		"pool": func(up Resource) (Resource, uintptr, error) {
			r, err := NewPool(up, PoolOptions{InitialSize: chunk, MaximumSize: chunk})
			return r, chunk, err
		},
		"fixed_size": func(up Resource) (Resource, uintptr, error) {
			r, err := NewFixedSize(up, FixedSizeOptions{BlockSize: chunk, BlocksToPreallocate: 1})
			return r, chunk, err
		},
		"arena": func(up Resource) (Resource, uintptr, error) {
			r, err := NewArena(up, ArenaOptions{ArenaSize: 4 * chunk})
			return r, 4 * chunk, err
		},
	}
	for _, c := range baseCases {
		// The cuda_async kinds' table is in C (asyncpath): a lent chunk's
		// record leaves it while lent (lent_blocks.go).
		for name, make := range subs {
			t.Run(c.kind+"/"+name, func(t *testing.T) {
				r := c.runtimeFor(t)
				base := c.build(t, r)
				st, err := NewStatistics(base)
				require.NoError(t, err)
				for _, up := range []Resource{base, st} {
					sub, size, err := make(up)
					require.NoError(t, err)
					bytes := uintptr(chunk)
					if name == "arena" {
						bytes = 1 << 20 // the arena's large blocks start at its base
					}
					p, err := sub.Allocate(DefaultStream, bytes, DefaultAlignment)
					require.NoError(t, err)
					err = base.Deallocate(DefaultStream, p, size, DefaultAlignment)
					requireIs(t, err, ErrInvalidPointer, "the chunk through the base resource")
					assert.Contains(t, err.Error(), "holds it")
					requireIs(t, base.DeallocateSync(p, size, DefaultAlignment), ErrInvalidPointer, "sync")
					requireIs(t, up.Deallocate(DefaultStream, p, size, DefaultAlignment), ErrInvalidPointer, "through the adaptor")
					tr, err := NewTracking(base, false)
					require.NoError(t, err)
					requireIs(t, tr.Deallocate(DefaultStream, p, size, DefaultAlignment), ErrInvalidPointer, "through tracking")
					q, err := base.Allocate(DefaultStream, size, DefaultAlignment)
					require.NoError(t, err)
					assert.NotEqual(t, p, q, "the base resource hands out memory of its own")
					require.NoError(t, base.Deallocate(DefaultStream, q, size, DefaultAlignment))
					require.NoError(t, sub.Deallocate(DefaultStream, p, bytes, DefaultAlignment))
					require.NoError(t, sub.(interface{ Close() error }).Close(), "the sub-allocator gives its chunk back")
				}
			})
		}
	}
}

// TestLentChunkRefusedBeyondBaseTables: a chunk taken from a resource that
// keeps no base table was still freed through it (issue 24, after
// TestLentChunkRefused): a pool over a pool (the outer pool's chunk is a
// block of the inner one), over an aligned adaptor that over-aligned the
// chunk, over a callback resource. Each refuses it now, and hands out
// nothing inside it; the sub-allocator still gives it back.
func TestLentChunkRefusedBeyondBaseTables(t *testing.T) {
	r := testRuntime(t)
	cuda, err := newCuda(r)
	require.NoError(t, err)
	inner, err := newPool(r, cuda, PoolOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, inner.Close()) }()
	arena, err := newArena(r, cuda, ArenaOptions{ArenaSize: 16 << 20})
	require.NoError(t, err)
	defer func() { require.NoError(t, arena.Close()) }()
	bin, err := newBinning(r, cuda, -1, -1)
	require.NoError(t, err)
	defer func() { require.NoError(t, bin.Close()) }()
	exp, err := newExpandable(r, ExpandableOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, exp.Close()) }()
	al, err := NewAligned(cuda, 4096, 0)
	require.NoError(t, err)
	cb, err := NewCallback(func(n uintptr, s Stream) (uintptr, error) { return cuda.Allocate(s, n, DefaultAlignment) },
		func(p, n uintptr, s Stream) error { return cuda.Deallocate(s, p, n, DefaultAlignment) })
	require.NoError(t, err)
	st, err := NewStatistics(inner)
	require.NoError(t, err)
	const n = 4 << 20 // an empty pool grows by exactly a 4 MiB request
	for _, c := range []struct {
		name string
		up   Resource
		via  []Resource // where the free is tried
	}{
		{"pool", inner, []Resource{inner}},
		{"statistics over a pool", st, []Resource{st, inner}},
		{"arena", arena, []Resource{arena}},
		{"binning", bin, []Resource{bin}},
		{"expandable", exp, []Resource{exp}},
		{"aligned", al, []Resource{al}},
		{"callback", cb, []Resource{cb}},
	} {
		t.Run(c.name, func(t *testing.T) {
			n0, b0 := BaseAllocations()
			pool, err := newPool(r, c.up, PoolOptions{})
			require.NoError(t, err)
			p, err := pool.Allocate(DefaultStream, n, DefaultAlignment)
			require.NoError(t, err)
			for _, v := range c.via {
				err := v.Deallocate(DefaultStream, p, n, DefaultAlignment)
				requireIs(t, err, ErrInvalidPointer, "freed through ", v.Kind())
				assert.Contains(t, err.Error(), "holds it")
			}
			q, err := c.up.Allocate(DefaultStream, n, DefaultAlignment)
			require.NoError(t, err)
			assert.False(t, q < p+n && p < q+n, "%s handed out %#x, inside the pool's chunk at %#x", c.name, q, p)
			require.NoError(t, c.up.Deallocate(DefaultStream, q, n, DefaultAlignment))
			require.NoError(t, pool.Deallocate(DefaultStream, p, n, DefaultAlignment))
			require.NoError(t, pool.Close(), "the pool gives its chunk back")
			if c.up != al && c.up != cb {
				return
			}
			n1, b1 := BaseAllocations()
			assert.Equal(t, n0, n1)
			assert.Equal(t, b0, b1)
		})
	}
}

// TestLentChunkCudaAsyncCPath: a pool over a cuda_async resource: the
// chunk's record is out of the C table while the pool holds it, so that
// the C path of the C ABI (asyncpath, which frees without Go) refuses it
// as well as the Go path, and BaseAllocations still counts it.
func TestLentChunkCudaAsyncCPath(t *testing.T) {
	r := testRuntime(t)
	async, err := newCudaAsync(r, CudaAsyncOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, async.Close()) }()
	n0, b0 := BaseAllocations()
	pool, err := newPool(r, async, PoolOptions{})
	require.NoError(t, err)
	p, err := pool.Allocate(DefaultStream, 4<<20, DefaultAlignment)
	require.NoError(t, err)
	assert.False(t, asyncLive.has(p), "the lent chunk's record is out of the C table")
	n1, b1 := BaseAllocations()
	assert.Equal(t, n0+1, n1)
	assert.Equal(t, b0+4<<20, b1)
	requireIs(t, async.Deallocate(DefaultStream, p, 4<<20, DefaultAlignment), ErrInvalidPointer, "through cuda_async")
	require.NoError(t, pool.Deallocate(DefaultStream, p, 4<<20, DefaultAlignment))
	require.NoError(t, pool.Close())
	n2, b2 := BaseAllocations()
	assert.Equal(t, n0, n2)
	assert.Equal(t, b0, b2)
}
