package core

import (
	"errors"
	"fmt"
)

// FailureCallback is RMM's failure_callback_resource_adaptor: when its
// upstream runs out of memory, it calls a user function that may make room
// (free caches, trigger a collection) and decides whether to try again.
//
// An allocation that fails with an error wrapping ErrOutOfMemory calls the
// function with the requested bytes: true retries the allocation (as often
// as the function keeps answering true), false returns the upstream's
// error. Any other error is returned at once without calling the function.
// A panic in the function does not escape: it ends the retries and is
// returned as an error wrapping both ErrOutOfMemory and the panic's text.
//
// FailureCallback adds no locking: the function may be called by several
// goroutines at once and must be safe for that.
type FailureCallback struct {
	upstream Resource
	callback func(bytes uintptr, retry int) bool
}

// NewFailureCallback returns an adaptor over upstream that calls callback
// when an allocation runs out of memory. Both must be non-nil (an error
// wrapping ErrInvalidArgument otherwise).
func NewFailureCallback(upstream Resource, callback func(bytes uintptr) bool) (*FailureCallback, error) {
	if err := checkUpstream(kindFailureCallback, upstream); err != nil {
		return nil, err
	}
	if callback == nil {
		return nil, fmt.Errorf("%s: %w: the callback must not be nil", kindFailureCallback, ErrInvalidArgument)
	}
	return &FailureCallback{upstream: upstream, callback: func(bytes uintptr, _ int) bool { return callback(bytes) }}, nil
}

// NewFailureCallbackRetries is NewFailureCallback with a callback that is
// also told how many times this allocation was retried already (0 at its
// first failure), so that it can escalate (drop a cache, then spill, then
// give up).
func NewFailureCallbackRetries(upstream Resource, callback func(bytes uintptr, retry int) bool) (*FailureCallback, error) {
	if err := checkUpstream(kindFailureCallback, upstream); err != nil {
		return nil, err
	}
	if callback == nil {
		return nil, fmt.Errorf("%s: %w: the callback must not be nil", kindFailureCallback, ErrInvalidArgument)
	}
	return &FailureCallback{upstream: upstream, callback: callback}, nil
}

// Upstream returns the resource FailureCallback allocates from.
func (f *FailureCallback) Upstream() Resource { return f.upstream }

// Properties reports the upstream's properties.
func (f *FailureCallback) Properties() Properties { return f.upstream.Properties() }

// Kind returns "failure_callback".
func (f *FailureCallback) Kind() string { return kindFailureCallback }

// Equal reports whether other is this very adaptor.
func (f *FailureCallback) Equal(other Resource) bool {
	o, ok := other.(*FailureCallback)
	return ok && o == f
}

// Allocate allocates from the upstream, calling the callback and retrying
// while the upstream runs out of memory and the callback answers true.
func (f *FailureCallback) Allocate(s Stream, bytes, alignment uintptr) (uintptr, error) {
	p, err := f.allocate(s, bytes, alignment, false)
	if err != nil {
		return 0, explainOOM(f, s, bytes, alignment, err)
	}
	return p, nil
}

// AllocateSync is Allocate without a stream.
func (f *FailureCallback) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	p, err := f.allocate(DefaultStream, bytes, alignment, true)
	if err != nil {
		return 0, explainOOM(f, DefaultStream, bytes, alignment, err)
	}
	return p, nil
}

func (f *FailureCallback) allocate(s Stream, bytes, alignment uintptr, sync bool) (uintptr, error) {
	if bytes == 0 {
		return 0, zeroRequest(kindFailureCallback, alignment)
	}
	for retry := 0; ; retry++ {
		p, err := upAllocate(f.upstream, s, bytes, alignment, sync)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, ErrOutOfMemory) {
			return 0, err
		}
		again, perr := f.call(bytes, retry)
		if perr != nil {
			return 0, fmt.Errorf("%w (after: %w)", perr, err)
		}
		if !again {
			return 0, err
		}
	}
}

func (f *FailureCallback) call(bytes uintptr, n int) (retry bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			retry, err = false, fmt.Errorf("%s: the callback panicked for %d bytes: %v", kindFailureCallback, bytes, r)
		}
	}()
	return f.callback(bytes, n), nil
}

// Deallocate returns memory to the upstream.
func (f *FailureCallback) Deallocate(s Stream, ptr, bytes, alignment uintptr) error {
	if ptr == 0 {
		return nil // a size 0 goes on: the upstream refuses it for a block
	}
	return f.upstream.Deallocate(s, ptr, bytes, alignment)
}

// DeallocateSync is Deallocate without a stream.
func (f *FailureCallback) DeallocateSync(ptr, bytes, alignment uintptr) error {
	if ptr == 0 {
		return nil // a size 0 goes on: the upstream refuses it for a block
	}
	return f.upstream.DeallocateSync(ptr, bytes, alignment)
}
