/*
 * A fake libcudart for the tests of package cudart's real backend.
 *
 * The tests build it with the system C compiler (cc -shared) in several
 * variants and load it with OpenCUDA, so that loading, symbol resolution,
 * version-dependent choices, argument passing and error translation are
 * exercised on machines without CUDA. "Device" memory is host memory.
 *
 * Build-time knobs (-D):
 *   FAKE_RUNTIME_VERSION   cudaRuntimeGetVersion (default 13000); >= 13000
 *                          exports the location shape of cudaMemPrefetchAsync
 *                          and cudaMemAdvise, below it the device shape
 *   FAKE_HAVE_V2           export cudaMemPrefetchAsync_v2 / cudaMemAdvise_v2
 *   FAKE_NO_DRIVER_ENTRY   leave out cudaGetDriverEntryPointByVersion, which
 *                          is there from FAKE_RUNTIME_VERSION 12050 on
 *   FAKE_DRIVER_VERSION    cudaDriverGetVersion (default 13000; 0: no driver)
 *   FAKE_DEVICE_COUNT      devices (default 2)
 *   FAKE_DEVICE_COUNT_ERROR  cudaGetDeviceCount fails with this code
 *   FAKE_CAPACITY          bytes per device (default 1 GiB)
 *   FAKE_OMIT_REQUIRED     leave out cudaEventQuery and cudaMemPoolTrimTo
 *   FAKE_VMM_NEEDS_CONTEXT the driver's virtual memory calls fail with
 *                          CUDA_ERROR_INVALID_CONTEXT (201) on a thread until
 *                          it calls cudaSetDevice
 *   FAKE_LOG="path"        append one line per call to this file
 *
 * Test hooks: streams and events created with flag 0x80 stay busy (query
 * returns cudaErrorNotReady) until synchronized.
 *
 * Written for rmmgo's tests; it declares its own types and shares nothing
 * with cuda_abi.h on purpose, so that the two are checked against each other.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FAKE_RUNTIME_VERSION
#define FAKE_RUNTIME_VERSION 13000
#endif
#ifndef FAKE_DRIVER_VERSION
#define FAKE_DRIVER_VERSION 13000
#endif
#ifndef FAKE_DEVICE_COUNT
#define FAKE_DEVICE_COUNT 2
#endif
#ifndef FAKE_CAPACITY
#define FAKE_CAPACITY (1ull << 30)
#endif

#define BUSY_FLAG 0x80u

enum {
	OK = 0,
	INVALID_VALUE = 1,
	MEMORY_ALLOCATION = 2,
	INVALID_DEVICE = 101,
	INVALID_HANDLE = 400,
	NOT_READY = 600,
};

typedef struct { int type; int id; } fake_loc;

typedef struct {
	int allocType;
	int handleTypes;
	fake_loc location;
	void *win32SecurityAttributes;
	size_t maxSize;
	unsigned short usage;
	unsigned char reserved[54];
} fake_pool_props;

typedef struct {
	int type;
	int device;
	void *devicePointer;
	void *hostPointer;
#if FAKE_RUNTIME_VERSION >= 13000
	unsigned char reserved[64];
#endif
} fake_ptr_attr;

typedef struct fake_pool {
	int device;
	int is_default;
	int reuse[4];
	uint64_t threshold, reserved_high, used, used_high;
} fake_pool;

typedef struct { unsigned flags; unsigned long long id; int busy; } fake_stream;
typedef struct { unsigned flags; int busy; } fake_event;

typedef struct alloc {
	void *p;
	size_t size;
	int type; /* 1 host, 2 device, 3 managed */
	int device;
	fake_pool *pool;
	struct alloc *next;
} alloc;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static alloc *allocs;
static uint64_t used[FAKE_DEVICE_COUNT > 0 ? FAKE_DEVICE_COUNT : 1];
static fake_pool default_pools[FAKE_DEVICE_COUNT > 0 ? FAKE_DEVICE_COUNT : 1];
static unsigned long long next_stream_id = 100;

static __thread int current_device;
static __thread int last_error;

static void logline(const char *fmt, ...) {
#ifdef FAKE_LOG
	static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
	va_list ap;
	pthread_mutex_lock(&log_mu);
	FILE *f = fopen(FAKE_LOG, "a");
	if (f != NULL) {
		va_start(ap, fmt);
		vfprintf(f, fmt, ap);
		va_end(ap);
		fputc('\n', f);
		fclose(f);
	}
	pthread_mutex_unlock(&log_mu);
#else
	(void)fmt;
#endif
}

static int fail(int code) {
	last_error = code;
	return code;
}

static int valid_device(int dev) { return dev >= 0 && dev < FAKE_DEVICE_COUNT; }

static int track(void **out, size_t size, int type, fake_pool *pool) {
	int dev = pool != NULL ? pool->device : current_device;
	if (size == 0) {
		*out = NULL;
		return OK;
	}
	pthread_mutex_lock(&mu);
	if (type != 1 && (size > FAKE_CAPACITY || used[dev] + size > FAKE_CAPACITY)) {
		pthread_mutex_unlock(&mu);
		return fail(MEMORY_ALLOCATION);
	}
	size_t rounded = (size + 255) & ~(size_t)255;
	void *p = aligned_alloc(256, rounded);
	alloc *a = malloc(sizeof *a);
	if (p == NULL || a == NULL) {
		free(p);
		free(a);
		pthread_mutex_unlock(&mu);
		return fail(MEMORY_ALLOCATION);
	}
	a->p = p;
	a->size = size;
	a->type = type;
	a->device = dev;
	a->pool = pool;
	a->next = allocs;
	allocs = a;
	if (type != 1) {
		used[dev] += size;
	}
	if (pool != NULL) {
		pool->used += size;
		if (pool->used > pool->used_high) pool->used_high = pool->used;
		if (pool->used > pool->reserved_high) pool->reserved_high = pool->used;
	}
	pthread_mutex_unlock(&mu);
	*out = p;
	return OK;
}

/* untrack frees p if it is a live allocation of the given type (0: any). */
static int untrack(void *p, int type) {
	pthread_mutex_lock(&mu);
	for (alloc **pp = &allocs; *pp != NULL; pp = &(*pp)->next) {
		alloc *a = *pp;
		if (a->p == p && (type == 0 || a->type == type)) {
			*pp = a->next;
			if (a->type != 1) used[a->device] -= a->size;
			if (a->pool != NULL) a->pool->used -= a->size;
			pthread_mutex_unlock(&mu);
			free(a->p);
			free(a);
			return OK;
		}
	}
	pthread_mutex_unlock(&mu);
	return fail(INVALID_VALUE);
}

/* Errors and versions. */

const char *cudaGetErrorName(int code) {
	switch (code) {
	case OK: return "cudaSuccess";
	case INVALID_VALUE: return "cudaErrorInvalidValue";
	case MEMORY_ALLOCATION: return "cudaErrorMemoryAllocation";
	case 35: return "cudaErrorInsufficientDriver";
	case 100: return "cudaErrorNoDevice";
	case INVALID_DEVICE: return "cudaErrorInvalidDevice";
	case INVALID_HANDLE: return "cudaErrorInvalidResourceHandle";
	case NOT_READY: return "cudaErrorNotReady";
	default: return "unrecognized error code";
	}
}

const char *cudaGetErrorString(int code) {
	switch (code) {
	case OK: return "fake: no error";
	case INVALID_VALUE: return "fake: invalid argument";
	case MEMORY_ALLOCATION: return "fake: out of memory";
	case 35: return "fake: CUDA driver version is insufficient for CUDA runtime version";
	case 100: return "fake: no CUDA-capable device is detected";
	case INVALID_DEVICE: return "fake: invalid device ordinal";
	case INVALID_HANDLE: return "fake: invalid resource handle";
	case NOT_READY: return "fake: device not ready";
	default: return "fake: unrecognized error code";
	}
}

int cudaGetLastError(void) {
	int e = last_error;
	last_error = 0;
	logline("cudaGetLastError -> %d", e);
	return e;
}

int cudaPeekAtLastError(void) { return last_error; }

int cudaRuntimeGetVersion(int *v) {
	*v = FAKE_RUNTIME_VERSION;
	return OK;
}

int cudaDriverGetVersion(int *v) {
	*v = FAKE_DRIVER_VERSION;
	return OK;
}

/* Devices. */

int cudaGetDeviceCount(int *n) {
#ifdef FAKE_DEVICE_COUNT_ERROR
	*n = 0;
	return fail(FAKE_DEVICE_COUNT_ERROR);
#else
	*n = FAKE_DEVICE_COUNT;
	return OK;
#endif
}

int cudaGetDevice(int *dev) {
	*dev = current_device;
	return OK;
}

static __thread int context_current; /* cudaSetDevice made a context current */

int cudaSetDevice(int dev) {
	if (!valid_device(dev)) return fail(INVALID_DEVICE);
	current_device = dev;
	context_current = 1;
	return OK;
}

int cudaDeviceGetAttribute(int *value, int attr, int dev) {
	if (!valid_device(dev)) return fail(INVALID_DEVICE);
	*value = attr * 1000 + dev;
	return OK;
}

int cudaDeviceSynchronize(void) {
	logline("cudaDeviceSynchronize dev=%d", current_device);
	return OK;
}

int cudaMemGetInfo(size_t *free_bytes, size_t *total) {
	pthread_mutex_lock(&mu);
	*free_bytes = FAKE_CAPACITY - used[current_device];
	*total = FAKE_CAPACITY;
	pthread_mutex_unlock(&mu);
	return OK;
}

/* Plain allocations. */

int cudaMalloc(void **p, size_t size) { return track(p, size, 2, NULL); }

int cudaFree(void *p) { return p == NULL ? OK : untrack(p, 0); }

int cudaMallocManaged(void **p, size_t size, unsigned flags) {
	logline("cudaMallocManaged size=%zu flags=%u", size, flags);
	return track(p, size, 3, NULL);
}

int cudaHostAlloc(void **p, size_t size, unsigned flags) {
	logline("cudaHostAlloc size=%zu flags=%u", size, flags);
	return track(p, size, 1, NULL);
}

int cudaFreeHost(void *p) { return p == NULL ? OK : untrack(p, 1); }

/* Stream-ordered allocations and memory pools. */

int cudaMallocAsync(void **p, size_t size, void *stream) {
	logline("cudaMallocAsync size=%zu stream=%p", size, stream);
	return track(p, size, 2, &default_pools[current_device]);
}

int cudaMallocFromPoolAsync(void **p, size_t size, void *pool, void *stream) {
	if (pool == NULL) return fail(INVALID_VALUE);
	logline("cudaMallocFromPoolAsync size=%zu pool=%p stream=%p", size, pool, stream);
	return track(p, size, 2, (fake_pool *)pool);
}

int cudaFreeAsync(void *p, void *stream) {
	logline("cudaFreeAsync ptr=%p stream=%p", p, stream);
	return p == NULL ? OK : untrack(p, 2);
}

int cudaMemPoolCreate(void **pool, const fake_pool_props *props) {
	int zero = props->win32SecurityAttributes == NULL && props->usage == 0;
	for (size_t i = 0; i < sizeof props->reserved; i++) zero = zero && props->reserved[i] == 0;
	logline("cudaMemPoolCreate allocType=%d handleTypes=%d location=%d:%d maxSize=%zu zeroed=%d",
		props->allocType, props->handleTypes, props->location.type, props->location.id,
		props->maxSize, zero);
	if (props->allocType != 1 || props->location.type != 1 || !valid_device(props->location.id) || !zero) {
		return fail(INVALID_VALUE);
	}
	fake_pool *p = calloc(1, sizeof *p);
	p->device = props->location.id;
	p->reuse[1] = p->reuse[2] = p->reuse[3] = 1;
	*pool = p;
	return OK;
}

static int is_default_pool(fake_pool *p) {
	return p >= default_pools && p < default_pools + FAKE_DEVICE_COUNT;
}

int cudaMemPoolDestroy(void *pool) {
	if (pool == NULL || is_default_pool(pool)) return fail(INVALID_VALUE);
	logline("cudaMemPoolDestroy pool=%p", pool);
	free(pool);
	return OK;
}

int cudaMemPoolSetAttribute(void *pool, int attr, void *value) {
	fake_pool *p = pool;
	if (p == NULL) return fail(INVALID_VALUE);
	if (attr >= 1 && attr <= 3) {
		int v = *(int *)value;
		logline("cudaMemPoolSetAttribute attr=%d int=%d", attr, v);
		p->reuse[attr] = v;
		return OK;
	}
	uint64_t v = *(uint64_t *)value;
	logline("cudaMemPoolSetAttribute attr=%d u64=%llu", attr, (unsigned long long)v);
	switch (attr) {
	case 4: p->threshold = v; return OK;
	case 6: if (v != 0) return fail(INVALID_VALUE); p->reserved_high = 0; return OK;
	case 8: if (v != 0) return fail(INVALID_VALUE); p->used_high = 0; return OK;
	default: return fail(INVALID_VALUE);
	}
}

int cudaMemPoolGetAttribute(void *pool, int attr, void *value) {
	fake_pool *p = pool;
	if (p == NULL) return fail(INVALID_VALUE);
	if (attr >= 1 && attr <= 3) {
		*(int *)value = p->reuse[attr]; /* an int: 4 bytes, no more */
		return OK;
	}
	uint64_t v;
	switch (attr) {
	case 4: v = p->threshold; break;
	case 5: v = p->used; break;
	case 6: v = p->reserved_high; break;
	case 7: v = p->used; break;
	case 8: v = p->used_high; break;
	default: return fail(INVALID_VALUE);
	}
	*(uint64_t *)value = v;
	return OK;
}

#ifndef FAKE_OMIT_REQUIRED
int cudaMemPoolTrimTo(void *pool, size_t keep) {
	if (pool == NULL) return fail(INVALID_VALUE);
	logline("cudaMemPoolTrimTo pool=%p keep=%zu", pool, keep);
	return OK;
}
#endif

int cudaDeviceGetDefaultMemPool(void **pool, int dev) {
	if (!valid_device(dev)) return fail(INVALID_DEVICE);
	default_pools[dev].device = dev;
	default_pools[dev].is_default = 1;
	*pool = &default_pools[dev];
	return OK;
}

/* Streams and events. */

static int special_stream(void *s) { return (uintptr_t)s <= 2; }

int cudaStreamCreateWithFlags(void **s, unsigned flags) {
	fake_stream *st = calloc(1, sizeof *st);
	st->flags = flags;
	st->busy = (flags & BUSY_FLAG) != 0;
	pthread_mutex_lock(&mu);
	st->id = next_stream_id++;
	pthread_mutex_unlock(&mu);
	logline("cudaStreamCreateWithFlags flags=%u", flags);
	*s = st;
	return OK;
}

int cudaStreamDestroy(void *s) {
	if (special_stream(s)) return fail(INVALID_HANDLE);
	free(s);
	return OK;
}

int cudaStreamSynchronize(void *s) {
	if (!special_stream(s)) ((fake_stream *)s)->busy = 0;
	return OK;
}

int cudaStreamQuery(void *s) {
	if (!special_stream(s) && ((fake_stream *)s)->busy) return NOT_READY;
	return OK;
}

int cudaStreamWaitEvent(void *s, void *e, unsigned flags) {
	if (e == NULL) return fail(INVALID_HANDLE);
	logline("cudaStreamWaitEvent stream=%p event=%p flags=%u", s, e, flags);
	return OK;
}

int cudaStreamGetId(void *s, unsigned long long *id) {
	logline("cudaStreamGetId stream=%p", s);
	*id = special_stream(s) ? (unsigned long long)(uintptr_t)s : ((fake_stream *)s)->id;
	return OK;
}

#if FAKE_RUNTIME_VERSION >= 12050 && !defined(FAKE_NO_DRIVER_ENTRY)
/* The driver's cuStreamGetId, as cudaGetDriverEntryPointByVersion hands it
 * out. It fails for the per-thread default stream (201,
 * CUDA_ERROR_INVALID_CONTEXT), so that the tests see the runtime's call
 * take over. */
static int fake_cuStreamGetId(void *s, unsigned long long *id) {
	logline("cuStreamGetId stream=%p", s);
	if ((uintptr_t)s == 2) return 201;
	*id = special_stream(s) ? (unsigned long long)(uintptr_t)s : ((fake_stream *)s)->id;
	return OK;
}

/* The driver's virtual memory management. A reservation is host memory; a
 * physical handle only counts against its device's capacity; mappings are
 * not tracked. Enough to check what crosses the ABI. */
typedef struct { int type; int id; } fake_culoc;
typedef struct {
	int type;
	int requestedHandleTypes;
	fake_culoc location;
	void *win32HandleMetaData;
	unsigned char allocFlags[8];
} fake_allocprop;
typedef struct { fake_culoc location; int flags; } fake_accessdesc;
typedef struct { size_t size; int device; } fake_handle;

#define FAKE_GRANULARITY (2u << 20)

static int vmm_context(void) {
#ifdef FAKE_VMM_NEEDS_CONTEXT
	if (!context_current) return 201; /* CUDA_ERROR_INVALID_CONTEXT */
#endif
	return OK;
}

static int fake_cuMemGetAllocationGranularity(size_t *g, const fake_allocprop *prop, int option) {
	logline("cuMemGetAllocationGranularity type=%d handles=%d location=%d/%d option=%d", prop->type,
		prop->requestedHandleTypes, prop->location.type, prop->location.id, option);
	if (vmm_context() != OK) return vmm_context();
	if (prop->type != 1 || prop->location.type != 1 || !valid_device(prop->location.id)) return INVALID_VALUE;
	*g = FAKE_GRANULARITY;
	return OK;
}

static int fake_cuMemAddressReserve(unsigned long long *ptr, size_t size, size_t align, unsigned long long addr,
		unsigned long long flags) {
	logline("cuMemAddressReserve size=%zu alignment=%zu addr=%llu flags=%llu", size, align, addr, flags);
	if (vmm_context() != OK) return vmm_context();
	if (size == 0 || size % FAKE_GRANULARITY != 0) return INVALID_VALUE;
	void *p = aligned_alloc(FAKE_GRANULARITY, size);
	if (p == NULL) return MEMORY_ALLOCATION;
	*ptr = (unsigned long long)(uintptr_t)p;
	return OK;
}

static int fake_cuMemAddressFree(unsigned long long ptr, size_t size) {
	logline("cuMemAddressFree size=%zu", size);
	free((void *)(uintptr_t)ptr);
	return OK;
}

static int fake_cuMemCreate(unsigned long long *h, size_t size, const fake_allocprop *prop, unsigned long long flags) {
	logline("cuMemCreate size=%zu type=%d handles=%d location=%d/%d flags=%llu", size, prop->type,
		prop->requestedHandleTypes, prop->location.type, prop->location.id, flags);
	if (vmm_context() != OK) return vmm_context();
	if (size == 0 || size % FAKE_GRANULARITY != 0 || prop->location.type != 1 || !valid_device(prop->location.id)) {
		return INVALID_VALUE;
	}
	pthread_mutex_lock(&mu);
	if (used[prop->location.id] + size > FAKE_CAPACITY) {
		pthread_mutex_unlock(&mu);
		return MEMORY_ALLOCATION; /* CUDA_ERROR_OUT_OF_MEMORY */
	}
	used[prop->location.id] += size;
	pthread_mutex_unlock(&mu);
	fake_handle *fh = malloc(sizeof *fh);
	fh->size = size;
	fh->device = prop->location.id;
	*h = (unsigned long long)(uintptr_t)fh;
	return OK;
}

static int fake_cuMemRelease(unsigned long long h) {
	fake_handle *fh = (fake_handle *)(uintptr_t)h;
	logline("cuMemRelease size=%zu", fh->size);
	pthread_mutex_lock(&mu);
	used[fh->device] -= fh->size;
	pthread_mutex_unlock(&mu);
	free(fh);
	return OK;
}

static int fake_cuMemMap(unsigned long long ptr, size_t size, size_t offset, unsigned long long h,
		unsigned long long flags) {
	logline("cuMemMap size=%zu offset=%zu handle_size=%zu flags=%llu", size, offset,
		((fake_handle *)(uintptr_t)h)->size, flags);
	(void)ptr;
	return OK;
}

static int fake_cuMemUnmap(unsigned long long ptr, size_t size) {
	logline("cuMemUnmap size=%zu", size);
	(void)ptr;
	return OK;
}

static int fake_cuMemSetAccess(unsigned long long ptr, size_t size, const fake_accessdesc *d, size_t count) {
	logline("cuMemSetAccess size=%zu location=%d/%d flags=%d count=%zu", size, d->location.type, d->location.id,
		d->flags, count);
	(void)ptr;
	return valid_device(d->location.id) ? OK : INVALID_DEVICE;
}

static int fake_cuMemGetAccess(unsigned long long *flags, const fake_culoc *loc, unsigned long long ptr) {
	logline("cuMemGetAccess location=%d/%d", loc->type, loc->id);
	(void)ptr;
	*flags = 3;
	return OK;
}

int cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned int version,
		unsigned long long flags, int *status) {
	static const struct { const char *name; void *fn; } driver[] = {
		{"cuStreamGetId", (void *)fake_cuStreamGetId},
		{"cuMemGetAllocationGranularity", (void *)fake_cuMemGetAllocationGranularity},
		{"cuMemAddressReserve", (void *)fake_cuMemAddressReserve},
		{"cuMemAddressFree", (void *)fake_cuMemAddressFree},
		{"cuMemCreate", (void *)fake_cuMemCreate},
		{"cuMemRelease", (void *)fake_cuMemRelease},
		{"cuMemMap", (void *)fake_cuMemMap},
		{"cuMemUnmap", (void *)fake_cuMemUnmap},
		{"cuMemSetAccess", (void *)fake_cuMemSetAccess},
		{"cuMemGetAccess", (void *)fake_cuMemGetAccess},
	};
	logline("cudaGetDriverEntryPointByVersion symbol=%s version=%u flags=%llu", symbol, version, flags);
	*fn = NULL;
	*status = 1; /* cudaDriverEntryPointSymbolNotFound */
	for (size_t i = 0; i < sizeof driver / sizeof driver[0]; i++) {
		if (strcmp(symbol, driver[i].name) == 0 && version >= 12000) {
			*fn = driver[i].fn;
			*status = 0; /* cudaDriverEntryPointSuccess */
		}
	}
	return OK;
}
#endif

int cudaEventCreateWithFlags(void **e, unsigned flags) {
	fake_event *ev = calloc(1, sizeof *ev);
	ev->flags = flags;
	ev->busy = (flags & BUSY_FLAG) != 0;
	logline("cudaEventCreateWithFlags flags=%u", flags);
	*e = ev;
	return OK;
}

int cudaEventDestroy(void *e) {
	if (e == NULL) return fail(INVALID_HANDLE);
	free(e);
	return OK;
}

int cudaEventRecord(void *e, void *s) {
	if (e == NULL) return fail(INVALID_HANDLE);
	logline("cudaEventRecord event=%p stream=%p", e, s);
	return OK;
}

#ifndef FAKE_OMIT_REQUIRED
int cudaEventQuery(void *e) {
	if (e == NULL) return fail(INVALID_HANDLE);
	return ((fake_event *)e)->busy ? NOT_READY : OK;
}
#endif

int cudaEventSynchronize(void *e) {
	if (e == NULL) return fail(INVALID_HANDLE);
	((fake_event *)e)->busy = 0;
	return OK;
}

/* Copies and fills. */

int cudaMemcpy(void *dst, const void *src, size_t n, int kind) {
	if ((dst == NULL || src == NULL) && n > 0) return fail(INVALID_VALUE);
	logline("cudaMemcpy n=%zu kind=%d", n, kind);
	memcpy(dst, src, n);
	return OK;
}

int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *s) {
	if ((dst == NULL || src == NULL) && n > 0) return fail(INVALID_VALUE);
	logline("cudaMemcpyAsync n=%zu kind=%d stream=%p", n, kind, s);
	memcpy(dst, src, n);
	return OK;
}

int cudaMemset(void *p, int value, size_t n) {
	if (p == NULL && n > 0) return fail(INVALID_VALUE);
	logline("cudaMemset value=%d n=%zu", value, n);
	memset(p, value, n);
	return OK;
}

int cudaMemsetAsync(void *p, int value, size_t n, void *s) {
	if (p == NULL && n > 0) return fail(INVALID_VALUE);
	logline("cudaMemsetAsync value=%d n=%zu stream=%p", value, n, s);
	memset(p, value, n);
	return OK;
}

/* Managed-memory hints, in the shape of the version being faked. */

#if FAKE_RUNTIME_VERSION >= 13000
int cudaMemPrefetchAsync(const void *p, size_t n, fake_loc loc, unsigned flags, void *s) {
	logline("cudaMemPrefetchAsync(location) ptr=%p n=%zu location=%d:%d flags=%u stream=%p", p, n, loc.type, loc.id, flags, s);
	return OK;
}

int cudaMemAdvise(const void *p, size_t n, int advice, fake_loc loc) {
	logline("cudaMemAdvise(location) ptr=%p n=%zu advice=%d location=%d:%d", p, n, advice, loc.type, loc.id);
	return OK;
}
#else
int cudaMemPrefetchAsync(const void *p, size_t n, int dev, void *s) {
	logline("cudaMemPrefetchAsync(device) ptr=%p n=%zu device=%d stream=%p", p, n, dev, s);
	return OK;
}

int cudaMemAdvise(const void *p, size_t n, int advice, int dev) {
	logline("cudaMemAdvise(device) ptr=%p n=%zu advice=%d device=%d", p, n, advice, dev);
	if (dev < -2 || dev >= FAKE_DEVICE_COUNT) return fail(INVALID_DEVICE);
	return OK;
}
#endif

#ifdef FAKE_HAVE_V2
int cudaMemPrefetchAsync_v2(const void *p, size_t n, fake_loc loc, unsigned flags, void *s) {
	logline("cudaMemPrefetchAsync_v2 ptr=%p n=%zu location=%d:%d flags=%u stream=%p", p, n, loc.type, loc.id, flags, s);
	return OK;
}

int cudaMemAdvise_v2(const void *p, size_t n, int advice, fake_loc loc) {
	logline("cudaMemAdvise_v2 ptr=%p n=%zu advice=%d location=%d:%d", p, n, advice, loc.type, loc.id);
	return OK;
}
#endif

/* Pointers. */

int cudaPointerGetAttributes(fake_ptr_attr *attr, const void *p) {
	if (p == NULL) return fail(INVALID_VALUE);
	/* The runtime writes its whole struct. */
	memset(attr, 0xab, sizeof *attr);
	attr->type = 0;
	attr->device = -2;
	attr->devicePointer = NULL;
	attr->hostPointer = NULL;
	pthread_mutex_lock(&mu);
	for (alloc *a = allocs; a != NULL; a = a->next) {
		if ((const char *)p >= (const char *)a->p && (const char *)p < (const char *)a->p + a->size) {
			attr->type = a->type;
			attr->device = a->type == 1 ? -1 : a->device;
			attr->devicePointer = (void *)p;
			attr->hostPointer = a->type == 2 ? NULL : (void *)p;
			break;
		}
	}
	pthread_mutex_unlock(&mu);
	return OK;
}
