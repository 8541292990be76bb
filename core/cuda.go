package core

import (
	"github.com/rmmgo/rmmgo/cudart"
)

// Cuda allocates device memory with cudaMalloc and frees it with cudaFree,
// like RMM's cuda_memory_resource. It is the initial per-device resource.
//
// The memory is device accessible. Allocate ignores the stream (cudaMalloc
// is not stream ordered); Deallocate calls cudaFree, which waits for the
// device. Cuda is stateless: every *Cuda equals every other, and frees
// what any other handed out. Deallocate frees only what a Cuda resource
// handed out, with the size it was asked for (see live_table.go): anything
// else, a block of a pool built over it in particular, is refused before
// cudaFree sees it.
type Cuda struct{ base }

// NewCuda returns a Cuda resource for the current device.
func NewCuda() (*Cuda, error) {
	r, err := rt()
	if err != nil {
		return nil, err
	}
	return newCuda(r)
}

// newCuda is NewCuda on runtime r.
func newCuda(r cudart.Runtime) (*Cuda, error) {
	b, err := newBase(kindCuda, r)
	if err != nil {
		return nil, err
	}
	return &Cuda{b}, nil
}

// newCudaFor returns a Cuda resource for device dev without touching the
// calling thread's current device (the per-device map makes these).
func newCudaFor(r cudart.Runtime, dev int) *Cuda {
	return &Cuda{base{rt: r, dev: dev}}
}

// Allocate returns bytes of device memory from cudaMalloc.
func (c *Cuda) Allocate(stream Stream, bytes, alignment uintptr) (uintptr, error) {
	if !requestOK(bytes, alignment) {
		return 0, rejectRequest(kindCuda, bytes, alignment)
	}
	if err := c.checkDevice(kindCuda); err != nil {
		return 0, err
	}
	p, err := c.rt.Malloc(bytes)
	if err != nil {
		return 0, explainOOM(c, stream, bytes, alignment, allocError(kindCuda, bytes, err))
	}
	cudaLive.add(p, bytes, 0)
	return p, nil
}

// Deallocate frees ptr with cudaFree. A pointer no Cuda resource handed out,
// or one already freed, gives an error wrapping ErrInvalidPointer; bytes
// other than were allocated, an error wrapping ErrInvalidArgument. Neither
// frees anything.
func (c *Cuda) Deallocate(stream Stream, ptr, bytes, alignment uintptr) error {
	return cudaFree(c.rt, kindCuda, &cudaLive, ptr, bytes, alignment)
}

// AllocateSync is Allocate: cudaMalloc memory is ready when it returns.
func (c *Cuda) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	return c.Allocate(DefaultStream, bytes, alignment)
}

// DeallocateSync is Deallocate.
func (c *Cuda) DeallocateSync(ptr, bytes, alignment uintptr) error {
	return c.Deallocate(DefaultStream, ptr, bytes, alignment)
}

// Properties reports DeviceAccessible.
func (c *Cuda) Properties() Properties { return DeviceAccessible }

// Equal reports whether other is a *Cuda: all are interchangeable.
func (c *Cuda) Equal(other Resource) bool {
	_, ok := other.(*Cuda)
	return ok
}

// Kind returns "cuda".
func (c *Cuda) Kind() string { return kindCuda }
