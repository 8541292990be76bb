package main

/*
#include "capi_internal.h"
*/
import "C"

import (
	"fmt"
	"io"
	"math"
	"unsafe"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/cudart"
)

// construct makes the core resource of kind from the caller's options; up
// is the upstream's entry for the kinds that have one.
func construct(kind C.rmm_resource_kind, hasOptions bool, o *C.rmm_resource_options, up *entry) (core.Resource, error) {
	var upstream core.Resource
	if up != nil {
		upstream = up.res
	}
	switch kind {
	case C.RMM_RESOURCE_CUDA:
		return core.NewCuda()
	case C.RMM_RESOURCE_MANAGED:
		return core.NewManaged()
	case C.RMM_RESOURCE_PINNED_HOST:
		return core.NewPinnedHost()
	case C.RMM_RESOURCE_SYSTEM:
		return core.NewSystem()
	case C.RMM_RESOURCE_SAM_HEADROOM:
		if !hasOptions {
			return nil, fmt.Errorf("%w: sam_headroom needs options with headroom", core.ErrInvalidArgument)
		}
		return core.NewSAMHeadroom(uintptr(o.headroom))
	case C.RMM_RESOURCE_CUDA_ASYNC:
		return core.NewCudaAsync(cudaAsyncOptions(o))
	case C.RMM_RESOURCE_CUDA_ASYNC_VIEW:
		if !hasOptions || o.pool_handle == nil {
			return nil, fmt.Errorf("%w: cuda_async_view needs options.pool_handle (not NULL)", core.ErrInvalidArgument)
		}
		return core.NewCudaAsyncView(cudart.MemPool(uintptr(unsafe.Pointer(o.pool_handle))))
	case C.RMM_RESOURCE_CUDA_ASYNC_MANAGED:
		return core.NewCudaAsyncManaged()
	case C.RMM_RESOURCE_ALIGNED:
		return core.NewAligned(upstream, uintptr(o.alignment), uintptr(o.alignment_threshold))
	case C.RMM_RESOURCE_CALLBACK:
		if !hasOptions || o.allocate_callback == nil || o.deallocate_callback == nil {
			return nil, fmt.Errorf("%w: callback needs options.allocate_callback and options.deallocate_callback", core.ErrInvalidArgument)
		}
		return newCallback(o)
	case C.RMM_RESOURCE_FAILURE_CALLBACK:
		if o.failure_callback == nil {
			return nil, fmt.Errorf("%w: failure_callback needs options.failure_callback", core.ErrInvalidArgument)
		}
		return newFailureCallback(upstream, o)
	case C.RMM_RESOURCE_LIMITING:
		if o.allocation_limit == C.size_t(core.SizeDefault) {
			return nil, fmt.Errorf("%w: limiting needs options.allocation_limit", core.ErrInvalidArgument)
		}
		return core.NewLimiting(upstream, uintptr(o.allocation_limit), uintptr(o.alignment))
	case C.RMM_RESOURCE_LOGGING:
		opts := core.LoggingOptions{AutoFlush: o.auto_flush != 0}
		if o.log_file != nil {
			opts.FileName = C.GoString(o.log_file)
		}
		return core.NewLogging(upstream, opts)
	case C.RMM_RESOURCE_PREFETCH:
		return core.NewPrefetch(upstream)
	case C.RMM_RESOURCE_STATISTICS:
		return core.NewStatistics(upstream)
	case C.RMM_RESOURCE_THREAD_SAFE:
		return core.NewThreadSafe(upstream)
	case C.RMM_RESOURCE_TRACKING:
		return core.NewTracking(upstream, o.capture_stacks != 0)
	}
	return constructMore(kind, o, upstream)
}

// cudaAsyncOptions translates the C options of cuda_async. C's
// release_threshold counts bytes kept, RMM_SIZE_DEFAULT for all of them;
// core reads 0 as "keep all", so an explicit 0 (keep nothing) becomes 1
// byte, which pools, releasing whole chunks, treat as nothing.
func cudaAsyncOptions(o *C.rmm_resource_options) core.CudaAsyncOptions {
	opts := core.CudaAsyncOptions{ExportHandleTypes: cudart.MemHandleType(o.export_handle_types)}
	if o.initial_pool_size != C.size_t(core.SizeDefault) {
		opts.InitialPoolSize = uintptr(o.initial_pool_size)
	}
	switch o.release_threshold {
	case C.size_t(core.SizeDefault):
		opts.ReleaseThreshold = math.MaxUint64
	case 0:
		opts.ReleaseThreshold = 1
	default:
		opts.ReleaseThreshold = uint64(o.release_threshold)
	}
	return opts
}

// newCallback makes a callback resource over the caller's C functions. The
// function pointers and their arguments stay C values inside Go closures;
// nothing of Go's travels to C.
func newCallback(o *C.rmm_resource_options) (core.Resource, error) {
	afn, dfn := o.allocate_callback, o.deallocate_callback
	aarg := C.uintptr_t(uintptr(o.allocate_arg))
	darg := C.uintptr_t(uintptr(o.deallocate_arg))
	alloc := func(bytes uintptr, s core.Stream) (uintptr, error) {
		// 0 means "no memory": core reports it as out of memory.
		return uintptr(C.rmmgo_call_allocate(afn, C.size_t(bytes), C.uintptr_t(s), aarg)), nil
	}
	dealloc := func(ptr, bytes uintptr, s core.Stream) error {
		C.rmmgo_call_deallocate(dfn, C.uintptr_t(ptr), C.size_t(bytes), C.uintptr_t(s), darg)
		return nil
	}
	return core.NewCallback(alloc, dealloc)
}

// newFailureCallback makes a failure_callback adaptor calling the caller's
// C function.
func newFailureCallback(upstream core.Resource, o *C.rmm_resource_options) (core.Resource, error) {
	fn := o.failure_callback
	arg := C.uintptr_t(uintptr(o.failure_arg))
	return core.NewFailureCallback(upstream, func(bytes uintptr) bool {
		return C.rmmgo_call_failure(fn, C.size_t(bytes), arg) != 0
	})
}

// closeQuietly closes res if it is an io.Closer (after a failure, when the
// first error is the one to report).
func closeQuietly(res core.Resource) {
	if c, ok := res.(io.Closer); ok {
		_ = c.Close()
	}
}

// sizeOption reads a size option where RMM_SIZE_DEFAULT means "core's
// default", which core spells def.
func sizeOption(v C.size_t, def uintptr) uintptr {
	if v == C.size_t(core.SizeDefault) {
		return def
	}
	return uintptr(v)
}

// intOption reads a count option into an int, RMM_SIZE_DEFAULT giving def.
func intOption(name string, v C.size_t, def int) (int, error) {
	if v == C.size_t(core.SizeDefault) {
		return def, nil
	}
	if uint64(v) > math.MaxInt32 {
		return 0, fmt.Errorf("%w: options.%s (%d) is too large", core.ErrInvalidArgument, name, uint64(v))
	}
	return int(v), nil
}
