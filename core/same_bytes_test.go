package core

// Never the same bytes twice (issue 24): frees every resource must refuse,
// because accepting them hands out memory that someone still holds, or
// tells the caller a block went back when it did not.

import (
	"bytes"
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

// zeroSizeCases: every kind of resource, base resources, sub-allocators
// and adaptors over cuda.
func zeroSizeCases(t *testing.T, r cudart.Runtime) map[string]Resource {
	out := map[string]Resource{}
	for _, c := range baseCases {
		rr := c.runtimeFor(t)
		if rr != r {
			continue // the pageable kinds run on their own runtime (see TestBaseResource*)
		}
		out[c.kind] = c.build(t, r)
	}
	for _, c := range sameBytesSubs(t, r) {
		out[c.name] = c.res
	}
	cuda, err := newCuda(r)
	require.NoError(t, err)
	must := func(name string, res Resource, err error) {
		require.NoError(t, err, name)
		out[name] = res
	}
	st, err := NewStatistics(cuda)
	must("statistics", st, err)
	lim, err := NewLimiting(cuda, 1<<30, DefaultAlignment)
	must("limiting", lim, err)
	tr, err := NewTracking(cuda, false)
	must("tracking", tr, err)
	lg, err := NewLogging(cuda, LoggingOptions{Writer: &bytes.Buffer{}})
	must("logging", lg, err)
	ts, err := NewThreadSafe(cuda)
	must("thread_safe", ts, err)
	pf, err := NewPrefetch(cuda)
	must("prefetch", pf, err)
	al, err := NewAligned(cuda, 4096, 0)
	must("aligned", al, err)
	fc, err := NewFailureCallback(cuda, func(uintptr) bool { return false })
	must("failure_callback", fc, err)
	cb, err := NewCallback(func(n uintptr, s Stream) (uintptr, error) { return cuda.Allocate(s, n, DefaultAlignment) },
		func(p, n uintptr, s Stream) error { return cuda.Deallocate(s, p, n, DefaultAlignment) })
	must("callback", cb, err)
	return out
}

// TestZeroSizeFreeRefused: Deallocate(p, 0) of a live block answered nil
// and freed nothing on nearly every kind (a statistics adaptor uncounted
// the allocation too, so the right free was refused afterwards and the
// block leaked). It is a size that does not match: ErrInvalidArgument,
// nothing changed. Deallocate(0, n) stays a no-op.
func TestZeroSizeFreeRefused(t *testing.T) {
	r := testRuntime(t)
	for name, res := range zeroSizeCases(t, r) {
		t.Run(name, func(t *testing.T) {
			const n = 4096
			p, err := res.AllocateSync(n, DefaultAlignment)
			require.NoError(t, err)
			requireIs(t, res.Deallocate(DefaultStream, p, 0, DefaultAlignment), ErrInvalidArgument, "size 0")
			requireIs(t, res.DeallocateSync(p, 0, DefaultAlignment), ErrInvalidArgument, "size 0, sync")
			if st, ok := res.(*Statistics); ok {
				b, c := st.Counters()
				assert.Equal(t, int64(n), b.Value)
				assert.Equal(t, int64(1), c.Value)
			}
			fillAndCheck(t, r, p, n, 0x6b, DefaultStream) // still allocated, still ours
			require.NoError(t, res.Deallocate(DefaultStream, 0, n, DefaultAlignment))
			require.NoError(t, res.DeallocateSync(p, n, DefaultAlignment))
			require.Error(t, res.DeallocateSync(p, n, DefaultAlignment), "freed once")
		})
	}
}

// TestStatisticsZeroByteAllocations: as RMM's statistics_resource_adaptor,
// a zero-byte allocation counts one allocation of zero bytes, and its free
// (pointer 0, size 0) uncounts it; with none outstanding that free changes
// nothing.
func TestStatisticsZeroByteAllocations(t *testing.T) {
	r := testRuntime(t)
	cuda, err := newCuda(r)
	require.NoError(t, err)
	st, err := NewStatistics(cuda)
	require.NoError(t, err)
	p, err := st.Allocate(DefaultStream, 0, DefaultAlignment)
	require.NoError(t, err)
	assert.Zero(t, p)
	b, c := st.Counters()
	assert.Equal(t, Counter{Value: 0, Peak: 0, Total: 0}, b)
	assert.Equal(t, Counter{Value: 1, Peak: 1, Total: 1}, c)
	require.NoError(t, st.Deallocate(DefaultStream, 0, 0, DefaultAlignment))
	_, c = st.Counters()
	assert.Equal(t, Counter{Value: 0, Peak: 1, Total: 1}, c)
	require.NoError(t, st.DeallocateSync(0, 0, DefaultAlignment))
	_, c = st.Counters()
	assert.Equal(t, int64(0), c.Value, "nothing outstanding: nothing uncounted")
}

// TestChunkFreedThroughUpstreamRefused: a block that fills the chunk its
// sub-allocator took starts where the chunk does; freed through the
// upstream (or anything between) with the chunk's size, the upstream gave
// the chunk back while the sub-allocator held it, and handed it out again.
// Every such free is refused now, whatever the upstream: a base resource
// (cuda_async's too), an adaptor over one, another pool, the aligned and
// callback resources. BaseAllocations still counts the chunk.
func TestChunkFreedThroughUpstreamRefused(t *testing.T) {
	r := testRuntime(t)
	cuda, err := newCuda(r)
	require.NoError(t, err)
	st, err := NewStatistics(cuda)
	require.NoError(t, err)
	inner, err := newPool(r, cuda, PoolOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, inner.Close()) }()
	async, err := newCudaAsync(r, CudaAsyncOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, async.Close()) }()
	al, err := NewAligned(cuda, 4096, 0)
	require.NoError(t, err)
	cb, err := NewCallback(func(n uintptr, s Stream) (uintptr, error) { return cuda.Allocate(s, n, DefaultAlignment) },
		func(p, n uintptr, s Stream) error { return cuda.Deallocate(s, p, n, DefaultAlignment) })
	require.NoError(t, err)
	const n = 4 << 20 // an empty pool grows by exactly a 4 MiB request
	for _, c := range []struct {
		name string
		up   Resource
		via  []Resource // where the free is tried
	}{
		{"cuda", cuda, []Resource{cuda}},
		{"statistics", st, []Resource{st, cuda}},
		{"pool", inner, []Resource{inner}},
		{"cuda_async", async, []Resource{async}},
		{"aligned", al, []Resource{al}},
		{"callback", cb, []Resource{cb}},
	} {
		t.Run(c.name, func(t *testing.T) {
			n0, b0 := BaseAllocations()
			pool, err := newPool(r, c.up, PoolOptions{})
			require.NoError(t, err)
			p, err := pool.Allocate(DefaultStream, n, DefaultAlignment)
			require.NoError(t, err)
			assert.Same(t, Resource(pool), chunkHolder(p), "the chunk starts at the block")
			n1, b1 := BaseAllocations()
			if c.name != "pool" {
				assert.Equal(t, n0+1, n1, "the held chunk is still counted")
				assert.GreaterOrEqual(t, b1, b0+n)
			}
			for _, v := range c.via {
				err := v.Deallocate(DefaultStream, p, n, DefaultAlignment)
				requireIs(t, err, ErrInvalidPointer, "freed through ", v.Kind())
				assert.Contains(t, err.Error(), "chunk")
			}
			q, err := c.up.Allocate(DefaultStream, n, DefaultAlignment)
			require.NoError(t, err)
			assert.False(t, q < p+n && p < q+n, "the upstream handed out %#x, inside the pool's chunk at %#x", q, p)
			require.NoError(t, c.up.Deallocate(DefaultStream, q, n, DefaultAlignment))
			require.NoError(t, pool.Deallocate(DefaultStream, p, n, DefaultAlignment))
			require.NoError(t, pool.Close())
			assert.True(t, chunkHolder(p) != Resource(pool), "the closed pool holds nothing")
			n2, b2 := BaseAllocations()
			if c.name != "pool" {
				assert.Equal(t, n0, n2)
				assert.Equal(t, b0, b2)
			}
		})
	}
	// A fixed-size resource whose chunk is one block, and an arena's chunk.
	f, err := newFixedSize(r, cuda, FixedSizeOptions{BlockSize: 64 << 10, BlocksToPreallocate: 1})
	require.NoError(t, err)
	p, err := f.Allocate(DefaultStream, 64<<10, DefaultAlignment)
	require.NoError(t, err)
	if chunkHolder(p) != nil {
		requireIs(t, cuda.Deallocate(DefaultStream, p, 64<<10, DefaultAlignment), ErrInvalidPointer, "fixed_size's chunk")
	}
	require.NoError(t, f.Deallocate(DefaultStream, p, 64<<10, DefaultAlignment))
	require.NoError(t, f.Close())
	a, err := newArena(r, cuda, ArenaOptions{ArenaSize: 4 << 20})
	require.NoError(t, err)
	requireIs(t, cuda.Deallocate(DefaultStream, a.base, a.size, DefaultAlignment), ErrInvalidPointer, "the arena's chunk")
	require.NoError(t, a.Close())
}

// TestPoolGivesBackBeforeOutOfMemory: a pool with no maximum grows until
// its upstream (the device) is full; with every block freed, its free
// memory lies in chunks of the old requests' sizes, none large enough for
// a request of half the device. It failed ("Maximum pool size exceeded")
// until Release; the pool now gives its free chunks back and asks again.
func TestPoolGivesBackBeforeOutOfMemory(t *testing.T) {
	skipOnCUDA(t, "fills the device")
	r := testRuntime(t)
	cuda, err := newCuda(r)
	require.NoError(t, err)
	free, _, err := r.MemGetInfo()
	require.NoError(t, err)
	step := uintptr(free/16) &^ (DefaultAlignment - 1)
	p, err := newPool(r, cuda, PoolOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	var blocks []uintptr
	for len(blocks) < 64 {
		b, err := p.Allocate(DefaultStream, step, DefaultAlignment)
		if err != nil {
			requireIs(t, err, ErrOutOfMemory)
			break
		}
		blocks = append(blocks, b)
	}
	require.Less(t, len(blocks), 64, "the device ran out")
	for _, b := range blocks {
		require.NoError(t, p.Deallocate(DefaultStream, b, step, DefaultAlignment))
	}
	big, err := p.Allocate(DefaultStream, 8*step+256, DefaultAlignment)
	require.NoError(t, err)
	require.NoError(t, p.Deallocate(DefaultStream, big, 8*step+256, DefaultAlignment))
}
