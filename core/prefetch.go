package core

import (
	"errors"
	"fmt"
	"sync"

	"github.com/rmmgo/rmmgo/cudart"
)

// Prefetch is RMM's prefetch_resource_adaptor: after each allocation it asks
// CUDA to migrate the memory to the current device, in stream order on the
// allocating stream (cudaMemPrefetchAsync), so that the first kernel to
// touch managed memory does not fault it in page by page.
//
// Prefetching is a hint and costs nothing where it cannot apply:
//   - on a device without concurrent managed access (read once per device
//     from cudaDevAttrConcurrentManagedAccess and remembered), no call is
//     made at all;
//   - for memory that is not managed (device memory from a pool, pinned host
//     memory), CUDA answers cudaErrorInvalidValue, which Prefetch ignores,
//     as RMM does. This costs one failed call per allocation instead of a
//     cudaPointerGetAttributes call per allocation to ask first.
//
// Any other prefetch failure (a broken context, say) gives the memory back
// to the upstream and returns an error wrapping ErrCUDA: the allocation
// never leaks. Deallocation is passed through unchanged.
type Prefetch struct {
	upstream Resource
	rt       cudart.Runtime

	mu         sync.RWMutex
	concurrent map[int]bool // device -> concurrent managed access
}

// NewPrefetch returns an adaptor over upstream that prefetches every
// allocation to the current device.
func NewPrefetch(upstream Resource) (*Prefetch, error) {
	if err := checkUpstream(kindPrefetch, upstream); err != nil {
		return nil, err
	}
	r, err := rt()
	if err != nil {
		return nil, err
	}
	return newPrefetch(upstream, r), nil
}

func newPrefetch(upstream Resource, r cudart.Runtime) *Prefetch {
	return &Prefetch{upstream: upstream, rt: r, concurrent: make(map[int]bool)}
}

// Upstream returns the resource Prefetch allocates from.
func (p *Prefetch) Upstream() Resource { return p.upstream }

// Properties reports the upstream's properties.
func (p *Prefetch) Properties() Properties { return p.upstream.Properties() }

// Kind returns "prefetch".
func (p *Prefetch) Kind() string { return kindPrefetch }

// Equal reports whether other is this very adaptor.
func (p *Prefetch) Equal(other Resource) bool {
	o, ok := other.(*Prefetch)
	return ok && o == p
}

// Allocate allocates from the upstream and prefetches the memory to the
// current device on stream s.
func (p *Prefetch) Allocate(s Stream, bytes, alignment uintptr) (uintptr, error) {
	ptr, err := p.allocate(s, bytes, alignment, false)
	if err != nil {
		return 0, explainOOM(p, s, bytes, alignment, err)
	}
	return ptr, nil
}

// AllocateSync is Allocate without a stream; it prefetches on the default
// stream.
func (p *Prefetch) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	ptr, err := p.allocate(DefaultStream, bytes, alignment, true)
	if err != nil {
		return 0, explainOOM(p, DefaultStream, bytes, alignment, err)
	}
	return ptr, nil
}

func (p *Prefetch) allocate(s Stream, bytes, alignment uintptr, sync bool) (uintptr, error) {
	if bytes == 0 {
		return 0, zeroRequest(kindPrefetch, alignment)
	}
	ptr, err := upAllocate(p.upstream, s, bytes, alignment, sync)
	if err != nil {
		return 0, err
	}
	if err := p.prefetch(ptr, bytes, s); err != nil {
		if ferr := upDeallocate(p.upstream, s, ptr, bytes, alignment, sync); ferr != nil {
			return 0, fmt.Errorf("%w (and giving the memory back failed: %v)", err, ferr)
		}
		return 0, err
	}
	return ptr, nil
}

func (p *Prefetch) prefetch(ptr, bytes uintptr, s Stream) error {
	dev, err := p.rt.GetDevice()
	if err != nil {
		return cudaError(kindPrefetch, err)
	}
	ok, err := p.concurrentManaged(dev)
	if err != nil || !ok {
		return err
	}
	err = p.rt.MemPrefetchAsync(ptr, bytes, cudart.DeviceLocation(dev), s)
	if err == nil || errors.Is(err, cudart.ErrInvalidValue) {
		return nil
	}
	return cudaError(fmt.Sprintf("%s: prefetching %#x (%d bytes) to device %d", kindPrefetch, ptr, bytes, dev), err)
}

// concurrentManaged reports (and remembers) whether dev has concurrent
// managed access.
func (p *Prefetch) concurrentManaged(dev int) (bool, error) {
	p.mu.RLock()
	ok, known := p.concurrent[dev]
	p.mu.RUnlock()
	if known {
		return ok, nil
	}
	v, err := p.rt.DeviceGetAttribute(cudart.DevAttrConcurrentManagedAccess, dev)
	if err != nil {
		return false, cudaError(fmt.Sprintf("%s: reading device %d's concurrent managed access", kindPrefetch, dev), err)
	}
	p.mu.Lock()
	p.concurrent[dev] = v != 0
	p.mu.Unlock()
	return v != 0, nil
}

// Deallocate returns memory to the upstream.
func (p *Prefetch) Deallocate(s Stream, ptr, bytes, alignment uintptr) error {
	if ptr == 0 {
		return nil // a size 0 goes on: the upstream refuses it for a block
	}
	return p.upstream.Deallocate(s, ptr, bytes, alignment)
}

// DeallocateSync is Deallocate without a stream.
func (p *Prefetch) DeallocateSync(ptr, bytes, alignment uintptr) error {
	if ptr == 0 {
		return nil // a size 0 goes on: the upstream refuses it for a block
	}
	return p.upstream.DeallocateSync(ptr, bytes, alignment)
}

// HostDevice, as the device of PrefetchMemory, names host memory
// (cudaCpuDeviceId).
const HostDevice = -1

// PrefetchMemory asks CUDA to migrate bytes of managed memory at ptr to
// device dev (HostDevice: to host memory), in stream order on s, as
// rmm::prefetch does. Like the Prefetch adaptor it is a hint that succeeds
// without effect where it cannot apply: memory that is not managed
// (CUDA answers cudaErrorInvalidValue), or a device target without
// concurrent managed access. Errors: ErrInvalidArgument for a device that
// does not exist; anything else CUDA reports wraps ErrCUDA.
func PrefetchMemory(ptr, bytes uintptr, dev int, s Stream) error {
	r, err := rt()
	if err != nil {
		return err
	}
	return prefetchMemory(r, ptr, bytes, dev, s)
}

func prefetchMemory(r cudart.Runtime, ptr, bytes uintptr, dev int, s Stream) error {
	n, err := r.GetDeviceCount()
	if err != nil {
		return cudaError("prefetch: reading the device count", err)
	}
	if dev < HostDevice || dev >= n {
		return fmt.Errorf("prefetch: %w: device %d (this process sees %d; %d for host memory)", ErrInvalidArgument, dev, n, HostDevice)
	}
	if ptr == 0 || bytes == 0 {
		return nil
	}
	loc := cudart.HostLocation()
	if dev != HostDevice {
		v, err := r.DeviceGetAttribute(cudart.DevAttrConcurrentManagedAccess, dev)
		if err != nil {
			return cudaError(fmt.Sprintf("prefetch: reading device %d's concurrent managed access", dev), err)
		}
		if v == 0 {
			return nil
		}
		loc = cudart.DeviceLocation(dev)
	}
	err = r.MemPrefetchAsync(ptr, bytes, loc, s)
	if err == nil || errors.Is(err, cudart.ErrInvalidValue) {
		return nil
	}
	return cudaError(fmt.Sprintf("prefetch: prefetching %#x (%d bytes) to device %d", ptr, bytes, dev), err)
}
