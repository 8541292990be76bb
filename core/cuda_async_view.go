package core

import (
	"errors"
	"fmt"

	"github.com/rmmgo/rmmgo/cudart"
)

// CudaAsyncView allocates in stream order from a CUDA memory pool it does
// not own (cudaMallocFromPoolAsync, cudaFreeAsync), like RMM's
// cuda_async_view_memory_resource. The pool must outlive the view.
//
// The memory is device accessible (as the pool's allocation type makes it).
// Allocate and Deallocate are stream ordered on the given stream; the
// memory may be reused by other streams as the pool's reuse policy allows.
// Two views, or a view and a CudaAsync or CudaAsyncManaged resource, are
// equal when they use the same pool.
type CudaAsyncView struct {
	poolCore
}

// NewCudaAsyncView returns a view of pool for the current device. A zero
// pool, or a handle CUDA does not know as a memory pool (asked with
// cudaMemPoolGetAttribute when the view is made), is an error wrapping
// ErrInvalidArgument. As in CUDA, a handle that was never a pool may crash
// the driver rather than be reported; the check catches what CUDA reports.
func NewCudaAsyncView(pool cudart.MemPool) (*CudaAsyncView, error) {
	r, err := rt()
	if err != nil {
		return nil, err
	}
	return newCudaAsyncView(r, pool)
}

// newCudaAsyncView is NewCudaAsyncView on runtime r.
func newCudaAsyncView(r cudart.Runtime, pool cudart.MemPool) (*CudaAsyncView, error) {
	if pool == 0 {
		return nil, fmt.Errorf("%s: %w: the pool handle is null", kindCudaAsyncView, ErrInvalidArgument)
	}
	b, err := newBase(kindCudaAsyncView, r)
	if err != nil {
		return nil, err
	}
	if err := checkMemoryPools(kindCudaAsyncView, r, b.dev); err != nil {
		return nil, err
	}
	// Ask CUDA whether the handle is a pool now, rather than have every
	// allocation fail later.
	if _, err := r.MemPoolGetAttribute(pool, cudart.MemPoolAttrReleaseThreshold); err != nil {
		if errors.Is(err, cudart.ErrInvalidValue) || errors.Is(err, cudart.ErrInvalidResource) {
			return nil, fmt.Errorf("%s: %w: %#x is not a CUDA memory pool: %w", kindCudaAsyncView, ErrInvalidArgument, uintptr(pool), err)
		}
		return nil, cudaError(fmt.Sprintf("%s: querying memory pool %#x", kindCudaAsyncView, uintptr(pool)), err)
	}
	v := &CudaAsyncView{}
	if err := v.init(kindCudaAsyncView, b, pool, false); err != nil {
		return nil, err
	}
	return v, nil
}

// PoolHandle returns the pool the view allocates from.
func (v *CudaAsyncView) PoolHandle() cudart.MemPool { return v.asyncPool() }

// Allocate returns bytes from the pool, usable in stream order on stream.
func (v *CudaAsyncView) Allocate(stream Stream, bytes, alignment uintptr) (uintptr, error) {
	p, err := v.allocate(stream, bytes, alignment)
	if err != nil {
		return 0, explainOOM(v, stream, bytes, alignment, err)
	}
	return p, nil
}

// Deallocate gives ptr back to the pool in stream order on stream.
func (v *CudaAsyncView) Deallocate(stream Stream, ptr, bytes, alignment uintptr) error {
	if ptr != 0 && !freeAlignmentOK(alignment) {
		return errFreeAlignment(kindCudaAsyncView, ptr, alignment)
	}
	return v.deallocate(stream, ptr, bytes)
}

// AllocateSync allocates on the default stream and synchronizes it.
func (v *CudaAsyncView) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	p, err := v.allocateSync(bytes, alignment)
	if err != nil {
		return 0, explainOOM(v, DefaultStream, bytes, alignment, err)
	}
	return p, nil
}

// DeallocateSync deallocates on the default stream.
func (v *CudaAsyncView) DeallocateSync(ptr, bytes, alignment uintptr) error {
	return v.Deallocate(DefaultStream, ptr, bytes, alignment)
}

// Properties reports DeviceAccessible.
func (v *CudaAsyncView) Properties() Properties { return DeviceAccessible }

// Equal reports whether other allocates from the same pool.
func (v *CudaAsyncView) Equal(other Resource) bool { return samePool(v.asyncPool(), other) }

// Kind returns "cuda_async_view".
func (v *CudaAsyncView) Kind() string { return kindCudaAsyncView }

// asyncPooled is implemented by the resources that allocate from a CUDA
// memory pool; asyncPool returns 0 once the pool is gone.
type asyncPooled interface {
	asyncPool() cudart.MemPool
}

// samePool reports whether other allocates from pool (not 0).
func samePool(pool cudart.MemPool, other Resource) bool {
	o, ok := other.(asyncPooled)
	return ok && pool != 0 && o.asyncPool() == pool
}
