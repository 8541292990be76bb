/*
 * cuda_abi.h: rmmgo's own declarations of the part of the CUDA runtime ABI
 * that package cudart calls through dlopen/dlsym.
 *
 * Nothing here comes from NVIDIA's headers: the package must build where no
 * CUDA toolkit is installed. Two programs include this file:
 *
 *   - the cgo preamble of cuda.go, which calls the runtime through these
 *     function-pointer types with the rmmgo_* stand-in types below;
 *   - cudart/check/decl_check.cu, which includes the real <cuda_runtime_api.h>
 *     first and defines RMMGO_ABI_USE_CUDA_TYPES, so that the very same
 *     function-pointer declarations are spelled with CUDA's own types and the
 *     compiler can compare them with the real functions. The check also
 *     compares every stand-in type and struct field below with CUDA's.
 *
 * When you add a struct, a field or a function type here, add its line to
 * decl_check.cu (fields, sizes) or to FuncDecls in decls.go (functions).
 */
#ifndef RMMGO_CUDA_ABI_H
#define RMMGO_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

/* Stand-ins for CUDA's enums: every CUDA enum we pass is 4 bytes. */
typedef int32_t rmmgo_cudaError_t;                 /* cudaError_t */
typedef int32_t rmmgo_cudaDeviceAttr;              /* enum cudaDeviceAttr */
typedef int32_t rmmgo_cudaMemPoolAttr;             /* enum cudaMemPoolAttr */
typedef int32_t rmmgo_cudaMemcpyKind;              /* enum cudaMemcpyKind */
typedef int32_t rmmgo_cudaMemoryAdvise;            /* enum cudaMemoryAdvise */
typedef int32_t rmmgo_cudaMemLocationType;         /* enum cudaMemLocationType */
typedef int32_t rmmgo_cudaMemAllocationType;       /* enum cudaMemAllocationType */
typedef int32_t rmmgo_cudaMemAllocationHandleType; /* enum cudaMemAllocationHandleType */
typedef int32_t rmmgo_cudaMemoryType;              /* enum cudaMemoryType */

/* Stand-ins for CUDA's opaque handles (pointers to driver structs). */
typedef void *rmmgo_cudaStream_t;  /* cudaStream_t */
typedef void *rmmgo_cudaEvent_t;   /* cudaEvent_t */
typedef void *rmmgo_cudaMemPool_t; /* cudaMemPool_t */

/* struct cudaMemLocation: 8 bytes. */
typedef struct rmmgo_cudaMemLocation {
	rmmgo_cudaMemLocationType type; /* offset 0 */
	int id;                         /* offset 4: device ordinal or NUMA node */
} rmmgo_cudaMemLocation;

/*
 * struct cudaMemPoolProps: 88 bytes. CUDA 12.0 and 12.1 have no maxSize and
 * usage fields: there those bytes are reserved and must be zero, which is what
 * rmmgo writes unless the caller asks for a maximum size.
 */
typedef struct rmmgo_cudaMemPoolProps {
	rmmgo_cudaMemAllocationType allocType;         /* offset 0 */
	rmmgo_cudaMemAllocationHandleType handleTypes; /* offset 4 */
	rmmgo_cudaMemLocation location;                /* offset 8 */
	void *win32SecurityAttributes;                 /* offset 16 */
	size_t maxSize;                                /* offset 24 */
	unsigned short usage;                          /* offset 32 */
	unsigned char reserved[54];                    /* offset 34, to the end */
} rmmgo_cudaMemPoolProps;

/*
 * struct cudaPointerAttributes. CUDA 12 declares the first four fields (24
 * bytes); CUDA 13 adds reserved space up to 88 bytes. The runtime writes the
 * whole struct of its own version, so ours is the larger one.
 */
typedef struct rmmgo_cudaPointerAttributes {
	rmmgo_cudaMemoryType type; /* offset 0 */
	int device;                /* offset 4 */
	void *devicePointer;       /* offset 8 */
	void *hostPointer;         /* offset 16 */
	unsigned char reserved[64]; /* offset 24: CUDA 13's reserved space */
} rmmgo_cudaPointerAttributes;

#if UINTPTR_MAX == 0xffffffffffffffffu
#ifdef __cplusplus
#define RMMGO_ABI_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define RMMGO_ABI_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
RMMGO_ABI_ASSERT(sizeof(rmmgo_cudaMemLocation) == 8, "cudaMemLocation is 8 bytes");
RMMGO_ABI_ASSERT(sizeof(rmmgo_cudaMemPoolProps) == 88, "cudaMemPoolProps is 88 bytes");
RMMGO_ABI_ASSERT(offsetof(rmmgo_cudaMemPoolProps, maxSize) == 24, "cudaMemPoolProps.maxSize at 24");
RMMGO_ABI_ASSERT(sizeof(rmmgo_cudaPointerAttributes) == 88, "cudaPointerAttributes is 88 bytes in CUDA 13");
#endif

/*
 * The types the function-pointer declarations below are spelled with: ours
 * in the cgo build, CUDA's own in decl_check.cu.
 */
#ifdef RMMGO_ABI_USE_CUDA_TYPES
#define RMMGO_ERR cudaError_t
#define RMMGO_DEVATTR enum cudaDeviceAttr
#define RMMGO_POOLATTR enum cudaMemPoolAttr
#define RMMGO_MEMCPYKIND enum cudaMemcpyKind
#define RMMGO_ADVISE enum cudaMemoryAdvise
#define RMMGO_STREAM cudaStream_t
#define RMMGO_EVENT cudaEvent_t
#define RMMGO_POOL cudaMemPool_t
#define RMMGO_LOCATION struct cudaMemLocation
#define RMMGO_POOLPROPS struct cudaMemPoolProps
#define RMMGO_PTRATTR struct cudaPointerAttributes
#define RMMGO_CURESULT CUresult
#define RMMGO_ENTRYSTATUS enum cudaDriverEntryPointQueryResult
#else
#define RMMGO_ERR rmmgo_cudaError_t
#define RMMGO_DEVATTR rmmgo_cudaDeviceAttr
#define RMMGO_POOLATTR rmmgo_cudaMemPoolAttr
#define RMMGO_MEMCPYKIND rmmgo_cudaMemcpyKind
#define RMMGO_ADVISE rmmgo_cudaMemoryAdvise
#define RMMGO_STREAM rmmgo_cudaStream_t
#define RMMGO_EVENT rmmgo_cudaEvent_t
#define RMMGO_POOL rmmgo_cudaMemPool_t
#define RMMGO_LOCATION rmmgo_cudaMemLocation
#define RMMGO_POOLPROPS rmmgo_cudaMemPoolProps
#define RMMGO_PTRATTR rmmgo_cudaPointerAttributes
#define RMMGO_CURESULT int32_t /* CUresult, an enum: int-sized */
#define RMMGO_ENTRYSTATUS int32_t /* enum cudaDriverEntryPointQueryResult */
#endif

/* Errors and versions. */
typedef const char *(*rmmgo_fn_cudaGetErrorName)(RMMGO_ERR error);
typedef const char *(*rmmgo_fn_cudaGetErrorString)(RMMGO_ERR error);
typedef RMMGO_ERR (*rmmgo_fn_cudaGetLastError)(void);
/* CUDA 12.5+: a driver function of the runtime's own driver, by ABI version. */
typedef RMMGO_ERR (*rmmgo_fn_cudaGetDriverEntryPointByVersion)(const char *symbol, void **funcPtr,
	unsigned int cudaVersion, unsigned long long flags, RMMGO_ENTRYSTATUS *driverStatus);
typedef RMMGO_ERR (*rmmgo_fn_cudaPeekAtLastError)(void);
typedef RMMGO_ERR (*rmmgo_fn_cudaRuntimeGetVersion)(int *runtimeVersion);
typedef RMMGO_ERR (*rmmgo_fn_cudaDriverGetVersion)(int *driverVersion);

/* Devices. */
typedef RMMGO_ERR (*rmmgo_fn_cudaGetDeviceCount)(int *count);
typedef RMMGO_ERR (*rmmgo_fn_cudaGetDevice)(int *device);
typedef RMMGO_ERR (*rmmgo_fn_cudaSetDevice)(int device);
typedef RMMGO_ERR (*rmmgo_fn_cudaDeviceGetAttribute)(int *value, RMMGO_DEVATTR attr, int device);
typedef RMMGO_ERR (*rmmgo_fn_cudaDeviceSynchronize)(void);
typedef RMMGO_ERR (*rmmgo_fn_cudaMemGetInfo)(size_t *free, size_t *total);

/* Plain allocations. */
typedef RMMGO_ERR (*rmmgo_fn_cudaMalloc)(void **devPtr, size_t size);
typedef RMMGO_ERR (*rmmgo_fn_cudaFree)(void *devPtr);
typedef RMMGO_ERR (*rmmgo_fn_cudaMallocManaged)(void **devPtr, size_t size, unsigned int flags);
typedef RMMGO_ERR (*rmmgo_fn_cudaHostAlloc)(void **pHost, size_t size, unsigned int flags);
typedef RMMGO_ERR (*rmmgo_fn_cudaFreeHost)(void *ptr);

/* Stream-ordered allocations and memory pools. */
typedef RMMGO_ERR (*rmmgo_fn_cudaMallocAsync)(void **devPtr, size_t size, RMMGO_STREAM stream);
typedef RMMGO_ERR (*rmmgo_fn_cudaMallocFromPoolAsync)(void **ptr, size_t size, RMMGO_POOL pool, RMMGO_STREAM stream);
typedef RMMGO_ERR (*rmmgo_fn_cudaFreeAsync)(void *devPtr, RMMGO_STREAM stream);
typedef RMMGO_ERR (*rmmgo_fn_cudaMemPoolCreate)(RMMGO_POOL *pool, const RMMGO_POOLPROPS *props);
typedef RMMGO_ERR (*rmmgo_fn_cudaMemPoolDestroy)(RMMGO_POOL pool);
typedef RMMGO_ERR (*rmmgo_fn_cudaMemPoolSetAttribute)(RMMGO_POOL pool, RMMGO_POOLATTR attr, void *value);
typedef RMMGO_ERR (*rmmgo_fn_cudaMemPoolGetAttribute)(RMMGO_POOL pool, RMMGO_POOLATTR attr, void *value);
typedef RMMGO_ERR (*rmmgo_fn_cudaMemPoolTrimTo)(RMMGO_POOL pool, size_t minBytesToKeep);
typedef RMMGO_ERR (*rmmgo_fn_cudaDeviceGetDefaultMemPool)(RMMGO_POOL *pool, int device);

/* Streams and events. */
typedef RMMGO_ERR (*rmmgo_fn_cudaStreamCreateWithFlags)(RMMGO_STREAM *stream, unsigned int flags);
typedef RMMGO_ERR (*rmmgo_fn_cudaStreamDestroy)(RMMGO_STREAM stream);
typedef RMMGO_ERR (*rmmgo_fn_cudaStreamSynchronize)(RMMGO_STREAM stream);
typedef RMMGO_ERR (*rmmgo_fn_cudaStreamQuery)(RMMGO_STREAM stream);
typedef RMMGO_ERR (*rmmgo_fn_cudaStreamWaitEvent)(RMMGO_STREAM stream, RMMGO_EVENT event, unsigned int flags);
typedef RMMGO_ERR (*rmmgo_fn_cudaStreamGetId)(RMMGO_STREAM stream, unsigned long long *streamId);
/* The driver's cuStreamGetId (CUDA 12.0+, found through
 * cudaGetDriverEntryPointByVersion; a CUstream is a cudaStream_t): the same id, but the runtime's call takes a process-wide
 * lock (about 10 M calls/s from any number of threads on an H200 host) and
 * the driver's does not (390 M/s from 16 threads). */
typedef RMMGO_CURESULT (*rmmgo_drvfn_cuStreamGetId)(RMMGO_STREAM hStream, unsigned long long *streamId);
typedef RMMGO_ERR (*rmmgo_fn_cudaEventCreateWithFlags)(RMMGO_EVENT *event, unsigned int flags);
typedef RMMGO_ERR (*rmmgo_fn_cudaEventDestroy)(RMMGO_EVENT event);
typedef RMMGO_ERR (*rmmgo_fn_cudaEventRecord)(RMMGO_EVENT event, RMMGO_STREAM stream);
typedef RMMGO_ERR (*rmmgo_fn_cudaEventQuery)(RMMGO_EVENT event);
typedef RMMGO_ERR (*rmmgo_fn_cudaEventSynchronize)(RMMGO_EVENT event);

/* Copies and fills. */
typedef RMMGO_ERR (*rmmgo_fn_cudaMemcpy)(void *dst, const void *src, size_t count, RMMGO_MEMCPYKIND kind);
typedef RMMGO_ERR (*rmmgo_fn_cudaMemcpyAsync)(void *dst, const void *src, size_t count, RMMGO_MEMCPYKIND kind, RMMGO_STREAM stream);
typedef RMMGO_ERR (*rmmgo_fn_cudaMemset)(void *devPtr, int value, size_t count);
typedef RMMGO_ERR (*rmmgo_fn_cudaMemsetAsync)(void *devPtr, int value, size_t count, RMMGO_STREAM stream);

/*
 * Managed-memory hints, in their two shapes:
 *   ..._location: CUDA 13's cudaMemPrefetchAsync / cudaMemAdvise, and
 *                 CUDA 12.2+'s cudaMemPrefetchAsync_v2 / cudaMemAdvise_v2;
 *   ..._device:   CUDA 12's cudaMemPrefetchAsync / cudaMemAdvise (an int device,
 *                 cudaCpuDeviceId for the host).
 */
typedef RMMGO_ERR (*rmmgo_fn_cudaMemPrefetchAsync_location)(const void *devPtr, size_t count, RMMGO_LOCATION location, unsigned int flags, RMMGO_STREAM stream);
typedef RMMGO_ERR (*rmmgo_fn_cudaMemPrefetchAsync_device)(const void *devPtr, size_t count, int dstDevice, RMMGO_STREAM stream);
typedef RMMGO_ERR (*rmmgo_fn_cudaMemAdvise_location)(const void *devPtr, size_t count, RMMGO_ADVISE advice, RMMGO_LOCATION location);
typedef RMMGO_ERR (*rmmgo_fn_cudaMemAdvise_device)(const void *devPtr, size_t count, RMMGO_ADVISE advice, int device);

/* Pointers. */
typedef RMMGO_ERR (*rmmgo_fn_cudaPointerGetAttributes)(RMMGO_PTRATTR *attributes, const void *ptr);

#endif /* RMMGO_CUDA_ABI_H */
