// Package abi lists the part of the CUDA runtime that package cudart uses,
// once: every function it calls, with its C parameter list, and every CUDA
// constant it declares, with its CUDA name.
//
// Package cudart resolves the functions from this list when it loads the
// runtime. The generator (cudart/internal/cudagen, run by go generate in
// cudart) writes from it the function-pointer types of cuda_abi.h, the C
// trampolines through which cgo calls the runtime, and the list that the
// declaration check (cudart/check) compiles against the real CUDA headers.
//
// # Parameter lists
//
// Params is the function's C parameter list as CUDA declares it, spelled
// with the RMMGO_* type names of cuda_abi.h (RMMGO_ERR, RMMGO_STREAM, ...),
// so that the check can compare it with the real function. Two markers
// before a parameter tell the generator how the trampoline passes it; the
// function-pointer type does not show them:
//
//	out T *p      a result: the trampoline passes the address of a zeroed T
//	              and returns its value (pointers and handles as uintptr_t)
//	in T *p       an argument passed by reference: the trampoline takes a T
//	              and passes its address
//
// with, for a void * parameter, the type in parentheses: out(uint64_t) void
// *value. Every other pointer or handle travels as a uintptr_t, so that no Go
// pointer ever crosses into C.
package abi

// Runtime versions (cudaRuntimeGetVersion's encoding: 12040 is 12.4).
const (
	// MinRuntimeVersion is the oldest CUDA runtime cudart accepts.
	MinRuntimeVersion = 12000
	// VersionLocationV2: cudaMemPrefetchAsync_v2 and cudaMemAdvise_v2
	// appear, taking a cudaMemLocation.
	VersionLocationV2 = 12020
	// VersionLocation: the unsuffixed hint functions take a cudaMemLocation.
	VersionLocation = 13000
	// VersionDriverEntry: cudaGetDriverEntryPointByVersion appears, through
	// which cudart finds driver functions (those of the runtime in use,
	// never whatever libcuda the process has loaded).
	VersionDriverEntry = 12050
)

// Func is one C function cudart calls: a runtime function it resolves with
// dlsym, or a driver function it asks the runtime for. A function whose
// signature changed between CUDA versions appears once per shape.
type Func struct {
	Symbol string // exported symbol, e.g. "cudaMemPrefetchAsync"
	// Type names the signature: the function-pointer type is rmmgo_fn_<Type>,
	// the trampoline rmmgo_call_<Type>, and the function table has one slot
	// per Type. Empty means Symbol. Functions that share a signature share a
	// Type; Params is then given once, on the first of them.
	Type   string
	Result string // C result type; empty means RMMGO_ERR
	Params string // C parameter list with the markers of the package doc
	Since  int    // first runtime version with this symbol and shape; 0: every version cudart supports
	Before int    // first runtime version without it; 0: still current
	// Optional: the symbol may be missing from a runtime of a matching
	// version; cudart then does without it.
	Optional bool
	// DriverABI, for a driver function, is the driver ABI version cudart
	// asks cudaGetDriverEntryPointByVersion for; 0 for runtime functions.
	DriverABI int
	// KeepLastError: a failure of this call does not clear the thread's
	// last CUDA error (the calls that read it, and those made before
	// cudaGetLastError is resolved). Driver calls never set it.
	KeepLastError bool
}

// TypeName is f.Type, or f.Symbol when Type is empty.
func (f Func) TypeName() string {
	if f.Type != "" {
		return f.Type
	}
	return f.Symbol
}

// ResultType is f.Result, or RMMGO_ERR when Result is empty.
func (f Func) ResultType() string {
	if f.Result != "" {
		return f.Result
	}
	return "RMMGO_ERR"
}

// AppliesTo reports whether f describes a runtime of the given version.
func (f Func) AppliesTo(version int) bool {
	return version >= f.Since && (f.Before == 0 || version < f.Before)
}

// Funcs returns every function cudart calls, in the order of the function
// table.
func Funcs() []Func {
	return []Func{
		// Errors and versions.
		{Symbol: "cudaGetErrorName", Result: "const char *", Params: "RMMGO_ERR error"},
		{Symbol: "cudaGetErrorString", Result: "const char *", Params: "RMMGO_ERR error"},
		{Symbol: "cudaGetLastError", Params: "void", KeepLastError: true},
		{Symbol: "cudaPeekAtLastError", Params: "void", KeepLastError: true},
		// Called while loading, before cudaGetLastError is resolved.
		{Symbol: "cudaRuntimeGetVersion", Params: "out int *runtimeVersion", KeepLastError: true},
		{Symbol: "cudaDriverGetVersion", Params: "out int *driverVersion"},
		{Symbol: "cudaGetDriverEntryPointByVersion", Since: VersionDriverEntry, Optional: true,
			Params: "const char *symbol, out void **funcPtr, unsigned int cudaVersion, unsigned long long flags, out RMMGO_ENTRYSTATUS *driverStatus"},

		// Devices.
		{Symbol: "cudaGetDeviceCount", Params: "out int *count"},
		{Symbol: "cudaGetDevice", Params: "out int *device"},
		{Symbol: "cudaSetDevice", Params: "int device"},
		{Symbol: "cudaDeviceGetAttribute", Params: "out int *value, RMMGO_DEVATTR attr, int device"},
		{Symbol: "cudaDeviceSynchronize", Params: "void"},
		{Symbol: "cudaMemGetInfo", Params: "out size_t *free, out size_t *total"},

		// Plain allocations.
		{Symbol: "cudaMalloc", Params: "out void **devPtr, size_t size"},
		{Symbol: "cudaFree", Params: "void *devPtr"},
		{Symbol: "cudaMallocManaged", Params: "out void **devPtr, size_t size, unsigned int flags"},
		{Symbol: "cudaHostAlloc", Params: "out void **pHost, size_t size, unsigned int flags"},
		{Symbol: "cudaFreeHost", Params: "void *ptr"},

		// Stream-ordered allocations and memory pools.
		{Symbol: "cudaMallocAsync", Params: "out void **devPtr, size_t size, RMMGO_STREAM stream"},
		{Symbol: "cudaMallocFromPoolAsync", Params: "out void **ptr, size_t size, RMMGO_POOL pool, RMMGO_STREAM stream"},
		{Symbol: "cudaFreeAsync", Params: "void *devPtr, RMMGO_STREAM stream"},
		{Symbol: "cudaMemPoolCreate", Params: "out RMMGO_POOL *pool, in const RMMGO_POOLPROPS *props"},
		{Symbol: "cudaMemPoolDestroy", Params: "RMMGO_POOL pool"},
		// The value is an int for the reuse attributes and 64 bits for the
		// others: a zeroed uint64_t holds either (CUDA runs little-endian
		// only, which calls_generated.h asserts).
		{Symbol: "cudaMemPoolSetAttribute", Params: "RMMGO_POOL pool, RMMGO_POOLATTR attr, in(uint64_t) void *value"},
		{Symbol: "cudaMemPoolGetAttribute", Params: "RMMGO_POOL pool, RMMGO_POOLATTR attr, out(uint64_t) void *value"},
		{Symbol: "cudaMemPoolTrimTo", Params: "RMMGO_POOL pool, size_t minBytesToKeep"},
		{Symbol: "cudaDeviceGetDefaultMemPool", Params: "out RMMGO_POOL *memPool, int device"},

		// Streams and events.
		{Symbol: "cudaStreamCreateWithFlags", Params: "out RMMGO_STREAM *pStream, unsigned int flags"},
		{Symbol: "cudaStreamDestroy", Params: "RMMGO_STREAM stream"},
		{Symbol: "cudaStreamSynchronize", Params: "RMMGO_STREAM stream"},
		{Symbol: "cudaStreamQuery", Params: "RMMGO_STREAM stream"},
		{Symbol: "cudaStreamWaitEvent", Params: "RMMGO_STREAM stream, RMMGO_EVENT event, unsigned int flags"},
		{Symbol: "cudaStreamGetId", Params: "RMMGO_STREAM hStream, out unsigned long long *streamId"},
		// The driver's cuStreamGetId (a CUstream is a cudaStream_t): the same
		// id, but the runtime's call takes a process-wide lock (about 10 M
		// calls/s from any number of threads on an H200 host) and the
		// driver's does not (390 M/s from 16 threads). Found through
		// cudaGetDriverEntryPointByVersion, in the ABI it appeared in.
		{Symbol: "cuStreamGetId", Result: "RMMGO_CURESULT", DriverABI: 12000, Optional: true,
			Params: "RMMGO_STREAM hStream, out unsigned long long *streamId"},
		{Symbol: "cudaEventCreateWithFlags", Params: "out RMMGO_EVENT *event, unsigned int flags"},
		{Symbol: "cudaEventDestroy", Params: "RMMGO_EVENT event"},
		{Symbol: "cudaEventRecord", Params: "RMMGO_EVENT event, RMMGO_STREAM stream"},
		{Symbol: "cudaEventQuery", Params: "RMMGO_EVENT event"},
		{Symbol: "cudaEventSynchronize", Params: "RMMGO_EVENT event"},

		// Copies and fills.
		{Symbol: "cudaMemcpy", Params: "void *dst, const void *src, size_t count, RMMGO_MEMCPYKIND kind"},
		{Symbol: "cudaMemcpyAsync", Params: "void *dst, const void *src, size_t count, RMMGO_MEMCPYKIND kind, RMMGO_STREAM stream"},
		{Symbol: "cudaMemset", Params: "void *devPtr, int value, size_t count"},
		{Symbol: "cudaMemsetAsync", Params: "void *devPtr, int value, size_t count, RMMGO_STREAM stream"},

		// Managed-memory hints, in two shapes. CUDA 13 declares the plain
		// names with a cudaMemLocation; CUDA 12 with an int device
		// (cudaCpuDeviceId for the host) and, from 12.2, exports the
		// location shape as *_v2, which cudart prefers: only it can name a
		// host NUMA node.
		{Symbol: "cudaMemPrefetchAsync", Type: "cudaMemPrefetchAsync_location", Since: VersionLocation,
			Params: "const void *devPtr, size_t count, RMMGO_LOCATION location, unsigned int flags, RMMGO_STREAM stream"},
		{Symbol: "cudaMemAdvise", Type: "cudaMemAdvise_location", Since: VersionLocation,
			Params: "const void *devPtr, size_t count, RMMGO_ADVISE advice, RMMGO_LOCATION location"},
		{Symbol: "cudaMemPrefetchAsync", Type: "cudaMemPrefetchAsync_device", Before: VersionLocation,
			Params: "const void *devPtr, size_t count, int dstDevice, RMMGO_STREAM stream"},
		{Symbol: "cudaMemAdvise", Type: "cudaMemAdvise_device", Before: VersionLocation,
			Params: "const void *devPtr, size_t count, RMMGO_ADVISE advice, int device"},
		{Symbol: "cudaMemPrefetchAsync_v2", Type: "cudaMemPrefetchAsync_location", Since: VersionLocationV2, Before: VersionLocation, Optional: true},
		{Symbol: "cudaMemAdvise_v2", Type: "cudaMemAdvise_location", Since: VersionLocationV2, Before: VersionLocation, Optional: true},

		// Pointers.
		{Symbol: "cudaPointerGetAttributes", Params: "out RMMGO_PTRATTR *attributes, const void *ptr"},

		// The driver's virtual memory management, for the expandable
		// resource: reserve an address range, back it with physical memory
		// in granules, give access, and take it apart again. The runtime has
		// no such calls. Asked for in the 12.0 ABI (they appeared in 10.2
		// and kept their shape); missing where the runtime has no
		// cudaGetDriverEntryPointByVersion (before 12.5).
		{Symbol: "cuMemGetAllocationGranularity", Result: "RMMGO_CURESULT", DriverABI: 12000, Optional: true,
			Params: "out size_t *granularity, in const RMMGO_ALLOCPROP *prop, RMMGO_GRANFLAGS option"},
		{Symbol: "cuMemAddressReserve", Result: "RMMGO_CURESULT", DriverABI: 12000, Optional: true,
			Params: "out RMMGO_DEVPTR *ptr, size_t size, size_t alignment, RMMGO_DEVPTR addr, unsigned long long flags"},
		{Symbol: "cuMemAddressFree", Result: "RMMGO_CURESULT", DriverABI: 12000, Optional: true,
			Params: "RMMGO_DEVPTR ptr, size_t size"},
		{Symbol: "cuMemCreate", Result: "RMMGO_CURESULT", DriverABI: 12000, Optional: true,
			Params: "out RMMGO_MEMHANDLE *handle, size_t size, in const RMMGO_ALLOCPROP *prop, unsigned long long flags"},
		{Symbol: "cuMemRelease", Result: "RMMGO_CURESULT", DriverABI: 12000, Optional: true,
			Params: "RMMGO_MEMHANDLE handle"},
		{Symbol: "cuMemMap", Result: "RMMGO_CURESULT", DriverABI: 12000, Optional: true,
			Params: "RMMGO_DEVPTR ptr, size_t size, size_t offset, RMMGO_MEMHANDLE handle, unsigned long long flags"},
		{Symbol: "cuMemUnmap", Result: "RMMGO_CURESULT", DriverABI: 12000, Optional: true,
			Params: "RMMGO_DEVPTR ptr, size_t size"},
		// desc is an array of count descriptors; cudart passes one at a time.
		{Symbol: "cuMemSetAccess", Result: "RMMGO_CURESULT", DriverABI: 12000, Optional: true,
			Params: "RMMGO_DEVPTR ptr, size_t size, in const RMMGO_ACCESSDESC *desc, size_t count"},
		{Symbol: "cuMemGetAccess", Result: "RMMGO_CURESULT", DriverABI: 12000, Optional: true,
			Params: "out unsigned long long *flags, in const RMMGO_CULOCATION *location, RMMGO_DEVPTR ptr"},
	}
}

// Const is one integer constant of package cudart and the CUDA name it
// mirrors. Its value is the one cudart's source declares: the generator
// reads it from there, so that it is written once.
type Const struct {
	GoName string // the Go identifier, e.g. "DevAttrPageableMemoryAccess"
	CName  string // the CUDA identifier; empty for a constant with no CUDA counterpart
	Since  int    // first CUDART_VERSION whose headers declare CName; 0: every version cudart supports
}

// Consts returns every integer constant of cudart's types.go and errors.go,
// with its CUDA name.
func Consts() []Const {
	return []Const{
		// errors.go: cudaError_t.
		{"Success", "cudaSuccess", 0},
		{"ErrorInvalidValue", "cudaErrorInvalidValue", 0},
		{"ErrorMemoryAllocation", "cudaErrorMemoryAllocation", 0},
		{"ErrorInitializationError", "cudaErrorInitializationError", 0},
		{"ErrorCudartUnloading", "cudaErrorCudartUnloading", 0},
		{"ErrorInvalidDevicePointer", "cudaErrorInvalidDevicePointer", 0},
		{"ErrorInvalidMemcpyDirection", "cudaErrorInvalidMemcpyDirection", 0},
		{"ErrorInsufficientDriver", "cudaErrorInsufficientDriver", 0},
		{"ErrorNoDevice", "cudaErrorNoDevice", 0},
		{"ErrorInvalidDevice", "cudaErrorInvalidDevice", 0},
		{"ErrorInvalidResourceHandle", "cudaErrorInvalidResourceHandle", 0},
		{"ErrorNotReady", "cudaErrorNotReady", 0},
		{"ErrorIllegalAddress", "cudaErrorIllegalAddress", 0},
		{"ErrorHostMemoryAlreadyRegistered", "cudaErrorHostMemoryAlreadyRegistered", 0},
		{"ErrorNotSupported", "cudaErrorNotSupported", 0},

		// Special streams and stream flags. The null stream has no CUDA name.
		{"DefaultStream", "", 0},
		{"LegacyDefaultStream", "cudaStreamLegacy", 0},
		{"PerThreadDefaultStream", "cudaStreamPerThread", 0},
		{"StreamFlagDefault", "cudaStreamDefault", 0},
		{"StreamFlagNonBlocking", "cudaStreamNonBlocking", 0},

		// Event flags.
		{"EventFlagDefault", "cudaEventDefault", 0},
		{"EventFlagBlockingSync", "cudaEventBlockingSync", 0},
		{"EventFlagDisableTiming", "cudaEventDisableTiming", 0},

		// cudaHostAlloc flags.
		{"HostAllocDefault", "cudaHostAllocDefault", 0},
		{"HostAllocPortable", "cudaHostAllocPortable", 0},
		{"HostAllocMapped", "cudaHostAllocMapped", 0},
		{"HostAllocWriteCombined", "cudaHostAllocWriteCombined", 0},

		// cudaMallocManaged flags.
		{"MemAttachGlobal", "cudaMemAttachGlobal", 0},
		{"MemAttachHost", "cudaMemAttachHost", 0},
		{"MemAttachSingle", "cudaMemAttachSingle", 0},

		// enum cudaMemcpyKind.
		{"MemcpyHostToHost", "cudaMemcpyHostToHost", 0},
		{"MemcpyHostToDevice", "cudaMemcpyHostToDevice", 0},
		{"MemcpyDeviceToHost", "cudaMemcpyDeviceToHost", 0},
		{"MemcpyDeviceToDevice", "cudaMemcpyDeviceToDevice", 0},
		{"MemcpyDefault", "cudaMemcpyDefault", 0},

		// enum cudaDeviceAttr.
		{"DevAttrMultiProcessorCount", "cudaDevAttrMultiProcessorCount", 0},
		{"DevAttrIntegrated", "cudaDevAttrIntegrated", 0},
		{"DevAttrComputeCapabilityMajor", "cudaDevAttrComputeCapabilityMajor", 0},
		{"DevAttrComputeCapabilityMinor", "cudaDevAttrComputeCapabilityMinor", 0},
		{"DevAttrManagedMemory", "cudaDevAttrManagedMemory", 0},
		{"DevAttrHostNativeAtomicSupported", "cudaDevAttrHostNativeAtomicSupported", 0},
		{"DevAttrPageableMemoryAccess", "cudaDevAttrPageableMemoryAccess", 0},
		{"DevAttrConcurrentManagedAccess", "cudaDevAttrConcurrentManagedAccess", 0},
		{"DevAttrPageableMemoryAccessUsesHostPageTbl", "cudaDevAttrPageableMemoryAccessUsesHostPageTables", 0},
		{"DevAttrDirectManagedMemAccessFromHost", "cudaDevAttrDirectManagedMemAccessFromHost", 0},
		{"DevAttrMemoryPoolsSupported", "cudaDevAttrMemoryPoolsSupported", 0},
		{"DevAttrMemoryPoolSupportedHandleTypes", "cudaDevAttrMemoryPoolSupportedHandleTypes", 0},

		// enum cudaMemPoolAttr.
		{"MemPoolReuseFollowEventDependencies", "cudaMemPoolReuseFollowEventDependencies", 0},
		{"MemPoolReuseAllowOpportunistic", "cudaMemPoolReuseAllowOpportunistic", 0},
		{"MemPoolReuseAllowInternalDependencies", "cudaMemPoolReuseAllowInternalDependencies", 0},
		{"MemPoolAttrReleaseThreshold", "cudaMemPoolAttrReleaseThreshold", 0},
		{"MemPoolAttrReservedMemCurrent", "cudaMemPoolAttrReservedMemCurrent", 0},
		{"MemPoolAttrReservedMemHigh", "cudaMemPoolAttrReservedMemHigh", 0},
		{"MemPoolAttrUsedMemCurrent", "cudaMemPoolAttrUsedMemCurrent", 0},
		{"MemPoolAttrUsedMemHigh", "cudaMemPoolAttrUsedMemHigh", 0},

		// enum cudaMemAllocationType.
		{"MemAllocationTypeInvalid", "cudaMemAllocationTypeInvalid", 0},
		{"MemAllocationTypePinned", "cudaMemAllocationTypePinned", 0},
		{"MemAllocationTypeManaged", "cudaMemAllocationTypeManaged", 13000},

		// enum cudaMemAllocationHandleType.
		{"MemHandleTypeNone", "cudaMemHandleTypeNone", 0},
		{"MemHandleTypePosixFileDescriptor", "cudaMemHandleTypePosixFileDescriptor", 0},
		{"MemHandleTypeWin32", "cudaMemHandleTypeWin32", 0},
		{"MemHandleTypeWin32Kmt", "cudaMemHandleTypeWin32Kmt", 0},
		{"MemHandleTypeFabric", "cudaMemHandleTypeFabric", 12040},

		// enum cudaMemLocationType.
		{"MemLocationTypeInvalid", "cudaMemLocationTypeInvalid", 0},
		{"MemLocationTypeDevice", "cudaMemLocationTypeDevice", 0},
		{"MemLocationTypeHost", "cudaMemLocationTypeHost", 12020},
		{"MemLocationTypeHostNuma", "cudaMemLocationTypeHostNuma", 12020},
		{"MemLocationTypeHostNumaCurrent", "cudaMemLocationTypeHostNumaCurrent", 12020},

		// enum cudaMemoryAdvise.
		{"MemAdviseSetReadMostly", "cudaMemAdviseSetReadMostly", 0},
		{"MemAdviseUnsetReadMostly", "cudaMemAdviseUnsetReadMostly", 0},
		{"MemAdviseSetPreferredLocation", "cudaMemAdviseSetPreferredLocation", 0},
		{"MemAdviseUnsetPreferredLocation", "cudaMemAdviseUnsetPreferredLocation", 0},
		{"MemAdviseSetAccessedBy", "cudaMemAdviseSetAccessedBy", 0},
		{"MemAdviseUnsetAccessedBy", "cudaMemAdviseUnsetAccessedBy", 0},

		// enum cudaMemoryType.
		{"MemoryTypeUnregistered", "cudaMemoryTypeUnregistered", 0},
		{"MemoryTypeHost", "cudaMemoryTypeHost", 0},
		{"MemoryTypeDevice", "cudaMemoryTypeDevice", 0},
		{"MemoryTypeManaged", "cudaMemoryTypeManaged", 0},

		// The driver's virtual memory management (vmm.go).
		{"MemAccessFlagsProtNone", "CU_MEM_ACCESS_FLAGS_PROT_NONE", 0},
		{"MemAccessFlagsProtRead", "CU_MEM_ACCESS_FLAGS_PROT_READ", 0},
		{"MemAccessFlagsProtReadWrite", "CU_MEM_ACCESS_FLAGS_PROT_READWRITE", 0},
		{"MemGranularityMinimum", "CU_MEM_ALLOC_GRANULARITY_MINIMUM", 0},
		{"MemGranularityRecommended", "CU_MEM_ALLOC_GRANULARITY_RECOMMENDED", 0},
		{"cuErrorInvalidContext", "CUDA_ERROR_INVALID_CONTEXT", 0},

		// Driver entry points (cudaGetDriverEntryPointByVersion).
		{"driverEntryEnableDefault", "cudaEnableDefault", 0},
		{"driverEntrySuccess", "cudaDriverEntryPointSuccess", 0},

		// Special device ids.
		{"CPUDeviceID", "cudaCpuDeviceId", 0},
		{"InvalidDeviceID", "cudaInvalidDeviceId", 0},
	}
}

// DriverAliases returns the driver constants whose values cudart passes, or
// reads back, as the runtime constant of the same meaning (GoName, listed in
// Consts): the memory kinds and locations of CUmemAllocationProp, and the
// CUresult codes of the driver calls that cudart reports as the runtime's
// ErrorCode. The declaration check proves each equal to it.
func DriverAliases() []Const {
	return []Const{
		{"MemAllocationTypePinned", "CU_MEM_ALLOCATION_TYPE_PINNED", 0},
		{"MemHandleTypeNone", "CU_MEM_HANDLE_TYPE_NONE", 0},
		{"MemHandleTypePosixFileDescriptor", "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR", 0},
		{"MemLocationTypeDevice", "CU_MEM_LOCATION_TYPE_DEVICE", 0},
		{"Success", "CUDA_SUCCESS", 0},
		{"ErrorInvalidValue", "CUDA_ERROR_INVALID_VALUE", 0},
		{"ErrorMemoryAllocation", "CUDA_ERROR_OUT_OF_MEMORY", 0},
		{"ErrorInvalidDevice", "CUDA_ERROR_INVALID_DEVICE", 0},
		{"ErrorNotSupported", "CUDA_ERROR_NOT_SUPPORTED", 0},
	}
}
