//go:build cgo && unix

package cudart

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "cuda_abi.h"

// rmmgo_cudart holds the runtime's functions, resolved by dlsym at load
// time. It lives in C memory and Go passes its address to the trampolines
// below as a uintptr_t: no Go pointer crosses, so cgo has nothing to check.
typedef struct rmmgo_cudart {
	void *cudaGetErrorName;
	void *cudaGetErrorString;
	void *cudaGetLastError;
	void *cudaPeekAtLastError;
	void *cudaRuntimeGetVersion;
	void *cudaDriverGetVersion;
	void *cudaGetDeviceCount;
	void *cudaGetDevice;
	void *cudaSetDevice;
	void *cudaDeviceGetAttribute;
	void *cudaDeviceSynchronize;
	void *cudaMemGetInfo;
	void *cudaMalloc;
	void *cudaFree;
	void *cudaMallocManaged;
	void *cudaHostAlloc;
	void *cudaFreeHost;
	void *cudaMallocAsync;
	void *cudaMallocFromPoolAsync;
	void *cudaFreeAsync;
	void *cudaMemPoolCreate;
	void *cudaMemPoolDestroy;
	void *cudaMemPoolSetAttribute;
	void *cudaMemPoolGetAttribute;
	void *cudaMemPoolTrimTo;
	void *cudaDeviceGetDefaultMemPool;
	void *cudaStreamCreateWithFlags;
	void *cudaStreamDestroy;
	void *cudaStreamSynchronize;
	void *cudaStreamQuery;
	void *cudaStreamWaitEvent;
	void *cudaStreamGetId;
	void *cudaGetDriverEntryPointByVersion; // CUDA 12.5+; else NULL
	void *cuStreamGetId; // the driver's, from the entry point above; else NULL
	void *cudaEventCreateWithFlags;
	void *cudaEventDestroy;
	void *cudaEventRecord;
	void *cudaEventQuery;
	void *cudaEventSynchronize;
	void *cudaMemcpy;
	void *cudaMemcpyAsync;
	void *cudaMemset;
	void *cudaMemsetAsync;
	void *cudaPointerGetAttributes;
	// Managed-memory hints: of each pair exactly one is set, by runtime version.
	void *cudaMemPrefetchAsync_location;
	void *cudaMemPrefetchAsync_device;
	void *cudaMemAdvise_location;
	void *cudaMemAdvise_device;
} rmmgo_cudart;

#define RMMGO_FN(tbl, name) ((rmmgo_fn_##name)((const rmmgo_cudart *)(tbl))->name)

enum { rmmgo_cudaErrorNotReady = 600 };

// rmmgo_done returns err after clearing the calling thread's last-error state
// when err is a failure. CUDA records every failed call as the thread's last
// error; a caller that checks cudaGetLastError after its own kernel launch
// must not see rmmgo's out-of-memory (or any other) failure there. Sticky
// errors stay, as CUDA keeps them. cudaErrorNotReady is not a failure.
static inline int32_t rmmgo_done(uintptr_t tbl, rmmgo_cudaError_t err) {
	if (err != 0 && err != rmmgo_cudaErrorNotReady) {
		(void)RMMGO_FN(tbl, cudaGetLastError)();
	}
	return err;
}

typedef struct { uintptr_t value; int32_t err; } rmmgo_ptr_result;
typedef struct { uint64_t value; int32_t err; } rmmgo_u64_result;
typedef struct { int32_t value; int32_t err; } rmmgo_int_result;
typedef struct { uint64_t free, total; int32_t err; } rmmgo_meminfo_result;
typedef struct {
	int32_t type, device;
	uintptr_t devicePointer, hostPointer;
	int32_t err;
} rmmgo_ptrattr_result;
typedef struct { const char *name, *desc; } rmmgo_error_text;

// Errors and versions.

static inline rmmgo_error_text rmmgo_get_error_text(uintptr_t tbl, int32_t code) {
	rmmgo_error_text r;
	r.name = RMMGO_FN(tbl, cudaGetErrorName)(code);
	r.desc = RMMGO_FN(tbl, cudaGetErrorString)(code);
	return r;
}

static inline int32_t rmmgo_peek_at_last_error(uintptr_t tbl) {
	return RMMGO_FN(tbl, cudaPeekAtLastError)();
}

// Used while loading, before cudaGetLastError is resolved: no rmmgo_done.
static inline rmmgo_int_result rmmgo_runtime_get_version(uintptr_t tbl) {
	rmmgo_int_result r = {0, 0};
	int v = 0;
	r.err = RMMGO_FN(tbl, cudaRuntimeGetVersion)(&v);
	r.value = v;
	return r;
}

static inline rmmgo_int_result rmmgo_driver_get_version(uintptr_t tbl) {
	rmmgo_int_result r = {0, 0};
	int v = 0;
	r.err = rmmgo_done(tbl, RMMGO_FN(tbl, cudaDriverGetVersion)(&v));
	r.value = v;
	return r;
}

// Devices.

static inline rmmgo_int_result rmmgo_get_device_count(uintptr_t tbl) {
	rmmgo_int_result r = {0, 0};
	int v = 0;
	r.err = rmmgo_done(tbl, RMMGO_FN(tbl, cudaGetDeviceCount)(&v));
	r.value = v;
	return r;
}

static inline rmmgo_int_result rmmgo_get_device(uintptr_t tbl) {
	rmmgo_int_result r = {0, 0};
	int v = 0;
	r.err = rmmgo_done(tbl, RMMGO_FN(tbl, cudaGetDevice)(&v));
	r.value = v;
	return r;
}

static inline int32_t rmmgo_set_device(uintptr_t tbl, int32_t dev) {
	return rmmgo_done(tbl, RMMGO_FN(tbl, cudaSetDevice)(dev));
}

static inline rmmgo_int_result rmmgo_device_get_attribute(uintptr_t tbl, int32_t attr, int32_t dev) {
	rmmgo_int_result r = {0, 0};
	int v = 0;
	r.err = rmmgo_done(tbl, RMMGO_FN(tbl, cudaDeviceGetAttribute)(&v, attr, dev));
	r.value = v;
	return r;
}

static inline int32_t rmmgo_device_synchronize(uintptr_t tbl) {
	return rmmgo_done(tbl, RMMGO_FN(tbl, cudaDeviceSynchronize)());
}

static inline rmmgo_meminfo_result rmmgo_mem_get_info(uintptr_t tbl) {
	rmmgo_meminfo_result r = {0, 0, 0};
	size_t f = 0, t = 0;
	r.err = rmmgo_done(tbl, RMMGO_FN(tbl, cudaMemGetInfo)(&f, &t));
	r.free = f;
	r.total = t;
	return r;
}

// Plain allocations.

static inline rmmgo_ptr_result rmmgo_malloc(uintptr_t tbl, size_t size) {
	rmmgo_ptr_result r = {0, 0};
	void *p = NULL;
	r.err = rmmgo_done(tbl, RMMGO_FN(tbl, cudaMalloc)(&p, size));
	r.value = (uintptr_t)p;
	return r;
}

static inline int32_t rmmgo_free(uintptr_t tbl, uintptr_t ptr) {
	return rmmgo_done(tbl, RMMGO_FN(tbl, cudaFree)((void *)ptr));
}

static inline rmmgo_ptr_result rmmgo_malloc_managed(uintptr_t tbl, size_t size, uint32_t flags) {
	rmmgo_ptr_result r = {0, 0};
	void *p = NULL;
	r.err = rmmgo_done(tbl, RMMGO_FN(tbl, cudaMallocManaged)(&p, size, flags));
	r.value = (uintptr_t)p;
	return r;
}

static inline rmmgo_ptr_result rmmgo_host_alloc(uintptr_t tbl, size_t size, uint32_t flags) {
	rmmgo_ptr_result r = {0, 0};
	void *p = NULL;
	r.err = rmmgo_done(tbl, RMMGO_FN(tbl, cudaHostAlloc)(&p, size, flags));
	r.value = (uintptr_t)p;
	return r;
}

static inline int32_t rmmgo_free_host(uintptr_t tbl, uintptr_t ptr) {
	return rmmgo_done(tbl, RMMGO_FN(tbl, cudaFreeHost)((void *)ptr));
}

// Stream-ordered allocations and memory pools.

static inline rmmgo_ptr_result rmmgo_malloc_async(uintptr_t tbl, size_t size, uintptr_t stream) {
	rmmgo_ptr_result r = {0, 0};
	void *p = NULL;
	r.err = rmmgo_done(tbl, RMMGO_FN(tbl, cudaMallocAsync)(&p, size, (rmmgo_cudaStream_t)stream));
	r.value = (uintptr_t)p;
	return r;
}

static inline rmmgo_ptr_result rmmgo_malloc_from_pool_async(uintptr_t tbl, size_t size, uintptr_t pool, uintptr_t stream) {
	rmmgo_ptr_result r = {0, 0};
	void *p = NULL;
	r.err = rmmgo_done(tbl, RMMGO_FN(tbl, cudaMallocFromPoolAsync)(&p, size, (rmmgo_cudaMemPool_t)pool, (rmmgo_cudaStream_t)stream));
	r.value = (uintptr_t)p;
	return r;
}

static inline int32_t rmmgo_free_async(uintptr_t tbl, uintptr_t ptr, uintptr_t stream) {
	return rmmgo_done(tbl, RMMGO_FN(tbl, cudaFreeAsync)((void *)ptr, (rmmgo_cudaStream_t)stream));
}

static inline rmmgo_ptr_result rmmgo_mem_pool_create(uintptr_t tbl, int32_t allocType, int32_t handleTypes,
		int32_t locType, int32_t locID, uint64_t maxSize) {
	rmmgo_ptr_result r = {0, 0};
	rmmgo_cudaMemPoolProps props;
	rmmgo_cudaMemPool_t pool = NULL;
	memset(&props, 0, sizeof props);
	props.allocType = allocType;
	props.handleTypes = handleTypes;
	props.location.type = locType;
	props.location.id = locID;
	props.maxSize = (size_t)maxSize;
	r.err = rmmgo_done(tbl, RMMGO_FN(tbl, cudaMemPoolCreate)(&pool, &props));
	r.value = (uintptr_t)pool;
	return r;
}

static inline int32_t rmmgo_mem_pool_destroy(uintptr_t tbl, uintptr_t pool) {
	return rmmgo_done(tbl, RMMGO_FN(tbl, cudaMemPoolDestroy)((rmmgo_cudaMemPool_t)pool));
}

// The reuse attributes (1..3) are int in CUDA; the others are 64-bit.
static inline int rmmgo_pool_attr_is_int(int32_t attr) { return attr >= 1 && attr <= 3; }

static inline int32_t rmmgo_mem_pool_set_attribute(uintptr_t tbl, uintptr_t pool, int32_t attr, uint64_t value) {
	rmmgo_cudaError_t err;
	if (rmmgo_pool_attr_is_int(attr)) {
		int v = value != 0;
		err = RMMGO_FN(tbl, cudaMemPoolSetAttribute)((rmmgo_cudaMemPool_t)pool, attr, &v);
	} else {
		uint64_t v = value;
		err = RMMGO_FN(tbl, cudaMemPoolSetAttribute)((rmmgo_cudaMemPool_t)pool, attr, &v);
	}
	return rmmgo_done(tbl, err);
}

static inline rmmgo_u64_result rmmgo_mem_pool_get_attribute(uintptr_t tbl, uintptr_t pool, int32_t attr) {
	rmmgo_u64_result r = {0, 0};
	if (rmmgo_pool_attr_is_int(attr)) {
		int v = 0;
		r.err = rmmgo_done(tbl, RMMGO_FN(tbl, cudaMemPoolGetAttribute)((rmmgo_cudaMemPool_t)pool, attr, &v));
		r.value = (uint64_t)(uint32_t)v;
	} else {
		uint64_t v = 0;
		r.err = rmmgo_done(tbl, RMMGO_FN(tbl, cudaMemPoolGetAttribute)((rmmgo_cudaMemPool_t)pool, attr, &v));
		r.value = v;
	}
	return r;
}

static inline int32_t rmmgo_mem_pool_trim_to(uintptr_t tbl, uintptr_t pool, size_t keep) {
	return rmmgo_done(tbl, RMMGO_FN(tbl, cudaMemPoolTrimTo)((rmmgo_cudaMemPool_t)pool, keep));
}

static inline rmmgo_ptr_result rmmgo_device_get_default_mem_pool(uintptr_t tbl, int32_t dev) {
	rmmgo_ptr_result r = {0, 0};
	rmmgo_cudaMemPool_t pool = NULL;
	r.err = rmmgo_done(tbl, RMMGO_FN(tbl, cudaDeviceGetDefaultMemPool)(&pool, dev));
	r.value = (uintptr_t)pool;
	return r;
}

// Streams and events.

static inline rmmgo_ptr_result rmmgo_stream_create(uintptr_t tbl, uint32_t flags) {
	rmmgo_ptr_result r = {0, 0};
	rmmgo_cudaStream_t s = NULL;
	r.err = rmmgo_done(tbl, RMMGO_FN(tbl, cudaStreamCreateWithFlags)(&s, flags));
	r.value = (uintptr_t)s;
	return r;
}

static inline int32_t rmmgo_stream_destroy(uintptr_t tbl, uintptr_t s) {
	return rmmgo_done(tbl, RMMGO_FN(tbl, cudaStreamDestroy)((rmmgo_cudaStream_t)s));
}

static inline int32_t rmmgo_stream_synchronize(uintptr_t tbl, uintptr_t s) {
	return rmmgo_done(tbl, RMMGO_FN(tbl, cudaStreamSynchronize)((rmmgo_cudaStream_t)s));
}

static inline int32_t rmmgo_stream_query(uintptr_t tbl, uintptr_t s) {
	return rmmgo_done(tbl, RMMGO_FN(tbl, cudaStreamQuery)((rmmgo_cudaStream_t)s));
}

static inline int32_t rmmgo_stream_wait_event(uintptr_t tbl, uintptr_t s, uintptr_t e) {
	return rmmgo_done(tbl, RMMGO_FN(tbl, cudaStreamWaitEvent)((rmmgo_cudaStream_t)s, (rmmgo_cudaEvent_t)e, 0));
}

static inline rmmgo_u64_result rmmgo_stream_get_id(uintptr_t tbl, uintptr_t s) {
	rmmgo_u64_result r = {0, 0};
	unsigned long long id = 0;
	const rmmgo_cudart *t = (const rmmgo_cudart *)tbl;
	// The driver's call first (no process-wide lock); on any failure (no
	// current context on this thread, say) the runtime's, whose error is
	// the one reported.
	if (t->cuStreamGetId != NULL &&
	    ((rmmgo_drvfn_cuStreamGetId)t->cuStreamGetId)((rmmgo_cudaStream_t)s, &id) == 0) {
		r.value = id;
		return r;
	}
	r.err = rmmgo_done(tbl, RMMGO_FN(tbl, cudaStreamGetId)((rmmgo_cudaStream_t)s, &id));
	r.value = id;
	return r;
}

// The addresses of cudaStreamGetId and cudaGetLastError, for C code that
// calls them itself (the C ABI's per-thread cache).
static inline uintptr_t rmmgo_addr_stream_get_id(uintptr_t tbl) {
	const rmmgo_cudart *t = (const rmmgo_cudart *)tbl;
	return (uintptr_t)(t->cuStreamGetId != NULL ? t->cuStreamGetId : t->cudaStreamGetId);
}
// The driver function symbol in its ABI version, through the runtime; NULL
// when it has none (symbol is freed here).
static inline void *rmmgo_driver_entry(uintptr_t tbl, char *symbol, unsigned version) {
	void *fn = NULL;
	int32_t status = -1;
	// Flags 0: cudaEnableDefault; status 0: cudaDriverEntryPointSuccess.
	int32_t err = rmmgo_done(tbl, ((rmmgo_fn_cudaGetDriverEntryPointByVersion)((const rmmgo_cudart *)tbl)
		->cudaGetDriverEntryPointByVersion)(symbol, &fn, version, 0, &status));
	free(symbol);
	return err == 0 && status == 0 ? fn : NULL;
}

// The runtime's cudaStreamGetId alone (tests compare it with the driver's).
static inline rmmgo_u64_result rmmgo_stream_get_id_runtime(uintptr_t tbl, uintptr_t s) {
	rmmgo_u64_result r = {0, 0};
	unsigned long long id = 0;
	r.err = rmmgo_done(tbl, RMMGO_FN(tbl, cudaStreamGetId)((rmmgo_cudaStream_t)s, &id));
	r.value = id;
	return r;
}
static inline int rmmgo_has_driver_stream_id(uintptr_t tbl) {
	return ((const rmmgo_cudart *)tbl)->cuStreamGetId != NULL;
}

static inline uintptr_t rmmgo_addr_get_last_error(uintptr_t tbl) {
	return (uintptr_t)((const rmmgo_cudart *)tbl)->cudaGetLastError;
}

static inline rmmgo_ptr_result rmmgo_event_create(uintptr_t tbl, uint32_t flags) {
	rmmgo_ptr_result r = {0, 0};
	rmmgo_cudaEvent_t e = NULL;
	r.err = rmmgo_done(tbl, RMMGO_FN(tbl, cudaEventCreateWithFlags)(&e, flags));
	r.value = (uintptr_t)e;
	return r;
}

static inline int32_t rmmgo_event_destroy(uintptr_t tbl, uintptr_t e) {
	return rmmgo_done(tbl, RMMGO_FN(tbl, cudaEventDestroy)((rmmgo_cudaEvent_t)e));
}

static inline int32_t rmmgo_event_record(uintptr_t tbl, uintptr_t e, uintptr_t s) {
	return rmmgo_done(tbl, RMMGO_FN(tbl, cudaEventRecord)((rmmgo_cudaEvent_t)e, (rmmgo_cudaStream_t)s));
}

static inline int32_t rmmgo_event_query(uintptr_t tbl, uintptr_t e) {
	return rmmgo_done(tbl, RMMGO_FN(tbl, cudaEventQuery)((rmmgo_cudaEvent_t)e));
}

static inline int32_t rmmgo_event_synchronize(uintptr_t tbl, uintptr_t e) {
	return rmmgo_done(tbl, RMMGO_FN(tbl, cudaEventSynchronize)((rmmgo_cudaEvent_t)e));
}

// Copies and fills.

static inline int32_t rmmgo_memcpy(uintptr_t tbl, uintptr_t dst, uintptr_t src, size_t n, int32_t kind) {
	return rmmgo_done(tbl, RMMGO_FN(tbl, cudaMemcpy)((void *)dst, (const void *)src, n, kind));
}

static inline int32_t rmmgo_memcpy_async(uintptr_t tbl, uintptr_t dst, uintptr_t src, size_t n, int32_t kind, uintptr_t s) {
	return rmmgo_done(tbl, RMMGO_FN(tbl, cudaMemcpyAsync)((void *)dst, (const void *)src, n, kind, (rmmgo_cudaStream_t)s));
}

static inline int32_t rmmgo_memset(uintptr_t tbl, uintptr_t ptr, int value, size_t n) {
	return rmmgo_done(tbl, RMMGO_FN(tbl, cudaMemset)((void *)ptr, value, n));
}

static inline int32_t rmmgo_memset_async(uintptr_t tbl, uintptr_t ptr, int value, size_t n, uintptr_t s) {
	return rmmgo_done(tbl, RMMGO_FN(tbl, cudaMemsetAsync)((void *)ptr, value, n, (rmmgo_cudaStream_t)s));
}

// Managed-memory hints. The location shape is used when the runtime has it;
// otherwise the device shape, with the device Go derived from the location.

static inline int32_t rmmgo_mem_prefetch_async(uintptr_t tbl, uintptr_t ptr, size_t n,
		int32_t locType, int32_t locID, int32_t device, uintptr_t s) {
	const rmmgo_cudart *t = (const rmmgo_cudart *)tbl;
	rmmgo_cudaError_t err;
	if (t->cudaMemPrefetchAsync_location != NULL) {
		rmmgo_cudaMemLocation loc;
		loc.type = locType;
		loc.id = locID;
		err = RMMGO_FN(tbl, cudaMemPrefetchAsync_location)((const void *)ptr, n, loc, 0, (rmmgo_cudaStream_t)s);
	} else {
		err = RMMGO_FN(tbl, cudaMemPrefetchAsync_device)((const void *)ptr, n, device, (rmmgo_cudaStream_t)s);
	}
	return rmmgo_done(tbl, err);
}

static inline int32_t rmmgo_mem_advise(uintptr_t tbl, uintptr_t ptr, size_t n, int32_t advice,
		int32_t locType, int32_t locID, int32_t device) {
	const rmmgo_cudart *t = (const rmmgo_cudart *)tbl;
	rmmgo_cudaError_t err;
	if (t->cudaMemAdvise_location != NULL) {
		rmmgo_cudaMemLocation loc;
		loc.type = locType;
		loc.id = locID;
		err = RMMGO_FN(tbl, cudaMemAdvise_location)((const void *)ptr, n, advice, loc);
	} else {
		err = RMMGO_FN(tbl, cudaMemAdvise_device)((const void *)ptr, n, advice, device);
	}
	return rmmgo_done(tbl, err);
}

// Pointers.

static inline rmmgo_ptrattr_result rmmgo_pointer_get_attributes(uintptr_t tbl, uintptr_t ptr) {
	rmmgo_ptrattr_result r;
	rmmgo_cudaPointerAttributes a;
	memset(&r, 0, sizeof r);
	memset(&a, 0, sizeof a);
	r.err = rmmgo_done(tbl, RMMGO_FN(tbl, cudaPointerGetAttributes)(&a, (const void *)ptr));
	r.type = a.type;
	r.device = a.device;
	r.devicePointer = (uintptr_t)a.devicePointer;
	r.hostPointer = (uintptr_t)a.hostPointer;
	return r;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"unsafe"
)

// Library names OpenCUDA tries, in order, when no path is given.
var defaultLibraryNames = []string{"libcudart.so.13", "libcudart.so.12", "libcudart.so"}

// OpenCUDA loads the CUDA runtime and returns a Runtime over it.
//
// With a path (RMMGO_CUDART_LIBRARY through Open), exactly that library is
// loaded: a path that does not load is an error, never a reason to pick
// another runtime. Without one, a libcudart the process has already loaded
// (by a CUDA program or Python package that shares the process) is used
// first, so that everyone in the process shares one runtime; otherwise
// libcudart.so.13, libcudart.so.12 and libcudart.so are tried in that order,
// moving to the next one only when a library does not load or its runtime is
// too new for the installed driver.
//
// Once loaded, every function rmmgo calls is resolved, and the runtime
// version, driver version and device count are read. A missing function, a
// runtime older than 12.0, a missing or too old driver, or no device is an
// error that says which.
func OpenCUDA(path string) (Runtime, error) {
	if path != "" {
		lib, err := dlOpen(path, dlNow|dlLocal)
		if err != nil {
			return nil, fmt.Errorf("cudart: cannot load the CUDA runtime named by the caller: %w", err)
		}
		rt, err := openRuntime(lib)
		if err != nil {
			_ = lib.close()
			return nil, err
		}
		return rt, nil
	}
	if rt, err := openLoaded(defaultLibraryNames); rt != nil || err != nil {
		return rt, err
	}
	return openFirst(defaultLibraryNames)
}

// openLoaded uses the first of names that the process has already loaded.
// It returns nil, nil when none is.
func openLoaded(names []string) (Runtime, error) {
	for _, name := range names {
		lib, err := dlOpen(name, dlNow|dlLocal|dlNoLoad)
		if err != nil {
			continue
		}
		rt, err := openRuntime(lib)
		if err != nil {
			_ = lib.close()
			return nil, fmt.Errorf("cudart: the process has already loaded %s: %w", name, err)
		}
		return rt, nil
	}
	return nil, nil
}

// openFirst loads the first of names that loads and works. It moves on from
// a library that does not load, and from one whose runtime needs a newer
// driver than the installed one (an older runtime may still work); any other
// failure is final. The error lists every name tried and why it failed.
func openFirst(names []string) (Runtime, error) {
	var tried []string
	var last error
	for _, name := range names {
		lib, err := dlOpen(name, dlNow|dlLocal)
		if err != nil {
			tried = append(tried, err.Error())
			continue
		}
		rt, err := openRuntime(lib)
		if err == nil {
			return rt, nil
		}
		_ = lib.close()
		if !errors.Is(err, ErrInsufficientDriver) {
			return nil, err
		}
		tried = append(tried, fmt.Sprintf("%s: %v", name, err))
		last = err
	}
	return nil, &loadError{msg: "cudart: cannot load the CUDA runtime; tried " + strings.Join(tried, "; "), cause: last}
}

// loadError lists every library tried; it wraps the last runtime failure
// (an insufficient driver), if any, for errors.Is.
type loadError struct {
	msg   string
	cause error
}

func (e *loadError) Error() string { return e.msg }
func (e *loadError) Unwrap() error { return e.cause }

// cudaRuntime is the real backend: the CUDA runtime loaded with dlopen.
// Everything in it is fixed at load time except the cache of error texts.
type cudaRuntime struct {
	tbl            C.uintptr_t // *rmmgo_cudart in C memory, never freed
	lib            *dynLib
	file           string // the library file, after the loader's search
	runtimeVersion int
	driverVersion  int
	deviceCount    int
	prefetchFunc   string // the prefetch function in use, for messages and tests
	adviseFunc     string
	// Whether the hint functions in use take a cudaMemLocation (CUDA 13, or
	// the _v2 functions of CUDA 12.2+) rather than an int device.
	prefetchLocation bool
	adviseLocation   bool

	texts sync.Map // ErrorCode -> errorText

	// Preallocated answers of the polling calls, so that polling a busy
	// stream or event does not allocate.
	streamNotReady *Error
	eventNotReady  *Error
}

type errorText struct{ name, desc string }

// tableSlots maps each symbol to its slot in the table. The managed-memory
// hint slots are filled by chooseHints instead.
func tableSlots(t *C.rmmgo_cudart) map[string]*unsafe.Pointer {
	return map[string]*unsafe.Pointer{
		"cudaGetErrorName":            &t.cudaGetErrorName,
		"cudaGetErrorString":          &t.cudaGetErrorString,
		"cudaGetLastError":            &t.cudaGetLastError,
		"cudaPeekAtLastError":         &t.cudaPeekAtLastError,
		"cudaRuntimeGetVersion":       &t.cudaRuntimeGetVersion,
		"cudaDriverGetVersion":        &t.cudaDriverGetVersion,
		"cudaGetDeviceCount":          &t.cudaGetDeviceCount,
		"cudaGetDevice":               &t.cudaGetDevice,
		"cudaSetDevice":               &t.cudaSetDevice,
		"cudaDeviceGetAttribute":      &t.cudaDeviceGetAttribute,
		"cudaDeviceSynchronize":       &t.cudaDeviceSynchronize,
		"cudaMemGetInfo":              &t.cudaMemGetInfo,
		"cudaMalloc":                  &t.cudaMalloc,
		"cudaFree":                    &t.cudaFree,
		"cudaMallocManaged":           &t.cudaMallocManaged,
		"cudaHostAlloc":               &t.cudaHostAlloc,
		"cudaFreeHost":                &t.cudaFreeHost,
		"cudaMallocAsync":             &t.cudaMallocAsync,
		"cudaMallocFromPoolAsync":     &t.cudaMallocFromPoolAsync,
		"cudaFreeAsync":               &t.cudaFreeAsync,
		"cudaMemPoolCreate":           &t.cudaMemPoolCreate,
		"cudaMemPoolDestroy":          &t.cudaMemPoolDestroy,
		"cudaMemPoolSetAttribute":     &t.cudaMemPoolSetAttribute,
		"cudaMemPoolGetAttribute":     &t.cudaMemPoolGetAttribute,
		"cudaMemPoolTrimTo":           &t.cudaMemPoolTrimTo,
		"cudaDeviceGetDefaultMemPool": &t.cudaDeviceGetDefaultMemPool,
		"cudaStreamCreateWithFlags":   &t.cudaStreamCreateWithFlags,
		"cudaStreamDestroy":           &t.cudaStreamDestroy,
		"cudaStreamSynchronize":       &t.cudaStreamSynchronize,
		"cudaStreamQuery":             &t.cudaStreamQuery,
		"cudaStreamWaitEvent":         &t.cudaStreamWaitEvent,
		"cudaStreamGetId":             &t.cudaStreamGetId,
		"cudaEventCreateWithFlags":    &t.cudaEventCreateWithFlags,
		"cudaEventDestroy":            &t.cudaEventDestroy,
		"cudaEventRecord":             &t.cudaEventRecord,
		"cudaEventQuery":              &t.cudaEventQuery,
		"cudaEventSynchronize":        &t.cudaEventSynchronize,
		"cudaMemcpy":                  &t.cudaMemcpy,
		"cudaMemcpyAsync":             &t.cudaMemcpyAsync,
		"cudaMemset":                  &t.cudaMemset,
		"cudaMemsetAsync":             &t.cudaMemsetAsync,
		"cudaPointerGetAttributes":    &t.cudaPointerGetAttributes,
	}
}

// hintSymbols are the FuncDecls symbols that chooseHints places.
var hintSymbols = map[string]bool{
	"cudaMemPrefetchAsync": true, "cudaMemPrefetchAsync_v2": true,
	"cudaMemAdvise": true, "cudaMemAdvise_v2": true,
}

// openRuntime resolves the runtime's functions in lib and checks that it can
// run: version, driver and devices.
func openRuntime(lib *dynLib) (*cudaRuntime, error) {
	verSym, err := lib.lookup("cudaRuntimeGetVersion")
	if err != nil {
		return nil, fmt.Errorf("cudart: %s is not a CUDA runtime library: %w", lib.name, err)
	}
	file := fileOf(verSym)
	if file == "" {
		file = lib.name
	}

	// The table is small and lives as long as the process: a runtime may be
	// in use until exit, and CUDA itself is never unloaded under it.
	t := (*C.rmmgo_cudart)(C.calloc(1, C.sizeof_rmmgo_cudart))
	if t == nil {
		return nil, errors.New("cudart: out of host memory for the function table")
	}
	loaded := false
	defer func() {
		if !loaded {
			C.free(unsafe.Pointer(t))
		}
	}()
	c := &cudaRuntime{tbl: C.uintptr_t(uintptr(unsafe.Pointer(t))), lib: lib, file: file}
	t.cudaRuntimeGetVersion = verSym
	v := C.rmmgo_runtime_get_version(c.tbl)
	if v.err != 0 {
		return nil, fmt.Errorf("cudart: %s: cudaRuntimeGetVersion failed with error %d", file, int32(v.err))
	}
	c.runtimeVersion = int(v.value)
	if c.runtimeVersion < MinRuntimeVersion {
		return nil, fmt.Errorf("cudart: %s is CUDA runtime %s; rmmgo needs %s or later",
			file, versionString(c.runtimeVersion), versionString(MinRuntimeVersion))
	}

	// Resolve every function that applies to this version.
	syms := make(map[string]unsafe.Pointer)
	var missing []string
	for _, d := range FuncDecls() {
		if !d.AppliesTo(c.runtimeVersion) {
			continue
		}
		if _, done := syms[d.Symbol]; done {
			continue
		}
		p, err := lib.lookup(d.Symbol)
		if err != nil {
			if !d.Optional {
				missing = append(missing, d.Symbol)
			}
			continue
		}
		syms[d.Symbol] = p
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("cudart: %s (CUDA runtime %s) lacks functions rmmgo needs: %s",
			file, versionString(c.runtimeVersion), strings.Join(missing, ", "))
	}
	slots := tableSlots(t)
	for sym, p := range syms {
		if slot, ok := slots[sym]; ok {
			*slot = p
		} else if sym == "cudaGetDriverEntryPointByVersion" {
			t.cudaGetDriverEntryPointByVersion = p // optional: not in slots
		} else if !hintSymbols[sym] {
			return nil, fmt.Errorf("cudart: internal error: no table slot for %s", sym)
		}
	}
	for sym, slot := range slots {
		if *slot == nil {
			return nil, fmt.Errorf("cudart: internal error: %s was not resolved", sym)
		}
	}
	c.chooseHints(t, syms)

	c.streamNotReady = c.newError("cudaStreamQuery", ErrorNotReady)
	c.eventNotReady = c.newError("cudaEventQuery", ErrorNotReady)

	d := C.rmmgo_driver_get_version(c.tbl)
	if d.err != 0 {
		return nil, fmt.Errorf("cudart: %s: %w", file, c.newError("cudaDriverGetVersion", ErrorCode(d.err)))
	}
	c.driverVersion = int(d.value)

	n := C.rmmgo_get_device_count(c.tbl)
	switch code := ErrorCode(n.err); {
	case code == ErrorInsufficientDriver && c.driverVersion == 0:
		return nil, fmt.Errorf("cudart: no CUDA driver is installed (CUDA runtime %s from %s): %w",
			versionString(c.runtimeVersion), file, c.newError("cudaGetDeviceCount", code))
	case code == ErrorInsufficientDriver:
		return nil, fmt.Errorf("cudart: the CUDA driver (%s) is too old for CUDA runtime %s from %s: %w",
			versionString(c.driverVersion), versionString(c.runtimeVersion), file, c.newError("cudaGetDeviceCount", code))
	case code == ErrorNoDevice || (code == Success && n.value == 0):
		if code == Success {
			code = ErrorNoDevice
		}
		return nil, fmt.Errorf("cudart: no CUDA device found (CUDA runtime %s, driver %s): %w",
			versionString(c.runtimeVersion), versionString(c.driverVersion), c.newError("cudaGetDeviceCount", code))
	case code != Success:
		return nil, fmt.Errorf("cudart: cannot count CUDA devices (CUDA runtime %s, driver %s): %w",
			versionString(c.runtimeVersion), versionString(c.driverVersion), c.newError("cudaGetDeviceCount", code))
	}
	c.deviceCount = int(n.value)
	// The driver's cuStreamGetId, through the runtime (which has the
	// driver loaded by now: it counted the devices).
	if t.cudaGetDriverEntryPointByVersion != nil {
		t.cuStreamGetId = C.rmmgo_driver_entry(c.tbl, C.CString("cuStreamGetId"), versionStreamGetID)
	}
	loaded = true
	return c, nil
}

// chooseHints places cudaMemPrefetchAsync and cudaMemAdvise by version.
// CUDA 13 declares them with a cudaMemLocation. CUDA 12 declares them with
// an int device and, from 12.2, exports the location shape as *_v2: rmmgo
// uses the _v2 functions when they are there, because only they can name a
// host NUMA node; on 12.0 and 12.1 it calls the device shape, passing
// cudaCpuDeviceId for the host.
func (c *cudaRuntime) chooseHints(t *C.rmmgo_cudart, syms map[string]unsafe.Pointer) {
	switch {
	case c.runtimeVersion >= versionLocation:
		t.cudaMemPrefetchAsync_location = syms["cudaMemPrefetchAsync"]
		c.prefetchFunc = "cudaMemPrefetchAsync"
	case syms["cudaMemPrefetchAsync_v2"] != nil:
		t.cudaMemPrefetchAsync_location = syms["cudaMemPrefetchAsync_v2"]
		c.prefetchFunc = "cudaMemPrefetchAsync_v2"
	default:
		t.cudaMemPrefetchAsync_device = syms["cudaMemPrefetchAsync"]
		c.prefetchFunc = "cudaMemPrefetchAsync"
	}
	switch {
	case c.runtimeVersion >= versionLocation:
		t.cudaMemAdvise_location = syms["cudaMemAdvise"]
		c.adviseFunc = "cudaMemAdvise"
	case syms["cudaMemAdvise_v2"] != nil:
		t.cudaMemAdvise_location = syms["cudaMemAdvise_v2"]
		c.adviseFunc = "cudaMemAdvise_v2"
	default:
		t.cudaMemAdvise_device = syms["cudaMemAdvise"]
		c.adviseFunc = "cudaMemAdvise"
	}
	c.prefetchLocation = t.cudaMemPrefetchAsync_location != nil
	c.adviseLocation = t.cudaMemAdvise_location != nil
}

// versionString writes a CUDA version number (12040) as "12.4".
func versionString(v int) string {
	if v <= 0 {
		return "none"
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

// LibraryPath is the file the runtime was loaded from.
func (c *cudaRuntime) LibraryPath() string { return c.file }

// String describes the loaded runtime, e.g. "CUDA runtime 13.0 (driver 13.0,
// 2 devices) from /usr/local/cuda/lib64/libcudart.so.13".
func (c *cudaRuntime) String() string {
	return fmt.Sprintf("CUDA runtime %s (driver %s, %d devices) from %s",
		versionString(c.runtimeVersion), versionString(c.driverVersion), c.deviceCount, c.file)
}

// errorText asks the runtime for code's name and description, once per code.
func (c *cudaRuntime) errorText(code ErrorCode) errorText {
	if v, ok := c.texts.Load(code); ok {
		return v.(errorText)
	}
	r := C.rmmgo_get_error_text(c.tbl, C.int32_t(code))
	var t errorText
	if r.name != nil {
		t.name = C.GoString(r.name)
	}
	if r.desc != nil {
		t.desc = C.GoString(r.desc)
	}
	// The runtime names codes it does not know "unrecognized error code";
	// keep a name that says which code it was.
	if !strings.HasPrefix(t.name, "cuda") {
		t.name = code.Name()
	}
	c.texts.Store(code, t)
	return t
}

// newError builds the *Error for a failed call to fn.
func (c *cudaRuntime) newError(fn string, code ErrorCode) *Error {
	t := c.errorText(code)
	return &Error{Code: code, Name: t.name, Desc: t.desc, Func: fn}
}

// check turns a status into nil or an *Error for fn.
func (c *cudaRuntime) check(fn string, code C.int32_t) error {
	if code == 0 {
		return nil
	}
	return c.newError(fn, ErrorCode(code))
}

// peekAtLastError reports the calling thread's last CUDA error without
// clearing it (for tests: rmmgo's calls must leave it clean).
func (c *cudaRuntime) peekAtLastError() ErrorCode {
	return ErrorCode(C.rmmgo_peek_at_last_error(c.tbl))
}

// deviceArg converts a device ordinal for C, or reports it invalid.
func (c *cudaRuntime) deviceArg(fn string, dev int) (C.int32_t, error) {
	if dev < math.MinInt32 || dev > math.MaxInt32 {
		return 0, c.newError(fn, ErrorInvalidDevice)
	}
	return C.int32_t(dev), nil
}

// Backend reports BackendCUDA.
func (c *cudaRuntime) Backend() Backend { return BackendCUDA }

// RuntimeVersion is cudaRuntimeGetVersion, read once at load time.
func (c *cudaRuntime) RuntimeVersion() (int, error) { return c.runtimeVersion, nil }

// DriverVersion is cudaDriverGetVersion, read once at load time.
func (c *cudaRuntime) DriverVersion() (int, error) { return c.driverVersion, nil }

// ErrorName is cudaGetErrorName.
func (c *cudaRuntime) ErrorName(code ErrorCode) string { return c.errorText(code).name }

// ErrorString is cudaGetErrorString.
func (c *cudaRuntime) ErrorString(code ErrorCode) string { return c.errorText(code).desc }

// GetDeviceCount is cudaGetDeviceCount.
func (c *cudaRuntime) GetDeviceCount() (int, error) {
	r := C.rmmgo_get_device_count(c.tbl)
	if r.err != 0 {
		return 0, c.newError("cudaGetDeviceCount", ErrorCode(r.err))
	}
	return int(r.value), nil
}

// GetDevice is cudaGetDevice: the calling OS thread's current device.
func (c *cudaRuntime) GetDevice() (int, error) {
	r := C.rmmgo_get_device(c.tbl)
	if r.err != 0 {
		return 0, c.newError("cudaGetDevice", ErrorCode(r.err))
	}
	return int(r.value), nil
}

// SetDevice is cudaSetDevice: it sets the calling OS thread's current device.
func (c *cudaRuntime) SetDevice(dev int) error {
	d, err := c.deviceArg("cudaSetDevice", dev)
	if err != nil {
		return err
	}
	return c.check("cudaSetDevice", C.rmmgo_set_device(c.tbl, d))
}

// DeviceGetAttribute is cudaDeviceGetAttribute.
func (c *cudaRuntime) DeviceGetAttribute(attr DeviceAttr, dev int) (int, error) {
	d, err := c.deviceArg("cudaDeviceGetAttribute", dev)
	if err != nil {
		return 0, err
	}
	r := C.rmmgo_device_get_attribute(c.tbl, C.int32_t(attr), d)
	if r.err != 0 {
		return 0, c.newError("cudaDeviceGetAttribute", ErrorCode(r.err))
	}
	return int(r.value), nil
}

// DeviceSynchronize is cudaDeviceSynchronize.
func (c *cudaRuntime) DeviceSynchronize() error {
	return c.check("cudaDeviceSynchronize", C.rmmgo_device_synchronize(c.tbl))
}

// MemGetInfo is cudaMemGetInfo, for the current device.
func (c *cudaRuntime) MemGetInfo() (free, total uint64, err error) {
	r := C.rmmgo_mem_get_info(c.tbl)
	if r.err != 0 {
		return 0, 0, c.newError("cudaMemGetInfo", ErrorCode(r.err))
	}
	return uint64(r.free), uint64(r.total), nil
}

// Malloc is cudaMalloc.
func (c *cudaRuntime) Malloc(size uintptr) (uintptr, error) {
	r := C.rmmgo_malloc(c.tbl, C.size_t(size))
	if r.err != 0 {
		return 0, c.newError("cudaMalloc", ErrorCode(r.err))
	}
	return uintptr(r.value), nil
}

// Free is cudaFree.
func (c *cudaRuntime) Free(ptr uintptr) error {
	return c.check("cudaFree", C.rmmgo_free(c.tbl, C.uintptr_t(ptr)))
}

// MallocManaged is cudaMallocManaged.
func (c *cudaRuntime) MallocManaged(size uintptr, flags uint32) (uintptr, error) {
	r := C.rmmgo_malloc_managed(c.tbl, C.size_t(size), C.uint32_t(flags))
	if r.err != 0 {
		return 0, c.newError("cudaMallocManaged", ErrorCode(r.err))
	}
	return uintptr(r.value), nil
}

// HostAlloc is cudaHostAlloc.
func (c *cudaRuntime) HostAlloc(size uintptr, flags uint32) (uintptr, error) {
	r := C.rmmgo_host_alloc(c.tbl, C.size_t(size), C.uint32_t(flags))
	if r.err != 0 {
		return 0, c.newError("cudaHostAlloc", ErrorCode(r.err))
	}
	return uintptr(r.value), nil
}

// FreeHost is cudaFreeHost.
func (c *cudaRuntime) FreeHost(ptr uintptr) error {
	return c.check("cudaFreeHost", C.rmmgo_free_host(c.tbl, C.uintptr_t(ptr)))
}

// MallocAsync is cudaMallocAsync.
func (c *cudaRuntime) MallocAsync(size uintptr, stream Stream) (uintptr, error) {
	r := C.rmmgo_malloc_async(c.tbl, C.size_t(size), C.uintptr_t(stream))
	if r.err != 0 {
		return 0, c.newError("cudaMallocAsync", ErrorCode(r.err))
	}
	return uintptr(r.value), nil
}

// MallocFromPoolAsync is cudaMallocFromPoolAsync.
func (c *cudaRuntime) MallocFromPoolAsync(size uintptr, pool MemPool, stream Stream) (uintptr, error) {
	r := C.rmmgo_malloc_from_pool_async(c.tbl, C.size_t(size), C.uintptr_t(pool), C.uintptr_t(stream))
	if r.err != 0 {
		return 0, c.newError("cudaMallocFromPoolAsync", ErrorCode(r.err))
	}
	return uintptr(r.value), nil
}

// FreeAsync is cudaFreeAsync.
func (c *cudaRuntime) FreeAsync(ptr uintptr, stream Stream) error {
	return c.check("cudaFreeAsync", C.rmmgo_free_async(c.tbl, C.uintptr_t(ptr), C.uintptr_t(stream)))
}

// MemPoolCreate is cudaMemPoolCreate. It lays props out as CUDA's 88-byte
// cudaMemPoolProps with every other field zero.
func (c *cudaRuntime) MemPoolCreate(props MemPoolProps) (MemPool, error) {
	r := C.rmmgo_mem_pool_create(c.tbl, C.int32_t(props.AllocType), C.int32_t(props.HandleTypes),
		C.int32_t(props.Location.Type), C.int32_t(props.Location.ID), C.uint64_t(props.MaxSize))
	if r.err != 0 {
		return 0, c.newError("cudaMemPoolCreate", ErrorCode(r.err))
	}
	return MemPool(r.value), nil
}

// MemPoolDestroy is cudaMemPoolDestroy.
func (c *cudaRuntime) MemPoolDestroy(pool MemPool) error {
	return c.check("cudaMemPoolDestroy", C.rmmgo_mem_pool_destroy(c.tbl, C.uintptr_t(pool)))
}

// MemPoolSetAttribute is cudaMemPoolSetAttribute. The reuse attributes are
// int flags in CUDA: any non-zero value sets them.
func (c *cudaRuntime) MemPoolSetAttribute(pool MemPool, attr MemPoolAttr, value uint64) error {
	return c.check("cudaMemPoolSetAttribute",
		C.rmmgo_mem_pool_set_attribute(c.tbl, C.uintptr_t(pool), C.int32_t(attr), C.uint64_t(value)))
}

// MemPoolGetAttribute is cudaMemPoolGetAttribute; the reuse attributes read
// as 0 or 1.
func (c *cudaRuntime) MemPoolGetAttribute(pool MemPool, attr MemPoolAttr) (uint64, error) {
	r := C.rmmgo_mem_pool_get_attribute(c.tbl, C.uintptr_t(pool), C.int32_t(attr))
	if r.err != 0 {
		return 0, c.newError("cudaMemPoolGetAttribute", ErrorCode(r.err))
	}
	return uint64(r.value), nil
}

// MemPoolTrimTo is cudaMemPoolTrimTo.
func (c *cudaRuntime) MemPoolTrimTo(pool MemPool, minBytesToKeep uintptr) error {
	return c.check("cudaMemPoolTrimTo", C.rmmgo_mem_pool_trim_to(c.tbl, C.uintptr_t(pool), C.size_t(minBytesToKeep)))
}

// DeviceGetDefaultMemPool is cudaDeviceGetDefaultMemPool.
func (c *cudaRuntime) DeviceGetDefaultMemPool(dev int) (MemPool, error) {
	d, err := c.deviceArg("cudaDeviceGetDefaultMemPool", dev)
	if err != nil {
		return 0, err
	}
	r := C.rmmgo_device_get_default_mem_pool(c.tbl, d)
	if r.err != 0 {
		return 0, c.newError("cudaDeviceGetDefaultMemPool", ErrorCode(r.err))
	}
	return MemPool(r.value), nil
}

// StreamCreate is cudaStreamCreateWithFlags.
func (c *cudaRuntime) StreamCreate(flags uint32) (Stream, error) {
	r := C.rmmgo_stream_create(c.tbl, C.uint32_t(flags))
	if r.err != 0 {
		return 0, c.newError("cudaStreamCreateWithFlags", ErrorCode(r.err))
	}
	return Stream(r.value), nil
}

// StreamDestroy is cudaStreamDestroy.
func (c *cudaRuntime) StreamDestroy(s Stream) error {
	return c.check("cudaStreamDestroy", C.rmmgo_stream_destroy(c.tbl, C.uintptr_t(s)))
}

// StreamSynchronize is cudaStreamSynchronize.
func (c *cudaRuntime) StreamSynchronize(s Stream) error {
	return c.check("cudaStreamSynchronize", C.rmmgo_stream_synchronize(c.tbl, C.uintptr_t(s)))
}

// StreamQuery is cudaStreamQuery: nil when all work is done, an *Error with
// ErrorNotReady while work is pending.
func (c *cudaRuntime) StreamQuery(s Stream) error {
	switch code := C.rmmgo_stream_query(c.tbl, C.uintptr_t(s)); code {
	case 0:
		return nil
	case C.int32_t(ErrorNotReady):
		return c.streamNotReady
	default:
		return c.newError("cudaStreamQuery", ErrorCode(code))
	}
}

// StreamWaitEvent is cudaStreamWaitEvent with no flags.
func (c *cudaRuntime) StreamWaitEvent(s Stream, e Event) error {
	return c.check("cudaStreamWaitEvent", C.rmmgo_stream_wait_event(c.tbl, C.uintptr_t(s), C.uintptr_t(e)))
}

// streamIDRuntime is cudaStreamGetId through the runtime only, and
// driverStreamID whether StreamGetID asks the driver first (for tests).
func (c *cudaRuntime) streamIDRuntime(s Stream) (uint64, error) {
	r := C.rmmgo_stream_get_id_runtime(c.tbl, C.uintptr_t(s))
	if r.err != 0 {
		return 0, c.newError("cudaStreamGetId", ErrorCode(r.err))
	}
	return uint64(r.value), nil
}

func (c *cudaRuntime) driverStreamID() bool { return C.rmmgo_has_driver_stream_id(c.tbl) != 0 }

// StreamGetIDFuncs returns the addresses of the stream-id function in use
// (the driver's cuStreamGetId when libcuda.so.1 has it, else the runtime's
// cudaStreamGetId; both return 0 on success) and of cudaGetLastError when r
// is the CUDA backend, else zeros. C code that must
// know a stream by its id without entering Go (the C ABI's per-thread cache)
// calls them directly; the second clears the thread's last error after a
// failed first, as every call here does.
func StreamGetIDFuncs(r Runtime) (getID, getLastError uintptr) {
	c, ok := r.(*cudaRuntime)
	if !ok || c == nil {
		return 0, 0
	}
	return uintptr(C.rmmgo_addr_stream_get_id(c.tbl)), uintptr(C.rmmgo_addr_get_last_error(c.tbl))
}

// StreamGetID is cudaStreamGetId.
func (c *cudaRuntime) StreamGetID(s Stream) (uint64, error) {
	r := C.rmmgo_stream_get_id(c.tbl, C.uintptr_t(s))
	if r.err != 0 {
		return 0, c.newError("cudaStreamGetId", ErrorCode(r.err))
	}
	return uint64(r.value), nil
}

// EventCreate is cudaEventCreateWithFlags.
func (c *cudaRuntime) EventCreate(flags uint32) (Event, error) {
	r := C.rmmgo_event_create(c.tbl, C.uint32_t(flags))
	if r.err != 0 {
		return 0, c.newError("cudaEventCreateWithFlags", ErrorCode(r.err))
	}
	return Event(r.value), nil
}

// EventDestroy is cudaEventDestroy.
func (c *cudaRuntime) EventDestroy(e Event) error {
	return c.check("cudaEventDestroy", C.rmmgo_event_destroy(c.tbl, C.uintptr_t(e)))
}

// EventRecord is cudaEventRecord.
func (c *cudaRuntime) EventRecord(e Event, s Stream) error {
	return c.check("cudaEventRecord", C.rmmgo_event_record(c.tbl, C.uintptr_t(e), C.uintptr_t(s)))
}

// EventQuery is cudaEventQuery: nil when the event has completed, an *Error
// with ErrorNotReady before.
func (c *cudaRuntime) EventQuery(e Event) error {
	switch code := C.rmmgo_event_query(c.tbl, C.uintptr_t(e)); code {
	case 0:
		return nil
	case C.int32_t(ErrorNotReady):
		return c.eventNotReady
	default:
		return c.newError("cudaEventQuery", ErrorCode(code))
	}
}

// EventSynchronize is cudaEventSynchronize.
func (c *cudaRuntime) EventSynchronize(e Event) error {
	return c.check("cudaEventSynchronize", C.rmmgo_event_synchronize(c.tbl, C.uintptr_t(e)))
}

// Memcpy is cudaMemcpy.
func (c *cudaRuntime) Memcpy(dst, src, n uintptr, kind MemcpyKind) error {
	return c.check("cudaMemcpy", C.rmmgo_memcpy(c.tbl, C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), C.int32_t(kind)))
}

// MemcpyAsync is cudaMemcpyAsync.
func (c *cudaRuntime) MemcpyAsync(dst, src, n uintptr, kind MemcpyKind, s Stream) error {
	return c.check("cudaMemcpyAsync",
		C.rmmgo_memcpy_async(c.tbl, C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), C.int32_t(kind), C.uintptr_t(s)))
}

// Memset is cudaMemset; like CUDA, it writes the low byte of value.
func (c *cudaRuntime) Memset(ptr uintptr, value int, n uintptr) error {
	return c.check("cudaMemset", C.rmmgo_memset(c.tbl, C.uintptr_t(ptr), C.int(int32(value)), C.size_t(n)))
}

// MemsetAsync is cudaMemsetAsync; like CUDA, it writes the low byte of value.
func (c *cudaRuntime) MemsetAsync(ptr uintptr, value int, n uintptr, s Stream) error {
	return c.check("cudaMemsetAsync",
		C.rmmgo_memset_async(c.tbl, C.uintptr_t(ptr), C.int(int32(value)), C.size_t(n), C.uintptr_t(s)))
}

// legacyDevice turns a location into CUDA 12's int device argument: a device
// ordinal, cudaCpuDeviceId for the host, cudaInvalidDeviceId for no location
// (the advice kinds that ignore it). Host NUMA locations have no such form.
func (c *cudaRuntime) legacyDevice(fn string, hasLocation bool, loc MemLocation) (C.int32_t, error) {
	if hasLocation {
		return 0, nil
	}
	switch loc.Type {
	case MemLocationTypeDevice:
		return C.int32_t(loc.ID), nil
	case MemLocationTypeHost:
		return C.int32_t(CPUDeviceID), nil
	case MemLocationTypeInvalid:
		return C.int32_t(InvalidDeviceID), nil
	default:
		return 0, &Error{Code: ErrorInvalidValue, Name: c.errorText(ErrorInvalidValue).name,
			Desc: fmt.Sprintf("memory location type %d needs CUDA runtime 12.2 or later (this is %s)",
				loc.Type, versionString(c.runtimeVersion)),
			Func: fn}
	}
}

// MemPrefetchAsync prefetches managed memory to loc. On CUDA 13 it calls
// cudaMemPrefetchAsync with the location; on CUDA 12.2+ cudaMemPrefetchAsync_v2;
// on CUDA 12.0 and 12.1 cudaMemPrefetchAsync with a device (host: cudaCpuDeviceId).
func (c *cudaRuntime) MemPrefetchAsync(ptr, n uintptr, loc MemLocation, s Stream) error {
	dev, err := c.legacyDevice(c.prefetchFunc, c.prefetchLocation, loc)
	if err != nil {
		return err
	}
	return c.check(c.prefetchFunc, C.rmmgo_mem_prefetch_async(c.tbl, C.uintptr_t(ptr), C.size_t(n),
		C.int32_t(loc.Type), C.int32_t(loc.ID), dev, C.uintptr_t(s)))
}

// MemAdvise advises CUDA about managed memory. The function it calls is
// chosen by version as for MemPrefetchAsync.
func (c *cudaRuntime) MemAdvise(ptr, n uintptr, advice MemoryAdvise, loc MemLocation) error {
	dev, err := c.legacyDevice(c.adviseFunc, c.adviseLocation, loc)
	if err != nil {
		return err
	}
	return c.check(c.adviseFunc, C.rmmgo_mem_advise(c.tbl, C.uintptr_t(ptr), C.size_t(n), C.int32_t(advice),
		C.int32_t(loc.Type), C.int32_t(loc.ID), dev))
}

// PointerGetAttributes is cudaPointerGetAttributes.
func (c *cudaRuntime) PointerGetAttributes(ptr uintptr) (PointerAttributes, error) {
	r := C.rmmgo_pointer_get_attributes(c.tbl, C.uintptr_t(ptr))
	if r.err != 0 {
		return PointerAttributes{}, c.newError("cudaPointerGetAttributes", ErrorCode(r.err))
	}
	return PointerAttributes{
		Type:          MemoryType(r._type),
		Device:        int(r.device),
		DevicePointer: uintptr(r.devicePointer),
		HostPointer:   uintptr(r.hostPointer),
	}, nil
}

var _ Runtime = (*cudaRuntime)(nil)
