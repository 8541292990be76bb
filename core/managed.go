package core

import (
	"github.com/rmmgo/rmmgo/cudart"
)

// Managed allocates managed (unified) memory with cudaMallocManaged
// (cudaMemAttachGlobal) and frees it with cudaFree, like RMM's
// managed_memory_resource.
//
// The memory is device and host accessible. Allocate ignores the stream;
// Deallocate calls cudaFree, which waits for the device. Managed is
// stateless: every *Managed equals every other, and frees what any other
// handed out. Deallocate frees only what a Managed resource handed out,
// with the size it was asked for (see live_table.go).
type Managed struct{ base }

// NewManaged returns a Managed resource for the current device.
func NewManaged() (*Managed, error) {
	r, err := rt()
	if err != nil {
		return nil, err
	}
	return newManaged(r)
}

// newManaged is NewManaged on runtime r.
func newManaged(r cudart.Runtime) (*Managed, error) {
	b, err := newBase(kindManaged, r)
	if err != nil {
		return nil, err
	}
	return &Managed{b}, nil
}

// Allocate returns bytes of managed memory.
func (m *Managed) Allocate(stream Stream, bytes, alignment uintptr) (uintptr, error) {
	if !requestOK(bytes, alignment) {
		return 0, rejectRequest(kindManaged, bytes, alignment)
	}
	if err := m.checkDevice(kindManaged); err != nil {
		return 0, err
	}
	p, err := m.rt.MallocManaged(bytes, cudart.MemAttachGlobal)
	if err != nil {
		return 0, explainOOM(m, stream, bytes, alignment, allocError(kindManaged, bytes, err))
	}
	managedLive.add(p, bytes, 0)
	return p, nil
}

// Deallocate frees ptr with cudaFree. A pointer no Managed resource handed
// out, or one already freed, gives an error wrapping ErrInvalidPointer;
// bytes other than were allocated, an error wrapping ErrInvalidArgument.
// Neither frees anything.
func (m *Managed) Deallocate(stream Stream, ptr, bytes, alignment uintptr) error {
	return cudaFree(m.rt, kindManaged, &managedLive, ptr, bytes, alignment)
}

// AllocateSync is Allocate: the memory is ready when it returns.
func (m *Managed) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	return m.Allocate(DefaultStream, bytes, alignment)
}

// DeallocateSync is Deallocate.
func (m *Managed) DeallocateSync(ptr, bytes, alignment uintptr) error {
	return m.Deallocate(DefaultStream, ptr, bytes, alignment)
}

// Properties reports DeviceAccessible and HostAccessible.
func (m *Managed) Properties() Properties { return DeviceAccessible | HostAccessible }

// Equal reports whether other is a *Managed: all are interchangeable.
func (m *Managed) Equal(other Resource) bool {
	_, ok := other.(*Managed)
	return ok
}

// Kind returns "managed".
func (m *Managed) Kind() string { return kindManaged }
