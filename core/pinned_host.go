package core

import (
	"github.com/rmmgo/rmmgo/cudart"
)

// PinnedHost allocates page-locked host memory with cudaHostAlloc (default
// flags) and frees it with cudaFreeHost, like RMM's
// pinned_host_memory_resource.
//
// The memory is host and device accessible (devices reach it over the bus
// through unified addressing) and is what asynchronous copies between host
// and device need. cudaHostAlloc returns page-aligned memory, so no header
// is kept. Allocate ignores the stream. PinnedHost is stateless: every
// *PinnedHost equals every other, and frees what any other handed out.
// Deallocate frees only what a PinnedHost resource handed out, with the
// size it was asked for (see live_table.go). Pinned memory belongs to no device, so
// PinnedHost may be used with any device current; Device reports the device
// current when it was made.
type PinnedHost struct{ base }

// NewPinnedHost returns a PinnedHost resource.
func NewPinnedHost() (*PinnedHost, error) {
	r, err := rt()
	if err != nil {
		return nil, err
	}
	return newPinnedHost(r)
}

// newPinnedHost is NewPinnedHost on runtime r.
func newPinnedHost(r cudart.Runtime) (*PinnedHost, error) {
	b, err := newBase(kindPinnedHost, r)
	if err != nil {
		return nil, err
	}
	return &PinnedHost{b}, nil
}

// Allocate returns bytes of pinned host memory.
func (h *PinnedHost) Allocate(stream Stream, bytes, alignment uintptr) (uintptr, error) {
	if !requestOK(bytes, alignment) {
		return 0, rejectRequest(kindPinnedHost, bytes, alignment)
	}
	p, err := h.rt.HostAlloc(bytes, cudart.HostAllocDefault)
	if err != nil {
		return 0, explainOOM(h, stream, bytes, alignment, allocError(kindPinnedHost, bytes, err))
	}
	pinnedHostLive.add(p, bytes, 0)
	return p, nil
}

// Deallocate frees ptr with cudaFreeHost. A pointer no PinnedHost resource
// handed out, or one already freed, gives an error wrapping
// ErrInvalidPointer; bytes other than were allocated, an error wrapping
// ErrInvalidArgument. Neither frees anything.
func (h *PinnedHost) Deallocate(stream Stream, ptr, bytes, alignment uintptr) error {
	if ptr == 0 {
		return nil
	}
	if !freeAlignmentOK(alignment) {
		return errFreeAlignment(kindPinnedHost, ptr, alignment)
	}
	e, err := pinnedHostLive.take(kindPinnedHost, ptr, bytes, 0)
	if err != nil {
		return err
	}
	if err := h.rt.FreeHost(ptr); err != nil {
		pinnedHostLive.restore(ptr, e)
		return freeError(kindPinnedHost, ptr, err)
	}
	return nil
}

// AllocateSync is Allocate.
func (h *PinnedHost) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	return h.Allocate(DefaultStream, bytes, alignment)
}

// DeallocateSync is Deallocate.
func (h *PinnedHost) DeallocateSync(ptr, bytes, alignment uintptr) error {
	return h.Deallocate(DefaultStream, ptr, bytes, alignment)
}

// Properties reports DeviceAccessible and HostAccessible.
func (h *PinnedHost) Properties() Properties { return DeviceAccessible | HostAccessible }

// Equal reports whether other is a *PinnedHost: all are interchangeable.
func (h *PinnedHost) Equal(other Resource) bool {
	_, ok := other.(*PinnedHost)
	return ok
}

// Kind returns "pinned_host".
func (h *PinnedHost) Kind() string { return kindPinnedHost }
