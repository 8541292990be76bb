package cudart

// Runtime is the part of the CUDA runtime API that rmmgo uses. Two backends
// implement it: the real CUDA runtime, loaded from libcudart at run time
// (OpenCUDA), and a simulated device for machines without a GPU (package
// cudart/sim).
// Code above this package sees only Runtime and never asks which one runs.
//
// Like CUDA, the current device is a property of the calling OS thread. Go
// code that calls SetDevice and relies on it afterwards must hold its
// goroutine on one thread (runtime.LockOSThread); C callers through the C ABI
// already run on their own threads.
//
// Pointers to device, managed and pinned memory are uintptr values: they are
// never Go pointers.
type Runtime interface {
	// Backend names the backend: "cuda" or "simulated".
	Backend() Backend

	RuntimeVersion() (int, error) // e.g. 13000 for CUDA 13.0
	DriverVersion() (int, error)
	ErrorName(code ErrorCode) string
	ErrorString(code ErrorCode) string

	// Devices.
	GetDeviceCount() (int, error)
	GetDevice() (int, error)
	SetDevice(dev int) error
	DeviceGetAttribute(attr DeviceAttr, dev int) (int, error)
	DeviceSynchronize() error
	MemGetInfo() (free, total uint64, err error) // of the current device

	// Plain allocations.
	Malloc(size uintptr) (uintptr, error)
	Free(ptr uintptr) error
	MallocManaged(size uintptr, flags uint32) (uintptr, error)
	HostAlloc(size uintptr, flags uint32) (uintptr, error)
	FreeHost(ptr uintptr) error

	// Stream-ordered allocations and memory pools.
	MallocAsync(size uintptr, stream Stream) (uintptr, error)
	MallocFromPoolAsync(size uintptr, pool MemPool, stream Stream) (uintptr, error)
	FreeAsync(ptr uintptr, stream Stream) error
	MemPoolCreate(props MemPoolProps) (MemPool, error)
	MemPoolDestroy(pool MemPool) error
	MemPoolSetAttribute(pool MemPool, attr MemPoolAttr, value uint64) error
	MemPoolGetAttribute(pool MemPool, attr MemPoolAttr) (uint64, error)
	MemPoolTrimTo(pool MemPool, minBytesToKeep uintptr) error
	DeviceGetDefaultMemPool(dev int) (MemPool, error)

	// Streams and events.
	StreamCreate(flags uint32) (Stream, error)
	StreamDestroy(s Stream) error
	StreamSynchronize(s Stream) error
	StreamQuery(s Stream) error // nil when idle, an *Error with ErrorNotReady when busy
	StreamWaitEvent(s Stream, e Event) error
	StreamGetID(s Stream) (uint64, error)
	EventCreate(flags uint32) (Event, error)
	EventDestroy(e Event) error
	EventRecord(e Event, s Stream) error
	EventQuery(e Event) error // nil when complete, an *Error with ErrorNotReady otherwise
	EventSynchronize(e Event) error

	// Copies and fills.
	Memcpy(dst, src, n uintptr, kind MemcpyKind) error
	MemcpyAsync(dst, src, n uintptr, kind MemcpyKind, s Stream) error
	Memset(ptr uintptr, value int, n uintptr) error
	MemsetAsync(ptr uintptr, value int, n uintptr, s Stream) error

	// Managed memory hints. The backend hides that CUDA 12 and 13 declare
	// these differently.
	MemPrefetchAsync(ptr, n uintptr, loc MemLocation, s Stream) error
	MemAdvise(ptr, n uintptr, advice MemoryAdvise, loc MemLocation) error

	PointerGetAttributes(ptr uintptr) (PointerAttributes, error)
}

// Backend names a Runtime implementation.
type Backend string

const (
	BackendCUDA      Backend = "cuda"
	BackendSimulated Backend = "simulated"
)
