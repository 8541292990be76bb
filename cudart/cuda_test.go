//go:build cgo && unix

package cudart

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests run the real backend against fake libcudart builds (see
// cuda_fake_test.go), so they run anywhere with a C compiler. The same
// backend against the real runtime is tested in cuda_gpu_test.go.

// requireCUDAError checks that err is an *Error for fn with the runtime's
// own name and description for want.
func requireCUDAError(t *testing.T, err error, fn string, want *Error, name, desc string) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, want)
	var e *Error
	require.True(t, errors.As(err, &e), "want *Error, got %T: %v", err, err)
	assert.Equal(t, fn, e.Func)
	assert.Equal(t, name, e.Name)
	assert.Equal(t, desc, e.Desc)
	assert.Equal(t, fmt.Sprintf("%s: %s (%s)", fn, name, desc), e.Error())
}

func TestCUDAFakeOpens(t *testing.T) {
	t.Parallel()
	c, lib := openFake(t)
	assert.Equal(t, BackendCUDA, c.Backend())
	v, err := c.RuntimeVersion()
	require.NoError(t, err)
	assert.Equal(t, 13000, v)
	d, err := c.DriverVersion()
	require.NoError(t, err)
	assert.Equal(t, 13000, d)
	assert.Equal(t, lib.path, c.LibraryPath())
	assert.Equal(t, "CUDA runtime 13.0 (driver 13.0, 2 devices) from "+lib.path, c.String())
	n, err := c.GetDeviceCount()
	require.NoError(t, err)
	assert.Equal(t, 2, n)
}

func TestCUDAFakeErrorTranslation(t *testing.T) {
	t.Parallel()
	c, lib := openFake(t)

	assert.Equal(t, "cudaErrorMemoryAllocation", c.ErrorName(ErrorMemoryAllocation))
	assert.Equal(t, "fake: out of memory", c.ErrorString(ErrorMemoryAllocation))
	// A code the runtime cannot name keeps its number in the name.
	assert.Equal(t, "cudaError(9999)", c.ErrorName(9999))
	assert.Equal(t, "fake: unrecognized error code", c.ErrorString(9999))

	// Out of memory: the code, CUDA's name and description, the function;
	// and the thread's last-error state is cleared for the caller's sake.
	var err error
	calls := lib.calls(t, func() { _, err = c.Malloc(2 << 30) })
	requireCUDAError(t, err, "cudaMalloc", ErrMemoryAllocation, "cudaErrorMemoryAllocation", "fake: out of memory")
	assert.Equal(t, []string{"cudaGetLastError -> 2"}, calls)
	assert.Equal(t, Success, c.peekAtLastError())
	assert.NotErrorIs(t, err, ErrInvalidValue)

	// Invalid device, before and after the C call.
	requireCUDAError(t, c.SetDevice(7), "cudaSetDevice", ErrInvalidDevice, "cudaErrorInvalidDevice", "fake: invalid device ordinal")
	requireCUDAError(t, c.SetDevice(1<<40), "cudaSetDevice", ErrInvalidDevice, "cudaErrorInvalidDevice", "fake: invalid device ordinal")
	_, err = c.DeviceGetAttribute(DevAttrIntegrated, -1<<40)
	requireCUDAError(t, err, "cudaDeviceGetAttribute", ErrInvalidDevice, "cudaErrorInvalidDevice", "fake: invalid device ordinal")
}

func TestCUDAFakeDevices(t *testing.T) {
	t.Parallel()
	c, lib := openFake(t)

	v, err := c.DeviceGetAttribute(DevAttrPageableMemoryAccess, 1)
	require.NoError(t, err)
	assert.Equal(t, 88*1000+1, v, "attribute and device reach the runtime")
	v, err = c.DeviceGetAttribute(DevAttrMemoryPoolsSupported, 0)
	require.NoError(t, err)
	assert.Equal(t, 115*1000, v)

	// The current device belongs to the OS thread, as in CUDA.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	require.NoError(t, c.SetDevice(1))
	dev, err := c.GetDevice()
	require.NoError(t, err)
	assert.Equal(t, 1, dev)
	other := make(chan int)
	go func() {
		runtime.LockOSThread() // a fresh thread: this goroutine's thread is dropped at exit
		d, _ := c.GetDevice()
		other <- d
	}()
	assert.Equal(t, 0, <-other, "another thread keeps its own current device")
	dev, err = c.GetDevice()
	require.NoError(t, err)
	assert.Equal(t, 1, dev)

	calls := lib.calls(t, func() { require.NoError(t, c.DeviceSynchronize()) })
	assert.Equal(t, []string{"cudaDeviceSynchronize dev=1"}, calls)
	require.NoError(t, c.SetDevice(0))
}

// hostBuffers keeps test buffers on the heap, where Go never moves them, so
// that their addresses can be handed to the C side.
var hostBuffers [][]byte

func hostBuffer(n int) ([]byte, uintptr) {
	b := make([]byte, n)
	hostBuffers = append(hostBuffers, b)
	return b, uintptr(unsafe.Pointer(&b[0]))
}

func TestCUDAFakeMemory(t *testing.T) {
	t.Parallel()
	c, lib := openFake(t)

	free0, total, err := c.MemGetInfo()
	require.NoError(t, err)
	assert.Equal(t, uint64(1<<30), total)

	p, err := c.Malloc(1000)
	require.NoError(t, err)
	require.NotZero(t, p)
	assert.Zero(t, p%256)
	free1, _, err := c.MemGetInfo()
	require.NoError(t, err)
	assert.Equal(t, free0-1000, free1)

	// Fill, copy back, check.
	calls := lib.calls(t, func() { require.NoError(t, c.Memset(p, 0x1ab, 1000)) })
	assert.Equal(t, []string{"cudaMemset value=427 n=1000"}, calls)
	buf, hp := hostBuffer(1000)
	calls = lib.calls(t, func() { require.NoError(t, c.Memcpy(hp, p, 1000, MemcpyDeviceToHost)) })
	assert.Equal(t, []string{"cudaMemcpy n=1000 kind=2"}, calls)
	for i, b := range buf {
		require.Equal(t, byte(0xab), b, "byte %d", i)
	}
	s, err := c.StreamCreate(StreamFlagNonBlocking)
	require.NoError(t, err)
	calls = lib.calls(t, func() {
		require.NoError(t, c.MemsetAsync(p, 7, 10, s))
		require.NoError(t, c.MemcpyAsync(hp, p, 10, MemcpyDefault, s))
	})
	assert.Equal(t, []string{
		fmt.Sprintf("cudaMemsetAsync value=7 n=10 stream=%#x", uintptr(s)),
		fmt.Sprintf("cudaMemcpyAsync n=10 kind=4 stream=%#x", uintptr(s)),
	}, calls)
	assert.Equal(t, byte(7), buf[9])
	assert.Equal(t, byte(0xab), buf[10])
	err = c.Memcpy(0, p, 10, MemcpyDeviceToHost)
	requireCUDAError(t, err, "cudaMemcpy", ErrInvalidValue, "cudaErrorInvalidValue", "fake: invalid argument")

	a, err := c.PointerGetAttributes(p + 10)
	require.NoError(t, err)
	assert.Equal(t, PointerAttributes{Type: MemoryTypeDevice, Device: 0, DevicePointer: p + 10}, a)

	require.NoError(t, c.Free(p))
	err = c.Free(p)
	requireCUDAError(t, err, "cudaFree", ErrInvalidValue, "cudaErrorInvalidValue", "fake: invalid argument")
	require.NoError(t, c.Free(0))
	free2, _, err := c.MemGetInfo()
	require.NoError(t, err)
	assert.Equal(t, free0, free2)

	// Managed and pinned host memory, with their flags.
	var m, h uintptr
	calls = lib.calls(t, func() {
		m, err = c.MallocManaged(4096, MemAttachHost)
		require.NoError(t, err)
		h, err = c.HostAlloc(512, HostAllocPortable|HostAllocMapped)
		require.NoError(t, err)
	})
	assert.Equal(t, []string{"cudaMallocManaged size=4096 flags=2", "cudaHostAlloc size=512 flags=3"}, calls)
	a, err = c.PointerGetAttributes(m)
	require.NoError(t, err)
	assert.Equal(t, PointerAttributes{Type: MemoryTypeManaged, Device: 0, DevicePointer: m, HostPointer: m}, a)
	a, err = c.PointerGetAttributes(h)
	require.NoError(t, err)
	assert.Equal(t, PointerAttributes{Type: MemoryTypeHost, Device: CPUDeviceID, DevicePointer: h, HostPointer: h}, a)
	a, err = c.PointerGetAttributes(hp)
	require.NoError(t, err)
	assert.Equal(t, PointerAttributes{Type: MemoryTypeUnregistered, Device: InvalidDeviceID}, a)
	_, err = c.PointerGetAttributes(0)
	requireCUDAError(t, err, "cudaPointerGetAttributes", ErrInvalidValue, "cudaErrorInvalidValue", "fake: invalid argument")

	err = c.FreeHost(m)
	requireCUDAError(t, err, "cudaFreeHost", ErrInvalidValue, "cudaErrorInvalidValue", "fake: invalid argument")
	require.NoError(t, c.FreeHost(h))
	require.NoError(t, c.Free(m))
	require.NoError(t, c.StreamDestroy(s))
	assert.Equal(t, Success, c.peekAtLastError(), "failed calls leave no last error behind")
}

func TestCUDAFakePools(t *testing.T) {
	t.Parallel()
	c, lib := openFake(t)

	// The props struct: the fields we set where CUDA reads them, the rest zero.
	var pool MemPool
	var err error
	calls := lib.calls(t, func() {
		pool, err = c.MemPoolCreate(MemPoolProps{
			AllocType:   MemAllocationTypePinned,
			HandleTypes: MemHandleTypePosixFileDescriptor,
			Location:    DeviceLocation(1),
			MaxSize:     1 << 33,
		})
	})
	require.NoError(t, err)
	require.NotZero(t, pool)
	assert.Equal(t, []string{"cudaMemPoolCreate allocType=1 handleTypes=1 location=1:1 maxSize=8589934592 zeroed=1"}, calls)
	_, err = c.MemPoolCreate(MemPoolProps{Location: DeviceLocation(0)})
	requireCUDAError(t, err, "cudaMemPoolCreate", ErrInvalidValue, "cudaErrorInvalidValue", "fake: invalid argument")

	// 64-bit attributes round-trip as 64-bit values ...
	const threshold = 1<<40 + 5
	calls = lib.calls(t, func() { require.NoError(t, c.MemPoolSetAttribute(pool, MemPoolAttrReleaseThreshold, threshold)) })
	assert.Equal(t, []string{"cudaMemPoolSetAttribute attr=4 u64=1099511627781"}, calls)
	v, err := c.MemPoolGetAttribute(pool, MemPoolAttrReleaseThreshold)
	require.NoError(t, err)
	assert.Equal(t, uint64(threshold), v)
	// ... and the reuse flags travel as CUDA's int.
	for _, attr := range []MemPoolAttr{MemPoolReuseFollowEventDependencies, MemPoolReuseAllowOpportunistic, MemPoolReuseAllowInternalDependencies} {
		v, err := c.MemPoolGetAttribute(pool, attr)
		require.NoError(t, err)
		assert.Equal(t, uint64(1), v, "attr %d defaults to enabled", attr)
		calls = lib.calls(t, func() { require.NoError(t, c.MemPoolSetAttribute(pool, attr, 0)) })
		assert.Equal(t, []string{fmt.Sprintf("cudaMemPoolSetAttribute attr=%d int=0", attr)}, calls)
		v, err = c.MemPoolGetAttribute(pool, attr)
		require.NoError(t, err)
		assert.Equal(t, uint64(0), v)
		calls = lib.calls(t, func() { require.NoError(t, c.MemPoolSetAttribute(pool, attr, 1<<32)) })
		assert.Equal(t, []string{fmt.Sprintf("cudaMemPoolSetAttribute attr=%d int=1", attr)}, calls, "non-zero sets the flag")
	}
	err = c.MemPoolSetAttribute(pool, MemPoolAttrUsedMemCurrent, 1)
	requireCUDAError(t, err, "cudaMemPoolSetAttribute", ErrInvalidValue, "cudaErrorInvalidValue", "fake: invalid argument")

	// Stream-ordered allocations from the pool and from the default pool.
	s, err := c.StreamCreate(StreamFlagDefault)
	require.NoError(t, err)
	var p, q uintptr
	calls = lib.calls(t, func() {
		p, err = c.MallocFromPoolAsync(3000, pool, s)
		require.NoError(t, err)
		q, err = c.MallocAsync(100, PerThreadDefaultStream)
		require.NoError(t, err)
	})
	assert.Equal(t, []string{
		fmt.Sprintf("cudaMallocFromPoolAsync size=3000 pool=%#x stream=%#x", uintptr(pool), uintptr(s)),
		"cudaMallocAsync size=100 stream=0x2",
	}, calls)
	used, err := c.MemPoolGetAttribute(pool, MemPoolAttrUsedMemCurrent)
	require.NoError(t, err)
	assert.Equal(t, uint64(3000), used)
	a, err := c.PointerGetAttributes(p)
	require.NoError(t, err)
	assert.Equal(t, 1, a.Device, "the pool's device")
	_, err = c.MallocFromPoolAsync(2<<30, pool, s)
	requireCUDAError(t, err, "cudaMallocFromPoolAsync", ErrMemoryAllocation, "cudaErrorMemoryAllocation", "fake: out of memory")

	calls = lib.calls(t, func() {
		require.NoError(t, c.FreeAsync(p, s))
		require.NoError(t, c.FreeAsync(q, LegacyDefaultStream))
		require.NoError(t, c.MemPoolTrimTo(pool, 512))
	})
	assert.Equal(t, []string{
		fmt.Sprintf("cudaFreeAsync ptr=%#x stream=%#x", p, uintptr(s)),
		fmt.Sprintf("cudaFreeAsync ptr=%#x stream=0x1", q),
		fmt.Sprintf("cudaMemPoolTrimTo pool=%#x keep=512", uintptr(pool)),
	}, calls)
	err = c.FreeAsync(p, s)
	requireCUDAError(t, err, "cudaFreeAsync", ErrInvalidValue, "cudaErrorInvalidValue", "fake: invalid argument")
	used, err = c.MemPoolGetAttribute(pool, MemPoolAttrUsedMemCurrent)
	require.NoError(t, err)
	assert.Zero(t, used)
	high, err := c.MemPoolGetAttribute(pool, MemPoolAttrUsedMemHigh)
	require.NoError(t, err)
	assert.Equal(t, uint64(3000), high)

	// Default pools.
	d0, err := c.DeviceGetDefaultMemPool(0)
	require.NoError(t, err)
	d1, err := c.DeviceGetDefaultMemPool(1)
	require.NoError(t, err)
	assert.NotEqual(t, d0, d1)
	_, err = c.DeviceGetDefaultMemPool(2)
	requireCUDAError(t, err, "cudaDeviceGetDefaultMemPool", ErrInvalidDevice, "cudaErrorInvalidDevice", "fake: invalid device ordinal")
	_, err = c.DeviceGetDefaultMemPool(1 << 33)
	require.ErrorIs(t, err, ErrInvalidDevice)
	err = c.MemPoolDestroy(d0)
	requireCUDAError(t, err, "cudaMemPoolDestroy", ErrInvalidValue, "cudaErrorInvalidValue", "fake: invalid argument")

	require.NoError(t, c.MemPoolDestroy(pool))
	require.NoError(t, c.StreamDestroy(s))
}

// fakeBusy is the fake's flag for a stream or event that stays busy until
// synchronized.
const fakeBusy = 0x80

func TestCUDAFakeStreamsAndEvents(t *testing.T) {
	t.Parallel()
	c, lib := openFake(t)

	var s, busy Stream
	var err error
	calls := lib.calls(t, func() {
		s, err = c.StreamCreate(StreamFlagNonBlocking)
		require.NoError(t, err)
		busy, err = c.StreamCreate(fakeBusy)
		require.NoError(t, err)
	})
	assert.Equal(t, []string{"cudaStreamCreateWithFlags flags=1", "cudaStreamCreateWithFlags flags=128"}, calls)
	id1, err := c.StreamGetID(s)
	require.NoError(t, err)
	id2, err := c.StreamGetID(busy)
	require.NoError(t, err)
	assert.NotEqual(t, id1, id2)
	id, err := c.StreamGetID(PerThreadDefaultStream)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), id)

	require.NoError(t, c.StreamQuery(s))
	err1 := c.StreamQuery(busy)
	requireCUDAError(t, err1, "cudaStreamQuery", ErrNotReady, "cudaErrorNotReady", "fake: device not ready")
	assert.Same(t, err1, c.StreamQuery(busy), "polling returns one preallocated error")
	require.NoError(t, c.StreamSynchronize(busy))
	require.NoError(t, c.StreamQuery(busy))

	var e, busyEvent Event
	calls = lib.calls(t, func() {
		e, err = c.EventCreate(EventFlagDisableTiming)
		require.NoError(t, err)
		busyEvent, err = c.EventCreate(EventFlagBlockingSync | fakeBusy)
		require.NoError(t, err)
		require.NoError(t, c.EventRecord(e, s))
		require.NoError(t, c.StreamWaitEvent(busy, e))
	})
	assert.Equal(t, []string{
		"cudaEventCreateWithFlags flags=2",
		"cudaEventCreateWithFlags flags=129",
		fmt.Sprintf("cudaEventRecord event=%#x stream=%#x", uintptr(e), uintptr(s)),
		fmt.Sprintf("cudaStreamWaitEvent stream=%#x event=%#x flags=0", uintptr(busy), uintptr(e)),
	}, calls)
	require.NoError(t, c.EventQuery(e))
	err1 = c.EventQuery(busyEvent)
	requireCUDAError(t, err1, "cudaEventQuery", ErrNotReady, "cudaErrorNotReady", "fake: device not ready")
	assert.Same(t, err1, c.EventQuery(busyEvent))
	require.NoError(t, c.EventSynchronize(busyEvent))
	require.NoError(t, c.EventQuery(busyEvent))

	requireCUDAError(t, c.EventRecord(0, s), "cudaEventRecord", ErrInvalidResource, "cudaErrorInvalidResourceHandle", "fake: invalid resource handle")
	requireCUDAError(t, c.StreamWaitEvent(s, 0), "cudaStreamWaitEvent", ErrInvalidResource, "cudaErrorInvalidResourceHandle", "fake: invalid resource handle")
	requireCUDAError(t, c.StreamDestroy(LegacyDefaultStream), "cudaStreamDestroy", ErrInvalidResource, "cudaErrorInvalidResourceHandle", "fake: invalid resource handle")
	requireCUDAError(t, c.EventDestroy(0), "cudaEventDestroy", ErrInvalidResource, "cudaErrorInvalidResourceHandle", "fake: invalid resource handle")
	requireCUDAError(t, c.EventQuery(0), "cudaEventQuery", ErrInvalidResource, "cudaErrorInvalidResourceHandle", "fake: invalid resource handle")
	requireCUDAError(t, c.EventSynchronize(0), "cudaEventSynchronize", ErrInvalidResource, "cudaErrorInvalidResourceHandle", "fake: invalid resource handle")

	for _, ev := range []Event{e, busyEvent} {
		require.NoError(t, c.EventDestroy(ev))
	}
	for _, st := range []Stream{s, busy} {
		require.NoError(t, c.StreamDestroy(st))
	}
	assert.Equal(t, Success, c.peekAtLastError())
}

// TestCUDAFakeDriverStreamID: where the runtime has
// cudaGetDriverEntryPointByVersion (12.5 and later), stream ids come from the
// driver's cuStreamGetId, asked for in its 12.0 ABI, and the runtime's call
// answers only when the driver's fails; elsewhere the runtime's call does.
// StreamGetIDFuncs hands C the function in use.
func TestCUDAFakeDriverStreamID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		opts   []fakeOption
		driver bool
	}{
		{"CUDA 13.0", nil, true},
		{"CUDA 12.5", []fakeOption{fakeVersion(12050)}, true},
		{"CUDA 12.4", []fakeOption{fakeVersion(12040)}, false},
		{"no entry point", []fakeOption{fakeNoDriverEntry}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lib := buildFake(t, tt.opts...)
			var c *cudaRuntime
			opened := lib.calls(t, func() {
				rt, err := OpenCUDA(lib.path)
				require.NoError(t, err)
				c = rt.(*cudaRuntime)
			})
			assert.Equal(t, tt.driver, c.driverStreamID)
			if tt.driver {
				assert.Contains(t, opened, "cudaGetDriverEntryPointByVersion symbol=cuStreamGetId version=12000 flags=0")
			}
			s, err := c.StreamCreate(0)
			require.NoError(t, err)
			var id uint64
			calls := lib.calls(t, func() { id, err = c.StreamGetID(s) })
			require.NoError(t, err)
			want, err := c.streamIDRuntime(s)
			require.NoError(t, err)
			assert.Equal(t, want, id)
			if tt.driver {
				assert.Equal(t, []string{"cuStreamGetId"}, callNames(calls), "the driver's call alone")
			} else {
				assert.Equal(t, []string{"cudaStreamGetId"}, callNames(calls))
			}
			// The fake driver fails for the per-thread stream: the runtime answers.
			calls = lib.calls(t, func() { id, err = c.StreamGetID(PerThreadDefaultStream) })
			require.NoError(t, err)
			assert.Equal(t, uint64(2), id)
			if tt.driver {
				assert.Equal(t, []string{"cuStreamGetId", "cudaStreamGetId"}, callNames(calls))
			}
			getID, getLastError := StreamGetIDFuncs(c)
			assert.NotZero(t, getID)
			assert.Equal(t, c.slot("cudaGetLastError"), getLastError)
			if tt.driver {
				assert.Equal(t, c.slot("cuStreamGetId"), getID)
			} else {
				assert.Equal(t, c.slot("cudaStreamGetId"), getID)
			}
			require.NoError(t, c.StreamDestroy(s))
			assert.Equal(t, Success, c.peekAtLastError(), "the driver's failure leaves no CUDA error")
		})
	}
	getID, getLastError := StreamGetIDFuncs(nil)
	assert.Zero(t, getID)
	assert.Zero(t, getLastError)
}

// TestCUDAFakeHints checks which prefetch and advise function each runtime
// version gets, and what reaches it.
func TestCUDAFakeHints(t *testing.T) {
	t.Parallel()
	const ptr, n = uintptr(0x10000), uintptr(4096)
	s := Stream(0x77)
	tests := []struct {
		name                string
		opts                []fakeOption
		prefetchFunc        string
		adviseFunc          string
		device, host, numa  string // journal lines for a prefetch to each location
		adviseDevice        string
		numaUnsupported     bool
		unsetPreferredRange string // advice that ignores its location
	}{
		{
			name:         "CUDA 13: location by value",
			opts:         []fakeOption{fakeVersion(13000)},
			prefetchFunc: "cudaMemPrefetchAsync", adviseFunc: "cudaMemAdvise",
			device:       "cudaMemPrefetchAsync(location) ptr=0x10000 n=4096 location=1:1 flags=0 stream=0x77",
			host:         "cudaMemPrefetchAsync(location) ptr=0x10000 n=4096 location=2:0 flags=0 stream=0x77",
			numa:         "cudaMemPrefetchAsync(location) ptr=0x10000 n=4096 location=3:1 flags=0 stream=0x77",
			adviseDevice: "cudaMemAdvise(location) ptr=0x10000 n=4096 advice=3 location=1:1",
		},
		{
			name:         "CUDA 12.8 with _v2",
			opts:         []fakeOption{fakeVersion(12080), fakeDriver(12080), fakeWithV2},
			prefetchFunc: "cudaMemPrefetchAsync_v2", adviseFunc: "cudaMemAdvise_v2",
			device:       "cudaMemPrefetchAsync_v2 ptr=0x10000 n=4096 location=1:1 flags=0 stream=0x77",
			host:         "cudaMemPrefetchAsync_v2 ptr=0x10000 n=4096 location=2:0 flags=0 stream=0x77",
			numa:         "cudaMemPrefetchAsync_v2 ptr=0x10000 n=4096 location=3:1 flags=0 stream=0x77",
			adviseDevice: "cudaMemAdvise_v2 ptr=0x10000 n=4096 advice=3 location=1:1",
		},
		{
			name:         "CUDA 12.8 without _v2",
			opts:         []fakeOption{fakeVersion(12080), fakeDriver(12080)},
			prefetchFunc: "cudaMemPrefetchAsync", adviseFunc: "cudaMemAdvise",
			device:          "cudaMemPrefetchAsync(device) ptr=0x10000 n=4096 device=1 stream=0x77",
			host:            "cudaMemPrefetchAsync(device) ptr=0x10000 n=4096 device=-1 stream=0x77",
			adviseDevice:    "cudaMemAdvise(device) ptr=0x10000 n=4096 advice=3 device=1",
			numaUnsupported: true,
		},
		{
			// _v2 exported by a library reporting 12.0 is not used: the
			// version says which shapes exist.
			name:         "CUDA 12.0",
			opts:         []fakeOption{fakeVersion(12000), fakeDriver(12000), fakeWithV2},
			prefetchFunc: "cudaMemPrefetchAsync", adviseFunc: "cudaMemAdvise",
			device:          "cudaMemPrefetchAsync(device) ptr=0x10000 n=4096 device=1 stream=0x77",
			host:            "cudaMemPrefetchAsync(device) ptr=0x10000 n=4096 device=-1 stream=0x77",
			adviseDevice:    "cudaMemAdvise(device) ptr=0x10000 n=4096 advice=3 device=1",
			numaUnsupported: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, lib := openFake(t, tt.opts...)
			assert.Equal(t, tt.prefetchFunc, c.prefetchFunc)
			assert.Equal(t, tt.adviseFunc, c.adviseFunc)

			calls := lib.calls(t, func() { require.NoError(t, c.MemPrefetchAsync(ptr, n, DeviceLocation(1), s)) })
			assert.Equal(t, []string{tt.device}, calls)
			calls = lib.calls(t, func() { require.NoError(t, c.MemPrefetchAsync(ptr, n, HostLocation(), s)) })
			assert.Equal(t, []string{tt.host}, calls)
			calls = lib.calls(t, func() { require.NoError(t, c.MemAdvise(ptr, n, MemAdviseSetPreferredLocation, DeviceLocation(1))) })
			assert.Equal(t, []string{tt.adviseDevice}, calls)

			numa := MemLocation{Type: MemLocationTypeHostNuma, ID: 1}
			var err error
			calls = lib.calls(t, func() { err = c.MemPrefetchAsync(ptr, n, numa, s) })
			if tt.numaUnsupported {
				require.ErrorIs(t, err, ErrInvalidValue)
				assert.Contains(t, err.Error(), "needs CUDA runtime 12.2 or later")
				assert.Empty(t, calls, "refused before calling CUDA")
				err = c.MemAdvise(ptr, n, MemAdviseSetPreferredLocation, numa)
				require.ErrorIs(t, err, ErrInvalidValue)
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, tt.adviseFunc, e.Func)
			} else {
				require.NoError(t, err)
				assert.Equal(t, []string{tt.numa}, calls)
			}
			// An advice that ignores its location may pass none.
			require.NoError(t, c.MemAdvise(ptr, n, MemAdviseSetReadMostly, MemLocation{}))
		})
	}
}

func TestCUDAFakeOpenFailures(t *testing.T) {
	t.Parallel()
	fakeCC(t)
	tests := []struct {
		name   string
		opts   []fakeOption
		want   []string // substrings of the error
		target error    // errors.Is target, or nil
	}{
		{"runtime too old", []fakeOption{fakeVersion(11080), fakeDriver(12000)},
			[]string{"is CUDA runtime 11.8; rmmgo needs 12.0 or later"}, nil},
		{"required functions missing", []fakeOption{fakeOmitSomeFns},
			[]string{"lacks functions rmmgo needs: ", "cudaMemPoolTrimTo", "cudaEventQuery"}, nil},
		{"no device", []fakeOption{fakeCountError(100)},
			[]string{"no CUDA device found (CUDA runtime 13.0, driver 13.0)", "cudaGetDeviceCount: cudaErrorNoDevice (fake: no CUDA-capable device is detected)"}, ErrNoDevice},
		{"zero devices", []fakeOption{fakeDevices(0)},
			[]string{"no CUDA device found"}, ErrNoDevice},
		{"driver too old", []fakeOption{fakeDriver(12020), fakeCountError(35)},
			[]string{"the CUDA driver (12.2) is too old for CUDA runtime 13.0", "cudaErrorInsufficientDriver"}, ErrInsufficientDriver},
		{"no driver", []fakeOption{fakeDriver(0), fakeCountError(35)},
			[]string{"no CUDA driver is installed (CUDA runtime 13.0"}, ErrInsufficientDriver},
		{"other failure", []fakeOption{fakeCountError(3)},
			[]string{"cannot count CUDA devices", "cudaErrorInitializationError (fake: unrecognized error code)"}, &Error{Code: ErrorInitializationError}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lib := buildFake(t, tt.opts...)
			rt, err := OpenCUDA(lib.path)
			require.Error(t, err)
			assert.Nil(t, rt)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			if tt.target != nil {
				assert.ErrorIs(t, err, tt.target)
			}
		})
	}

	t.Run("not a CUDA runtime", func(t *testing.T) {
		dir := t.TempDir()
		src, lib := filepath.Join(dir, "other.c"), filepath.Join(dir, "libother.so")
		require.NoError(t, os.WriteFile(src, []byte("int other(void) { return 0; }\n"), 0o644))
		out, err := exec.Command(fakeCC(t), "-shared", "-fPIC", "-o", lib, src).CombinedOutput()
		require.NoError(t, err, "%s", out)
		_, err = OpenCUDA(lib)
		require.Error(t, err)
		assert.Contains(t, err.Error(), lib+" is not a CUDA runtime library")
		assert.Contains(t, err.Error(), "cudaRuntimeGetVersion")
	})
	t.Run("no such file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "libcudart.so.99")
		_, err := OpenCUDA(path)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "cannot load the CUDA runtime named by the caller")
		assert.Contains(t, err.Error(), path+": cannot open shared object file")
	})
}

func TestCUDAFakeOpenFirst(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "libmissing.so")
	oldDriver := buildFake(t, fakeDriver(12020), fakeCountError(35))
	good := buildFake(t, fakeVersion(12040), fakeDriver(12040))
	noDevice := buildFake(t, fakeCountError(100))

	// Moves past a library that does not load and past a runtime that is
	// too new for the driver, to an older runtime that works.
	rt, err := openFirst([]string{missing, oldDriver.path, good.path})
	require.NoError(t, err)
	v, _ := rt.RuntimeVersion()
	assert.Equal(t, 12040, v)

	// Any other failure is final.
	_, err = openFirst([]string{noDevice.path, good.path})
	require.ErrorIs(t, err, ErrNoDevice)

	// When nothing works, every name and its reason are listed.
	_, err = openFirst([]string{missing, oldDriver.path})
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, "cudart: cannot load the CUDA runtime; tried dlopen "+missing+": "+missing+": cannot open shared object file")
	assert.Contains(t, msg, "; "+oldDriver.path+": cudart: the CUDA driver (12.2) is too old")
	assert.ErrorIs(t, err, ErrInsufficientDriver)
}

// TestCUDAFakeSharesLoadedRuntime checks that OpenCUDA("") uses a libcudart
// the process has already loaded. It needs a machine where no real
// libcudart can be found, so that the fake is the only one.
func TestCUDAFakeSharesLoadedRuntime(t *testing.T) {
	for _, name := range defaultLibraryNames {
		if l, err := dlOpen(name, dlNow|dlLocal); err == nil {
			_ = l.close()
			t.Skipf("%s is installed here; this test needs a machine without a CUDA runtime", name)
		}
	}
	lib := buildFake(t, "-Wl,-soname,libcudart.so.12", fakeVersion(12080), fakeDriver(12080))
	held, err := dlOpen(lib.path, dlNow|dlLocal)
	require.NoError(t, err)
	rt, err := OpenCUDA("")
	require.NoError(t, err)
	c := rt.(*cudaRuntime)
	// Unload the fake again, so that later tests in this process do not find it.
	t.Cleanup(func() {
		require.NoError(t, c.lib.close())
		require.NoError(t, held.close())
		_, err := dlOpen("libcudart.so.12", dlNow|dlLocal|dlNoLoad)
		require.Error(t, err, "the fake stays loaded")
	})
	assert.Equal(t, lib.path, c.LibraryPath())
	assert.Equal(t, 12080, c.runtimeVersion)
}

// TestCUDAFakeNothingToLoad checks the error of OpenCUDA("") where no
// libcudart exists.
func TestCUDAFakeNothingToLoad(t *testing.T) {
	for _, name := range defaultLibraryNames {
		if l, err := dlOpen(name, dlNow|dlLocal); err == nil {
			_ = l.close()
			t.Skipf("%s is installed here", name)
		}
	}
	_, err := OpenCUDA("")
	require.Error(t, err)
	for _, name := range defaultLibraryNames {
		assert.Contains(t, err.Error(), "dlopen "+name+": "+name+": cannot open shared object file")
	}
}

// TestCUDAFakeNoAllocations checks that the hot calls allocate nothing on
// the Go side, including polling a busy event or stream.
func TestCUDAFakeNoAllocations(t *testing.T) {
	if cudaRaceEnabled {
		t.Skip("the race detector allocates")
	}
	c, _ := openFake(t, fakeNoLog)
	pool, err := c.MemPoolCreate(MemPoolProps{AllocType: MemAllocationTypePinned, Location: DeviceLocation(0)})
	require.NoError(t, err)
	s, err := c.StreamCreate(0)
	require.NoError(t, err)
	busy, err := c.StreamCreate(fakeBusy)
	require.NoError(t, err)
	e, err := c.EventCreate(EventFlagDisableTiming)
	require.NoError(t, err)
	busyEvent, err := c.EventCreate(fakeBusy)
	require.NoError(t, err)

	tests := map[string]func(){
		"Malloc+Free": func() {
			p, _ := c.Malloc(256)
			_ = c.Free(p)
		},
		"MallocFromPoolAsync+FreeAsync": func() {
			p, _ := c.MallocFromPoolAsync(256, pool, s)
			_ = c.FreeAsync(p, s)
		},
		"EventRecord":      func() { _ = c.EventRecord(e, s) },
		"StreamWaitEvent":  func() { _ = c.StreamWaitEvent(s, e) },
		"EventQuery":       func() { _ = c.EventQuery(e) },
		"EventQuery busy":  func() { _ = c.EventQuery(busyEvent) },
		"StreamQuery busy": func() { _ = c.StreamQuery(busy) },
	}
	for name, f := range tests {
		assert.Zero(t, testing.AllocsPerRun(100, f), name)
	}
}

func BenchmarkCUDAFake(b *testing.B) {
	c, _ := openFake(b, fakeNoLog)
	pool, err := c.MemPoolCreate(MemPoolProps{AllocType: MemAllocationTypePinned, Location: DeviceLocation(0)})
	require.NoError(b, err)
	s, err := c.StreamCreate(0)
	require.NoError(b, err)
	e, err := c.EventCreate(EventFlagDisableTiming)
	require.NoError(b, err)

	b.Run("Malloc+Free", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			p, err := c.Malloc(256)
			if err != nil {
				b.Fatal(err)
			}
			if err := c.Free(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("MallocFromPoolAsync+FreeAsync", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			p, err := c.MallocFromPoolAsync(256, pool, s)
			if err != nil {
				b.Fatal(err)
			}
			if err := c.FreeAsync(p, s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("EventQuery", func(b *testing.B) {
		// The cost of one cgo call through a trampoline, with nothing behind it.
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if err := c.EventQuery(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("StreamGetID", func(b *testing.B) {
		// The driver's cuStreamGetId through the fake's entry point.
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := c.StreamGetID(s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("EventRecord+StreamWaitEvent", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = c.EventRecord(e, s)
			_ = c.StreamWaitEvent(s, e)
		}
	})
}
