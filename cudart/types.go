package cudart

// Handles. CUDA's handles are opaque pointers; we carry them as integers so
// that they can cross the C ABI unchanged and never look like Go pointers to
// the garbage collector.
type (
	// Stream is a cudaStream_t. The zero value is the default (legacy) stream.
	Stream uintptr
	// Event is a cudaEvent_t.
	Event uintptr
	// MemPool is a cudaMemPool_t.
	MemPool uintptr
)

// Special stream handles understood by the CUDA runtime.
const (
	DefaultStream          Stream = 0
	LegacyDefaultStream    Stream = 1 // cudaStreamLegacy
	PerThreadDefaultStream Stream = 2 // cudaStreamPerThread
)

// Stream creation flags (cudaStreamDefault, cudaStreamNonBlocking).
const (
	StreamFlagDefault     uint32 = 0
	StreamFlagNonBlocking uint32 = 1
)

// Event creation flags.
const (
	EventFlagDefault       uint32 = 0
	EventFlagBlockingSync  uint32 = 1
	EventFlagDisableTiming uint32 = 2
)

// Flags for HostAlloc (cudaHostAlloc*).
const (
	HostAllocDefault       uint32 = 0
	HostAllocPortable      uint32 = 1
	HostAllocMapped        uint32 = 2
	HostAllocWriteCombined uint32 = 4
)

// Flags for MallocManaged (cudaMemAttach*).
const (
	MemAttachGlobal uint32 = 1
	MemAttachHost   uint32 = 2
	MemAttachSingle uint32 = 4
)

// MemcpyKind is cudaMemcpyKind.
type MemcpyKind int32

const (
	MemcpyHostToHost     MemcpyKind = 0
	MemcpyHostToDevice   MemcpyKind = 1
	MemcpyDeviceToHost   MemcpyKind = 2
	MemcpyDeviceToDevice MemcpyKind = 3
	MemcpyDefault        MemcpyKind = 4
)

// DeviceAttr is cudaDeviceAttr. Only the attributes rmmgo reads are named.
type DeviceAttr int32

const (
	DevAttrMultiProcessorCount                 DeviceAttr = 16
	DevAttrIntegrated                          DeviceAttr = 18
	DevAttrComputeCapabilityMajor              DeviceAttr = 75
	DevAttrComputeCapabilityMinor              DeviceAttr = 76
	DevAttrManagedMemory                       DeviceAttr = 83
	DevAttrHostNativeAtomicSupported           DeviceAttr = 86
	DevAttrPageableMemoryAccess                DeviceAttr = 88
	DevAttrConcurrentManagedAccess             DeviceAttr = 89
	DevAttrPageableMemoryAccessUsesHostPageTbl DeviceAttr = 100
	DevAttrDirectManagedMemAccessFromHost      DeviceAttr = 101
	DevAttrMemoryPoolsSupported                DeviceAttr = 115
	DevAttrMemoryPoolSupportedHandleTypes      DeviceAttr = 119
)

// MemPoolAttr is cudaMemPoolAttr. Every attribute rmmgo uses is read and
// written as a 64-bit value (reuse flags are widened from int).
type MemPoolAttr int32

const (
	MemPoolReuseFollowEventDependencies   MemPoolAttr = 1
	MemPoolReuseAllowOpportunistic        MemPoolAttr = 2
	MemPoolReuseAllowInternalDependencies MemPoolAttr = 3
	MemPoolAttrReleaseThreshold           MemPoolAttr = 4
	MemPoolAttrReservedMemCurrent         MemPoolAttr = 5
	MemPoolAttrReservedMemHigh            MemPoolAttr = 6
	MemPoolAttrUsedMemCurrent             MemPoolAttr = 7
	MemPoolAttrUsedMemHigh                MemPoolAttr = 8
)

// MemAllocationType is cudaMemAllocationType.
type MemAllocationType int32

const (
	MemAllocationTypeInvalid MemAllocationType = 0
	MemAllocationTypePinned  MemAllocationType = 1
	MemAllocationTypeManaged MemAllocationType = 2 // CUDA 13.0 and later
)

// MemHandleType is cudaMemAllocationHandleType, a bit set.
type MemHandleType int32

const (
	MemHandleTypeNone                MemHandleType = 0
	MemHandleTypePosixFileDescriptor MemHandleType = 1
	MemHandleTypeWin32               MemHandleType = 2
	MemHandleTypeWin32Kmt            MemHandleType = 4
	MemHandleTypeFabric              MemHandleType = 8
)

// MemLocationType is cudaMemLocationType.
type MemLocationType int32

const (
	MemLocationTypeInvalid         MemLocationType = 0
	MemLocationTypeDevice          MemLocationType = 1
	MemLocationTypeHost            MemLocationType = 2
	MemLocationTypeHostNuma        MemLocationType = 3
	MemLocationTypeHostNumaCurrent MemLocationType = 4
)

// MemLocation is cudaMemLocation: 8 bytes, type at offset 0, id at offset 4.
type MemLocation struct {
	Type MemLocationType
	ID   int32
}

// DeviceLocation and HostLocation build the two locations rmmgo uses.
func DeviceLocation(dev int) MemLocation { return MemLocation{MemLocationTypeDevice, int32(dev)} }
func HostLocation() MemLocation          { return MemLocation{MemLocationTypeHost, 0} }

// MemPoolProps is the part of cudaMemPoolProps that rmmgo sets. The real
// backend lays it out as the 88-byte C struct (see cuda_abi.h); the rest of
// the C struct is zeroed.
type MemPoolProps struct {
	AllocType   MemAllocationType
	HandleTypes MemHandleType
	Location    MemLocation
	MaxSize     uint64 // 0: no limit beyond the device
}

// MemoryAdvise is cudaMemoryAdvise.
type MemoryAdvise int32

const (
	MemAdviseSetReadMostly          MemoryAdvise = 1
	MemAdviseUnsetReadMostly        MemoryAdvise = 2
	MemAdviseSetPreferredLocation   MemoryAdvise = 3
	MemAdviseUnsetPreferredLocation MemoryAdvise = 4
	MemAdviseSetAccessedBy          MemoryAdvise = 5
	MemAdviseUnsetAccessedBy        MemoryAdvise = 6
)

// MemoryType is cudaMemoryType, as reported by PointerGetAttributes.
type MemoryType int32

const (
	MemoryTypeUnregistered MemoryType = 0
	MemoryTypeHost         MemoryType = 1
	MemoryTypeDevice       MemoryType = 2
	MemoryTypeManaged      MemoryType = 3
)

// PointerAttributes is the part of cudaPointerAttributes rmmgo reads.
type PointerAttributes struct {
	Type          MemoryType
	Device        int
	DevicePointer uintptr
	HostPointer   uintptr
}

// Device ids with special meaning.
const (
	CPUDeviceID     = -1 // cudaCpuDeviceId
	InvalidDeviceID = -2 // cudaInvalidDeviceId
)

// cudaGetDriverEntryPointByVersion's flags and query results (the backend
// uses no others).
const (
	driverEntryEnableDefault = 0 // cudaEnableDefault
	driverEntrySuccess       = 0 // cudaDriverEntryPointSuccess
)

// The driver's virtual memory management, which the backends offer through
// VirtualMemory (vmm.go). CUmemAllocationProp and CUmemLocation take the
// runtime's MemAllocationType, MemHandleType and MemLocationType values:
// the declaration check proves that the driver's constants of the same
// meaning are equal to them (abi.DriverAliases).

// MemHandle is a CUmemGenericAllocationHandle: physical memory made by
// MemCreate, until MemRelease.
type MemHandle uint64

// MemAccessFlags is CUmemAccess_flags.
type MemAccessFlags int32

const (
	MemAccessFlagsProtNone      MemAccessFlags = 0
	MemAccessFlagsProtRead      MemAccessFlags = 1
	MemAccessFlagsProtReadWrite MemAccessFlags = 3
)

// cuErrorInvalidContext is the CUresult of a driver call made on a thread
// with no current context, which the runtime has not initialized yet.
const cuErrorInvalidContext = 201

// MemGranularityOption is CUmemAllocationGranularity_flags: which
// granularity MemGetAllocationGranularity reports.
type MemGranularityOption int32

const (
	MemGranularityMinimum     MemGranularityOption = 0
	MemGranularityRecommended MemGranularityOption = 1
)

// MemAllocationProp is the part of CUmemAllocationProp that rmmgo sets; the
// real backend lays it out as the 32-byte C struct (see cuda_abi.h) with
// every other field zero.
type MemAllocationProp struct {
	Type                 MemAllocationType // MemAllocationTypePinned
	RequestedHandleTypes MemHandleType
	Location             MemLocation // where the memory lives: a device
}

// DeviceMemoryProp describes pinned memory on device dev, not exportable:
// what the expandable resource maps.
func DeviceMemoryProp(dev int) MemAllocationProp {
	return MemAllocationProp{Type: MemAllocationTypePinned, Location: DeviceLocation(dev)}
}

// MemAccessDesc is CUmemAccessDesc: the access one location gets to a
// mapped range.
type MemAccessDesc struct {
	Location MemLocation
	Flags    MemAccessFlags
}
