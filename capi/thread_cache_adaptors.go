package main

/*
#include <stdlib.h>
#include "capi_internal.h"
*/
import "C"

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/internal/fastpath"
)

// Adaptors served by the thread cache (docs/thread-cache.md, "Adaptors").
//
// A handle whose resource is a chain of statistics and limiting adaptors
// over a fastpath.Cacheable resource is cached like that resource: its calls
// take blocks from the resource through the handle's own caches, and run
// the adaptors in C on the way (thread_cache.c, "adaptors"). The adaptors'
// state that every call changes lives in C memory from then on, and the
// core adaptors use it there (core.Statistics.UseStore,
// core.Limiting.UseAccount): Go users of the adaptor (its counters, pushes
// and pops, calls that go through Go) see the same numbers whichever side
// counted.

// cacheChain returns the Cacheable resource at the end of res's chain of
// adaptors the C cache can run, and those adaptors as steps for the mirror
// (outermost first); nil when res is no such chain.
func cacheChain(res core.Resource) (fastpath.Cacheable, []C.rmmgo_tc_step) {
	var steps []C.rmmgo_tc_step
	for {
		switch r := res.(type) {
		case fastpath.Cacheable:
			return r, steps
		case *core.Statistics:
			if len(steps) == C.RMMGO_TC_MAX_STEPS {
				return nil, nil
			}
			s := statsStoreOf(r)
			if s == nil {
				return nil, nil
			}
			steps = append(steps, C.rmmgo_tc_step{kind: C.RMMGO_TC_STEP_STATISTICS, state: C.uintptr_t(uintptr(unsafe.Pointer(s.p)))})
			res = r.Upstream()
		case *core.Limiting:
			if len(steps) == C.RMMGO_TC_MAX_STEPS {
				return nil, nil
			}
			a := limitAccountOf(r)
			if a == nil {
				return nil, nil
			}
			steps = append(steps, C.rmmgo_tc_step{
				kind: C.RMMGO_TC_STEP_LIMITING, state: C.uintptr_t(uintptr(unsafe.Pointer(a))),
				limit: C.size_t(r.AllocationLimit()), alignment: C.size_t(r.Alignment()),
			})
			res = r.Upstream()
		default:
			return nil, nil
		}
	}
}

// cStatsStore keeps a statistics adaptor's fastpath.StatisticsHot in C memory,
// under the lock the C side takes (fastpath.StatisticsStore).
type cStatsStore struct{ p *C.rmmgo_tc_stats }

// Update runs fn under the C lock: a spin lock, held by C for a handful of
// additions, by fn for as long.
func (s *cStatsStore) Update(fn func(h *fastpath.StatisticsHot)) {
	l := (*atomic.Uint32)(unsafe.Pointer(&s.p.lock))
	for spins := 0; !l.CompareAndSwap(0, 1); spins++ {
		if spins > 64 {
			runtime.Gosched()
		}
	}
	fn((*fastpath.StatisticsHot)(unsafe.Pointer(&s.p.hot)))
	l.Store(0)
}

// statsStoreOf returns the C store of st, moving its hot part there the
// first time (nil without host memory for it). The C memory goes when st
// does.
func statsStoreOf(st *core.Statistics) *cStatsStore {
	s := &cStatsStore{p: (*C.rmmgo_tc_stats)(C.calloc(1, C.sizeof_rmmgo_tc_stats))}
	if s.p == nil {
		return nil
	}
	got := st.UseStore(s)
	if got != s {
		C.free(unsafe.Pointer(s.p))
		return got.(*cStatsStore)
	}
	runtime.SetFinalizer(s, func(s *cStatsStore) { C.free(unsafe.Pointer(s.p)) })
	return s
}

// cAccount owns a limiting adaptor's account in C memory.
type cAccount struct{ p *C.size_t }

// limitAccountOf returns l's account in C memory, moving it there the
// first time (nil without host memory for it). The C memory goes when l
// does.
func limitAccountOf(l *core.Limiting) *atomic.Uintptr {
	a := &cAccount{p: (*C.size_t)(C.calloc(1, C.sizeof_size_t))}
	if a.p == nil {
		return nil
	}
	mine := (*atomic.Uintptr)(unsafe.Pointer(a.p))
	got := l.UseAccount(mine, a)
	if got != mine {
		C.free(unsafe.Pointer(a.p))
		return got
	}
	runtime.SetFinalizer(a, func(a *cAccount) { C.free(unsafe.Pointer(a.p)) })
	return got
}

// tcHotLayout reports rmmgo_tc_hot's size and its fields' offsets (for the
// test that checks them against fastpath.StatisticsHot).
func tcHotLayout() (uintptr, []uintptr) {
	var h C.rmmgo_tc_hot
	return unsafe.Sizeof(h), []uintptr{
		unsafe.Offsetof(h.bytes_value), unsafe.Offsetof(h.bytes_peak), unsafe.Offsetof(h.bytes_total),
		unsafe.Offsetof(h.count_value), unsafe.Offsetof(h.count_peak), unsafe.Offsetof(h.count_total),
		unsafe.Offsetof(h.out_bytes), unsafe.Offsetof(h.out_count),
	}
}
