/*
 * cuda_abi.h: rmmgo's own declarations of the part of the CUDA runtime ABI
 * that package cudart calls through dlopen/dlsym.
 *
 * Nothing here comes from NVIDIA's headers: the package must build where no
 * CUDA toolkit is installed. Two programs include this file:
 *
 *   - the cgo build (cuda.go, through calls_generated.h), which calls the
 *     runtime through these function-pointer types with the rmmgo_*
 *     stand-in types below;
 *   - cudart/check/decl_check.cpp, which includes the real <cuda_runtime_api.h>
 *     first and defines RMMGO_ABI_USE_CUDA_TYPES, so that the very same
 *     function-pointer declarations are spelled with CUDA's own types and the
 *     compiler can compare them with the real functions. The check also
 *     compares every stand-in type and struct field below with CUDA's.
 *
 * The functions themselves are listed once, in internal/abi; go generate
 * writes their types (abi_funcs_generated.h, included at the end) and the
 * trampolines that call them. When you add a struct, a field or a stand-in
 * type here, add its lines to decl_check.cpp (sizes, fields) and, for a type
 * parameters use, to the generator's cTypes (internal/cudagen).
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
	uintptr_t devicePointer;   /* offset 8: CUDA's void *, kept as an integer */
	uintptr_t hostPointer;     /* offset 16: (Go must never take them for its pointers) */
	unsigned char reserved[64]; /* offset 24: CUDA 13's reserved space */
} rmmgo_cudaPointerAttributes;

/*
 * The driver's virtual memory management (cuda.h), taken through
 * cudaGetDriverEntryPointByVersion. CUdeviceptr and
 * CUmemGenericAllocationHandle are unsigned long long on 64-bit systems.
 */
typedef unsigned long long rmmgo_CUdeviceptr;                 /* CUdeviceptr */
typedef unsigned long long rmmgo_CUmemGenericAllocationHandle; /* CUmemGenericAllocationHandle */
typedef int32_t rmmgo_CUmemAllocationGranularity_flags;       /* CUmemAllocationGranularity_flags */
typedef int32_t rmmgo_CUmemAccess_flags;                      /* CUmemAccess_flags */

/* CUmemLocation: 8 bytes, as cudaMemLocation. */
typedef struct rmmgo_CUmemLocation {
	int32_t type; /* offset 0: CUmemLocationType */
	int id;       /* offset 4: device ordinal */
} rmmgo_CUmemLocation;

/* CUmemAllocationProp: 32 bytes. rmmgo sets type, requestedHandleTypes and
 * location, and zeroes the rest (no compression, no RDMA flag, no usage). */
typedef struct rmmgo_CUmemAllocationProp {
	int32_t type;                 /* offset 0: CUmemAllocationType */
	int32_t requestedHandleTypes; /* offset 4: CUmemAllocationHandleType */
	rmmgo_CUmemLocation location; /* offset 8 */
	void *win32HandleMetaData;    /* offset 16 */
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags; /* offset 24 */
} rmmgo_CUmemAllocationProp;

/* CUmemAccessDesc: 12 bytes. */
typedef struct rmmgo_CUmemAccessDesc {
	rmmgo_CUmemLocation location;  /* offset 0 */
	rmmgo_CUmemAccess_flags flags; /* offset 8 */
} rmmgo_CUmemAccessDesc;

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
RMMGO_ABI_ASSERT(sizeof(rmmgo_CUmemAllocationProp) == 32, "CUmemAllocationProp is 32 bytes");
RMMGO_ABI_ASSERT(sizeof(rmmgo_CUmemAccessDesc) == 12, "CUmemAccessDesc is 12 bytes");
RMMGO_ABI_ASSERT(sizeof(rmmgo_CUdeviceptr) == 8, "CUdeviceptr is 8 bytes");
#endif

/*
 * The types the function-pointer declarations are spelled with: ours in the
 * cgo build, CUDA's own in decl_check.cpp.
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
#define RMMGO_DEVPTR CUdeviceptr
#define RMMGO_MEMHANDLE CUmemGenericAllocationHandle
#define RMMGO_GRANFLAGS CUmemAllocationGranularity_flags
#define RMMGO_ALLOCPROP CUmemAllocationProp
#define RMMGO_ACCESSDESC CUmemAccessDesc
#define RMMGO_CULOCATION CUmemLocation
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
#define RMMGO_DEVPTR rmmgo_CUdeviceptr
#define RMMGO_MEMHANDLE rmmgo_CUmemGenericAllocationHandle
#define RMMGO_GRANFLAGS rmmgo_CUmemAllocationGranularity_flags
#define RMMGO_ALLOCPROP rmmgo_CUmemAllocationProp
#define RMMGO_ACCESSDESC rmmgo_CUmemAccessDesc
#define RMMGO_CULOCATION rmmgo_CUmemLocation
#endif

/*
 * The function-pointer types, rmmgo_fn_<name>: generated from the list of
 * functions in internal/abi (go generate), spelled with the names above.
 */
#include "abi_funcs_generated.h"

#endif /* RMMGO_CUDA_ABI_H */
