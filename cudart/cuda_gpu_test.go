//go:build cgo && unix

package cudart

import (
	"errors"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests run the real backend on a real GPU. They run only with
// RMMGO_BACKEND=cuda (as `make test` sets it where nvidia-smi sees a GPU),
// loading RMMGO_CUDART_LIBRARY or the usual libcudart.

func openRealCUDA(t *testing.T) *cudaRuntime {
	t.Helper()
	if os.Getenv(EnvBackend) != string(BackendCUDA) {
		t.Skipf("real-GPU test: set %s=cuda on a machine with a GPU to run it", EnvBackend)
	}
	rt, err := OpenCUDA(os.Getenv(EnvLibrary))
	require.NoError(t, err)
	c, ok := rt.(*cudaRuntime)
	require.True(t, ok)
	t.Logf("%v; prefetch via %s, advise via %s", c, c.prefetchFunc, c.adviseFunc)
	return c
}

// onDevice holds the goroutine on its OS thread with dev current.
func onDevice(t *testing.T, c *cudaRuntime, dev int) {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	require.NoError(t, c.SetDevice(dev))
}

// requireClean checks that rmmgo's failed calls left no CUDA last error on
// this thread.
func requireClean(t *testing.T, c *cudaRuntime) {
	t.Helper()
	require.Equal(t, Success, c.peekAtLastError(), "CUDA's last error on this thread")
}

func TestCUDAGPUDevices(t *testing.T) {
	c := openRealCUDA(t)
	v, err := c.RuntimeVersion()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, v, MinRuntimeVersion)
	d, err := c.DriverVersion()
	require.NoError(t, err)
	assert.Greater(t, d, 0)
	assert.Equal(t, "cudaErrorMemoryAllocation", c.ErrorName(ErrorMemoryAllocation))
	assert.Equal(t, "out of memory", c.ErrorString(ErrorMemoryAllocation))
	assert.Equal(t, "cudaErrorNotReady", c.ErrorName(ErrorNotReady))

	n, err := c.GetDeviceCount()
	require.NoError(t, err)
	require.Positive(t, n)
	onDevice(t, c, 0)
	for dev := 0; dev < n; dev++ {
		require.NoError(t, c.SetDevice(dev))
		got, err := c.GetDevice()
		require.NoError(t, err)
		assert.Equal(t, dev, got)
		major, err := c.DeviceGetAttribute(DevAttrComputeCapabilityMajor, dev)
		require.NoError(t, err)
		minor, err := c.DeviceGetAttribute(DevAttrComputeCapabilityMinor, dev)
		require.NoError(t, err)
		pools, err := c.DeviceGetAttribute(DevAttrMemoryPoolsSupported, dev)
		require.NoError(t, err)
		pageable, err := c.DeviceGetAttribute(DevAttrPageableMemoryAccess, dev)
		require.NoError(t, err)
		free, total, err := c.MemGetInfo()
		require.NoError(t, err)
		assert.Positive(t, total)
		assert.LessOrEqual(t, free, total)
		t.Logf("device %d: compute capability %d.%d, memory pools %d, pageable access %d, %d of %d bytes free",
			dev, major, minor, pools, pageable, free, total)
		require.NoError(t, c.DeviceSynchronize())
	}
	require.NoError(t, c.SetDevice(0))

	err = c.SetDevice(n)
	requireCUDAError(t, err, "cudaSetDevice", ErrInvalidDevice, "cudaErrorInvalidDevice", c.ErrorString(ErrorInvalidDevice))
	_, err = c.DeviceGetAttribute(DevAttrIntegrated, n)
	require.ErrorIs(t, err, ErrInvalidDevice)
	requireClean(t, c)
}

func TestCUDAGPUMemory(t *testing.T) {
	c := openRealCUDA(t)
	onDevice(t, c, 0)

	for _, size := range []int{1, 256, 1<<20 + 3, 64 << 20} {
		p, err := c.Malloc(uintptr(size))
		require.NoError(t, err)
		assert.Zero(t, p%256)
		require.NoError(t, c.Memset(p, 0x5a, uintptr(size)))
		buf, hp := hostBuffer(size)
		require.NoError(t, c.Memcpy(hp, p, uintptr(size), MemcpyDeviceToHost))
		for i, b := range buf {
			if b != 0x5a {
				t.Fatalf("size %d: byte %d is %#x after memset 0x5a", size, i, b)
			}
		}
		a, err := c.PointerGetAttributes(p)
		require.NoError(t, err)
		assert.Equal(t, MemoryTypeDevice, a.Type)
		assert.Equal(t, 0, a.Device)
		assert.Equal(t, p, a.DevicePointer)
		require.NoError(t, c.Free(p))
	}

	// Out of memory is an *Error that errors.Is tells apart, and leaves no
	// last error behind.
	_, err := c.Malloc(1 << 50)
	requireCUDAError(t, err, "cudaMalloc", ErrMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory")
	requireClean(t, c)

	// Freeing twice fails with an *Error for cudaFree.
	p, err := c.Malloc(4096)
	require.NoError(t, err)
	require.NoError(t, c.Free(p))
	err = c.Free(p)
	var e *Error
	require.True(t, errors.As(err, &e), "second cudaFree: %v", err)
	assert.Equal(t, "cudaFree", e.Func)
	t.Logf("freeing twice: %v", err)
	requireClean(t, c)

	// Pinned host memory.
	h, err := c.HostAlloc(8192, HostAllocPortable)
	require.NoError(t, err)
	a, err := c.PointerGetAttributes(h)
	require.NoError(t, err)
	assert.Equal(t, MemoryTypeHost, a.Type)
	src, sp := hostBuffer(8192)
	for i := range src {
		src[i] = byte(i)
	}
	dst, dp := hostBuffer(8192)
	require.NoError(t, c.Memcpy(h, sp, 8192, MemcpyHostToHost))
	require.NoError(t, c.Memcpy(dp, h, 8192, MemcpyDefault))
	assert.Equal(t, src, dst)
	require.NoError(t, c.FreeHost(h))

	// Managed memory and its hints.
	const n = 4 << 20
	m, err := c.MallocManaged(n, MemAttachGlobal)
	require.NoError(t, err)
	a, err = c.PointerGetAttributes(m)
	require.NoError(t, err)
	assert.Equal(t, MemoryTypeManaged, a.Type)
	s, err := c.StreamCreate(StreamFlagNonBlocking)
	require.NoError(t, err)
	// CUDA 13 wants a valid location even for the read-mostly hint.
	require.NoError(t, c.MemAdvise(m, n, MemAdviseSetReadMostly, DeviceLocation(0)))
	require.NoError(t, c.MemAdvise(m, n, MemAdviseUnsetReadMostly, DeviceLocation(0)))
	if cma, _ := c.DeviceGetAttribute(DevAttrConcurrentManagedAccess, 0); cma != 0 {
		require.NoError(t, c.MemAdvise(m, n, MemAdviseSetPreferredLocation, DeviceLocation(0)))
		require.NoError(t, c.MemAdvise(m, n, MemAdviseSetAccessedBy, DeviceLocation(0)))
		require.NoError(t, c.MemPrefetchAsync(m, n, DeviceLocation(0), s))
		require.NoError(t, c.MemsetAsync(m, 0x11, n, s))
		require.NoError(t, c.MemPrefetchAsync(m, n, HostLocation(), s))
		require.NoError(t, c.StreamSynchronize(s))
		buf, bp := hostBuffer(n)
		require.NoError(t, c.Memcpy(bp, m, n, MemcpyDefault))
		assert.Equal(t, byte(0x11), buf[0])
		assert.Equal(t, byte(0x11), buf[n-1])
		require.NoError(t, c.MemAdvise(m, n, MemAdviseUnsetPreferredLocation, DeviceLocation(0)))
	} else {
		t.Log("device 0 has no concurrent managed access: prefetch not tried")
	}
	require.NoError(t, c.Free(m))
	require.NoError(t, c.StreamDestroy(s))
	requireClean(t, c)
}

func TestCUDAGPUStreamsEventsPools(t *testing.T) {
	c := openRealCUDA(t)
	onDevice(t, c, 0)
	if ok, _ := c.DeviceGetAttribute(DevAttrMemoryPoolsSupported, 0); ok == 0 {
		t.Skip("device 0 has no memory pools")
	}

	s1, err := c.StreamCreate(StreamFlagNonBlocking)
	require.NoError(t, err)
	s2, err := c.StreamCreate(StreamFlagDefault)
	require.NoError(t, err)
	id1, err := c.StreamGetID(s1)
	require.NoError(t, err)
	id2, err := c.StreamGetID(s2)
	require.NoError(t, err)
	assert.NotEqual(t, id1, id2)
	e, err := c.EventCreate(EventFlagDisableTiming)
	require.NoError(t, err)

	props := MemPoolProps{AllocType: MemAllocationTypePinned, Location: DeviceLocation(0)}
	if types, _ := c.DeviceGetAttribute(DevAttrMemoryPoolSupportedHandleTypes, 0); types&int(MemHandleTypePosixFileDescriptor) != 0 {
		props.HandleTypes = MemHandleTypePosixFileDescriptor
	}
	pool, err := c.MemPoolCreate(props)
	require.NoError(t, err)
	require.NoError(t, c.MemPoolSetAttribute(pool, MemPoolAttrReleaseThreshold, 1<<40+4096))
	v, err := c.MemPoolGetAttribute(pool, MemPoolAttrReleaseThreshold)
	require.NoError(t, err)
	assert.Equal(t, uint64(1<<40+4096), v, "64-bit attribute round trip")
	for _, attr := range []MemPoolAttr{MemPoolReuseFollowEventDependencies, MemPoolReuseAllowOpportunistic, MemPoolReuseAllowInternalDependencies} {
		require.NoError(t, c.MemPoolSetAttribute(pool, attr, 0))
		v, err := c.MemPoolGetAttribute(pool, attr)
		require.NoError(t, err)
		assert.Zero(t, v, "attr %d", attr)
		require.NoError(t, c.MemPoolSetAttribute(pool, attr, 1))
		v, err = c.MemPoolGetAttribute(pool, attr)
		require.NoError(t, err)
		assert.Equal(t, uint64(1), v, "attr %d", attr)
	}

	// Two streams, ordered by an event: fill on s1, copy on s2 after it.
	const n = 1 << 20
	p1, err := c.MallocFromPoolAsync(n, pool, s1)
	require.NoError(t, err)
	p2, err := c.MallocFromPoolAsync(n, pool, s2)
	require.NoError(t, err)
	used, err := c.MemPoolGetAttribute(pool, MemPoolAttrUsedMemCurrent)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, used, uint64(2*n))
	require.NoError(t, c.MemsetAsync(p1, 0x3c, n, s1))
	require.NoError(t, c.EventRecord(e, s1))
	require.NoError(t, c.StreamWaitEvent(s2, e))
	require.NoError(t, c.MemcpyAsync(p2, p1, n, MemcpyDeviceToDevice, s2))
	buf, bp := hostBuffer(n)
	require.NoError(t, c.MemcpyAsync(bp, p2, n, MemcpyDeviceToHost, s2))
	if err := c.StreamQuery(s2); err != nil {
		require.ErrorIs(t, err, ErrNotReady)
	}
	require.NoError(t, c.StreamSynchronize(s2))
	require.NoError(t, c.StreamQuery(s2))
	require.NoError(t, c.EventSynchronize(e))
	require.NoError(t, c.EventQuery(e))
	assert.Equal(t, byte(0x3c), buf[0])
	assert.Equal(t, byte(0x3c), buf[n-1])
	require.NoError(t, c.FreeAsync(p1, s1))
	require.NoError(t, c.FreeAsync(p2, s2))
	require.NoError(t, c.StreamSynchronize(s1))
	require.NoError(t, c.StreamSynchronize(s2))
	before, err := c.MemPoolGetAttribute(pool, MemPoolAttrReservedMemCurrent)
	require.NoError(t, err)
	require.NoError(t, c.MemPoolTrimTo(pool, 0))
	after, err := c.MemPoolGetAttribute(pool, MemPoolAttrReservedMemCurrent)
	require.NoError(t, err)
	assert.LessOrEqual(t, after, before)
	t.Logf("pool reserved %d bytes before trimming to 0, %d after", before, after)
	require.NoError(t, c.MemPoolDestroy(pool))

	// A pool with a maximum size (the field exists from CUDA 12.2).
	if c.runtimeVersion >= 12020 {
		capped, err := c.MemPoolCreate(MemPoolProps{AllocType: MemAllocationTypePinned, Location: DeviceLocation(0), MaxSize: 64 << 20})
		require.NoError(t, err)
		p, err := c.MallocFromPoolAsync(32<<20, capped, s1)
		require.NoError(t, err)
		_, err = c.MallocFromPoolAsync(128<<20, capped, s1)
		require.ErrorIs(t, err, ErrMemoryAllocation, "the pool's maximum size holds")
		require.NoError(t, c.FreeAsync(p, s1))
		require.NoError(t, c.StreamSynchronize(s1))
		require.NoError(t, c.MemPoolDestroy(capped))
		requireClean(t, c)
	}

	// The default pool, through cudaMallocAsync.
	def, err := c.DeviceGetDefaultMemPool(0)
	require.NoError(t, err)
	require.NotZero(t, def)
	p, err := c.MallocAsync(n, s1)
	require.NoError(t, err)
	require.NoError(t, c.FreeAsync(p, s1))
	require.NoError(t, c.StreamSynchronize(s1))
	n0, _ := c.GetDeviceCount()
	_, err = c.DeviceGetDefaultMemPool(n0)
	require.ErrorIs(t, err, ErrInvalidDevice)

	require.NoError(t, c.EventDestroy(e))
	require.NoError(t, c.StreamDestroy(s1))
	require.NoError(t, c.StreamDestroy(s2))
	requireClean(t, c)
}

// TestCUDAGPUStreamIDFromDriver: stream ids come from the driver's
// cuStreamGetId (the runtime's call serializes every thread of the process)
// and equal the runtime's, for a created stream and the per-thread default
// stream, from a thread that has made no other CUDA call too.
func TestCUDAGPUStreamIDFromDriver(t *testing.T) {
	c := openRealCUDA(t)
	require.True(t, c.driverStreamID, "libcuda.so.1 has cuStreamGetId (CUDA 12.0+)")
	onDevice(t, c, 0)
	s, err := c.StreamCreate(StreamFlagNonBlocking)
	require.NoError(t, err)
	defer func() { require.NoError(t, c.StreamDestroy(s)) }()
	for _, st := range []Stream{s, PerThreadDefaultStream} {
		got, err := c.StreamGetID(st)
		require.NoError(t, err)
		want, err := c.streamIDRuntime(st)
		require.NoError(t, err)
		assert.Equal(t, want, got, "stream %#x", uintptr(st))
	}
	done := make(chan struct{})
	go func() { // a fresh OS thread
		defer close(done)
		runtime.LockOSThread()
		id, err := c.StreamGetID(s)
		assert.NoError(t, err)
		want, _ := c.streamIDRuntime(s)
		assert.Equal(t, want, id)
	}()
	<-done
	requireClean(t, c)
}
