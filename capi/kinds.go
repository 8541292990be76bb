package main

/*
#include "capi_internal.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/cudart"
	"github.com/rmmgo/rmmgo/internal/cabi"
)

// The kinds of resource: one table, read by rmm_resource_create (which
// constructor, which options, whether an upstream), by rmm_resource_kind_of
// and rmm_resource_name (the names), and by the calls particular to one
// kind (per_kind.go).

// kindSpec is one rmm_resource_kind.
type kindSpec struct {
	kind  C.rmm_resource_kind
	name  string // core's Kind() of the resources it makes: internal/cabi's name of kind
	class string // RMM's class name, which rmm_resource_name returns
	// upstream: made over options.upstream, which must be given.
	upstream bool
	// needsOptions: NULL options are refused (the kind has an option with
	// no usable default).
	needsOptions bool
	// make validates the options the kind reads and makes the resource.
	make func(a *createArgs) (core.Resource, error)
}

// createArgs is what a constructor is given: the caller's options over
// the defaults, and the upstream's resource for the kinds that have one.
type createArgs struct {
	o        *C.rmm_resource_options
	upstream core.Resource
}

var kindTable = []kindSpec{
	// base resources
	{kind: C.RMM_RESOURCE_CUDA, class: "cuda_memory_resource",
		make: func(*createArgs) (core.Resource, error) { return core.NewCuda() }},
	{kind: C.RMM_RESOURCE_MANAGED, class: "managed_memory_resource",
		make: func(*createArgs) (core.Resource, error) { return core.NewManaged() }},
	{kind: C.RMM_RESOURCE_PINNED_HOST, class: "pinned_host_memory_resource",
		make: func(*createArgs) (core.Resource, error) { return core.NewPinnedHost() }},
	{kind: C.RMM_RESOURCE_SYSTEM, class: "system_memory_resource",
		make: func(*createArgs) (core.Resource, error) { return core.NewSystem() }},
	{kind: C.RMM_RESOURCE_SAM_HEADROOM, class: "sam_headroom_memory_resource",
		needsOptions: true, make: makeSAMHeadroom},
	{kind: C.RMM_RESOURCE_CUDA_ASYNC, class: "cuda_async_memory_resource",
		make: makeCudaAsync},
	{kind: C.RMM_RESOURCE_CUDA_ASYNC_VIEW, class: "cuda_async_view_memory_resource",
		needsOptions: true, make: makeCudaAsyncView},
	{kind: C.RMM_RESOURCE_CUDA_ASYNC_MANAGED, class: "cuda_async_managed_memory_resource",
		make: func(*createArgs) (core.Resource, error) { return core.NewCudaAsyncManaged() }},
	// sub-allocators
	{kind: C.RMM_RESOURCE_POOL, class: "pool_memory_resource",
		upstream: true, make: makePool},
	{kind: C.RMM_RESOURCE_ARENA, class: "arena_memory_resource",
		upstream: true, make: makeArena},
	{kind: C.RMM_RESOURCE_FIXED_SIZE, class: "fixed_size_memory_resource",
		upstream: true, make: makeFixedSize},
	{kind: C.RMM_RESOURCE_BINNING, class: "binning_memory_resource",
		upstream: true, make: func(a *createArgs) (core.Resource, error) {
			return core.NewBinning(a.upstream, int(a.o.min_size_exponent), int(a.o.max_size_exponent))
		}},
	{kind: C.RMM_RESOURCE_EXPANDABLE, class: "expandable_memory_resource",
		make: makeExpandable},
	// adaptors
	{kind: C.RMM_RESOURCE_ALIGNED, class: "aligned_resource_adaptor",
		upstream: true, make: func(a *createArgs) (core.Resource, error) {
			return core.NewAligned(a.upstream, uintptr(a.o.alignment), uintptr(a.o.alignment_threshold))
		}},
	{kind: C.RMM_RESOURCE_CALLBACK, class: "callback_memory_resource",
		needsOptions: true, make: makeCallback},
	{kind: C.RMM_RESOURCE_FAILURE_CALLBACK, class: "failure_callback_resource_adaptor",
		upstream: true, make: makeFailureCallback},
	{kind: C.RMM_RESOURCE_LIMITING, class: "limiting_resource_adaptor",
		upstream: true, make: makeLimiting},
	{kind: C.RMM_RESOURCE_LOGGING, class: "logging_resource_adaptor",
		upstream: true, make: makeLogging},
	{kind: C.RMM_RESOURCE_PREFETCH, class: "prefetch_resource_adaptor",
		upstream: true, make: func(a *createArgs) (core.Resource, error) { return core.NewPrefetch(a.upstream) }},
	{kind: C.RMM_RESOURCE_STATISTICS, class: "statistics_resource_adaptor",
		upstream: true, make: func(a *createArgs) (core.Resource, error) { return core.NewStatistics(a.upstream) }},
	{kind: C.RMM_RESOURCE_THREAD_SAFE, class: "thread_safe_resource_adaptor",
		upstream: true, make: func(a *createArgs) (core.Resource, error) { return core.NewThreadSafe(a.upstream) }},
	{kind: C.RMM_RESOURCE_TRACKING, class: "tracking_resource_adaptor",
		upstream: true, make: func(a *createArgs) (core.Resource, error) {
			return core.NewTracking(a.upstream, a.o.capture_stacks != 0)
		}},
}

var (
	// kindsByEnum and kindsByName index kindTable.
	kindsByEnum = map[C.rmm_resource_kind]*kindSpec{}
	kindsByName = map[string]*kindSpec{}
	// classNames holds each kind's class as a C string, made once and kept
	// for the life of the process (rmm_resource_name hands it out).
	classNames = map[C.rmm_resource_kind]*C.char{}
)

func init() {
	for i := range kindTable {
		k := &kindTable[i]
		k.name = cabi.KindName(int(k.kind))
		kindsByEnum[k.kind] = k
		kindsByName[k.name] = k
		classNames[k.kind] = C.CString(k.class)
	}
}

// kindOf is the table's entry for a resource's kind, nil for a Go caller's
// resource of a kind of its own.
func kindOf(res core.Resource) *kindSpec { return kindsByName[res.Kind()] }

// otherNames holds C copies of the kind names of resources the C ABI has
// no enum value for (Go callers' own resources), made once and kept.
var otherNames sync.Map // string -> *C.char

// className is the name rmm_resource_name gives res: RMM's class name for
// the kinds of the table, else the kind's own name.
func className(res core.Resource) *C.char {
	if k := kindOf(res); k != nil {
		return classNames[k.kind]
	}
	kind := res.Kind()
	if v, ok := otherNames.Load(kind); ok {
		return v.(*C.char)
	}
	v, _ := otherNames.LoadOrStore(kind, C.CString(kind)) // kept for the process's life
	return v.(*C.char)
}

// ------------------------------------------------------------ options
//
// Size options take RMM_SIZE_DEFAULT for "the default". An explicit 0
// where 0 means nothing (a block of no bytes, a pool with no room, an arena
// of nothing) is refused rather than read as the default; core's own
// constructors read 0 as "the default", Go's zero value.

// optionError is an invalid-argument error about options.field.
func optionError(field, format string, args ...any) error {
	return fmt.Errorf("%w: options.%s %s", core.ErrInvalidArgument, field, fmt.Sprintf(format, args...))
}

// sizeOption reads a size option: RMM_SIZE_DEFAULT gives def, and 0 is
// refused unless zeroOK.
func sizeOption(field string, v C.size_t, def uintptr, zeroOK bool) (uintptr, error) {
	switch {
	case v == C.size_t(core.SizeDefault):
		return def, nil
	case v == 0 && !zeroOK:
		return 0, optionError(field, "is 0: give a size, or RMM_SIZE_DEFAULT for the default")
	}
	return uintptr(v), nil
}

// countOption reads a count option into an int: RMM_SIZE_DEFAULT gives
// def; 0 and counts above 2^31-1 are refused.
func countOption(field string, v C.size_t, def int) (int, error) {
	n, err := sizeOption(field, v, uintptr(def), false)
	if err != nil {
		return 0, err
	}
	if n > 1<<31-1 {
		return 0, optionError(field, "(%d) is too large", n)
	}
	return int(n), nil
}

// --------------------------------------------------------- constructors

func makeSAMHeadroom(a *createArgs) (core.Resource, error) {
	return core.NewSAMHeadroom(uintptr(a.o.headroom))
}

// exportHandleTypes are the rmm_mem_handle_type bits a cuda_async pool can
// export.
const exportHandleTypes = C.RMM_MEM_HANDLE_POSIX_FILE_DESCRIPTOR | C.RMM_MEM_HANDLE_FABRIC

// makeCudaAsync translates the C options of cuda_async. C's
// release_threshold counts bytes kept, RMM_SIZE_DEFAULT for all of them;
// core reads 0 as "keep all", so an explicit 0 (keep nothing) becomes 1
// byte, which pools, releasing whole chunks, treat as nothing.
func makeCudaAsync(a *createArgs) (core.Resource, error) {
	o := a.o
	if bad := o.export_handle_types &^ exportHandleTypes; bad != 0 {
		return nil, optionError("export_handle_types", "%#x has bits that are no rmm_mem_handle_type (%#x)",
			uint(o.export_handle_types), uint(bad))
	}
	opts := core.CudaAsyncOptions{ExportHandleTypes: cudart.MemHandleType(o.export_handle_types)}
	if o.initial_pool_size != C.size_t(core.SizeDefault) {
		opts.InitialPoolSize = uintptr(o.initial_pool_size)
	}
	switch o.release_threshold {
	case C.size_t(core.SizeDefault):
		opts.ReleaseThreshold = 1<<64 - 1
	case 0:
		opts.ReleaseThreshold = 1
	default:
		opts.ReleaseThreshold = uint64(o.release_threshold)
	}
	return core.NewCudaAsync(opts)
}

func makeCudaAsyncView(a *createArgs) (core.Resource, error) {
	if a.o.pool_handle == nil {
		return nil, optionError("pool_handle", "is NULL: a cuda_async_view needs the pool to allocate from")
	}
	return core.NewCudaAsyncView(cudart.MemPool(uintptr(unsafe.Pointer(a.o.pool_handle))))
}

func makePool(a *createArgs) (core.Resource, error) {
	// RMM_SIZE_DEFAULT is core.SizeDefault for both sizes; an initial size
	// of 0 means "grow on first use".
	maxSize, err := sizeOption("maximum_pool_size", a.o.maximum_pool_size, core.SizeDefault, false)
	if err != nil {
		return nil, err
	}
	return core.NewPool(a.upstream, core.PoolOptions{
		InitialSize: uintptr(a.o.initial_pool_size),
		MaximumSize: maxSize,
	})
}

// makeExpandable: maximum_pool_size takes RMM_SIZE_DEFAULT
// (core.SizeDefault) for the device's memory, and refuses an explicit 0.
// release_threshold counts bytes kept, as for cuda_async: RMM_SIZE_DEFAULT
// keeps all (core's 0); an explicit 0 keeps nothing, which core spells as
// the smallest threshold it takes (256 bytes).
func makeExpandable(a *createArgs) (core.Resource, error) {
	maxSize, err := sizeOption("maximum_pool_size", a.o.maximum_pool_size, core.SizeDefault, false)
	if err != nil {
		return nil, err
	}
	threshold := uintptr(a.o.release_threshold)
	if a.o.release_threshold == 0 {
		threshold = core.DefaultAlignment
	}
	return core.NewExpandable(core.ExpandableOptions{MaximumSize: maxSize, ReleaseThreshold: threshold})
}

func makeArena(a *createArgs) (core.Resource, error) {
	size, err := sizeOption("arena_size", a.o.arena_size, core.SizeDefault, false)
	if err != nil {
		return nil, err
	}
	return core.NewArena(a.upstream, core.ArenaOptions{
		ArenaSize:        size,
		DumpLogOnFailure: a.o.dump_log_on_failure != 0,
	})
}

// makeFixedSize: block sizes round up to a multiple of 256 bytes, as RMM's
// do (rmm_fixed_size_block_size reports the size a block has).
func makeFixedSize(a *createArgs) (core.Resource, error) {
	block, err := sizeOption("block_size", a.o.block_size, core.SizeDefault, false)
	if err != nil {
		return nil, err
	}
	blocks, err := countOption("blocks_to_preallocate", a.o.blocks_to_preallocate, 0)
	if err != nil {
		return nil, err
	}
	return core.NewFixedSize(a.upstream, core.FixedSizeOptions{BlockSize: block, BlocksToPreallocate: blocks})
}

func makeLimiting(a *createArgs) (core.Resource, error) {
	if a.o.allocation_limit == C.size_t(core.SizeDefault) {
		return nil, optionError("allocation_limit", "is not set: a limiting adaptor needs its limit")
	}
	return core.NewLimiting(a.upstream, uintptr(a.o.allocation_limit), uintptr(a.o.alignment))
}

func makeLogging(a *createArgs) (core.Resource, error) {
	opts := core.LoggingOptions{AutoFlush: a.o.auto_flush != 0}
	if a.o.log_file != nil {
		opts.FileName = C.GoString(a.o.log_file)
	}
	return core.NewLogging(a.upstream, opts)
}
