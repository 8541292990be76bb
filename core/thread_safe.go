package core

import "sync"

// ThreadSafe is RMM's thread_safe_resource_adaptor: it holds one mutex
// around every call to its upstream, so that a resource that is not safe
// for concurrent use (a Callback over non-reentrant functions, a Binning
// while bins are added) can be shared. Zero-byte requests and deallocations
// of 0 return at once, without the lock.
type ThreadSafe struct {
	upstream Resource
	mu       sync.Mutex
}

// NewThreadSafe returns an adaptor that serializes every call to upstream.
func NewThreadSafe(upstream Resource) (*ThreadSafe, error) {
	if err := checkUpstream(kindThreadSafe, upstream); err != nil {
		return nil, err
	}
	return &ThreadSafe{upstream: upstream}, nil
}

// Upstream returns the resource ThreadSafe serializes.
func (t *ThreadSafe) Upstream() Resource { return t.upstream }

// Properties reports the upstream's properties.
func (t *ThreadSafe) Properties() Properties { return t.upstream.Properties() }

// Kind returns "thread_safe".
func (t *ThreadSafe) Kind() string { return kindThreadSafe }

// Equal reports whether other is this very adaptor.
func (t *ThreadSafe) Equal(other Resource) bool {
	o, ok := other.(*ThreadSafe)
	return ok && o == t
}

// Allocate allocates from the upstream under the lock.
func (t *ThreadSafe) Allocate(s Stream, bytes, alignment uintptr) (uintptr, error) {
	if bytes == 0 {
		return 0, zeroRequest(kindThreadSafe, alignment)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p, err := t.upstream.Allocate(s, bytes, alignment)
	if err != nil {
		return 0, explainOOM(t, s, bytes, alignment, err)
	}
	return p, nil
}

// AllocateSync allocates from the upstream under the lock.
func (t *ThreadSafe) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	if bytes == 0 {
		return 0, zeroRequest(kindThreadSafe, alignment)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p, err := t.upstream.AllocateSync(bytes, alignment)
	if err != nil {
		return 0, explainOOM(t, DefaultStream, bytes, alignment, err)
	}
	return p, nil
}

// Deallocate returns memory to the upstream under the lock.
func (t *ThreadSafe) Deallocate(s Stream, ptr, bytes, alignment uintptr) error {
	if ptr == 0 {
		return nil // a size 0 goes on: the upstream refuses it for a block
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.upstream.Deallocate(s, ptr, bytes, alignment)
}

// DeallocateSync returns memory to the upstream under the lock.
func (t *ThreadSafe) DeallocateSync(ptr, bytes, alignment uintptr) error {
	if ptr == 0 {
		return nil // a size 0 goes on: the upstream refuses it for a block
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.upstream.DeallocateSync(ptr, bytes, alignment)
}
