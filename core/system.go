package core

/*
#include <stdint.h>
#include <stdlib.h>

// rmmgo_host_alloc returns size bytes of C heap aligned to alignment, or
// NULL; *err receives posix_memalign's error number.
static void* rmmgo_host_alloc(size_t size, size_t alignment, int* err) {
	void* p = NULL;
	*err = posix_memalign(&p, alignment, size);
	return *err == 0 ? p : NULL;
}

// rmmgo_host_free frees what rmmgo_host_alloc returned.
static void rmmgo_host_free(uintptr_t p) { free((void*)p); }
*/
import "C"

import (
	"fmt"

	"github.com/rmmgo/rmmgo/cudart"
)

// System allocates ordinary host memory from the C heap for use by the
// device, like RMM's system_memory_resource. It needs a device with pageable
// memory access (HMM or ATS: cudaDevAttrPageableMemoryAccess), through which
// kernels read and write any host memory; NewSystem fails with
// ErrNotSupported elsewhere.
//
// The memory is device and host accessible. Allocate ignores the stream;
// Deallocate synchronizes the stream before freeing, because device work on
// the stream may still use the memory and the C heap knows nothing of
// streams. Every allocation is recorded with its size (see live_table.go),
// so freeing memory twice, or memory System did not hand out, is an error
// wrapping ErrInvalidPointer, and a size other than was allocated one
// wrapping ErrInvalidArgument; neither reaches the C heap. System is
// stateless: every *System equals every other, and any of them frees memory
// from another. Host memory belongs to no device, so System may be used
// with any device current.
type System struct{ base }

// NewSystem returns a System resource, or an error wrapping ErrNotSupported
// when the current device lacks pageable memory access.
func NewSystem() (*System, error) {
	r, err := rt()
	if err != nil {
		return nil, err
	}
	return newSystem(r)
}

// newSystem is NewSystem on runtime r.
func newSystem(r cudart.Runtime) (*System, error) {
	b, err := newBase(kindSystem, r)
	if err != nil {
		return nil, err
	}
	if err := checkPageableAccess(kindSystem, r, b.dev); err != nil {
		return nil, err
	}
	return &System{b}, nil
}

// checkPageableAccess fails with ErrNotSupported unless device dev can use
// pageable host memory.
func checkPageableAccess(kind string, r cudart.Runtime, dev int) error {
	v, err := deviceAttr(kind, r, cudart.DevAttrPageableMemoryAccess, dev)
	if err != nil {
		return err
	}
	if v == 0 {
		return fmt.Errorf("%s: %w: device %d cannot access pageable host memory (cudaDevAttrPageableMemoryAccess is 0; it needs HMM or ATS, e.g. a recent Linux kernel with the open GPU driver, or a Grace Hopper system)",
			kind, ErrNotSupported, dev)
	}
	return nil
}

// Allocate returns bytes of host memory aligned to 256 bytes.
func (s *System) Allocate(stream Stream, bytes, alignment uintptr) (uintptr, error) {
	if !requestOK(bytes, alignment) {
		return 0, rejectRequest(kindSystem, bytes, alignment)
	}
	p, err := systemHeap.alloc(kindSystem, bytes, 0)
	if err != nil {
		return 0, explainOOM(s, stream, bytes, alignment, err)
	}
	return p, nil
}

// Deallocate synchronizes stream, then frees ptr. Memory System did not
// hand out, or already freed, gives an error wrapping ErrInvalidPointer;
// bytes other than were allocated, an error wrapping ErrInvalidArgument.
// When the stream cannot be synchronized the memory is not freed (the
// device may still use it) and the error says so; it may be deallocated
// again later.
func (s *System) Deallocate(stream Stream, ptr, bytes, alignment uintptr) error {
	if ptr != 0 && !freeAlignmentOK(alignment) {
		return errFreeAlignment(kindSystem, ptr, alignment)
	}
	return systemHeap.free(kindSystem, s.rt, stream, ptr, bytes, 0)
}

// AllocateSync is Allocate.
func (s *System) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	return s.Allocate(DefaultStream, bytes, alignment)
}

// DeallocateSync is Deallocate on the default stream.
func (s *System) DeallocateSync(ptr, bytes, alignment uintptr) error {
	return s.Deallocate(DefaultStream, ptr, bytes, alignment)
}

// Properties reports DeviceAccessible and HostAccessible.
func (s *System) Properties() Properties { return DeviceAccessible | HostAccessible }

// Equal reports whether other is a *System: all are interchangeable.
func (s *System) Equal(other Resource) bool {
	_, ok := other.(*System)
	return ok
}

// Kind returns "system".
func (s *System) Kind() string { return kindSystem }

// hostHeap is C heap memory handed out by one group of equal resources and
// recorded in a table, so that a double free, the free of a foreign pointer
// or a wrong size is an error instead of heap corruption.
type hostHeap struct{ live *liveTable }

// The heaps of System resources and of SAMHeadroom resources.
var (
	systemHeap = hostHeap{&systemLive}
	samHeap    = hostHeap{&samLive}
)

// alloc takes bytes (at most maxAllocation) from the C heap, aligned to
// DefaultAlignment, and records them for owner.
func (h hostHeap) alloc(kind string, bytes, owner uintptr) (uintptr, error) {
	var errno C.int
	p := C.rmmgo_host_alloc(C.size_t(bytes), C.size_t(DefaultAlignment), &errno)
	if p == nil {
		return 0, fmt.Errorf("%s: %w: the C heap could not provide %d bytes (error number %d)", kind, ErrOutOfMemory, bytes, int(errno))
	}
	ptr := uintptr(p)
	h.live.add(ptr, bytes, owner)
	return ptr, nil
}

// has reports whether ptr is recorded (for tests).
func (h hostHeap) has(ptr uintptr) bool { return h.live.has(ptr) }

// free synchronizes stream on r and gives ptr, recorded with bytes for
// owner, back to the C heap. ptr 0 is a no-op. When the stream cannot be
// synchronized nothing is freed and the record stays.
func (h hostHeap) free(kind string, r cudart.Runtime, stream Stream, ptr, bytes, owner uintptr) error {
	if ptr == 0 {
		return nil
	}
	e, err := h.live.take(kind, ptr, bytes, owner)
	if err != nil {
		return err
	}
	if err := r.StreamSynchronize(stream); err != nil {
		h.live.restore(ptr, e)
		return cudaError(fmt.Sprintf("%s: synchronizing the stream before freeing %#x (not freed)", kind, ptr), err)
	}
	C.rmmgo_host_free(C.uintptr_t(ptr))
	return nil
}
