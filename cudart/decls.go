package cudart

// Decl is one integer constant of this package together with the CUDA name
// it mirrors. Decls lists them all; the declaration check (cudart/check)
// compiles the list against the real CUDA headers on a GPU machine and fails
// on any difference.
type Decl struct {
	GoName string // the Go identifier, e.g. "DevAttrPageableMemoryAccess"
	CName  string // the CUDA identifier, e.g. "cudaDevAttrPageableMemoryAccess"
	Value  int64  // the value this package declares
	Since  int    // first CUDART_VERSION whose headers declare CName; 0: every version rmmgo supports (12.0+)
}

// FuncDecl is one CUDA runtime function that the real backend resolves with
// dlsym, together with the function-pointer type cuda_abi.h declares for it.
// A function whose signature changed between CUDA versions appears once per
// shape, each with the runtime versions it applies to.
type FuncDecl struct {
	Symbol   string // exported symbol, e.g. "cudaMemPrefetchAsync"
	Type     string // function-pointer type in cuda_abi.h, e.g. "rmmgo_fn_cudaMemPrefetchAsync_location"
	Since    int    // first runtime version with this shape; 0: every version rmmgo supports
	Before   int    // first runtime version without it; 0: still current
	Optional bool   // may be absent from a library of a matching version
}

// AppliesTo reports whether d describes a runtime of the given version
// (cudaRuntimeGetVersion's encoding, e.g. 12040 for 12.4).
func (d FuncDecl) AppliesTo(version int) bool {
	return version >= d.Since && (d.Before == 0 || version < d.Before)
}

// MinRuntimeVersion is the oldest CUDA runtime the real backend accepts.
const MinRuntimeVersion = 12000

// Runtime versions at which the managed-memory hint functions change shape.
const (
	versionLocationV2 = 12020 // cudaMemPrefetchAsync_v2 / cudaMemAdvise_v2 appear
	versionLocation   = 13000 // the unsuffixed functions take a cudaMemLocation
	// cudaGetDriverEntryPointByVersion appears: how the backend finds the
	// driver's cuStreamGetId (driver functions come from the runtime in use,
	// never from whatever libcuda the process has loaded).
	versionDriverEntry = 12050
	// The driver ABI version rmmgo asks cuStreamGetId in: the one it
	// appeared in.
	versionStreamGetID = 12000
)

// Decls returns every integer constant this package declares for CUDA (in
// types.go and errors.go), with its CUDA name. DefaultStream, the null
// stream, has no CUDA name and is left out.
func Decls() []Decl {
	return []Decl{
		// errors.go: cudaError_t.
		{"Success", "cudaSuccess", int64(Success), 0},
		{"ErrorInvalidValue", "cudaErrorInvalidValue", int64(ErrorInvalidValue), 0},
		{"ErrorMemoryAllocation", "cudaErrorMemoryAllocation", int64(ErrorMemoryAllocation), 0},
		{"ErrorInitializationError", "cudaErrorInitializationError", int64(ErrorInitializationError), 0},
		{"ErrorCudartUnloading", "cudaErrorCudartUnloading", int64(ErrorCudartUnloading), 0},
		{"ErrorInvalidDevicePointer", "cudaErrorInvalidDevicePointer", int64(ErrorInvalidDevicePointer), 0},
		{"ErrorInvalidMemcpyDirection", "cudaErrorInvalidMemcpyDirection", int64(ErrorInvalidMemcpyDirection), 0},
		{"ErrorInsufficientDriver", "cudaErrorInsufficientDriver", int64(ErrorInsufficientDriver), 0},
		{"ErrorNoDevice", "cudaErrorNoDevice", int64(ErrorNoDevice), 0},
		{"ErrorInvalidDevice", "cudaErrorInvalidDevice", int64(ErrorInvalidDevice), 0},
		{"ErrorInvalidResourceHandle", "cudaErrorInvalidResourceHandle", int64(ErrorInvalidResourceHandle), 0},
		{"ErrorNotReady", "cudaErrorNotReady", int64(ErrorNotReady), 0},
		{"ErrorIllegalAddress", "cudaErrorIllegalAddress", int64(ErrorIllegalAddress), 0},
		{"ErrorHostMemoryAlreadyRegistered", "cudaErrorHostMemoryAlreadyRegistered", int64(ErrorHostMemoryAlreadyRegistered), 0},
		{"ErrorNotSupported", "cudaErrorNotSupported", int64(ErrorNotSupported), 0},

		// Special streams and stream flags.
		{"LegacyDefaultStream", "cudaStreamLegacy", int64(LegacyDefaultStream), 0},
		{"PerThreadDefaultStream", "cudaStreamPerThread", int64(PerThreadDefaultStream), 0},
		{"StreamFlagDefault", "cudaStreamDefault", int64(StreamFlagDefault), 0},
		{"StreamFlagNonBlocking", "cudaStreamNonBlocking", int64(StreamFlagNonBlocking), 0},

		// Event flags.
		{"EventFlagDefault", "cudaEventDefault", int64(EventFlagDefault), 0},
		{"EventFlagBlockingSync", "cudaEventBlockingSync", int64(EventFlagBlockingSync), 0},
		{"EventFlagDisableTiming", "cudaEventDisableTiming", int64(EventFlagDisableTiming), 0},

		// cudaHostAlloc flags.
		{"HostAllocDefault", "cudaHostAllocDefault", int64(HostAllocDefault), 0},
		{"HostAllocPortable", "cudaHostAllocPortable", int64(HostAllocPortable), 0},
		{"HostAllocMapped", "cudaHostAllocMapped", int64(HostAllocMapped), 0},
		{"HostAllocWriteCombined", "cudaHostAllocWriteCombined", int64(HostAllocWriteCombined), 0},

		// cudaMallocManaged flags.
		{"MemAttachGlobal", "cudaMemAttachGlobal", int64(MemAttachGlobal), 0},
		{"MemAttachHost", "cudaMemAttachHost", int64(MemAttachHost), 0},
		{"MemAttachSingle", "cudaMemAttachSingle", int64(MemAttachSingle), 0},

		// enum cudaMemcpyKind.
		{"MemcpyHostToHost", "cudaMemcpyHostToHost", int64(MemcpyHostToHost), 0},
		{"MemcpyHostToDevice", "cudaMemcpyHostToDevice", int64(MemcpyHostToDevice), 0},
		{"MemcpyDeviceToHost", "cudaMemcpyDeviceToHost", int64(MemcpyDeviceToHost), 0},
		{"MemcpyDeviceToDevice", "cudaMemcpyDeviceToDevice", int64(MemcpyDeviceToDevice), 0},
		{"MemcpyDefault", "cudaMemcpyDefault", int64(MemcpyDefault), 0},

		// enum cudaDeviceAttr.
		{"DevAttrMultiProcessorCount", "cudaDevAttrMultiProcessorCount", int64(DevAttrMultiProcessorCount), 0},
		{"DevAttrIntegrated", "cudaDevAttrIntegrated", int64(DevAttrIntegrated), 0},
		{"DevAttrComputeCapabilityMajor", "cudaDevAttrComputeCapabilityMajor", int64(DevAttrComputeCapabilityMajor), 0},
		{"DevAttrComputeCapabilityMinor", "cudaDevAttrComputeCapabilityMinor", int64(DevAttrComputeCapabilityMinor), 0},
		{"DevAttrManagedMemory", "cudaDevAttrManagedMemory", int64(DevAttrManagedMemory), 0},
		{"DevAttrHostNativeAtomicSupported", "cudaDevAttrHostNativeAtomicSupported", int64(DevAttrHostNativeAtomicSupported), 0},
		{"DevAttrPageableMemoryAccess", "cudaDevAttrPageableMemoryAccess", int64(DevAttrPageableMemoryAccess), 0},
		{"DevAttrConcurrentManagedAccess", "cudaDevAttrConcurrentManagedAccess", int64(DevAttrConcurrentManagedAccess), 0},
		{"DevAttrPageableMemoryAccessUsesHostPageTbl", "cudaDevAttrPageableMemoryAccessUsesHostPageTables", int64(DevAttrPageableMemoryAccessUsesHostPageTbl), 0},
		{"DevAttrDirectManagedMemAccessFromHost", "cudaDevAttrDirectManagedMemAccessFromHost", int64(DevAttrDirectManagedMemAccessFromHost), 0},
		{"DevAttrMemoryPoolsSupported", "cudaDevAttrMemoryPoolsSupported", int64(DevAttrMemoryPoolsSupported), 0},
		{"DevAttrMemoryPoolSupportedHandleTypes", "cudaDevAttrMemoryPoolSupportedHandleTypes", int64(DevAttrMemoryPoolSupportedHandleTypes), 0},

		// enum cudaMemPoolAttr.
		{"MemPoolReuseFollowEventDependencies", "cudaMemPoolReuseFollowEventDependencies", int64(MemPoolReuseFollowEventDependencies), 0},
		{"MemPoolReuseAllowOpportunistic", "cudaMemPoolReuseAllowOpportunistic", int64(MemPoolReuseAllowOpportunistic), 0},
		{"MemPoolReuseAllowInternalDependencies", "cudaMemPoolReuseAllowInternalDependencies", int64(MemPoolReuseAllowInternalDependencies), 0},
		{"MemPoolAttrReleaseThreshold", "cudaMemPoolAttrReleaseThreshold", int64(MemPoolAttrReleaseThreshold), 0},
		{"MemPoolAttrReservedMemCurrent", "cudaMemPoolAttrReservedMemCurrent", int64(MemPoolAttrReservedMemCurrent), 0},
		{"MemPoolAttrReservedMemHigh", "cudaMemPoolAttrReservedMemHigh", int64(MemPoolAttrReservedMemHigh), 0},
		{"MemPoolAttrUsedMemCurrent", "cudaMemPoolAttrUsedMemCurrent", int64(MemPoolAttrUsedMemCurrent), 0},
		{"MemPoolAttrUsedMemHigh", "cudaMemPoolAttrUsedMemHigh", int64(MemPoolAttrUsedMemHigh), 0},

		// enum cudaMemAllocationType.
		{"MemAllocationTypeInvalid", "cudaMemAllocationTypeInvalid", int64(MemAllocationTypeInvalid), 0},
		{"MemAllocationTypePinned", "cudaMemAllocationTypePinned", int64(MemAllocationTypePinned), 0},
		{"MemAllocationTypeManaged", "cudaMemAllocationTypeManaged", int64(MemAllocationTypeManaged), 13000},

		// enum cudaMemAllocationHandleType.
		{"MemHandleTypeNone", "cudaMemHandleTypeNone", int64(MemHandleTypeNone), 0},
		{"MemHandleTypePosixFileDescriptor", "cudaMemHandleTypePosixFileDescriptor", int64(MemHandleTypePosixFileDescriptor), 0},
		{"MemHandleTypeWin32", "cudaMemHandleTypeWin32", int64(MemHandleTypeWin32), 0},
		{"MemHandleTypeWin32Kmt", "cudaMemHandleTypeWin32Kmt", int64(MemHandleTypeWin32Kmt), 0},
		{"MemHandleTypeFabric", "cudaMemHandleTypeFabric", int64(MemHandleTypeFabric), 12040},

		// enum cudaMemLocationType.
		{"MemLocationTypeInvalid", "cudaMemLocationTypeInvalid", int64(MemLocationTypeInvalid), 0},
		{"MemLocationTypeDevice", "cudaMemLocationTypeDevice", int64(MemLocationTypeDevice), 0},
		{"MemLocationTypeHost", "cudaMemLocationTypeHost", int64(MemLocationTypeHost), 12020},
		{"MemLocationTypeHostNuma", "cudaMemLocationTypeHostNuma", int64(MemLocationTypeHostNuma), 12020},
		{"MemLocationTypeHostNumaCurrent", "cudaMemLocationTypeHostNumaCurrent", int64(MemLocationTypeHostNumaCurrent), 12020},

		// enum cudaMemoryAdvise.
		{"MemAdviseSetReadMostly", "cudaMemAdviseSetReadMostly", int64(MemAdviseSetReadMostly), 0},
		{"MemAdviseUnsetReadMostly", "cudaMemAdviseUnsetReadMostly", int64(MemAdviseUnsetReadMostly), 0},
		{"MemAdviseSetPreferredLocation", "cudaMemAdviseSetPreferredLocation", int64(MemAdviseSetPreferredLocation), 0},
		{"MemAdviseUnsetPreferredLocation", "cudaMemAdviseUnsetPreferredLocation", int64(MemAdviseUnsetPreferredLocation), 0},
		{"MemAdviseSetAccessedBy", "cudaMemAdviseSetAccessedBy", int64(MemAdviseSetAccessedBy), 0},
		{"MemAdviseUnsetAccessedBy", "cudaMemAdviseUnsetAccessedBy", int64(MemAdviseUnsetAccessedBy), 0},

		// enum cudaMemoryType.
		{"MemoryTypeUnregistered", "cudaMemoryTypeUnregistered", int64(MemoryTypeUnregistered), 0},
		{"MemoryTypeHost", "cudaMemoryTypeHost", int64(MemoryTypeHost), 0},
		{"MemoryTypeDevice", "cudaMemoryTypeDevice", int64(MemoryTypeDevice), 0},
		{"MemoryTypeManaged", "cudaMemoryTypeManaged", int64(MemoryTypeManaged), 0},

		// Driver entry points (cudaGetDriverEntryPointByVersion).
		{"driverEntryEnableDefault", "cudaEnableDefault", int64(driverEntryEnableDefault), 0},
		{"driverEntrySuccess", "cudaDriverEntryPointSuccess", int64(driverEntrySuccess), 0},

		// Special device ids.
		{"CPUDeviceID", "cudaCpuDeviceId", int64(CPUDeviceID), 0},
		{"InvalidDeviceID", "cudaInvalidDeviceId", int64(InvalidDeviceID), 0},
	}
}

// FuncDecls returns every CUDA runtime function the real backend resolves,
// with the shape it calls it by. OpenCUDA resolves the entries that apply to
// the loaded runtime's version; a missing entry that is not Optional fails
// the load.
func FuncDecls() []FuncDecl {
	f := func(sym string) FuncDecl { return FuncDecl{Symbol: sym, Type: "rmmgo_fn_" + sym} }
	return []FuncDecl{
		f("cudaGetErrorName"),
		f("cudaGetErrorString"),
		f("cudaGetLastError"),
		f("cudaPeekAtLastError"),
		f("cudaRuntimeGetVersion"),
		f("cudaDriverGetVersion"),

		f("cudaGetDeviceCount"),
		f("cudaGetDevice"),
		f("cudaSetDevice"),
		f("cudaDeviceGetAttribute"),
		f("cudaDeviceSynchronize"),
		f("cudaMemGetInfo"),

		f("cudaMalloc"),
		f("cudaFree"),
		f("cudaMallocManaged"),
		f("cudaHostAlloc"),
		f("cudaFreeHost"),

		f("cudaMallocAsync"),
		f("cudaMallocFromPoolAsync"),
		f("cudaFreeAsync"),
		f("cudaMemPoolCreate"),
		f("cudaMemPoolDestroy"),
		f("cudaMemPoolSetAttribute"),
		f("cudaMemPoolGetAttribute"),
		f("cudaMemPoolTrimTo"),
		f("cudaDeviceGetDefaultMemPool"),

		f("cudaStreamCreateWithFlags"),
		f("cudaStreamDestroy"),
		f("cudaStreamSynchronize"),
		f("cudaStreamQuery"),
		f("cudaStreamWaitEvent"),
		f("cudaStreamGetId"),
		f("cudaEventCreateWithFlags"),
		f("cudaEventDestroy"),
		f("cudaEventRecord"),
		f("cudaEventQuery"),
		f("cudaEventSynchronize"),

		f("cudaMemcpy"),
		f("cudaMemcpyAsync"),
		f("cudaMemset"),
		f("cudaMemsetAsync"),

		// CUDA 13: the location shape under the plain names.
		{Symbol: "cudaMemPrefetchAsync", Type: "rmmgo_fn_cudaMemPrefetchAsync_location", Since: versionLocation},
		{Symbol: "cudaMemAdvise", Type: "rmmgo_fn_cudaMemAdvise_location", Since: versionLocation},
		// CUDA 12: the device shape under the plain names ...
		{Symbol: "cudaMemPrefetchAsync", Type: "rmmgo_fn_cudaMemPrefetchAsync_device", Before: versionLocation},
		{Symbol: "cudaMemAdvise", Type: "rmmgo_fn_cudaMemAdvise_device", Before: versionLocation},
		// ... and, from 12.2, the location shape as _v2, which rmmgo prefers.
		{Symbol: "cudaMemPrefetchAsync_v2", Type: "rmmgo_fn_cudaMemPrefetchAsync_location", Since: versionLocationV2, Before: versionLocation, Optional: true},
		{Symbol: "cudaMemAdvise_v2", Type: "rmmgo_fn_cudaMemAdvise_location", Since: versionLocationV2, Before: versionLocation, Optional: true},

		f("cudaPointerGetAttributes"),

		{Symbol: "cudaGetDriverEntryPointByVersion", Type: "rmmgo_fn_cudaGetDriverEntryPointByVersion", Since: versionDriverEntry, Optional: true},
	}
}
