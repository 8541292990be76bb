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
// RMM_ERROR_INVALID_ARGUMENT when the handle is of another kind.

// asKind looks mr up and checks that it is of one of kinds and has the
// methods of T.
func asKind[T any](fn string, mr C.rmm_resource_t, kinds ...string) (T, *entry, status) {
	var zero T
	e, st := lookupFor(fn, mr)
	if st != statusSuccess {
		return zero, nil, st
	}
	k := e.res.Kind()
	for _, want := range kinds {
		if k == want {
			if v, ok := e.res.(T); ok {
				return v, e, statusSuccess
			}
		}
	}
	return zero, nil, invalid(fn, "the resource is a %s resource, not %s", k, kinds[0])
}

// putSize writes v to the out-parameter out.
func putSize(fn string, out *C.size_t, v uintptr) status {
	*out = C.size_t(v)
	return statusSuccess
}

// ---------------------------------------------------------------- pool

type poolResource interface {
	PoolSize() uintptr
	UsedBytes() uintptr
	Release() error
}

//export rmm_pool_size
func rmm_pool_size(mr C.rmm_resource_t, bytes *C.size_t) (st status) {
	const fn = "rmm_pool_size"
	defer recoverTo(fn, &st)
	if bytes == nil {
		return invalid(fn, "bytes is NULL")
	}
	p, _, st := asKind[poolResource](fn, mr, "pool")
	if st != statusSuccess {
		return st
	}
	return putSize(fn, bytes, p.PoolSize())
}

//export rmm_pool_used_bytes
func rmm_pool_used_bytes(mr C.rmm_resource_t, bytes *C.size_t) (st status) {
	const fn = "rmm_pool_used_bytes"
	defer recoverTo(fn, &st)
	if bytes == nil {
		return invalid(fn, "bytes is NULL")
	}
	p, e, st := asKind[poolResource](fn, mr, "pool")
	if st != statusSuccess {
		return st
	}
	// Blocks the thread caches hold are not in use; nor is the rounding of
	// live blocks to their cache class.
	used, unused := p.UsedBytes(), tcUnusedBytes(e)
	if unused > used {
		unused = used // a racing allocation; never below zero
	}
	return putSize(fn, bytes, used-unused)
}

//export rmm_pool_release
func rmm_pool_release(mr C.rmm_resource_t) (st status) {
	const fn = "rmm_pool_release"
	defer recoverTo(fn, &st)
	p, e, st := asKind[poolResource](fn, mr, "pool")
	if st != statusSuccess {
		return st
	}
	if e.cached {
		tcFlush(e.handle) // cached blocks are free: let their chunks go too
	}
	if err := p.Release(); err != nil {
		return fail(fn, err, statusInternal)
	}
	return statusSuccess
}

// ---------------------------------------------------------- fixed_size

//export rmm_fixed_size_block_size
func rmm_fixed_size_block_size(mr C.rmm_resource_t, bytes *C.size_t) (st status) {
	const fn = "rmm_fixed_size_block_size"
	defer recoverTo(fn, &st)
	if bytes == nil {
		return invalid(fn, "bytes is NULL")
	}
	f, _, st := asKind[interface{ BlockSize() uintptr }](fn, mr, "fixed_size")
	if st != statusSuccess {
		return st
	}
	return putSize(fn, bytes, f.BlockSize())
}

// ------------------------------------------------------------- binning

//export rmm_binning_add_bin
func rmm_binning_add_bin(mr C.rmm_resource_t, allocationSize C.size_t, bin C.rmm_resource_t) (st status) {
	fn := fmt.Sprintf("rmm_binning_add_bin(%d bytes)", allocationSize)
	defer recoverTo(fn, &st)
	b, e, st := asKind[interface {
		AddBin(size uintptr, bin core.Resource) error
	}](fn, mr, "binning")
	if st != statusSuccess {
		return st
	}
	var binRes core.Resource
	var be *entry
	if bin != nil {
		var err error
		if be, err = reg.get(handleValue(bin)); err != nil {
			return fail(fn+": bin", err, statusInvalidHandle)
		}
		if be == e {
			return invalid(fn, "a binning resource cannot be its own bin")
		}
		if !be.tryRetain() {
			return fail(fn+": bin", fmt.Errorf("%w: released while being added", errInvalidHandle), statusInvalidHandle)
		}
		binRes = be.res
	}
	// A new bin changes which resource serves a size class: no thread may
	// cache for the binning resource meanwhile, and what is cached goes back
	// to the resources it came from first.
	if e.cached {
		C.rmmgo_tc_unpublish(C.uint64_t(e.handle))
		tcFlush(e.handle)
		defer func() {
			// A bin that is not a bare fixed_size resource (an adaptor: it
			// must see every call) turns the cache off for this handle.
			if _, fixed := binRes.(*core.FixedSize); binRes != nil && !fixed {
				e.tcOff.Store(true)
			}
			if _, ok := reg.lookup(e.handle); ok && !e.tcOff.Load() {
				tcPublishKind(e)
			}
		}()
	}
	if err := b.AddBin(uintptr(allocationSize), binRes); err != nil {
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
func rmm_cuda_async_pool_handle(mr C.rmm_resource_t, pool *C.rmm_mem_pool_t) (st status) {
	const fn = "rmm_cuda_async_pool_handle"
	defer recoverTo(fn, &st)
	if pool == nil {
		return invalid(fn, "pool is NULL")
	}
	p, _, st := asKind[interface{ PoolHandle() cudart.MemPool }](fn, mr, "cuda_async", "cuda_async_view", "cuda_async_managed")
	if st != statusSuccess {
		return st
	}
	*(*C.uintptr_t)(unsafe.Pointer(pool)) = C.uintptr_t(p.PoolHandle())
	return statusSuccess
}

// ------------------------------------------------------------ limiting

type limitingResource interface {
	AllocatedBytes() uintptr
	AllocationLimit() uintptr
}

//export rmm_limiting_allocated_bytes
func rmm_limiting_allocated_bytes(mr C.rmm_resource_t, bytes *C.size_t) (st status) {
	const fn = "rmm_limiting_allocated_bytes"
	defer recoverTo(fn, &st)
	if bytes == nil {
		return invalid(fn, "bytes is NULL")
	}
	l, _, st := asKind[limitingResource](fn, mr, "limiting")
	if st != statusSuccess {
		return st
	}
	return putSize(fn, bytes, l.AllocatedBytes())
}

//export rmm_limiting_allocation_limit
func rmm_limiting_allocation_limit(mr C.rmm_resource_t, bytes *C.size_t) (st status) {
	const fn = "rmm_limiting_allocation_limit"
	defer recoverTo(fn, &st)
	if bytes == nil {
		return invalid(fn, "bytes is NULL")
	}
	l, _, st := asKind[limitingResource](fn, mr, "limiting")
	if st != statusSuccess {
		return st
	}
	return putSize(fn, bytes, l.AllocationLimit())
}

// ------------------------------------------------------------- logging

type loggingResource interface {
	Flush() error
	FileName() string
}

//export rmm_logging_flush
func rmm_logging_flush(mr C.rmm_resource_t) (st status) {
	const fn = "rmm_logging_flush"
	defer recoverTo(fn, &st)
	l, _, st := asKind[loggingResource](fn, mr, "logging")
	if st != statusSuccess {
		return st
	}
	if err := l.Flush(); err != nil {
		return fail(fn, err, statusInternal)
	}
	return statusSuccess
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
func rmm_logging_file_name(mr C.rmm_resource_t, buf *C.char, bufSize C.size_t, needed *C.size_t) (st status) {
	const fn = "rmm_logging_file_name"
	defer recoverTo(fn, &st)
	l, _, st := asKind[loggingResource](fn, mr, "logging")
	if st != statusSuccess {
		return st
	}
	return copyString(fn, l.FileName(), buf, bufSize, needed)
}

// ---------------------------------------------------------- statistics

type statisticsResource interface {
	Counters() (bytes, count core.Counter)
	PushCounters() (bytes, count core.Counter)
	PopCounters() (bytes, count core.Counter, err error)
}

// putStatistics writes the counters to the caller's struct, as far as its
// struct_size reaches.
func putStatistics(fn string, out *C.rmm_statistics, bytes, count core.Counter) status {
	size := uintptr(out.struct_size)
	if size < unsafe.Sizeof(out.struct_size) {
		return invalid(fn, "struct_size is %d: set it to sizeof(rmm_statistics)", size)
	}
	var s C.rmm_statistics
	s.struct_size = out.struct_size
	s.bytes = C.rmm_counter{value: C.int64_t(bytes.Value), peak: C.int64_t(bytes.Peak), total: C.int64_t(bytes.Total)}
	s.count = C.rmm_counter{value: C.int64_t(count.Value), peak: C.int64_t(count.Peak), total: C.int64_t(count.Total)}
	n := min(size, unsafe.Sizeof(s))
	copy(unsafe.Slice((*byte)(unsafe.Pointer(out)), n), unsafe.Slice((*byte)(unsafe.Pointer(&s)), n))
	return statusSuccess
}

//export rmm_statistics_get
func rmm_statistics_get(mr C.rmm_resource_t, stats *C.rmm_statistics) (st status) {
	const fn = "rmm_statistics_get"
	defer recoverTo(fn, &st)
	if stats == nil {
		return invalid(fn, "stats is NULL")
	}
	s, _, st := asKind[statisticsResource](fn, mr, "statistics")
	if st != statusSuccess {
		return st
	}
	b, c := s.Counters()
	return putStatistics(fn, stats, b, c)
}

//export rmm_statistics_push
func rmm_statistics_push(mr C.rmm_resource_t, top *C.rmm_statistics) (st status) {
	const fn = "rmm_statistics_push"
	defer recoverTo(fn, &st)
	if top != nil && uintptr(top.struct_size) < unsafe.Sizeof(top.struct_size) {
		return invalid(fn, "top->struct_size is %d: set it to sizeof(rmm_statistics)", top.struct_size)
	}
	s, _, st := asKind[statisticsResource](fn, mr, "statistics")
	if st != statusSuccess {
		return st
	}
	b, c := s.PushCounters()
	if top == nil {
		return statusSuccess
	}
	return putStatistics(fn, top, b, c)
}

//export rmm_statistics_pop
func rmm_statistics_pop(mr C.rmm_resource_t, popped *C.rmm_statistics) (st status) {
	const fn = "rmm_statistics_pop"
	defer recoverTo(fn, &st)
	if popped == nil {
		return invalid(fn, "popped is NULL")
	}
	if uintptr(popped.struct_size) < unsafe.Sizeof(popped.struct_size) {
		return invalid(fn, "popped->struct_size is %d: set it to sizeof(rmm_statistics)", popped.struct_size)
	}
	s, _, st := asKind[statisticsResource](fn, mr, "statistics")
	if st != statusSuccess {
		return st
	}
	b, c, err := s.PopCounters()
	if err != nil {
		return fail(fn, err, statusOutOfRange)
	}
	return putStatistics(fn, popped, b, c)
}

// ------------------------------------------------------------ tracking

type trackingResource interface {
	AllocatedBytes() uintptr
	OutstandingCount() int
	Report() string
}

//export rmm_tracking_allocated_bytes
func rmm_tracking_allocated_bytes(mr C.rmm_resource_t, bytes *C.size_t) (st status) {
	const fn = "rmm_tracking_allocated_bytes"
	defer recoverTo(fn, &st)
	if bytes == nil {
		return invalid(fn, "bytes is NULL")
	}
	t, _, st := asKind[trackingResource](fn, mr, "tracking")
	if st != statusSuccess {
		return st
	}
	return putSize(fn, bytes, t.AllocatedBytes())
}

//export rmm_tracking_outstanding_count
func rmm_tracking_outstanding_count(mr C.rmm_resource_t, count *C.size_t) (st status) {
	const fn = "rmm_tracking_outstanding_count"
	defer recoverTo(fn, &st)
	if count == nil {
		return invalid(fn, "count is NULL")
	}
	t, _, st := asKind[trackingResource](fn, mr, "tracking")
	if st != statusSuccess {
		return st
	}
	return putSize(fn, count, uintptr(t.OutstandingCount()))
}

//export rmm_tracking_report
func rmm_tracking_report(mr C.rmm_resource_t, buf *C.char, bufSize C.size_t, needed *C.size_t) (st status) {
	const fn = "rmm_tracking_report"
	defer recoverTo(fn, &st)
	t, _, st := asKind[trackingResource](fn, mr, "tracking")
	if st != statusSuccess {
		return st
	}
	return copyString(fn, t.Report(), buf, bufSize, needed)
}
