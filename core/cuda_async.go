package core

import (
	"errors"
	"fmt"
	"math"

	"github.com/rmmgo/rmmgo/cudart"
)

// CudaAsyncOptions configures NewCudaAsync.
type CudaAsyncOptions struct {
	// InitialPoolSize, when neither 0 nor SizeDefault, primes the pool: that
	// many bytes are allocated and freed on the default stream at creation,
	// so the pool starts with them reserved.
	InitialPoolSize uintptr
	// ReleaseThreshold is how many reserved bytes the pool keeps when it
	// synchronizes; it gives back what is above. 0 (or math.MaxUint64)
	// keeps everything, RMM's default since 26.06.
	ReleaseThreshold uint64
	// ExportHandleTypes are the handle types the pool's memory can be
	// exported as, for sharing with other processes (a bit set; 0: none).
	// A type the device cannot export is an error wrapping ErrNotSupported.
	ExportHandleTypes cudart.MemHandleType
}

// knownHandleTypes is every export handle type bit CUDA defines.
const knownHandleTypes = cudart.MemHandleTypePosixFileDescriptor | cudart.MemHandleTypeWin32 |
	cudart.MemHandleTypeWin32Kmt | cudart.MemHandleTypeFabric

// CudaAsync allocates in stream order (cudaMallocFromPoolAsync,
// cudaFreeAsync) from a CUDA memory pool that it creates on the current
// device and owns, like RMM's cuda_async_memory_resource.
//
// The memory is device accessible. Allocate and Deallocate are stream
// ordered on the given stream. The pool keeps freed memory for reuse up to
// the release threshold. Close destroys the pool, giving back the blocks
// still outstanding first; CudaAsync equals only itself and views of its
// pool.
type CudaAsync struct {
	poolCore
}

// NewCudaAsync creates a memory pool on the current device and returns a
// resource over it. It fails with an error wrapping ErrNotSupported when the
// device has no memory pools or cannot export a requested handle type.
func NewCudaAsync(opts CudaAsyncOptions) (*CudaAsync, error) {
	r, err := rt()
	if err != nil {
		return nil, err
	}
	return newCudaAsync(r, opts)
}

// newCudaAsync is NewCudaAsync on runtime r.
func newCudaAsync(r cudart.Runtime, opts CudaAsyncOptions) (*CudaAsync, error) {
	const kind = kindCudaAsync
	if opts.ExportHandleTypes&^knownHandleTypes != 0 {
		return nil, fmt.Errorf("%s: %w: unknown export handle type bits %#x", kind, ErrInvalidArgument, int32(opts.ExportHandleTypes&^knownHandleTypes))
	}
	if opts.InitialPoolSize != SizeDefault && opts.InitialPoolSize > maxAllocation {
		return nil, fmt.Errorf("%s: %w: initial pool size %d is larger than any device", kind, ErrOutOfMemory, opts.InitialPoolSize)
	}
	b, err := newBase(kind, r)
	if err != nil {
		return nil, err
	}
	if err := checkMemoryPools(kind, r, b.dev); err != nil {
		return nil, err
	}
	if opts.ExportHandleTypes != 0 {
		supported, err := deviceAttr(kind, r, cudart.DevAttrMemoryPoolSupportedHandleTypes, b.dev)
		if err != nil {
			return nil, err
		}
		if missing := opts.ExportHandleTypes &^ cudart.MemHandleType(supported); missing != 0 {
			return nil, fmt.Errorf("%s: %w: device %d cannot export pool memory as handle type %#x (cudaDevAttrMemoryPoolSupportedHandleTypes is %#x)",
				kind, ErrNotSupported, b.dev, int32(missing), supported)
		}
	}
	threshold := opts.ReleaseThreshold
	if threshold == 0 {
		threshold = math.MaxUint64
	}
	c := &CudaAsync{}
	props := cudart.MemPoolProps{
		AllocType:   cudart.MemAllocationTypePinned,
		HandleTypes: opts.ExportHandleTypes,
		Location:    cudart.DeviceLocation(b.dev),
	}
	if err := createPool(&c.poolCore, kind, b, props, threshold); err != nil {
		return nil, err
	}
	if size := opts.InitialPoolSize; size != 0 && size != SizeDefault {
		if err := c.prime(size); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// createPool makes an owned pool with props and release threshold on b's
// device, and c's state over it.
func createPool(c *poolCore, kind string, b base, props cudart.MemPoolProps, threshold uint64) error {
	pool, err := b.rt.MemPoolCreate(props)
	if errors.Is(err, cudart.ErrNotSupported) {
		return fmt.Errorf("%s: %w: creating a memory pool on device %d: %w", kind, ErrNotSupported, b.dev, err)
	}
	if err != nil {
		return cudaError(fmt.Sprintf("%s: creating a memory pool on device %d", kind, b.dev), err)
	}
	err = b.rt.MemPoolSetAttribute(pool, cudart.MemPoolAttrReleaseThreshold, threshold)
	if err != nil {
		err = cudaError(kind+": setting the pool's release threshold", err)
	} else {
		err = c.init(kind, b, pool, true)
	}
	if err != nil {
		if derr := b.rt.MemPoolDestroy(pool); derr != nil {
			return fmt.Errorf("%w (and destroying the pool failed: %v)", err, derr)
		}
		return err
	}
	return nil
}

// prime allocates and frees size bytes on the default stream, so the pool
// reserves them. On failure it destroys the pool.
func (c *CudaAsync) prime(size uintptr) error {
	pool := c.asyncPool()
	p, err := c.rt.MallocFromPoolAsync(size, pool, DefaultStream)
	if err == nil {
		err = c.rt.FreeAsync(p, DefaultStream)
	}
	if err != nil {
		err = cudaError(fmt.Sprintf("%s: priming the pool with %d bytes", c.kind, size), err)
		if cerr := c.close(); cerr != nil {
			return fmt.Errorf("%w (and destroying the pool failed: %v)", err, cerr)
		}
		return err
	}
	return nil
}

// checkMemoryPools fails with ErrNotSupported unless device dev supports
// memory pools.
func checkMemoryPools(kind string, r cudart.Runtime, dev int) error {
	v, err := deviceAttr(kind, r, cudart.DevAttrMemoryPoolsSupported, dev)
	if err != nil {
		return err
	}
	if v == 0 {
		return fmt.Errorf("%s: %w: device %d does not support memory pools (cudaDevAttrMemoryPoolsSupported is 0; stream-ordered allocation needs CUDA 11.2 or later on a supporting device and driver)",
			kind, ErrNotSupported, dev)
	}
	return nil
}

// PoolHandle returns the pool the resource owns, or 0 after Close.
func (c *CudaAsync) PoolHandle() cudart.MemPool { return c.asyncPool() }

// Allocate returns bytes from the pool, usable in stream order on stream.
// After Close it fails with an error wrapping ErrClosed.
func (c *CudaAsync) Allocate(stream Stream, bytes, alignment uintptr) (uintptr, error) {
	p, err := c.allocate(stream, bytes, alignment)
	if err != nil {
		return 0, explainOOM(c, stream, bytes, alignment, err)
	}
	return p, nil
}

// Deallocate gives ptr back to the pool in stream order on stream. After
// Close (which gave back every block still outstanding) it fails with an
// error wrapping ErrClosed.
func (c *CudaAsync) Deallocate(stream Stream, ptr, bytes, alignment uintptr) error {
	if ptr != 0 && !freeAlignmentOK(alignment) {
		return errFreeAlignment(kindCudaAsync, ptr, alignment)
	}
	return c.deallocate(stream, ptr, bytes)
}

// AllocateSync allocates on the default stream and synchronizes it.
func (c *CudaAsync) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	p, err := c.allocateSync(bytes, alignment)
	if err != nil {
		return 0, explainOOM(c, DefaultStream, bytes, alignment, err)
	}
	return p, nil
}

// DeallocateSync deallocates on the default stream.
func (c *CudaAsync) DeallocateSync(ptr, bytes, alignment uintptr) error {
	return c.Deallocate(DefaultStream, ptr, bytes, alignment)
}

// Properties reports DeviceAccessible.
func (c *CudaAsync) Properties() Properties { return DeviceAccessible }

// Equal reports whether other is c, or a resource allocating from c's pool.
func (c *CudaAsync) Equal(other Resource) bool {
	if o, ok := other.(*CudaAsync); ok && o == c {
		return true
	}
	return samePool(c.asyncPool(), other)
}

// Kind returns "cuda_async".
func (c *CudaAsync) Kind() string { return kindCudaAsync }

// Close waits for the calls in flight on c, synchronizes the device (queued
// work may still use the blocks, and queued frees must have run), gives
// back the blocks c handed out that are still outstanding, and destroys the
// pool. Calls racing Close
// finish, or fail with ErrClosed; later calls fail with ErrClosed. Blocks
// views of the pool handed out stay valid until the views free them (CUDA
// keeps a destroyed pool's memory until then). Closing again does nothing.
func (c *CudaAsync) Close() error { return c.close() }
