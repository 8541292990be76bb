package core

// Issue 24: frees a hostile caller makes -- an interior pointer off the
// 256-byte grid (offsets 1..255 share the block's index slot), a size of 0
// or another size, an alignment that is not a power of two -- are refused
// by every kind and free nothing: later allocations never overlap the
// block, whose correct free then succeeds once.

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type hostileCase struct {
	name string
	n    uintptr
	// fixed: any size up to the block is the block's (RMM's rule), so a
	// larger wrong size is the only one refused.
	fixed bool
	make  func(t *testing.T, up Resource) Resource
}

func hostileCases() []hostileCase {
	pool := func(t *testing.T, up Resource) Resource {
		p, err := NewPool(up, PoolOptions{InitialSize: 8 << 20})
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		return p
	}
	arena := func(t *testing.T, up Resource) Resource {
		a, err := NewArena(up, ArenaOptions{ArenaSize: 16 << 20})
		require.NoError(t, err)
		t.Cleanup(func() { _ = a.Close() })
		return a
	}
	expandable := func(t *testing.T, up Resource) Resource {
		e, err := NewExpandable(ExpandableOptions{MaximumSize: 64 << 20})
		require.NoError(t, err)
		t.Cleanup(func() { _ = e.Close() })
		return e
	}
	fixed := func(t *testing.T, up Resource) Resource {
		f, err := NewFixedSize(up, FixedSizeOptions{BlockSize: 4096, BlocksToPreallocate: 4})
		require.NoError(t, err)
		t.Cleanup(func() { _ = f.Close() })
		return f
	}
	binning := func(t *testing.T, up Resource) Resource {
		b, err := NewBinning(pool(t, up), 10, 14)
		require.NoError(t, err)
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	over := func(sub func(*testing.T, Resource) Resource, adaptor func(*testing.T, Resource) Resource) func(*testing.T, Resource) Resource {
		return func(t *testing.T, up Resource) Resource { return adaptor(t, sub(t, up)) }
	}
	stats := func(t *testing.T, up Resource) Resource {
		a, err := NewStatistics(up)
		require.NoError(t, err)
		return a
	}
	limiting := func(t *testing.T, up Resource) Resource {
		a, err := NewLimiting(up, 1<<30, 256)
		require.NoError(t, err)
		return a
	}
	tracking := func(t *testing.T, up Resource) Resource {
		a, err := NewTracking(up, false)
		require.NoError(t, err)
		return a
	}
	threadSafe := func(t *testing.T, up Resource) Resource {
		a, err := NewThreadSafe(up)
		require.NoError(t, err)
		return a
	}
	prefetch := func(t *testing.T, up Resource) Resource {
		a, err := NewPrefetch(up)
		require.NoError(t, err)
		return a
	}
	aligned := func(t *testing.T, up Resource) Resource {
		a, err := NewAligned(up, 4096, 0)
		require.NoError(t, err)
		return a
	}
	logging := func(t *testing.T, up Resource) Resource {
		a, err := NewLogging(up, LoggingOptions{Writer: io.Discard})
		require.NoError(t, err)
		return a
	}
	callback := func(t *testing.T, up Resource) Resource {
		c, err := NewCallback(func(n uintptr, s Stream) (uintptr, error) { return up.Allocate(s, n, DefaultAlignment) },
			func(p, n uintptr, s Stream) error { return up.Deallocate(s, p, n, DefaultAlignment) })
		require.NoError(t, err)
		return c
	}
	return []hostileCase{
		{name: "pool", n: 1000, make: pool},
		{name: "callback", n: 1000, make: callback},
		{name: "pool big", n: 3 << 20, make: pool},
		{name: "expandable", n: 1000, make: expandable},
		{name: "arena small", n: 1000, make: arena},
		{name: "arena large", n: 512 << 10, make: arena},
		{name: "fixed_size", n: 1000, fixed: true, make: fixed},
		{name: "binning", n: 1000, fixed: true, make: binning},
		{name: "binning above the bins", n: 64 << 10, make: binning},
		{name: "statistics/pool", n: 1000, make: over(pool, stats)},
		{name: "limiting/arena", n: 512 << 10, make: over(arena, limiting)},
		{name: "tracking/expandable", n: 1000, make: over(expandable, tracking)},
		{name: "thread_safe/fixed_size", n: 1000, fixed: true, make: over(fixed, threadSafe)},
		{name: "prefetch/binning", n: 1000, fixed: true, make: over(binning, prefetch)},
		{name: "aligned/pool", n: 1000, make: over(pool, aligned)},
		{name: "logging/arena", n: 1000, make: over(arena, logging)},
		{name: "statistics/limiting/pool", n: 1000, make: over(over(pool, limiting), stats)},
	}
}

func TestHostileFreesRefused(t *testing.T) {
	for _, c := range hostileCases() {
		t.Run(c.name, func(t *testing.T) {
			r := testRuntime(t)
			up, err := newCuda(r)
			require.NoError(t, err)
			mr := c.make(t, up)
			s := DefaultStream
			p, err := mr.Allocate(s, c.n, DefaultAlignment)
			require.NoError(t, err)
			for _, off := range []uintptr{1, 2, 128, 255} {
				requireIs(t, mr.Deallocate(s, p+off, c.n, DefaultAlignment), ErrInvalidPointer, "p+", off)
				requireIs(t, mr.DeallocateSync(p+off, c.n, DefaultAlignment), ErrInvalidPointer, "sync p+", off)
			}
			err = mr.Deallocate(s, p, 0, DefaultAlignment)
			requireIs(t, err, ErrInvalidArgument, "size 0")
			assert.Contains(t, err.Error(), "size 0")
			requireIs(t, mr.DeallocateSync(p, 0, DefaultAlignment), ErrInvalidArgument, "sync size 0")
			requireIs(t, mr.Deallocate(s, p, c.n, 3), ErrBadAlignment, "alignment 3")
			if !c.fixed {
				assert.True(t, errIsAny(mr.Deallocate(s, p, 2*c.n+4096, DefaultAlignment), ErrInvalidArgument, ErrInvalidPointer), "a larger size")
			}
			require.NoError(t, mr.Deallocate(s, 0, 0, DefaultAlignment), "NULL, 0")
			var qs []uintptr
			for range 3 {
				q, err := mr.Allocate(s, c.n, DefaultAlignment)
				require.NoError(t, err)
				require.Zero(t, q&255, "aligned")
				require.True(t, q+c.n <= p || p+c.n <= q, "%#x overlaps the live block %#x", q, p)
				qs = append(qs, q)
			}
			for _, q := range qs {
				require.NoError(t, mr.Deallocate(s, q, c.n, DefaultAlignment))
			}
			require.NoError(t, mr.Deallocate(s, p, c.n, DefaultAlignment), "the correct free")
			assert.Error(t, mr.Deallocate(s, p, c.n, DefaultAlignment), "twice")
			if st, ok := mr.(*Statistics); ok {
				b, n := st.Counters()
				assert.Zero(t, b.Value)
				assert.Zero(t, n.Value)
			}
			require.NoError(t, r.StreamSynchronize(s))
		})
	}
}

// TestBaseRefusesBadAlignmentOnFree: base resources, and adaptors over them,
// refuse a free with an alignment that is not a power of two, as they
// refuse the allocation, and free nothing.
func TestBaseRefusesBadAlignmentOnFree(t *testing.T) {
	for _, c := range baseCases {
		t.Run(c.kind, func(t *testing.T) {
			r := c.runtimeFor(t)
			mr := c.build(t, r)
			st, err := NewStatistics(mr)
			require.NoError(t, err)
			for _, res := range []Resource{mr, st} {
				p, err := res.AllocateSync(4096, DefaultAlignment)
				require.NoError(t, err)
				for _, a := range []uintptr{3, 0, 768} {
					requireIs(t, res.Deallocate(DefaultStream, p, 4096, a), ErrBadAlignment, res.Kind(), " alignment ", a)
					requireIs(t, res.DeallocateSync(p, 4096, a), ErrBadAlignment, res.Kind(), " sync alignment ", a)
				}
				require.NoError(t, res.DeallocateSync(p, 4096, DefaultAlignment))
			}
		})
	}
}

// TestStatisticsZeroBytes: a zero-byte allocation counts as RMM counts it
// (one allocation of 0 bytes); a free of size 0 uncounts one of those only,
// never an allocation of another size, whose own free would then be
// refused and leak.
func TestStatisticsZeroBytes(t *testing.T) {
	r := testRuntime(t)
	up, err := newCuda(r)
	require.NoError(t, err)
	pool, err := NewPool(up, PoolOptions{InitialSize: 1 << 20})
	require.NoError(t, err)
	defer pool.Close()
	st, err := NewStatistics(pool)
	require.NoError(t, err)
	z, err := st.Allocate(DefaultStream, 0, DefaultAlignment)
	require.NoError(t, err)
	require.Zero(t, z)
	assert.EqualValues(t, 1, count(st))
	p, err := st.Allocate(DefaultStream, 1000, DefaultAlignment)
	require.NoError(t, err)
	requireIs(t, st.Deallocate(DefaultStream, p, 0, DefaultAlignment), ErrInvalidArgument)
	assert.EqualValues(t, 2, count(st), "the refused free uncounted nothing")
	require.NoError(t, st.Deallocate(DefaultStream, 0, 0, DefaultAlignment))
	assert.EqualValues(t, 1, count(st), "(NULL, 0) uncounts the zero-byte allocation")
	require.NoError(t, st.Deallocate(DefaultStream, 0, 0, DefaultAlignment))
	assert.EqualValues(t, 1, count(st), "with none outstanding, (NULL, 0) uncounts nothing")
	assert.EqualValues(t, 1000, bytesOf(st))
	require.NoError(t, st.Deallocate(DefaultStream, p, 1000, DefaultAlignment))
	assert.Zero(t, count(st))
	assert.Zero(t, bytesOf(st))
}

func count(st *Statistics) int64   { _, n := st.Counters(); return n.Value }
func bytesOf(st *Statistics) int64 { b, _ := st.Counters(); return b.Value }
