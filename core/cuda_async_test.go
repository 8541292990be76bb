package core

import (
	"errors"
	"fmt"
	"io"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
	"github.com/rmmgo/rmmgo/cudart/sim"
)

// newTestCudaAsync makes a CudaAsync on the process runtime, closed when the
// test ends; on a real GPU without memory pools it skips the test.
func newTestCudaAsync(t *testing.T, opts CudaAsyncOptions) *CudaAsync {
	t.Helper()
	c, err := NewCudaAsync(opts)
	if errors.Is(err, ErrNotSupported) && !isSimulated(t) {
		t.Skipf("cuda_async is not supported here: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	return c
}

func TestCudaAsyncReleaseThreshold(t *testing.T) {
	tests := []struct {
		name string
		opt  uint64
		want uint64
	}{
		{"default keeps everything", 0, math.MaxUint64},
		{"explicit", 64 << 20, 64 << 20},
		{"max", math.MaxUint64, math.MaxUint64},
	}
	r := testRuntime(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestCudaAsync(t, CudaAsyncOptions{ReleaseThreshold: tt.opt})
			got, err := r.MemPoolGetAttribute(c.PoolHandle(), cudart.MemPoolAttrReleaseThreshold)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestCudaAsyncInitialPoolSize(t *testing.T) {
	r := testRuntime(t)
	const size = 32 << 20
	c := newTestCudaAsync(t, CudaAsyncOptions{InitialPoolSize: size})
	require.NoError(t, r.StreamSynchronize(DefaultStream))
	reserved, err := r.MemPoolGetAttribute(c.PoolHandle(), cudart.MemPoolAttrReservedMemCurrent)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, reserved, uint64(size), "priming reserves the initial size")
	used, err := r.MemPoolGetAttribute(c.PoolHandle(), cudart.MemPoolAttrUsedMemCurrent)
	require.NoError(t, err)
	assert.Zero(t, used, "priming frees what it allocated")

	// SizeDefault and 0 do not prime.
	for _, n := range []uintptr{0, SizeDefault} {
		c := newTestCudaAsync(t, CudaAsyncOptions{InitialPoolSize: n})
		reserved, err := r.MemPoolGetAttribute(c.PoolHandle(), cudart.MemPoolAttrReservedMemCurrent)
		require.NoError(t, err)
		assert.Zero(t, reserved, "initial size %d", n)
	}
}

func TestCudaAsyncInitialPoolSizeTooLarge(t *testing.T) {
	r := testRuntime(t)
	_, total, err := r.MemGetInfo()
	require.NoError(t, err)
	for _, n := range []uintptr{uintptr(total) + 1<<20, maxAllocation + 1} {
		c, err := NewCudaAsync(CudaAsyncOptions{InitialPoolSize: n})
		if errors.Is(err, ErrNotSupported) && !isSimulated(t) {
			t.Skip(err)
		}
		requireIs(t, err, ErrOutOfMemory, "initial size ", n)
		assert.Nil(t, c)
	}
}

func TestCudaAsyncExportHandleTypes(t *testing.T) {
	r := testRuntime(t)
	dev, err := r.GetDevice()
	require.NoError(t, err)
	if pools, err := r.DeviceGetAttribute(cudart.DevAttrMemoryPoolsSupported, dev); err != nil || pools == 0 {
		t.Skip("no memory pools")
	}
	supported, err := r.DeviceGetAttribute(cudart.DevAttrMemoryPoolSupportedHandleTypes, dev)
	require.NoError(t, err)

	// Win32 handles are never exportable on Linux.
	_, err = NewCudaAsync(CudaAsyncOptions{ExportHandleTypes: cudart.MemHandleTypeWin32})
	requireIs(t, err, ErrNotSupported)
	assert.Contains(t, err.Error(), "cannot export")

	_, err = NewCudaAsync(CudaAsyncOptions{ExportHandleTypes: 0x10})
	requireIs(t, err, ErrInvalidArgument)

	fd := cudart.MemHandleTypePosixFileDescriptor
	c, err := NewCudaAsync(CudaAsyncOptions{ExportHandleTypes: fd})
	if cudart.MemHandleType(supported)&fd == 0 {
		requireIs(t, err, ErrNotSupported)
		return
	}
	require.NoError(t, err)
	defer func() { assert.NoError(t, c.Close()) }()
	p, err := c.AllocateSync(1<<20, DefaultAlignment)
	require.NoError(t, err)
	fillAndCheck(t, r, p, 1<<20, 0x21, DefaultStream)
	require.NoError(t, c.DeallocateSync(p, 1<<20, DefaultAlignment))
}

func TestCudaAsyncWithoutMemoryPools(t *testing.T) {
	sim := newSimRuntime(t, sim.Config{NoMemoryPools: true})
	c, err := newCudaAsync(sim, CudaAsyncOptions{})
	requireIs(t, err, ErrNotSupported)
	assert.Nil(t, c)
	assert.Contains(t, err.Error(), "cudaDevAttrMemoryPoolsSupported")
}

func TestCudaAsyncClose(t *testing.T) {
	r := testRuntime(t)
	c := newTestCudaAsync(t, CudaAsyncOptions{})
	pool := c.PoolHandle()
	require.NotZero(t, pool)
	view, err := NewCudaAsyncView(pool)
	require.NoError(t, err)
	assert.True(t, c.Equal(view))

	s := newStream(t, r)
	p, err := c.Allocate(s, 1<<20, DefaultAlignment)
	require.NoError(t, err)
	fillAndCheck(t, r, p, 1<<20, 0x99, s)

	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "Close is idempotent")
	assert.Zero(t, c.PoolHandle())

	_, err = c.Allocate(s, 1<<20, DefaultAlignment)
	requireIs(t, err, ErrClosed)
	_, err = c.AllocateSync(256, DefaultAlignment)
	requireIs(t, err, ErrClosed)
	q, err := c.Allocate(s, 0, DefaultAlignment)
	assert.NoError(t, err, "zero bytes need no pool")
	assert.Zero(t, q)

	// Close gave back the block still outstanding: freeing it again is
	// refused, and never reaches CUDA.
	requireIs(t, c.Deallocate(s, p, 1<<20, DefaultAlignment), ErrClosed)
	assert.False(t, asyncLive.has(p))
	require.NoError(t, r.StreamSynchronize(s))

	assert.True(t, c.Equal(c))
	assert.False(t, c.Equal(view), "a closed resource shares no pool")
}

func TestCudaAsyncStreamOrderedReuse(t *testing.T) {
	// Memory freed on one stream is reused by a later allocation on the
	// same stream, and the contents written before are replaced in order.
	r := testRuntime(t)
	c := newTestCudaAsync(t, CudaAsyncOptions{})
	s := newStream(t, r)
	for i := 0; i < 8; i++ {
		p, err := c.Allocate(s, 1<<20, DefaultAlignment)
		require.NoError(t, err)
		fillAndCheck(t, r, p, 1<<20, byte(i), s)
		require.NoError(t, c.Deallocate(s, p, 1<<20, DefaultAlignment))
	}
	require.NoError(t, r.StreamSynchronize(s))
	used, err := r.MemPoolGetAttribute(c.PoolHandle(), cudart.MemPoolAttrUsedMemCurrent)
	require.NoError(t, err)
	assert.Zero(t, used)
}

// TestCudaAsyncCloseNeverDefersTheDestroy: whatever was freed on which
// stream just before, and with blocks still outstanding, Close leaves the
// driver nothing to defer: the frees have run, and the host knows they ran,
// when the pool is destroyed. (A deferred destruction is legal CUDA, but an
// H100 crashed inside cudaMallocFromPoolAsync of a later pool after them,
// with threads allocating from each pool in turn; the simulated device
// counts them.)
func TestCudaAsyncCloseNeverDefersTheDestroy(t *testing.T) {
	r := newSimRuntime(t, sim.Config{Devices: 1, MemoryPerDevice: 1 << 30})
	s, err := r.StreamCreate(cudart.StreamFlagNonBlocking)
	require.NoError(t, err)
	defer func() { assert.NoError(t, r.StreamDestroy(s)) }()
	type closer interface {
		Resource
		io.Closer
	}
	makers := map[string]func() (closer, error){
		"cuda_async":         func() (closer, error) { return newCudaAsync(r, CudaAsyncOptions{}) },
		"cuda_async_managed": func() (closer, error) { return newCudaAsyncManaged(r) },
	}
	for name, mk := range makers {
		for _, keep := range []int{0, 2} {
			t.Run(fmt.Sprintf("%s/%d outstanding", name, keep), func(t *testing.T) {
				c, err := mk()
				require.NoError(t, err)
				before := r.DeferredPoolDestroys()
				var ptrs []uintptr
				for i := 0; i < 6; i++ {
					p, err := c.Allocate(DefaultStream, 4096, 256)
					require.NoError(t, err)
					ptrs = append(ptrs, p)
				}
				// Frees queued on the legacy default stream (idle: they run
				// at once, but no synchronization tells the host so) and on
				// a created stream held back, as a busy GPU would.
				require.NoError(t, r.PauseStream(s))
				for i, p := range ptrs[keep:] {
					stream := DefaultStream
					if i%2 == 1 {
						stream = Stream(s)
					}
					require.NoError(t, c.Deallocate(stream, p, 4096, 256))
				}
				done := make(chan error, 1)
				go func() { done <- c.Close() }()
				time.Sleep(5 * time.Millisecond) // Close waits for the paused stream
				require.NoError(t, r.ResumeStream(s))
				require.NoError(t, <-done)
				assert.Equal(t, before, r.DeferredPoolDestroys(), "the pool was destroyed with frees pending or blocks outstanding")
			})
		}
	}
}
