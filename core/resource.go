package core

import (
	"github.com/rmmgo/rmmgo/cudart"
)

// Stream is a CUDA stream (cudaStream_t). DefaultStream (0) is the default
// stream.
type Stream = cudart.Stream

// DefaultStream is CUDA's default stream.
const DefaultStream Stream = cudart.DefaultStream

// DefaultAlignment is the alignment every resource guarantees and the one
// callers pass when they have no other need: 256 bytes, as cudaMalloc.
const DefaultAlignment uintptr = 256

// Properties is a set of accessibility properties.
type Properties uint32

const (
	// DeviceAccessible: kernels on the device can read and write the memory.
	DeviceAccessible Properties = 1 << iota
	// HostAccessible: host code can read and write the memory.
	HostAccessible
)

// Has reports whether every property in q is in p.
func (p Properties) Has(q Properties) bool { return p&q == q }

func (p Properties) String() string {
	switch p {
	case 0:
		return "none"
	case DeviceAccessible:
		return "device_accessible"
	case HostAccessible:
		return "host_accessible"
	case DeviceAccessible | HostAccessible:
		return "device_accessible|host_accessible"
	}
	return "unknown"
}

// Resource is a memory resource, shaped like CCCL's resource concepts.
//
// Allocate returns memory usable in stream order on stream: it may still be
// in use by earlier work on that stream and becomes free for others only as
// the stream progresses. Deallocate returns memory in stream order: work
// enqueued on stream before the call may still use it. bytes and alignment
// passed to Deallocate must be those passed to Allocate.
//
// Every resource:
//   - returns pointers aligned to at least alignment and at least
//     DefaultAlignment; an alignment that is not a power of two is an error
//     wrapping ErrBadAlignment;
//   - returns 0 and no error for a zero-byte request, without calling its
//     upstream, and treats Deallocate of 0 as a no-op;
//   - reports exhaustion with an error wrapping ErrOutOfMemory;
//   - is safe for concurrent use by many goroutines unless its documentation
//     says otherwise.
//
// AllocateSync and DeallocateSync are the same operations when the caller
// has no stream: the memory is ready for any use when AllocateSync returns.
type Resource interface {
	Allocate(stream Stream, bytes, alignment uintptr) (uintptr, error)
	Deallocate(stream Stream, ptr, bytes, alignment uintptr) error
	AllocateSync(bytes, alignment uintptr) (uintptr, error)
	DeallocateSync(ptr, bytes, alignment uintptr) error

	// Properties reports where the memory can be used.
	Properties() Properties
	// Equal reports whether memory allocated by one can be deallocated by
	// the other. Stateless resources equal every instance of their type;
	// stateful ones equal only themselves (and what shares their state).
	Equal(other Resource) bool
	// Kind is the resource's kind name as the C ABI spells it, e.g.
	// "cuda", "pool", "statistics".
	Kind() string
}

// Adaptor is a resource built over another one.
type Adaptor interface {
	Resource
	Upstream() Resource
}
