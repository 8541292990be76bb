package core

// Frees checked next to the call they guard: base resources refuse memory
// they did not hand out and sizes they did not hand out, and adaptors leave
// their counters, accounts, logs and records alone when their upstream
// refuses a free (see live_table.go).

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core/eventlog"
	"github.com/rmmgo/rmmgo/core/internal/addr"
	"github.com/rmmgo/rmmgo/cudart"
)

// foreignMemory returns memory of the kind case c's resource hands out,
// allocated behind the resource's back (straight from the runtime or the C
// heap), and a function that frees it the same way.
func foreignMemory(t *testing.T, c baseCase, r cudart.Runtime, mr Resource, n uintptr) (uintptr, func()) {
	t.Helper()
	var p uintptr
	var err error
	var free func() error
	switch c.kind {
	case kindCuda:
		p, err = r.Malloc(n)
		free = func() error { return r.Free(p) }
	case kindManaged:
		p, err = r.MallocManaged(n, cudart.MemAttachGlobal)
		free = func() error { return r.Free(p) }
	case kindPinnedHost:
		p, err = r.HostAlloc(n, cudart.HostAllocDefault)
		free = func() error { return r.FreeHost(p) }
	case kindSystem, kindSAMHeadroom:
		buf := make([]byte, n+DefaultAlignment)
		p, _ = addr.AlignUp(uintptr(unsafe.Pointer(&buf[0])), DefaultAlignment)
		t.Cleanup(func() { _ = buf[0] })
		free = func() error { return nil }
	default: // the pool-based kinds: from the resource's pool, directly
		pool := mr.(asyncPooled).asyncPool()
		p, err = r.MallocFromPoolAsync(n, pool, DefaultStream)
		free = func() error {
			if err := r.FreeAsync(p, DefaultStream); err != nil {
				return err
			}
			return r.StreamSynchronize(DefaultStream)
		}
	}
	require.NoError(t, err, "foreign memory for %s", c.kind)
	require.NoError(t, r.StreamSynchronize(DefaultStream))
	return p, func() { require.NoError(t, free(), "freeing the foreign memory") }
}

// TestBaseResourceRefusesForeignMemory: memory of the right kind that the
// resource did not hand out is refused, and stays usable.
func TestBaseResourceRefusesForeignMemory(t *testing.T) {
	for _, c := range baseCases {
		t.Run(c.kind, func(t *testing.T) {
			r := c.runtimeFor(t)
			mr := c.build(t, r)
			p, free := foreignMemory(t, c, r, mr, 4096)
			err := mr.Deallocate(DefaultStream, p, 4096, DefaultAlignment)
			requireIs(t, err, ErrInvalidPointer, "foreign memory")
			assert.Contains(t, err.Error(), c.kind)
			err = mr.DeallocateSync(p, 4096, DefaultAlignment)
			requireIs(t, err, ErrInvalidPointer, "foreign memory, sync")
			if c.kind != kindSystem && c.kind != kindSAMHeadroom {
				fillAndCheck(t, r, p, 4096, 0x42, DefaultStream) // not freed
			}
			free()
		})
	}
}

// TestBaseResourceRefusesWrongSize: a free with another size than was
// allocated is refused with ErrInvalidArgument and frees nothing; the right
// size then frees it.
func TestBaseResourceRefusesWrongSize(t *testing.T) {
	for _, c := range baseCases {
		t.Run(c.kind, func(t *testing.T) {
			r := c.runtimeFor(t)
			mr := c.build(t, r)
			const n = 5000
			p, err := mr.AllocateSync(n, DefaultAlignment)
			require.NoError(t, err)
			for _, wrong := range []uintptr{1, n - 1, n + 1, 8192, 1 << 20} {
				err := mr.Deallocate(DefaultStream, p, wrong, DefaultAlignment)
				requireIs(t, err, ErrInvalidArgument, "size ", wrong)
				assert.Contains(t, err.Error(), "5000")
				err = mr.DeallocateSync(p, wrong, DefaultAlignment)
				requireIs(t, err, ErrInvalidArgument, "sync, size ", wrong)
			}
			fillAndCheck(t, r, p, n, 0x5D, DefaultStream) // still allocated
			require.NoError(t, mr.DeallocateSync(p, n, DefaultAlignment))
			requireIs(t, mr.DeallocateSync(p, n, DefaultAlignment), ErrInvalidPointer, "then freed")
		})
	}
}

// TestBaseResourceKindsDoNotMix: cudaFree frees managed memory as well as
// device memory, and pool memory at once; a cuda resource must refuse all
// of them, as a managed resource refuses device memory.
func TestBaseResourceKindsDoNotMix(t *testing.T) {
	r := testRuntime(t)
	cuda, err := newCuda(r)
	require.NoError(t, err)
	managed, err := newManaged(r)
	require.NoError(t, err)
	async := baseCases[5].build(t, r)
	require.Equal(t, kindCudaAsync, async.Kind())

	m, err := managed.AllocateSync(4096, DefaultAlignment)
	require.NoError(t, err)
	requireIs(t, cuda.DeallocateSync(m, 4096, DefaultAlignment), ErrInvalidPointer, "managed memory through cuda")
	d, err := cuda.AllocateSync(4096, DefaultAlignment)
	require.NoError(t, err)
	requireIs(t, managed.DeallocateSync(d, 4096, DefaultAlignment), ErrInvalidPointer, "device memory through managed")
	a, err := async.AllocateSync(4096, DefaultAlignment)
	require.NoError(t, err)
	requireIs(t, cuda.DeallocateSync(a, 4096, DefaultAlignment), ErrInvalidPointer, "pool memory through cuda")
	requireIs(t, async.DeallocateSync(d, 4096, DefaultAlignment), ErrInvalidPointer, "device memory through cuda_async")

	fillAndCheck(t, r, m, 4096, 1, DefaultStream)
	fillAndCheck(t, r, d, 4096, 2, DefaultStream)
	fillAndCheck(t, r, a, 4096, 3, DefaultStream)
	require.NoError(t, managed.DeallocateSync(m, 4096, DefaultAlignment))
	require.NoError(t, cuda.DeallocateSync(d, 4096, DefaultAlignment))
	require.NoError(t, async.DeallocateSync(a, 4096, DefaultAlignment))
}

// TestBaseResourceEqualInstancesShareRecords: memory may be freed by any
// resource equal to the one that allocated it, and by no other.
func TestBaseResourceEqualInstancesShareRecords(t *testing.T) {
	r := testRuntime(t)
	for _, c := range baseCases {
		t.Run(c.kind, func(t *testing.T) {
			r := c.runtimeFor(t)
			a, b := c.build(t, r), c.build(t, r)
			p, err := a.AllocateSync(4096, DefaultAlignment)
			require.NoError(t, err)
			if a.Equal(b) {
				require.NoError(t, b.DeallocateSync(p, 4096, DefaultAlignment), "equal resources free each other's memory")
				return
			}
			requireIs(t, b.DeallocateSync(p, 4096, DefaultAlignment), ErrInvalidPointer, "another pool")
			require.NoError(t, a.DeallocateSync(p, 4096, DefaultAlignment))
		})
	}
	t.Run("view and owner", func(t *testing.T) {
		owner, err := newCudaAsync(r, CudaAsyncOptions{})
		require.NoError(t, err)
		defer func() { require.NoError(t, owner.Close()) }()
		view, err := newCudaAsyncView(r, owner.PoolHandle())
		require.NoError(t, err)
		p, err := owner.AllocateSync(4096, DefaultAlignment)
		require.NoError(t, err)
		require.NoError(t, view.DeallocateSync(p, 4096, DefaultAlignment))
		p, err = view.AllocateSync(4096, DefaultAlignment)
		require.NoError(t, err)
		require.NoError(t, owner.DeallocateSync(p, 4096, DefaultAlignment))
	})
	t.Run("sam_headroom with another headroom", func(t *testing.T) {
		r := pageableRuntime(t)
		a, err := newSAMHeadroom(r, 1<<20)
		require.NoError(t, err)
		b, err := newSAMHeadroom(r, 2<<20)
		require.NoError(t, err)
		sys, err := newSystem(r)
		require.NoError(t, err)
		p, err := a.AllocateSync(4096, DefaultAlignment)
		require.NoError(t, err)
		requireIs(t, b.DeallocateSync(p, 4096, DefaultAlignment), ErrInvalidPointer)
		requireIs(t, sys.DeallocateSync(p, 4096, DefaultAlignment), ErrInvalidPointer)
		require.NoError(t, a.DeallocateSync(p, 4096, DefaultAlignment))
	})
	t.Run("closed cuda_async", func(t *testing.T) {
		c, err := newCudaAsync(r, CudaAsyncOptions{})
		require.NoError(t, err)
		p, err := c.AllocateSync(4096, DefaultAlignment)
		require.NoError(t, err)
		require.NoError(t, c.Close())
		// Close gave the outstanding block back (see CudaAsync.Close), so
		// its record is gone and a later free is refused, not freed twice.
		assert.False(t, asyncLive.has(p), "Close gives back what is outstanding")
		requireIs(t, c.DeallocateSync(p, 4096, DefaultAlignment), ErrClosed)
	})
}

// TestPoolBlockFreedThroughUpstream is the bug this file began with: a
// pool's block handed to the pool's upstream (cuda) was freed by cudaFree,
// taking the whole chunk away from under the pool, and the next
// allocations from the two overlapped.
func TestPoolBlockFreedThroughUpstream(t *testing.T) {
	r := testRuntime(t)
	cuda, err := newCuda(r)
	require.NoError(t, err)
	pool, err := newPool(r, cuda, PoolOptions{InitialSize: 1 << 20})
	require.NoError(t, err)
	defer func() { require.NoError(t, pool.Close()) }()

	blocks := make([]uintptr, 4)
	for i := range blocks {
		blocks[i], err = pool.AllocateSync(4096, DefaultAlignment)
		require.NoError(t, err)
	}
	for _, b := range blocks {
		err := cuda.DeallocateSync(b, 4096, DefaultAlignment)
		require.Error(t, err, "a pool block freed through the pool's upstream")
		assert.True(t, errIsAny(err, ErrInvalidPointer, ErrInvalidArgument), "%v", err)
	}
	// Nothing was freed: fresh memory from cuda does not overlap the pool.
	d, err := cuda.AllocateSync(1<<20, DefaultAlignment)
	require.NoError(t, err)
	lo, hi := blocks[0], blocks[0]
	for _, b := range blocks {
		lo, hi = min(lo, b), max(hi, b+4096)
	}
	assert.False(t, d < hi && lo < d+1<<20, "cuda handed out [%#x,+1 MiB), which overlaps the pool's blocks in [%#x,%#x)", d, lo, hi)
	for i, b := range blocks {
		fillAndCheck(t, r, b, 4096, byte(0x30+i), DefaultStream)
	}
	fillAndCheck(t, r, d, 1<<20, 0x99, DefaultStream)
	for i, b := range blocks {
		require.NoError(t, expect(r, b, 4096, byte(0x30+i), DefaultStream))
		require.NoError(t, pool.DeallocateSync(b, 4096, DefaultAlignment))
	}
	require.NoError(t, cuda.DeallocateSync(d, 1<<20, DefaultAlignment))
}

// errIsAny reports whether err wraps one of targets.
func errIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// TestStatisticsRefusedFree: a free its upstream refuses leaves every
// counter as it was. A free of more than went out through the adaptor is
// the upstream's to decide (RMM's NegativeInnerTracking: memory allocated
// through another adaptor over the same upstream, freed through this one):
// cuda frees its own memory, and the counters go below zero as RMM's do.
func TestStatisticsRefusedFree(t *testing.T) {
	r := testRuntime(t)
	cuda, err := newCuda(r)
	require.NoError(t, err)
	st, err := NewStatistics(cuda)
	require.NoError(t, err)

	other, err := cuda.AllocateSync(4096, DefaultAlignment) // not through st
	require.NoError(t, err)
	stray, err := r.Malloc(4096) // no resource's
	require.NoError(t, err)
	requireIs(t, st.DeallocateSync(stray, 4096, DefaultAlignment), ErrInvalidPointer, "nothing outstanding through st, refused by cuda")
	b, c := st.Counters()
	assert.Equal(t, Counter{}, b)
	assert.Equal(t, Counter{}, c)
	require.NoError(t, st.DeallocateSync(other, 4096, DefaultAlignment), "cuda's own memory, through st")
	require.False(t, cudaLive.has(other), "the upstream freed it")
	b, c = st.Counters()
	assert.Equal(t, Counter{Value: -4096}, b)
	assert.Equal(t, Counter{Value: -1}, c)
	requireIs(t, st.DeallocateSync(other, 4096, DefaultAlignment), ErrInvalidPointer, "a second free, refused by cuda")
	b, _ = st.Counters()
	assert.Equal(t, int64(-4096), b.Value)
	require.NoError(t, r.Free(stray))
	st, err = NewStatistics(cuda)
	require.NoError(t, err)

	p, err := st.AllocateSync(4096, DefaultAlignment)
	require.NoError(t, err)
	foreign, err := r.Malloc(4096)
	require.NoError(t, err)
	requireIs(t, st.Deallocate(DefaultStream, foreign, 4096, DefaultAlignment), ErrInvalidPointer, "refused by cuda")
	requireIs(t, st.DeallocateSync(p, 100, DefaultAlignment), ErrInvalidArgument, "wrong size, refused by cuda")
	b, c = st.Counters()
	assert.Equal(t, Counter{Value: 4096, Peak: 4096, Total: 4096}, b)
	assert.Equal(t, Counter{Value: 1, Peak: 1, Total: 1}, c)

	// Pushed levels may go negative (memory allocated before the push);
	// the guard looks at every level together.
	st.PushCounters()
	require.NoError(t, st.DeallocateSync(p, 4096, DefaultAlignment))
	b, c = st.Counters()
	assert.Equal(t, int64(-4096), b.Value)
	assert.Equal(t, int64(-1), c.Value)
	requireIs(t, st.DeallocateSync(p, 4096, DefaultAlignment), ErrInvalidPointer, "freed already: refused by cuda")
	b, _ = st.Counters()
	assert.Equal(t, int64(-4096), b.Value)
	_, _, err = st.PopCounters()
	require.NoError(t, err)
	b, c = st.Counters()
	assert.Zero(t, b.Value)
	assert.Zero(t, c.Value)

	require.NoError(t, st.DeallocateSync(0, 0, DefaultAlignment), "a zero free is a no-op")
	_, c = st.Counters()
	assert.Zero(t, c.Value)
	require.NoError(t, r.Free(foreign))
}

// TestLimitingRefusedFree: the limiting adaptor's account is not lowered by
// a free it cannot have handed out or its upstream refused, so its limit
// still holds.
func TestLimitingRefusedFree(t *testing.T) {
	r := testRuntime(t)
	cuda, err := newCuda(r)
	require.NoError(t, err)
	lim, err := NewLimiting(cuda, 8192, DefaultAlignment)
	require.NoError(t, err)

	other, err := cuda.AllocateSync(4096, DefaultAlignment)
	require.NoError(t, err)
	requireIs(t, lim.DeallocateSync(other, 4096, DefaultAlignment), ErrInvalidPointer, "nothing charged")
	require.True(t, cudaLive.has(other), "the upstream was not asked to free it")

	p, err := lim.AllocateSync(8192, DefaultAlignment)
	require.NoError(t, err)
	foreign, err := r.Malloc(4096)
	require.NoError(t, err)
	requireIs(t, lim.DeallocateSync(foreign, 4096, DefaultAlignment), ErrInvalidPointer)
	requireIs(t, lim.DeallocateSync(p, 4096, DefaultAlignment), ErrInvalidArgument)
	assert.Equal(t, uintptr(8192), lim.AllocatedBytes())
	_, err = lim.AllocateSync(256, DefaultAlignment)
	requireIs(t, err, ErrOutOfMemory, "the limit still holds")
	require.NoError(t, lim.DeallocateSync(p, 8192, DefaultAlignment))
	assert.Zero(t, lim.AllocatedBytes())
	require.NoError(t, r.Free(foreign))
}

// TestTrackingRefusedFree: a free the upstream refuses leaves the tracked
// allocations and the mismatch record as they were.
func TestTrackingRefusedFree(t *testing.T) {
	r := testRuntime(t)
	cuda, err := newCuda(r)
	require.NoError(t, err)
	tr, err := NewTracking(cuda, false)
	require.NoError(t, err)
	p, err := tr.AllocateSync(4096, DefaultAlignment)
	require.NoError(t, err)
	foreign, err := r.Malloc(4096)
	require.NoError(t, err)
	requireIs(t, tr.DeallocateSync(foreign, 4096, DefaultAlignment), ErrInvalidPointer)
	requireIs(t, tr.DeallocateSync(p, 100, DefaultAlignment), ErrInvalidArgument)
	assert.Equal(t, uintptr(4096), tr.AllocatedBytes())
	assert.Equal(t, 1, tr.OutstandingCount())
	ms, n := tr.Mismatches()
	assert.Empty(t, ms)
	assert.Zero(t, n)
	assert.NotContains(t, tr.Report(), "Mismatched")
	require.NoError(t, tr.DeallocateSync(p, 4096, DefaultAlignment))
	assert.Zero(t, tr.OutstandingCount())
	require.NoError(t, r.Free(foreign))
}

// TestLoggingRefusedFree: a free the upstream refuses writes no row, and the
// rows around it keep their order.
func TestLoggingRefusedFree(t *testing.T) {
	r := testRuntime(t)
	cuda, err := newCuda(r)
	require.NoError(t, err)
	var buf bytes.Buffer
	lg, err := NewLogging(cuda, LoggingOptions{Writer: &buf})
	require.NoError(t, err)
	p, err := lg.AllocateSync(4096, DefaultAlignment)
	require.NoError(t, err)
	foreign, err := r.Malloc(4096)
	require.NoError(t, err)
	requireIs(t, lg.DeallocateSync(foreign, 4096, DefaultAlignment), ErrInvalidPointer)
	requireIs(t, lg.DeallocateSync(p, 100, DefaultAlignment), ErrInvalidArgument)
	require.NoError(t, lg.DeallocateSync(p, 4096, DefaultAlignment))
	require.NoError(t, lg.Close())
	events, err := eventlog.Read(strings.NewReader(buf.String()))
	require.NoError(t, err)
	require.Len(t, events, 2, "%s", buf.String())
	assert.Equal(t, eventlog.ActionAllocate, events[0].Action)
	assert.Equal(t, eventlog.ActionFree, events[1].Action)
	assert.Equal(t, p, events[1].Pointer)
	assert.Equal(t, uintptr(4096), events[1].Size)
	require.NoError(t, r.Free(foreign))
}

// TestAlignedRefusedFree: an over-aligned allocation whose free the
// upstream refuses (a wrong size reaches it as a wrong over-allocation)
// stays known to the adaptor and can be freed right afterwards.
func TestAlignedRefusedFree(t *testing.T) {
	r := testRuntime(t)
	cuda, err := newCuda(r)
	require.NoError(t, err)
	al, err := NewAligned(cuda, 4096, 0)
	require.NoError(t, err)
	p, err := al.AllocateSync(10000, DefaultAlignment)
	require.NoError(t, err)
	requireIs(t, al.DeallocateSync(p, 20000, DefaultAlignment), ErrInvalidArgument)
	require.NoError(t, al.DeallocateSync(p, 10000, DefaultAlignment))
}

// TestBaseAllocationsCountsWhatIsLive: BaseAllocations goes up by what base
// resources hand out, and back when it is freed, also through a
// sub-allocator over them once it is closed.
func TestBaseAllocationsCountsWhatIsLive(t *testing.T) {
	n0, b0 := BaseAllocations()
	c, err := NewCuda()
	require.NoError(t, err)
	p, err := c.Allocate(DefaultStream, 1000, DefaultAlignment)
	require.NoError(t, err)
	n, b := BaseAllocations()
	assert.Equal(t, n0+1, n)
	assert.Equal(t, b0+1000, b)
	pool, err := NewPool(c, PoolOptions{InitialSize: 1 << 20})
	require.NoError(t, err)
	q, err := pool.Allocate(DefaultStream, 256, DefaultAlignment)
	require.NoError(t, err)
	n, b = BaseAllocations()
	assert.Equal(t, n0+2, n, "the pool's chunk")
	assert.Equal(t, b0+1000+1<<20, b)
	require.NoError(t, pool.Deallocate(DefaultStream, q, 256, DefaultAlignment))
	require.NoError(t, pool.Close())
	require.NoError(t, c.Deallocate(DefaultStream, p, 1000, DefaultAlignment))
	n, b = BaseAllocations()
	assert.Equal(t, n0, n)
	assert.Equal(t, b0, b)
}
