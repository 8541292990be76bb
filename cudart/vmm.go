package cudart

import "fmt"

// VirtualMemory is the CUDA driver's virtual memory management: reserve a
// range of device addresses that holds no memory, make physical memory
// (MemCreate), map it into the range in pieces, give devices access to it,
// and take it apart again without moving what stays mapped. The expandable
// resource of package core is built on it. The runtime API has no such
// calls; both backends offer them:
//
//   - the real backend takes the driver's cuMem* functions from the runtime
//     with cudaGetDriverEntryPointByVersion (CUDA runtime 12.5 and later).
//     With an older runtime, every call fails with ErrorNotSupported and
//     says why;
//   - the simulated device (package cudart/sim) models reservations,
//     granularity, physical memory that counts against the device's
//     capacity, mappings and access, and refuses copies and fills into
//     memory that is not mapped or not accessible.
//
// VirtualMemoryOf finds it. Calls report a failure as an *Error whose Code
// is the driver's CUresult, named as the driver names it (e.g.
// CUDA_ERROR_OUT_OF_MEMORY) and with Func the driver function. The codes
// rmmgo tells apart have the runtime's numbers (the declaration check
// proves it: abi.DriverAliases), so errors.Is(err, ErrMemoryAllocation)
// matches an out-of-memory failure of either API.
//
// Addresses are device pointers (uintptr values, never Go pointers). Sizes
// and offsets of reservations, physical memory and mappings are multiples
// of the granularity MemGetAllocationGranularity reports (2 MiB on current
// GPUs).
type VirtualMemory interface {
	// MemGetAllocationGranularity is cuMemGetAllocationGranularity.
	MemGetAllocationGranularity(prop MemAllocationProp, option MemGranularityOption) (uintptr, error)
	// MemAddressReserve is cuMemAddressReserve with no address hint and no
	// flags; alignment 0 means the granularity.
	MemAddressReserve(size, alignment uintptr) (uintptr, error)
	// MemAddressFree is cuMemAddressFree: size is the reservation's.
	MemAddressFree(ptr, size uintptr) error
	// MemCreate is cuMemCreate with no flags.
	MemCreate(size uintptr, prop MemAllocationProp) (MemHandle, error)
	// MemRelease is cuMemRelease. The memory goes back once it is also
	// unmapped everywhere.
	MemRelease(h MemHandle) error
	// MemMap is cuMemMap with no flags: size bytes of h from offset, at
	// ptr, inside a reservation and over no other mapping. Mapped memory is
	// not accessible until MemSetAccess.
	MemMap(ptr, size, offset uintptr, h MemHandle) error
	// MemUnmap is cuMemUnmap: [ptr, ptr+size) must be whole mappings.
	MemUnmap(ptr, size uintptr) error
	// MemSetAccess is cuMemSetAccess: [ptr, ptr+size) must be mapped; each
	// descriptor sets one location's access.
	MemSetAccess(ptr, size uintptr, desc ...MemAccessDesc) error
	// MemGetAccess is cuMemGetAccess: loc's access to the mapped ptr.
	MemGetAccess(loc MemLocation, ptr uintptr) (MemAccessFlags, error)
}

// VirtualMemoryOf returns r's virtual memory management, or an error
// wrapping ErrNotSupported when r offers none (a Runtime of another
// package, or a wrapper that does not pass it on).
func VirtualMemoryOf(r Runtime) (VirtualMemory, error) {
	if v, ok := r.(VirtualMemory); ok {
		return v, nil
	}
	return nil, fmt.Errorf("cudart: the %s runtime (%T) offers no virtual memory management: %w", r.Backend(), r, ErrNotSupported)
}

// driverErrors are the names and descriptions of the CUresult codes the
// virtual memory calls return that rmmgo names; other codes are reported as
// CUresult(<n>).
var driverErrors = map[ErrorCode][2]string{
	Success:                    {"CUDA_SUCCESS", "no error"},
	ErrorInvalidValue:          {"CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	ErrorMemoryAllocation:      {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	ErrorInvalidDevice:         {"CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	ErrorNotSupported:          {"CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
	3:                          {"CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	cuErrorInvalidContext:      {"CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	ErrorIllegalAddress:        {"CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
	ErrorInvalidResourceHandle: {"CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
}

// NewDriverError builds the *Error of a failed driver call fn with CUresult
// code, as both backends report it; detail, if any, follows the driver's
// description.
func NewDriverError(fn string, code ErrorCode, detail string) *Error {
	e := &Error{Code: code, Name: fmt.Sprintf("CUresult(%d)", int32(code)), Func: fn}
	if n, ok := driverErrors[code]; ok {
		e.Name, e.Desc = n[0], n[1]
	}
	if detail != "" {
		if e.Desc != "" {
			e.Desc += ": "
		}
		e.Desc += detail
	}
	return e
}
