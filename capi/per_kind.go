package main

/*
#include "capi_internal.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/cudart"
)

// Calls particular to one kind of resource. Each answers
// RMM_ERROR_INVALID_ARGUMENT when the handle is of another kind. Every one
// is onKind (or getSize, for a size out-parameter) with the kinds it takes
// and what it does.

// outParam names an out-parameter that must not be NULL.
type outParam struct {
	name  string
	isNil bool
}

// onKind is the body of every call below: it recovers panics, refuses a
// NULL out-parameter, looks mr up, checks that its kind is one of kinds
// (and that it has T's methods), and runs do.
func onKind[T any](fn string, mr C.rmm_resource_t, kinds []C.rmm_resource_kind, do func(T, *entry) status, outs ...outParam) (st status) {
	defer recoverTo(fn, &st)
	for _, o := range outs {
		if o.isNil {
			return invalid(fn, "%s is NULL", o.name)
		}
	}
	e, st := lookupFor(fn, mr)
	if st != statusSuccess {
		return st
	}
	if k := kindOf(e.res); k != nil {
		for _, want := range kinds {
			if k.kind == want {
				if v, ok := e.res.(T); ok {
					return do(v, e)
				}
			}
		}
	}
	return invalid(fn, "the resource is a %s resource, not %s", e.res.Kind(), kindsByEnum[kinds[0]].name)
}

// getSize answers a call that writes one size to out.
func getSize[T any](fn string, mr C.rmm_resource_t, kinds []C.rmm_resource_kind, outName string, out *C.size_t, get func(T, *entry) uintptr) status {
	return onKind(fn, mr, kinds, func(v T, e *entry) status {
		*out = C.size_t(get(v, e))
		return statusSuccess
	}, outParam{outName, out == nil})
}

// The kinds each call takes.
var (
	poolKinds       = []C.rmm_resource_kind{C.RMM_RESOURCE_POOL, C.RMM_RESOURCE_EXPANDABLE}
	fixedSizeKinds  = []C.rmm_resource_kind{C.RMM_RESOURCE_FIXED_SIZE}
	binningKinds    = []C.rmm_resource_kind{C.RMM_RESOURCE_BINNING}
	asyncKinds      = []C.rmm_resource_kind{C.RMM_RESOURCE_CUDA_ASYNC, C.RMM_RESOURCE_CUDA_ASYNC_VIEW, C.RMM_RESOURCE_CUDA_ASYNC_MANAGED}
	limitingKinds   = []C.rmm_resource_kind{C.RMM_RESOURCE_LIMITING}
	loggingKinds    = []C.rmm_resource_kind{C.RMM_RESOURCE_LOGGING}
	statisticsKinds = []C.rmm_resource_kind{C.RMM_RESOURCE_STATISTICS}
	trackingKinds   = []C.rmm_resource_kind{C.RMM_RESOURCE_TRACKING}
)

// ---------------------------------------------------------------- pool

type poolResource interface {
	PoolSize() uintptr
	PeakPoolSize() uintptr
	UsedBytes() uintptr
	Release() error
}

//export rmm_pool_size
func rmm_pool_size(mr C.rmm_resource_t, bytes *C.size_t) status {
	return getSize("rmm_pool_size", mr, poolKinds, "bytes", bytes, func(p poolResource, _ *entry) uintptr {
		return p.PoolSize()
	})
}

//export rmm_pool_peak_size
func rmm_pool_peak_size(mr C.rmm_resource_t, bytes *C.size_t) status {
	return getSize("rmm_pool_peak_size", mr, poolKinds, "bytes", bytes, func(p poolResource, _ *entry) uintptr {
		return p.PeakPoolSize()
	})
}

//export rmm_pool_used_bytes
func rmm_pool_used_bytes(mr C.rmm_resource_t, bytes *C.size_t) status {
	// The pool's own count: it leaves out what the thread caches hold (they
	// are attached to it), as for every language.
	return getSize("rmm_pool_used_bytes", mr, poolKinds, "bytes", bytes, func(p poolResource, _ *entry) uintptr {
		return p.UsedBytes()
	})
}

//export rmm_pool_release
func rmm_pool_release(mr C.rmm_resource_t) status {
	const fn = "rmm_pool_release"
	return onKind(fn, mr, poolKinds, func(p poolResource, e *entry) status {
		tcFlush(e.handle) // cached blocks are free: let their chunks go too
		if err := p.Release(); err != nil {
			return fail(fn, err, statusInternal)
		}
		return statusSuccess
	})
}

// ---------------------------------------------------------- fixed_size

//export rmm_fixed_size_block_size
func rmm_fixed_size_block_size(mr C.rmm_resource_t, bytes *C.size_t) status {
	return getSize("rmm_fixed_size_block_size", mr, fixedSizeKinds, "bytes", bytes,
		func(f interface{ BlockSize() uintptr }, _ *entry) uintptr { return f.BlockSize() })
}

// ------------------------------------------------------------- binning

type binningResource interface {
	AddBin(size uintptr, bin core.Resource) error
}

//export rmm_binning_add_bin
func rmm_binning_add_bin(mr C.rmm_resource_t, allocationSize C.size_t, bin C.rmm_resource_t) status {
	fn := fmt.Sprintf("rmm_binning_add_bin(%d bytes)", allocationSize)
	return onKind(fn, mr, binningKinds, func(b binningResource, e *entry) status {
		return addBin(fn, b, e, uintptr(allocationSize), bin)
	})
}

// addBin adds bin (NULL: a new fixed-size resource) to b, whose entry is e.
// core refuses a bin that would make b its own descendant.
func addBin(fn string, b binningResource, e *entry, size uintptr, bin C.rmm_resource_t) status {
	var binRes core.Resource
	var be *entry
	if bin != nil {
		var err error
		if be, err = reg.get(handleValue(bin)); err != nil {
			return fail(fn+": bin", err, statusInvalidHandle)
		}
		if !be.tryRetain() {
			return fail(fn+": bin", fmt.Errorf("%w: released while being added", errInvalidHandle), statusInvalidHandle)
		}
		binRes = be.res
	}
	// A new bin changes which resource serves a size class: no thread may
	// cache for the binning resource meanwhile, and what is cached goes back
	// to the resources it came from first; then the cache serves what the
	// resource's new limits say (core.Binning.CacheLimits: not the sizes of
	// a bin that is an adaptor, which must see every call).
	var err error
	tcWithout(e.handle, func() { err = b.AddBin(size, binRes) })
	if err != nil {
		if be != nil {
			_ = reg.releaseEntry(be)
		}
		return fail(fn, err, statusInternal)
	}
	if be != nil {
		e.addDep(be) // the binning resource holds its bin until it goes
	}
	return statusSuccess
}

// ---------------------------------------------------------- cuda_async

//export rmm_cuda_async_pool_handle
func rmm_cuda_async_pool_handle(mr C.rmm_resource_t, pool *C.rmm_mem_pool_t) status {
	return onKind("rmm_cuda_async_pool_handle", mr, asyncKinds, func(p interface{ PoolHandle() cudart.MemPool }, _ *entry) status {
		*(*C.uintptr_t)(unsafe.Pointer(pool)) = C.uintptr_t(p.PoolHandle())
		return statusSuccess
	}, outParam{"pool", pool == nil})
}

// ------------------------------------------------------------ limiting

type limitingResource interface {
	AllocatedBytes() uintptr
	AllocationLimit() uintptr
}

//export rmm_limiting_allocated_bytes
func rmm_limiting_allocated_bytes(mr C.rmm_resource_t, bytes *C.size_t) status {
	return getSize("rmm_limiting_allocated_bytes", mr, limitingKinds, "bytes", bytes,
		func(l limitingResource, _ *entry) uintptr { return l.AllocatedBytes() })
}

//export rmm_limiting_allocation_limit
func rmm_limiting_allocation_limit(mr C.rmm_resource_t, bytes *C.size_t) status {
	return getSize("rmm_limiting_allocation_limit", mr, limitingKinds, "bytes", bytes,
		func(l limitingResource, _ *entry) uintptr { return l.AllocationLimit() })
}

// ------------------------------------------------------------- logging

type loggingResource interface {
	Flush() error
	FileName() string
}

//export rmm_logging_flush
func rmm_logging_flush(mr C.rmm_resource_t) status {
	const fn = "rmm_logging_flush"
	return onKind(fn, mr, loggingKinds, func(l loggingResource, _ *entry) status {
		if err := l.Flush(); err != nil {
			return fail(fn, err, statusInternal)
		}
		return statusSuccess
	})
}

// copyString copies s into buf as the ..._file_name and ..._report
// functions promise: NUL-terminated, truncated to bufSize, with the full
// length plus one in *needed.
func copyString(fn, s string, buf *C.char, bufSize C.size_t, needed *C.size_t) status {
	if buf == nil && bufSize > 0 {
		return invalid(fn, "buf is NULL but buf_size is %d", bufSize)
	}
	if bufSize > 0 {
		n := min(uintptr(len(s)), uintptr(bufSize)-1)
		dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), n+1)
		copy(dst, s[:n])
		dst[n] = 0
	}
	if needed != nil {
		*needed = C.size_t(len(s) + 1)
	}
	return statusSuccess
}

//export rmm_logging_file_name
func rmm_logging_file_name(mr C.rmm_resource_t, buf *C.char, bufSize C.size_t, needed *C.size_t) status {
	const fn = "rmm_logging_file_name"
	return onKind(fn, mr, loggingKinds, func(l loggingResource, _ *entry) status {
		return copyString(fn, l.FileName(), buf, bufSize, needed)
	})
}

// ---------------------------------------------------------- statistics

type statisticsResource interface {
	Counters() (bytes, count core.Counter)
	PushCounters() (bytes, count core.Counter)
	PopCounters() (bytes, count core.Counter, err error)
}

// statisticsSizeOK applies the struct_size rule (options.c) to the
// caller's rmm_statistics.
func statisticsSizeOK(fn, field string, s *C.rmm_statistics) bool {
	return checkStructSize(fn, field, uintptr(s.struct_size), C.RMMGO_STATISTICS_MIN_SIZE, "set it to sizeof(rmm_statistics)")
}

// putStatistics writes the counters to the caller's struct, as far as its
// struct_size (already checked) reaches.
func putStatistics(out *C.rmm_statistics, bytes, count core.Counter) {
	var s C.rmm_statistics
	s.struct_size = out.struct_size
	s.bytes = C.rmm_counter{value: C.int64_t(bytes.Value), peak: C.int64_t(bytes.Peak), total: C.int64_t(bytes.Total)}
	s.count = C.rmm_counter{value: C.int64_t(count.Value), peak: C.int64_t(count.Peak), total: C.int64_t(count.Total)}
	n := min(uintptr(out.struct_size), unsafe.Sizeof(s))
	copy(unsafe.Slice((*byte)(unsafe.Pointer(out)), n), unsafe.Slice((*byte)(unsafe.Pointer(&s)), n))
}

//export rmm_statistics_get
func rmm_statistics_get(mr C.rmm_resource_t, stats *C.rmm_statistics) status {
	const fn = "rmm_statistics_get"
	return onKind(fn, mr, statisticsKinds, func(s statisticsResource, _ *entry) status {
		if !statisticsSizeOK(fn, "stats->struct_size", stats) {
			return statusInvalidArgument
		}
		b, c := s.Counters()
		putStatistics(stats, b, c)
		return statusSuccess
	}, outParam{"stats", stats == nil})
}

//export rmm_statistics_push
func rmm_statistics_push(mr C.rmm_resource_t, top *C.rmm_statistics) status {
	const fn = "rmm_statistics_push"
	return onKind(fn, mr, statisticsKinds, func(s statisticsResource, _ *entry) status {
		if top != nil && !statisticsSizeOK(fn, "top->struct_size", top) {
			return statusInvalidArgument // checked before the level is pushed
		}
		b, c := s.PushCounters()
		if top != nil {
			putStatistics(top, b, c)
		}
		return statusSuccess
	})
}

//export rmm_statistics_pop
func rmm_statistics_pop(mr C.rmm_resource_t, popped *C.rmm_statistics) status {
	const fn = "rmm_statistics_pop"
	return onKind(fn, mr, statisticsKinds, func(s statisticsResource, _ *entry) status {
		if !statisticsSizeOK(fn, "popped->struct_size", popped) {
			return statusInvalidArgument
		}
		b, c, err := s.PopCounters()
		if err != nil {
			return fail(fn, err, statusOutOfRange)
		}
		putStatistics(popped, b, c)
		return statusSuccess
	}, outParam{"popped", popped == nil})
}

// ------------------------------------------------------------ tracking

type trackingResource interface {
	AllocatedBytes() uintptr
	OutstandingCount() int
	Report() string
}

//export rmm_tracking_allocated_bytes
func rmm_tracking_allocated_bytes(mr C.rmm_resource_t, bytes *C.size_t) status {
	return getSize("rmm_tracking_allocated_bytes", mr, trackingKinds, "bytes", bytes,
		func(t trackingResource, _ *entry) uintptr { return t.AllocatedBytes() })
}

//export rmm_tracking_outstanding_count
func rmm_tracking_outstanding_count(mr C.rmm_resource_t, count *C.size_t) status {
	return getSize("rmm_tracking_outstanding_count", mr, trackingKinds, "count", count,
		func(t trackingResource, _ *entry) uintptr { return uintptr(t.OutstandingCount()) })
}

//export rmm_tracking_report
func rmm_tracking_report(mr C.rmm_resource_t, buf *C.char, bufSize C.size_t, needed *C.size_t) status {
	const fn = "rmm_tracking_report"
	return onKind(fn, mr, trackingKinds, func(t trackingResource, _ *entry) status {
		return copyString(fn, t.Report(), buf, bufSize, needed)
	})
}
