package core

import (
	"fmt"
	"math"

	"github.com/rmmgo/rmmgo/cudart"
)

// CudaAsyncManaged allocates managed memory in stream order
// (cudaMallocFromPoolAsync, cudaFreeAsync) from a managed memory pool, like
// RMM's cuda_async_managed_memory_resource. It needs CUDA 13.0 or later
// (runtime and driver) and a device with concurrent managed access.
//
// RMM allocates from the device's default managed pool. CudaAsyncManaged
// instead creates a pool of its own (cudaMemAllocationTypeManaged, located
// at the current device, release threshold "keep everything" like
// CudaAsync) and destroys it on Close: its memory, and its release
// threshold, then never affect other users of the default pool, and it is
// released exactly when the resource is. Its PoolHandle can be shared
// through CudaAsyncView.
//
// The memory is device and host accessible. CudaAsyncManaged equals only
// itself and views of its pool.
type CudaAsyncManaged struct {
	poolCore
}

// NewCudaAsyncManaged creates a managed memory pool on the current device
// and returns a resource over it. It fails with an error wrapping
// ErrNotSupported before CUDA 13.0 or without concurrent managed access.
func NewCudaAsyncManaged() (*CudaAsyncManaged, error) {
	r, err := rt()
	if err != nil {
		return nil, err
	}
	return newCudaAsyncManaged(r)
}

// newCudaAsyncManaged is NewCudaAsyncManaged on runtime r.
func newCudaAsyncManaged(r cudart.Runtime) (*CudaAsyncManaged, error) {
	const kind = kindCudaAsyncManaged
	const minVersion = 13000
	rtv, err := r.RuntimeVersion()
	if err != nil {
		return nil, cudaError(kind+": reading the runtime version", err)
	}
	drv, err := r.DriverVersion()
	if err != nil {
		return nil, cudaError(kind+": reading the driver version", err)
	}
	if rtv < minVersion || drv < minVersion {
		return nil, fmt.Errorf("%s: %w: managed memory pools need CUDA runtime and driver 13.0 or later (runtime %s, driver %s)",
			kind, ErrNotSupported, cudaVersion(rtv), cudaVersion(drv))
	}
	b, err := newBase(kind, r)
	if err != nil {
		return nil, err
	}
	cma, err := deviceAttr(kind, r, cudart.DevAttrConcurrentManagedAccess, b.dev)
	if err != nil {
		return nil, err
	}
	if cma == 0 {
		return nil, fmt.Errorf("%s: %w: device %d lacks concurrent managed access (cudaDevAttrConcurrentManagedAccess is 0)",
			kind, ErrNotSupported, b.dev)
	}
	if err := checkMemoryPools(kind, r, b.dev); err != nil {
		return nil, err
	}
	m := &CudaAsyncManaged{}
	props := cudart.MemPoolProps{
		AllocType: cudart.MemAllocationTypeManaged,
		Location:  cudart.DeviceLocation(b.dev),
	}
	if err := createPool(&m.poolCore, kind, b, props, math.MaxUint64); err != nil {
		return nil, err
	}
	return m, nil
}

// cudaVersion formats a CUDA version number such as 12040 as "12.4".
func cudaVersion(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

// PoolHandle returns the pool the resource owns, or 0 after Close.
func (m *CudaAsyncManaged) PoolHandle() cudart.MemPool { return m.asyncPool() }

// Allocate returns bytes of managed memory from the pool, usable in stream
// order on stream. After Close it fails with an error wrapping ErrClosed.
func (m *CudaAsyncManaged) Allocate(stream Stream, bytes, alignment uintptr) (uintptr, error) {
	p, err := m.allocate(stream, bytes, alignment)
	if err != nil {
		return 0, explainOOM(m, stream, bytes, alignment, err)
	}
	return p, nil
}

// Deallocate gives ptr back to the pool in stream order on stream. After
// Close (which gave back every block still outstanding) it fails with an
// error wrapping ErrClosed.
func (m *CudaAsyncManaged) Deallocate(stream Stream, ptr, bytes, alignment uintptr) error {
	if ptr != 0 && !freeAlignmentOK(alignment) {
		return errFreeAlignment(kindCudaAsyncManaged, ptr, alignment)
	}
	return m.deallocate(stream, ptr, bytes)
}

// AllocateSync allocates on the default stream and synchronizes it.
func (m *CudaAsyncManaged) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	p, err := m.allocateSync(bytes, alignment)
	if err != nil {
		return 0, explainOOM(m, DefaultStream, bytes, alignment, err)
	}
	return p, nil
}

// DeallocateSync deallocates on the default stream.
func (m *CudaAsyncManaged) DeallocateSync(ptr, bytes, alignment uintptr) error {
	return m.Deallocate(DefaultStream, ptr, bytes, alignment)
}

// Properties reports DeviceAccessible and HostAccessible.
func (m *CudaAsyncManaged) Properties() Properties { return DeviceAccessible | HostAccessible }

// Equal reports whether other is m, or a resource allocating from m's pool.
func (m *CudaAsyncManaged) Equal(other Resource) bool {
	if o, ok := other.(*CudaAsyncManaged); ok && o == m {
		return true
	}
	return samePool(m.asyncPool(), other)
}

// Kind returns "cuda_async_managed".
func (m *CudaAsyncManaged) Kind() string { return kindCudaAsyncManaged }

// Close waits for the calls in flight, gives back the blocks still
// outstanding and destroys the pool, as CudaAsync's Close does. It is
// idempotent; calls racing it finish or fail with ErrClosed.
func (m *CudaAsyncManaged) Close() error { return m.close() }
