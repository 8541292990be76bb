package main

import (
	"errors"
	"math/rand"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/internal/fastpath"
)

// TestThreadCacheAdaptorLayout: C's rmmgo_tc_hot is fastpath.StatisticsHot.
func TestThreadCacheAdaptorLayout(t *testing.T) {
	size, offs := tcHotLayout()
	var h fastpath.StatisticsHot
	assert.Equal(t, unsafe.Sizeof(h), size)
	assert.Equal(t, []uintptr{
		unsafe.Offsetof(h.Bytes) + unsafe.Offsetof(h.Bytes.Value), unsafe.Offsetof(h.Bytes) + unsafe.Offsetof(h.Bytes.Peak),
		unsafe.Offsetof(h.Bytes) + unsafe.Offsetof(h.Bytes.Total), unsafe.Offsetof(h.Count) + unsafe.Offsetof(h.Count.Value),
		unsafe.Offsetof(h.Count) + unsafe.Offsetof(h.Count.Peak), unsafe.Offsetof(h.Count) + unsafe.Offsetof(h.Count.Total),
		unsafe.Offsetof(h.OutBytes), unsafe.Offsetof(h.OutCount),
	}, offs)
}

// adaptorTwin is a chain limiting(statistics(pool)) served from C through
// its handle, and the same chain over another pool used from Go only, fed
// the same calls.
type adaptorTwin struct {
	t                *testing.T
	cStats, goStats  *core.Statistics
	cLimit, goLimit  *core.Limiting
	handle           uintptr
	goRes            core.Resource
	cLive, goLive    []uintptr
	sizes            []uintptr
	cRefused, goRefd int
}

func newAdaptorTwin(t *testing.T) *adaptorTwin {
	tw := &adaptorTwin{t: t}
	mk := func() (*core.Pool, *core.Statistics, *core.Limiting) {
		cuda, err := core.NewCuda()
		require.NoError(t, err)
		pool, err := core.NewPool(cuda, core.PoolOptions{InitialSize: 64 << 20})
		require.NoError(t, err)
		st, err := core.NewStatistics(pool)
		require.NoError(t, err)
		l, err := core.NewLimiting(st, 160<<20, 4096)
		require.NoError(t, err)
		return pool, st, l
	}
	var cPool, goPool *core.Pool
	cPool, tw.cStats, tw.cLimit = mk()
	goPool, tw.goStats, tw.goLimit = mk()
	e, err := reg.add(tw.cLimit, false, 0, nil)
	require.NoError(t, err)
	tw.handle = e.handle
	f := tcFrontOf(e.handle)
	require.NotNil(t, f, "limiting(statistics(pool)) is served from C")
	require.Len(t, f.steps, 2)
	tw.goRes = tw.goLimit
	t.Cleanup(func() {
		require.NoError(t, reg.release(tw.handle))
		require.NoError(t, cPool.Close())
		require.NoError(t, goPool.Close())
	})
	return tw
}

// alloc allocates n bytes with alignment a on both.
func (tw *adaptorTwin) alloc(n, a uintptr) {
	var p unsafe.Pointer
	cst := rmm_allocate(toHandle(tw.handle), nil, cSize(uint64(n)), cSize(uint64(a)), &p)
	q, gerr := tw.goRes.Allocate(core.DefaultStream, n, a)
	require.Equal(tw.t, cst == statusSuccess, gerr == nil, "C %s / Go %v", lastMessage(), gerr)
	if gerr != nil {
		if errors.Is(gerr, core.ErrBadAlignment) {
			require.Equal(tw.t, statusBadAlignment, cst, "%s", lastMessage())
			return
		}
		require.ErrorIs(tw.t, gerr, core.ErrOutOfMemory)
		require.Equal(tw.t, statusOutOfMemory, cst, "%s", lastMessage())
		tw.cRefused++
		tw.goRefd++
		return
	}
	tw.cLive = append(tw.cLive, uintptr(p))
	tw.goLive = append(tw.goLive, q)
	tw.sizes = append(tw.sizes, n)
}

// free frees the i-th live allocation on both, with its size plus extra.
func (tw *adaptorTwin) free(i int) {
	n := tw.sizes[i]
	require.Equal(tw.t, statusSuccess, deallocateAt(toHandle(tw.handle), tw.cLive[i], uint64(n)), lastMessage())
	require.NoError(tw.t, tw.goRes.Deallocate(core.DefaultStream, tw.goLive[i], n, 256))
	last := len(tw.sizes) - 1
	tw.cLive[i], tw.goLive[i], tw.sizes[i] = tw.cLive[last], tw.goLive[last], tw.sizes[last]
	tw.cLive, tw.goLive, tw.sizes = tw.cLive[:last], tw.goLive[:last], tw.sizes[:last]
}

func (tw *adaptorTwin) same(what string) {
	cb, cc := tw.cStats.Counters()
	gb, gc := tw.goStats.Counters()
	require.Equal(tw.t, gb, cb, "%s: bytes", what)
	require.Equal(tw.t, gc, cc, "%s: count", what)
	require.Equal(tw.t, tw.goStats.Depth(), tw.cStats.Depth(), what)
	require.Equal(tw.t, tw.goLimit.AllocatedBytes(), tw.cLimit.AllocatedBytes(), "%s: limiting's account", what)
}

// TestThreadCacheAdaptorsCountAsGo: statistics and limiting adaptors run in
// C give the numbers the same adaptors give from Go, for the same calls:
// cached ones, ones that go through Go (too large for the cache), ones the
// pool refuses, refusals at the limit, pushes and pops.
func TestThreadCacheAdaptorsCountAsGo(t *testing.T) {
	requireCache(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tw := newAdaptorTwin(t)
	rng := rand.New(rand.NewSource(7))
	for step := 0; step < 6000; step++ {
		switch r := rng.Intn(100); {
		case r < 2:
			cb, cc := tw.cStats.PushCounters()
			gb, gc := tw.goStats.PushCounters()
			require.Equal(t, gb, cb)
			require.Equal(t, gc, cc)
		case r < 4:
			cb, cc, cerr := tw.cStats.PopCounters()
			gb, gc, gerr := tw.goStats.PopCounters()
			require.Equal(t, gerr == nil, cerr == nil)
			require.Equal(t, gb, cb)
			require.Equal(t, gc, cc)
		case r < 55 || len(tw.sizes) == 0:
			n := uintptr(1 + rng.Intn(600<<10))
			a := uintptr(256)
			switch rng.Intn(100) {
			case 0:
				n = 65 << 20 // not cached: through Go, into the same counters
			case 1:
				a = 512 // refused by the pool, counted by neither
			}
			tw.alloc(n, a)
		default:
			tw.free(rng.Intn(len(tw.sizes)))
		}
		if step%97 == 0 {
			tw.same("step")
		}
	}
	assert.Positive(t, tw.cRefused, "the limit refused some")
	for len(tw.sizes) > 0 {
		tw.free(len(tw.sizes) - 1)
	}
	tw.same("end")
	_, cc := tw.cStats.Counters()
	assert.Positive(t, cc.Total)
}

// TestThreadCacheAdaptorsThreads: many threads through one C-served
// statistics adaptor: every call counted once, nothing lost.
func TestThreadCacheAdaptorsThreads(t *testing.T) {
	requireCache(t)
	pool, pe := newPoolEntry(t, 64<<20, 0)
	defer reg.release(pe.handle)
	st, err := core.NewStatistics(pool)
	require.NoError(t, err)
	se, err := reg.add(st, false, 0, nil)
	require.NoError(t, err)
	defer reg.release(se.handle)
	h := toHandle(se.handle)
	const threads, ops = 8, 3000
	var wg sync.WaitGroup
	for w := 0; w < threads; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			rng := rand.New(rand.NewSource(int64(w)))
			var ps []unsafe.Pointer
			var ns []uint64
			for i := 0; i < ops; i++ {
				if len(ps) > 0 && rng.Intn(2) == 0 {
					k := rng.Intn(len(ps))
					if st := rmm_deallocate(h, nil, ps[k], cSize(ns[k]), 256); st != statusSuccess {
						t.Errorf("deallocate: %s", lastMessage())
					}
					ps[k], ns[k] = ps[len(ps)-1], ns[len(ns)-1]
					ps, ns = ps[:len(ps)-1], ns[:len(ns)-1]
					continue
				}
				n := uint64(1 + rng.Intn(64<<10))
				var p unsafe.Pointer
				if st := rmm_allocate(h, nil, cSize(n), 256, &p); st != statusSuccess {
					t.Errorf("allocate: %s", lastMessage())
					return
				}
				ps, ns = append(ps, p), append(ns, n)
			}
			for k := range ps {
				if st := rmm_deallocate(h, nil, ps[k], cSize(ns[k]), 256); st != statusSuccess {
					t.Errorf("deallocate: %s", lastMessage())
				}
			}
		}(w)
	}
	wg.Wait()
	bytes, count := st.Counters()
	assert.Zero(t, bytes.Value)
	assert.Zero(t, count.Value)
	assert.Positive(t, count.Peak)
	assert.LessOrEqual(t, count.Peak, int64(threads*ops))
	assert.Zero(t, pool.UsedBytes())
}
