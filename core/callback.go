package core

import (
	"fmt"

	"github.com/rmmgo/rmmgo/core/internal/addr"
)

// AllocateFunc allocates bytes on stream s for a Callback resource. It
// returns the memory, or an error. Returning 0 with a nil error means "no
// memory": the Callback reports an error wrapping ErrOutOfMemory.
type AllocateFunc func(bytes uintptr, s Stream) (uintptr, error)

// DeallocateFunc gives back memory an AllocateFunc returned, with the same
// bytes, on stream s.
type DeallocateFunc func(ptr, bytes uintptr, s Stream) error

// Callback is RMM's callback_memory_resource: a resource whose allocation
// and deallocation are user functions. It has no upstream.
//
// Callback adds no locking: the functions are called concurrently when the
// resource is used concurrently, and must be safe for that (wrap the
// resource in NewThreadSafe otherwise). A panic in either function does not
// escape: it is recovered and returned as an error wrapping ErrBadAlloc.
// Zero-byte requests return 0 without calling the functions. The alignment
// argument is checked (a power of two, at most DefaultAlignment, since the
// functions are given no alignment) and the returned pointer must honour it
// (functions should return DefaultAlignment-aligned memory, as every
// resource does): a pointer that does not is given back and reported as
// ErrBadAlloc.
//
// Its memory is reported as device accessible, as in RMM.
type Callback struct {
	alloc   AllocateFunc
	dealloc DeallocateFunc
}

// NewCallback returns a resource that calls alloc and dealloc. Both must be
// non-nil (an error wrapping ErrInvalidArgument otherwise).
func NewCallback(alloc AllocateFunc, dealloc DeallocateFunc) (*Callback, error) {
	if alloc == nil || dealloc == nil {
		return nil, fmt.Errorf("%s: %w: the allocate and deallocate functions must not be nil", kindCallback, ErrInvalidArgument)
	}
	return &Callback{alloc: alloc, dealloc: dealloc}, nil
}

// Properties reports DeviceAccessible.
func (c *Callback) Properties() Properties { return DeviceAccessible }

// Kind returns "callback".
func (c *Callback) Kind() string { return kindCallback }

// Equal reports whether other is this very resource.
func (c *Callback) Equal(other Resource) bool {
	o, ok := other.(*Callback)
	return ok && o == c
}

// Allocate calls the allocate function.
func (c *Callback) Allocate(s Stream, bytes, alignment uintptr) (uintptr, error) {
	if bytes == 0 || !addr.IsPow2(alignment) || alignment > DefaultAlignment {
		if err := checkAlignment(kindCallback, alignment, DefaultAlignment); err != nil {
			return 0, err
		}
		return 0, nil
	}
	p, err := c.callAlloc(bytes, s)
	if err != nil {
		return 0, explainOOM(c, s, bytes, alignment, err)
	}
	if p == 0 {
		return 0, explainOOM(c, s, bytes, alignment, fmt.Errorf("%s: %w: the allocate function returned no memory for %d bytes", kindCallback, ErrOutOfMemory, bytes))
	}
	if !addr.IsAligned(p, alignment) {
		err := fmt.Errorf("%s: %w: the allocate function returned %#x, not aligned to %d bytes as asked (it was given back)",
			kindCallback, ErrBadAlloc, p, alignment)
		if derr := c.callDealloc(p, bytes, s); derr != nil {
			err = fmt.Errorf("%w; giving it back failed: %v", err, derr)
		}
		return 0, err
	}
	return p, nil
}

// AllocateSync calls the allocate function with the default stream.
func (c *Callback) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	return c.Allocate(DefaultStream, bytes, alignment)
}

// Deallocate calls the deallocate function; ptr 0 is a no-op. A pointer
// with size 0 is refused (no allocation of 0 bytes has one), and so is a
// chunk a sub-allocator over this resource holds (lent_blocks.go).
func (c *Callback) Deallocate(s Stream, ptr, bytes, alignment uintptr) error {
	if ptr == 0 {
		return nil
	}
	if bytes == 0 {
		return fmt.Errorf("%s: %w: deallocating %#x with size 0, but a zero-byte allocation returns NULL: free a block with the size it was allocated with", kindCallback, ErrInvalidArgument, ptr)
	}
	if !freeAlignmentOK(alignment) {
		return errFreeAlignment(kindCallback, ptr, alignment)
	}
	if err := lentHere(kindCallback, c, ptr); err != nil {
		return err
	}
	return c.callDealloc(ptr, bytes, s)
}

// DeallocateSync calls the deallocate function with the default stream.
func (c *Callback) DeallocateSync(ptr, bytes, alignment uintptr) error {
	return c.Deallocate(DefaultStream, ptr, bytes, alignment)
}

func (c *Callback) callAlloc(bytes uintptr, s Stream) (p uintptr, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = 0, fmt.Errorf("%s: %w: the allocate function panicked allocating %d bytes: %v", kindCallback, ErrBadAlloc, bytes, r)
		}
	}()
	p, err = c.alloc(bytes, s)
	if err != nil {
		return 0, fmt.Errorf("%s: allocating %d bytes: %w", kindCallback, bytes, err)
	}
	return p, nil
}

func (c *Callback) callDealloc(ptr, bytes uintptr, s Stream) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %w: the deallocate function panicked freeing %#x (%d bytes): %v", kindCallback, ErrBadAlloc, ptr, bytes, r)
		}
	}()
	if err := c.dealloc(ptr, bytes, s); err != nil {
		return fmt.Errorf("%s: deallocating %#x (%d bytes): %w", kindCallback, ptr, bytes, err)
	}
	return nil
}
