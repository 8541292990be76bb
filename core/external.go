package core

import (
	"fmt"
	"sync"

	"github.com/rmmgo/rmmgo/core/internal/addr"
)

// ExternalFuncs are the functions of a resource written outside rmmgo (a
// C++ class behind the C ABI's rmm_resource_create_external, a C
// allocator). Allocate and Deallocate are required; the others may be nil.
type ExternalFuncs struct {
	Allocate       func(s Stream, bytes, alignment uintptr) (uintptr, error)
	Deallocate     func(s Stream, ptr, bytes, alignment uintptr) error
	AllocateSync   func(bytes, alignment uintptr) (uintptr, error)
	DeallocateSync func(ptr, bytes, alignment uintptr) error
	// Release is called once, when the resource is closed.
	Release func()
}

// External is a resource whose functions are the caller's. Unlike Callback
// it passes the alignment, takes errors from the functions, lets its
// creator decide equality (EqualKey) and is told when it goes (Close).
// Zero-byte requests and zero-byte frees reach the functions, as RMM passes
// them to a resource (what a function returns for 0 bytes, NULL or not, is
// passed on); a NULL free of more than 0 bytes does not.
type External struct {
	fn    ExternalFuncs
	props Properties
	// Two External resources are equal when they are the same, or when
	// both have a non-nil EqualClass that is the same and Equal says so.
	equalClass any
	equal      func(other *External) bool
	// Self is what the creator identifies the resource by.
	Self      uintptr
	closeOnce sync.Once
}

// ExternalOnDevice is an External whose memory belongs to one device.
type ExternalOnDevice struct {
	*External
	device int
}

// Device is the device the memory belongs to.
func (e *ExternalOnDevice) Device() int { return e.device }

// Equal compares the inner External.
func (e *ExternalOnDevice) Equal(other Resource) bool { return e.External.Equal(other) }

// NewExternal makes an External resource. equalClass and equal may be nil
// (then it equals only itself). device < 0 means any device.
func NewExternal(fn ExternalFuncs, props Properties, self uintptr, equalClass any,
	equal func(other *External) bool, device int) (Resource, error) {
	if fn.Allocate == nil || fn.Deallocate == nil {
		return nil, fmt.Errorf("%s: %w: the allocate and deallocate functions must not be nil", kindExternal, ErrInvalidArgument)
	}
	if props&^(DeviceAccessible|HostAccessible) != 0 {
		return nil, fmt.Errorf("%s: %w: properties %#x has unknown bits", kindExternal, ErrInvalidArgument, uint32(props))
	}
	e := &External{fn: fn, props: props, Self: self, equalClass: equalClass, equal: equal}
	if device >= 0 {
		return &ExternalOnDevice{External: e, device: device}, nil
	}
	return e, nil
}

// AsExternal returns the External inside r, if r is one.
func AsExternal(r Resource) (*External, bool) {
	switch v := r.(type) {
	case *External:
		return v, true
	case *ExternalOnDevice:
		return v.External, true
	}
	return nil, false
}

// Properties reports what the creator declared.
func (e *External) Properties() Properties { return e.props }

// Kind returns "external".
func (e *External) Kind() string { return kindExternal }

// Equal reports whether other is this resource, or an External of the same
// equality class that the creator's function calls equal.
func (e *External) Equal(other Resource) bool {
	o, ok := AsExternal(other)
	if !ok {
		return false
	}
	if o == e {
		return true
	}
	if e.equalClass == nil || e.equal == nil || o.equalClass != e.equalClass {
		return false
	}
	return e.equal(o)
}

func (e *External) check(bytes, alignment uintptr) (bool, error) {
	if !addr.IsPow2(alignment) {
		return false, checkAlignment(kindExternal, alignment, 1<<56)
	}
	return true, nil
}

// Allocate calls the allocate function.
func (e *External) Allocate(s Stream, bytes, alignment uintptr) (uintptr, error) {
	if ok, err := e.check(bytes, alignment); !ok {
		return 0, err
	}
	p, err := e.fn.Allocate(s, bytes, alignment)
	p, err = e.checked(p, err, bytes)
	if err != nil {
		return 0, explainOOM(e, s, bytes, alignment, err)
	}
	return p, nil
}

// AllocateSync calls the allocate_sync function, or allocates on the
// default stream.
func (e *External) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	if ok, err := e.check(bytes, alignment); !ok {
		return 0, err
	}
	if e.fn.AllocateSync == nil {
		return e.Allocate(DefaultStream, bytes, alignment)
	}
	p, err := e.fn.AllocateSync(bytes, alignment)
	p, err = e.checked(p, err, bytes)
	if err != nil {
		return 0, explainOOM(e, DefaultStream, bytes, alignment, err)
	}
	return p, nil
}

func (e *External) checked(p uintptr, err error, bytes uintptr) (uintptr, error) {
	if err != nil {
		return 0, err
	}
	if p == 0 && bytes != 0 {
		return 0, fmt.Errorf("%s: %w: the allocate function returned no memory for %d bytes", kindExternal, ErrOutOfMemory, bytes)
	}
	// The address is the user's resource's to choose, as in RMM (whose
	// tests pass unaligned mock addresses through adaptors); sub-allocators
	// check the chunks they take (takeChunk).
	return p, nil
}

// Deallocate calls the deallocate function; a NULL free of more than 0
// bytes is a no-op (a zero-byte free reaches the function, NULL or not).
func (e *External) Deallocate(s Stream, ptr, bytes, alignment uintptr) error {
	if ptr == 0 {
		if bytes != 0 {
			return nil
		}
		return e.fn.Deallocate(s, ptr, bytes, alignment)
	}
	if err := lentHere(e.Kind(), e, ptr); err != nil {
		return err // a chunk a sub-allocator over this resource holds (lent_blocks.go)
	}
	return e.fn.Deallocate(s, ptr, bytes, alignment)
}

// DeallocateSync calls the deallocate_sync function, or deallocates on the
// default stream.
func (e *External) DeallocateSync(ptr, bytes, alignment uintptr) error {
	if ptr == 0 && bytes != 0 {
		return nil
	}
	if ptr != 0 {
		if err := lentHere(e.Kind(), e, ptr); err != nil {
			return err
		}
	}
	if e.fn.DeallocateSync == nil {
		return e.fn.Deallocate(DefaultStream, ptr, bytes, alignment)
	}
	return e.fn.DeallocateSync(ptr, bytes, alignment)
}

// Close calls the release function, once.
func (e *External) Close() error {
	e.closeOnce.Do(func() {
		if e.fn.Release != nil {
			e.fn.Release()
		}
	})
	return nil
}

// EqualClass is the equality class given to NewExternal (nil if none).
func (e *External) EqualClass() any { return e.equalClass }
