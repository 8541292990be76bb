package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"sort"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
)

const mib = 1 << 20

// newTestSim makes a simulator that the test closes when it ends.
func newTestSim(t testing.TB, cfg Config) *Runtime {
	t.Helper()
	s := New(cfg)
	t.Cleanup(func() { _ = s.Close() })
	_, err := s.GetDeviceCount()
	require.NoError(t, err)
	return s
}

// hostBuf returns heap memory and its address. It must not be inlined: the
// buffer could then live on the caller's goroutine stack, which moves when
// it grows, leaving the address stale.
//
//go:noinline
func hostBuf(n int) ([]byte, uintptr) {
	b := make([]byte, n)
	return b, uintptr(unsafe.Pointer(unsafe.SliceData(b)))
}

// requireCode asserts that err is an *Error with code.
func requireCode(t testing.TB, err error, code cudart.ErrorCode, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	var e *cudart.Error
	require.True(t, errors.As(err, &e), "not an *Error: %v", err)
	require.Equal(t, code, e.Code, "%v", err)
}

func TestSimDefaults(t *testing.T) {
	s := newTestSim(t, Config{})
	assert.Equal(t, cudart.BackendSimulated, s.Backend())
	n, err := s.GetDeviceCount()
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	free, total, err := s.MemGetInfo()
	require.NoError(t, err)
	assert.Equal(t, uint64(1<<30), total)
	assert.Equal(t, total, free)
	v, err := s.RuntimeVersion()
	require.NoError(t, err)
	assert.Equal(t, 13000, v)
	v, err = s.DriverVersion()
	require.NoError(t, err)
	assert.Equal(t, 13000, v)
	dev, err := s.GetDevice()
	require.NoError(t, err)
	assert.Equal(t, 0, dev)
	assert.Equal(t, Config{Devices: 2, MemoryPerDevice: 1 << 30, RuntimeVersion: 13000}, s.Config())
}

func TestSimDeviceAttributes(t *testing.T) {
	type want map[cudart.DeviceAttr]int
	tests := []struct {
		name string
		cfg  Config
		want want
	}{
		{"defaults", Config{}, want{
			cudart.DevAttrMultiProcessorCount: 132, cudart.DevAttrIntegrated: 0,
			cudart.DevAttrComputeCapabilityMajor: 9, cudart.DevAttrComputeCapabilityMinor: 0,
			cudart.DevAttrManagedMemory: 1, cudart.DevAttrPageableMemoryAccess: 0,
			cudart.DevAttrConcurrentManagedAccess: 1, cudart.DevAttrMemoryPoolsSupported: 1,
			cudart.DevAttrMemoryPoolSupportedHandleTypes: int(cudart.MemHandleTypePosixFileDescriptor),
			cudart.DevAttrHostNativeAtomicSupported:      0, cudart.DevAttrPageableMemoryAccessUsesHostPageTbl: 0,
			cudart.DevAttrDirectManagedMemAccessFromHost: 0,
		}},
		{"pageable", Config{PageableMemoryAccess: true}, want{
			cudart.DevAttrPageableMemoryAccess: 1, cudart.DevAttrPageableMemoryAccessUsesHostPageTbl: 1,
			cudart.DevAttrHostNativeAtomicSupported: 1, cudart.DevAttrDirectManagedMemAccessFromHost: 1,
		}},
		{"no managed, no pools", Config{NoConcurrentManaged: true, NoMemoryPools: true}, want{
			cudart.DevAttrConcurrentManagedAccess: 0, cudart.DevAttrMemoryPoolsSupported: 0,
			cudart.DevAttrMemoryPoolSupportedHandleTypes: 0, cudart.DevAttrManagedMemory: 1,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestSim(t, tt.cfg)
			for dev := 0; dev < 2; dev++ {
				for attr, w := range tt.want {
					got, err := s.DeviceGetAttribute(attr, dev)
					require.NoError(t, err, "attr %d", attr)
					assert.Equal(t, w, got, "attr %d device %d", attr, dev)
				}
			}
			_, err := s.DeviceGetAttribute(cudart.DeviceAttr(9999), 0)
			requireCode(t, err, cudart.ErrorInvalidValue)
			_, err = s.DeviceGetAttribute(cudart.DevAttrIntegrated, 2)
			requireCode(t, err, cudart.ErrorInvalidDevice)
			_, err = s.DeviceGetAttribute(cudart.DevAttrIntegrated, -1)
			requireCode(t, err, cudart.ErrorInvalidDevice)
		})
	}
}

func TestSimErrorNames(t *testing.T) {
	s := newTestSim(t, Config{})
	tests := []struct {
		code       cudart.ErrorCode
		name, desc string
	}{
		{cudart.Success, "cudaSuccess", "no error"},
		{cudart.ErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
		{cudart.ErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
		{cudart.ErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
		{cudart.ErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
		{cudart.ErrorNotReady, "cudaErrorNotReady", "device not ready"},
		{cudart.ErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
		{cudart.ErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
		{cudart.ErrorCode(12345), "unrecognized error code", "unrecognized error code"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.name, s.ErrorName(tt.code))
		assert.Equal(t, tt.desc, s.ErrorString(tt.code))
	}
}

func TestSimInvalidConfig(t *testing.T) {
	for _, cfg := range []Config{{Devices: -1}, {Devices: 5000}, {MemoryPerDevice: 1 << 50}} {
		s := New(cfg)
		_, err := s.GetDeviceCount()
		requireCode(t, err, cudart.ErrorInitializationError)
		_, err = s.Malloc(1)
		requireCode(t, err, cudart.ErrorInitializationError)
		require.NoError(t, s.Close())
	}
}

func TestSimMallocCapacity(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 64 * mib})
	p, err := s.Malloc(0)
	require.NoError(t, err)
	assert.Zero(t, p, "cudaMalloc(0) gives a null pointer")

	a, err := s.Malloc(10 * mib)
	require.NoError(t, err)
	free, total, err := s.MemGetInfo()
	require.NoError(t, err)
	assert.Equal(t, uint64(64*mib), total)
	assert.Equal(t, uint64(54*mib), free)
	assert.Equal(t, uint64(10*mib), s.UsedBytes(0))
	assert.Equal(t, 1, s.LiveAllocations(0))

	// Sizes round up to 256 bytes.
	b, err := s.Malloc(1)
	require.NoError(t, err)
	assert.Equal(t, uint64(10*mib+256), s.UsedBytes(0))

	for _, size := range []uintptr{54 * mib, 64 * mib, 1 << 40, math.MaxUint64, math.MaxUint64 - 100} {
		_, err = s.Malloc(size)
		requireCode(t, err, cudart.ErrorMemoryAllocation, "size %d", size)
		assert.ErrorIs(t, err, cudart.ErrMemoryAllocation)
	}
	// Exactly what is left fits; then nothing does.
	c, err := s.Malloc(54*mib - 256)
	require.NoError(t, err)
	free, _, err = s.MemGetInfo()
	require.NoError(t, err)
	assert.Zero(t, free)
	_, err = s.Malloc(1)
	requireCode(t, err, cudart.ErrorMemoryAllocation)
	assert.Contains(t, err.Error(), "cudaMalloc: cudaErrorMemoryAllocation (out of memory: simulated device 0 has 0 of 67108864 bytes free")

	// The other device is untouched.
	assert.Zero(t, s.UsedBytes(1))
	assert.Zero(t, s.LiveAllocations(1))

	for _, p := range []uintptr{a, b, c} {
		require.NoError(t, s.Free(p))
	}
	free, _, err = s.MemGetInfo()
	require.NoError(t, err)
	assert.Equal(t, uint64(64*mib), free)
	assert.Zero(t, s.LiveAllocations(0))
	// All of it can be had again, in one piece.
	a, err = s.Malloc(64 * mib)
	require.NoError(t, err)
	require.NoError(t, s.Free(a))
}

func TestSimAlignmentAndDisjointness(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 256 * mib})
	rng := rand.New(rand.NewSource(1))
	type span struct{ p, n uintptr }
	var live []span
	for i := 0; i < 3000; i++ {
		if len(live) > 0 && rng.Intn(3) == 0 {
			j := rng.Intn(len(live))
			require.NoError(t, s.Free(live[j].p))
			live = append(live[:j], live[j+1:]...)
			continue
		}
		n := uintptr(1 + rng.Intn(64<<10))
		p, err := s.Malloc(n)
		if err != nil || p%256 != 0 {
			t.Fatalf("Malloc(%d) = %#x, %v: want a 256-byte aligned pointer", n, p, err)
		}
		live = append(live, span{p, n})
	}
	// No two live allocations overlap.
	sort.Slice(live, func(i, j int) bool { return live[i].p < live[j].p })
	for i := 1; i < len(live); i++ {
		a, b := live[i-1], live[i]
		if a.p+a.n > b.p {
			t.Fatalf("overlap %#x+%d and %#x+%d", a.p, a.n, b.p, b.n)
		}
	}
	assert.Equal(t, len(live), s.LiveAllocations(0))
	for _, l := range live {
		require.NoError(t, s.Free(l.p))
	}
	assert.Zero(t, s.UsedBytes(0))
}

func TestSimFreeErrors(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 64 * mib})
	_, hostAddr := hostBuf(64)
	tests := []struct {
		name string
		run  func() error
	}{
		{"double free", func() error {
			p, err := s.Malloc(100)
			require.NoError(t, err)
			require.NoError(t, s.Free(p))
			return s.Free(p)
		}},
		{"interior pointer", func() error {
			p, err := s.Malloc(1024)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Free(p)) }()
			return s.Free(p + 256)
		}},
		{"host pointer", func() error { return s.Free(hostAddr) }},
		{"never allocated device address", func() error { return s.Free(s.devs[1].rng.base + 4096) }},
		{"pinned memory with Free", func() error {
			p, err := s.HostAlloc(100, cudart.HostAllocDefault)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.FreeHost(p)) }()
			return s.Free(p)
		}},
		{"device memory with FreeHost", func() error {
			p, err := s.Malloc(100)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Free(p)) }()
			return s.FreeHost(p)
		}},
		{"managed memory with FreeHost", func() error {
			p, err := s.MallocManaged(100, cudart.MemAttachGlobal)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Free(p)) }()
			return s.FreeHost(p)
		}},
		{"pinned double free", func() error {
			p, err := s.HostAlloc(100, cudart.HostAllocDefault)
			require.NoError(t, err)
			require.NoError(t, s.FreeHost(p))
			return s.FreeHost(p)
		}},
		{"host pointer with FreeHost", func() error { return s.FreeHost(hostAddr) }},
		{"FreeAsync of managed memory", func() error {
			p, err := s.MallocManaged(100, cudart.MemAttachGlobal)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Free(p)) }()
			return s.FreeAsync(p, cudart.DefaultStream)
		}},
		{"FreeAsync of pinned memory", func() error {
			p, err := s.HostAlloc(100, cudart.HostAllocDefault)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.FreeHost(p)) }()
			return s.FreeAsync(p, cudart.DefaultStream)
		}},
		{"FreeAsync of interior cudaMalloc pointer", func() error {
			p, err := s.Malloc(1024)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Free(p)) }()
			return s.FreeAsync(p+256, cudart.DefaultStream)
		}},
		{"FreeAsync of freed cudaMalloc memory", func() error {
			p, err := s.Malloc(100)
			require.NoError(t, err)
			require.NoError(t, s.FreeAsync(p, cudart.DefaultStream))
			return s.FreeAsync(p, cudart.DefaultStream)
		}},
		{"FreeAsync twice", func() error {
			p, err := s.MallocAsync(100, cudart.DefaultStream)
			require.NoError(t, err)
			require.NoError(t, s.FreeAsync(p, cudart.DefaultStream))
			return s.FreeAsync(p, cudart.DefaultStream)
		}},
		{"Free after FreeAsync", func() error {
			p, err := s.MallocAsync(100, cudart.DefaultStream)
			require.NoError(t, err)
			require.NoError(t, s.FreeAsync(p, cudart.DefaultStream))
			return s.Free(p)
		}},
		{"FreeAsync of freed pool memory (reserved, not live)", func() error {
			p, err := s.MallocAsync(100, cudart.DefaultStream)
			require.NoError(t, err)
			q, err := s.MallocAsync(100, cudart.DefaultStream)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.FreeAsync(q, cudart.DefaultStream)) }()
			require.NoError(t, s.FreeAsync(p, cudart.DefaultStream))
			return s.FreeAsync(p, cudart.DefaultStream)
		}},
		{"FreeAsync of interior pool pointer", func() error {
			p, err := s.MallocAsync(1024, cudart.DefaultStream)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.FreeAsync(p, cudart.DefaultStream)) }()
			return s.FreeAsync(p+256, cudart.DefaultStream)
		}},
		{"FreeAsync of host pointer", func() error { return s.FreeAsync(hostAddr, cudart.DefaultStream) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireCode(t, tt.run(), cudart.ErrorInvalidValue)
		})
	}
	// Null pointers are no-ops.
	require.NoError(t, s.Free(0))
	require.NoError(t, s.FreeHost(0))
	require.NoError(t, s.FreeAsync(0, cudart.DefaultStream))
	require.NoError(t, s.DeviceSynchronize())
	assert.Zero(t, s.LiveAllocations(0))
}

// cudaFreeAsync takes cudaMalloc memory too (CUDA 13.0 does): the memory
// goes back when the stream reaches the free, and cannot be freed again
// meanwhile.
func TestSimFreeAsyncOfMallocMemory(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 64 * mib})
	st, err := s.StreamCreate(cudart.StreamFlagNonBlocking)
	require.NoError(t, err)
	p, err := s.Malloc(1 << 20)
	require.NoError(t, err)
	used := s.UsedBytes(0)
	require.NoError(t, s.PauseStream(st))
	require.NoError(t, s.FreeAsync(p, st))
	assert.Equal(t, 1, s.LiveAllocations(0), "the free has not run")
	assert.Equal(t, used, s.UsedBytes(0))
	requireCode(t, s.FreeAsync(p, st), cudart.ErrorInvalidValue, "FreeAsync while one is queued")
	requireCode(t, s.Free(p), cudart.ErrorInvalidValue, "Free while a FreeAsync is queued")
	require.NoError(t, s.Memset(p, 1, 1<<20), "still usable until the stream reaches the free")
	a, err := s.PointerGetAttributes(p)
	require.NoError(t, err)
	assert.Equal(t, cudart.MemoryTypeDevice, a.Type)
	require.NoError(t, s.ResumeStream(st))
	require.NoError(t, s.StreamSynchronize(st))
	assert.Zero(t, s.LiveAllocations(0))
	assert.Zero(t, s.UsedBytes(0))
	requireCode(t, s.Free(p), cudart.ErrorInvalidValue, "double free")
	require.NoError(t, s.StreamDestroy(st))
}

func TestSimInvalidDevices(t *testing.T) {
	s := newTestSim(t, Config{Devices: 3})
	for _, dev := range []int{-1, 3, 100, cudart.InvalidDeviceID} {
		requireCode(t, s.SetDevice(dev), cudart.ErrorInvalidDevice)
		_, err := s.DeviceGetDefaultMemPool(dev)
		requireCode(t, err, cudart.ErrorInvalidDevice)
		_, err = s.DeviceGetAttribute(cudart.DevAttrManagedMemory, dev)
		requireCode(t, err, cudart.ErrorInvalidDevice)
		_, err = s.MemPoolCreate(cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned, Location: cudart.DeviceLocation(dev)})
		requireCode(t, err, cudart.ErrorInvalidDevice)
	}
	assert.ErrorIs(t, s.SetDevice(7), cudart.ErrInvalidDevice)
	assert.Equal(t, -1, s.LiveAllocations(3))
	assert.Zero(t, s.UsedBytes(-1))
}

// TestSimPerThreadDevice runs goroutines locked to their threads on
// different devices: each sees its own current device, and allocates there.
func TestSimPerThreadDevice(t *testing.T) {
	s := newTestSim(t, Config{Devices: 4, MemoryPerDevice: 64 * mib})
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, 16)
	for dev := 0; dev < 4; dev++ {
		wg.Add(1)
		go func(dev int) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if err := s.SetDevice(dev); err != nil {
				errs <- err
				return
			}
			<-start // every thread has set its device before any checks
			for i := 0; i < 50; i++ {
				got, err := s.GetDevice()
				if err != nil || got != dev {
					errs <- errors.Join(err, errors.New("wrong current device"))
					return
				}
				p, err := s.Malloc(mib)
				if err != nil {
					errs <- err
					return
				}
				a, err := s.PointerGetAttributes(p)
				if err != nil || a.Device != dev || a.Type != cudart.MemoryTypeDevice {
					errs <- errors.Join(err, errors.New("allocation on the wrong device"))
				}
				if err := s.Free(p); err != nil {
					errs <- err
				}
			}
			// Leave the thread on device 0 for whoever uses it next.
			if err := s.SetDevice(0); err != nil {
				errs <- err
			}
		}(dev)
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	// A new thread starts on device 0, whatever other threads chose, even
	// one that has exited (with cgo: without, thread ids may be reused).
	done := make(chan int)
	if simUniqueThreadTokens {
		go func() {
			runtime.LockOSThread() // the thread dies with this goroutine
			assert.NoError(t, s.SetDevice(3))
			done <- 0
		}()
		<-done
	}
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		dev, err := s.GetDevice()
		assert.NoError(t, err)
		done <- dev
	}()
	assert.Equal(t, 0, <-done)

	// MemGetInfo follows the current device.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	require.NoError(t, s.SetDevice(2))
	defer func() { require.NoError(t, s.SetDevice(0)) }()
	p, err := s.Malloc(16 * mib)
	require.NoError(t, err)
	free, _, err := s.MemGetInfo()
	require.NoError(t, err)
	assert.Equal(t, uint64(48*mib), free)
	assert.Equal(t, uint64(16*mib), s.UsedBytes(2))
	assert.Zero(t, s.UsedBytes(0))
	require.NoError(t, s.Free(p))
}

func TestSimMemcpyMemset(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 64 * mib})
	const n = 1 << 20
	src, srcAddr := hostBuf(n)
	for i := range src {
		src[i] = byte(i * 7)
	}
	d1, err := s.Malloc(n)
	require.NoError(t, err)
	d2, err := s.Malloc(n)
	require.NoError(t, err)

	require.NoError(t, s.Memcpy(d1, srcAddr, n, cudart.MemcpyHostToDevice))
	require.NoError(t, s.Memcpy(d2, d1, n, cudart.MemcpyDeviceToDevice))
	dst, dstAddr := hostBuf(n)
	require.NoError(t, s.Memcpy(dstAddr, d2, n, cudart.MemcpyDeviceToHost))
	assert.Equal(t, src, dst)

	// Memset uses the low byte of value, on exactly the range asked.
	require.NoError(t, s.Memset(d1+100, 0x1ab, 1000))
	require.NoError(t, s.Memcpy(dstAddr, d1, n, cudart.MemcpyDefault))
	want := append([]byte(nil), src...)
	fill(want[100:1100], 0xab)
	require.Equal(t, want, dst)
	require.NoError(t, s.Memset(d1, 0, n))
	assert.Equal(t, make([]byte, 64), bytesAt(d1, 64), "device memory is readable from the host")

	// Overlapping copies behave like memmove.
	for i := 0; i < 16; i++ {
		bytesAt(d1, 16)[i] = byte(i)
	}
	require.NoError(t, s.Memcpy(d1+4, d1, 8, cudart.MemcpyDeviceToDevice))
	assert.Equal(t, []byte{0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 12, 13, 14, 15}, bytesAt(d1, 16))

	// Managed and pinned memory are host memory.
	m, err := s.MallocManaged(4096, cudart.MemAttachGlobal)
	require.NoError(t, err)
	h, err := s.HostAlloc(4096, cudart.HostAllocMapped)
	require.NoError(t, err)
	require.NoError(t, s.Memset(m, 0x11, 4096))
	require.NoError(t, s.Memcpy(h, m, 4096, cudart.MemcpyDefault))
	assert.Equal(t, byte(0x11), bytesAt(h, 4096)[4095])
	require.NoError(t, s.MemsetAsync(h, 0x22, 4096, cudart.DefaultStream))
	require.NoError(t, s.MemcpyAsync(d2, h, 4096, cudart.MemcpyHostToDevice, cudart.DefaultStream))
	require.NoError(t, s.StreamSynchronize(cudart.DefaultStream))
	assert.Equal(t, byte(0x22), bytesAt(d2, 4096)[4095])

	// Zero-byte copies and fills do nothing and succeed.
	require.NoError(t, s.Memcpy(0, 0, 0, cudart.MemcpyDefault))
	require.NoError(t, s.Memset(0, 0, 0))

	for _, p := range []uintptr{d1, d2, m} {
		require.NoError(t, s.Free(p))
	}
	require.NoError(t, s.FreeHost(h))
	runtime.KeepAlive(src)
	runtime.KeepAlive(dst)
}

func TestSimMemcpyInvalid(t *testing.T) {
	for _, pageable := range []bool{false, true} {
		s := newTestSim(t, Config{MemoryPerDevice: 64 * mib, PageableMemoryAccess: pageable})
		d, err := s.Malloc(4096)
		require.NoError(t, err)
		freed, err := s.Malloc(4096)
		require.NoError(t, err)
		require.NoError(t, s.Free(freed))
		host, hostAddr := hostBuf(8192)
		unused := s.devs[1].rng.base + 1<<20

		tests := []struct {
			name string
			err  error
			code cudart.ErrorCode // 0: no error
		}{
			{"into freed device memory", s.Memcpy(freed, hostAddr, 16, cudart.MemcpyHostToDevice), cudart.ErrorInvalidValue},
			{"from freed device memory", s.Memcpy(hostAddr, freed, 16, cudart.MemcpyDeviceToHost), cudart.ErrorInvalidValue},
			{"past the end", s.Memcpy(d, hostAddr, 4097, cudart.MemcpyHostToDevice), cudart.ErrorInvalidValue},
			{"starting past the end", s.Memcpy(d+4096, hostAddr, 1, cudart.MemcpyHostToDevice), cudart.ErrorInvalidValue},
			{"never allocated", s.Memcpy(unused, hostAddr, 1, cudart.MemcpyHostToDevice), cudart.ErrorInvalidValue},
			{"null destination", s.Memcpy(0, hostAddr, 1, cudart.MemcpyHostToDevice), cudart.ErrorInvalidValue},
			{"null source", s.Memcpy(d, 0, 1, cudart.MemcpyHostToDevice), cudart.ErrorInvalidValue},
			{"bad kind", s.Memcpy(d, hostAddr, 1, cudart.MemcpyKind(7)), cudart.ErrorInvalidMemcpyDirection},
			{"negative kind", s.Memcpy(d, hostAddr, 1, cudart.MemcpyKind(-1)), cudart.ErrorInvalidMemcpyDirection},
			{"async into freed memory", s.MemcpyAsync(freed, hostAddr, 1, cudart.MemcpyHostToDevice, cudart.DefaultStream), cudart.ErrorInvalidValue},
			{"memset freed memory", s.Memset(freed, 0, 1), cudart.ErrorInvalidValue},
			{"memset past the end", s.MemsetAsync(d, 0, 5000, cudart.DefaultStream), cudart.ErrorInvalidValue},
			{"memset null", s.Memset(0, 0, 1), cudart.ErrorInvalidValue},
			{"wrapping range", s.Memset(d, 0, ^uintptr(0)), cudart.ErrorInvalidValue},
			// Host addresses nothing maps (issue 24: these faulted the process).
			{"from unmapped host memory", s.Memcpy(d, 0xdeadbeef00, 16, cudart.MemcpyDefault), cudart.ErrorInvalidValue},
			{"into unmapped host memory", s.Memcpy(0xdeadbeef00, d, 16, cudart.MemcpyDeviceToHost), cudart.ErrorInvalidValue},
			{"host to unmapped host", s.Memcpy(0xdeadbeef00, hostAddr, 16, cudart.MemcpyHostToHost), cudart.ErrorInvalidValue},
			{"async from unmapped host memory", s.MemcpyAsync(d, 0xdeadbeef00, 16, cudart.MemcpyHostToDevice, cudart.DefaultStream), cudart.ErrorInvalidValue},
			{"memset unmapped host memory", s.Memset(0xdeadbeef00, 0, 16), cudart.ErrorInvalidValue},
			{"host to host", s.Memcpy(hostAddr, hostAddr+4096, 4096, cudart.MemcpyHostToHost), 0},
			{"default kind, host and device", s.Memcpy(hostAddr, d, 4096, cudart.MemcpyDefault), 0},
		}
		// Pageable host memory on the device side needs pageable access.
		deviceSide := cudart.ErrorInvalidValue
		if pageable {
			deviceSide = 0
		}
		tests = append(tests,
			struct {
				name string
				err  error
				code cudart.ErrorCode
			}{"pageable as device destination", s.Memcpy(hostAddr, d, 16, cudart.MemcpyHostToDevice), deviceSide},
			struct {
				name string
				err  error
				code cudart.ErrorCode
			}{"memset of pageable memory", s.Memset(hostAddr, 1, 16), deviceSide},
		)
		for _, tt := range tests {
			if tt.code == 0 {
				assert.NoError(t, tt.err, "pageable=%v %s", pageable, tt.name)
			} else {
				requireCode(t, tt.err, tt.code, "pageable=%v %s", pageable, tt.name)
			}
		}
		runtime.KeepAlive(host)
		require.NoError(t, s.Free(d))
	}
}

func TestSimPointerAttributes(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 64 * mib})
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	require.NoError(t, s.SetDevice(1))
	defer func() { require.NoError(t, s.SetDevice(0)) }()

	d, err := s.Malloc(1000)
	require.NoError(t, err)
	m, err := s.MallocManaged(1000, cudart.MemAttachGlobal)
	require.NoError(t, err)
	h, err := s.HostAlloc(1000, cudart.HostAllocDefault)
	require.NoError(t, err)
	a, err := s.MallocAsync(1000, cudart.DefaultStream)
	require.NoError(t, err)
	freed, err := s.Malloc(1000)
	require.NoError(t, err)
	require.NoError(t, s.Free(freed))
	_, hostAddr := hostBuf(16)

	tests := []struct {
		name string
		ptr  uintptr
		want cudart.PointerAttributes
	}{
		{"device", d, cudart.PointerAttributes{Type: cudart.MemoryTypeDevice, Device: 1, DevicePointer: d}},
		{"device interior", d + 999, cudart.PointerAttributes{Type: cudart.MemoryTypeDevice, Device: 1, DevicePointer: d + 999}},
		{"managed", m, cudart.PointerAttributes{Type: cudart.MemoryTypeManaged, Device: 1, DevicePointer: m, HostPointer: m}},
		{"pinned", h + 8, cudart.PointerAttributes{Type: cudart.MemoryTypeHost, Device: 1, DevicePointer: h + 8, HostPointer: h + 8}},
		{"pool", a, cudart.PointerAttributes{Type: cudart.MemoryTypeDevice, Device: 1, DevicePointer: a}},
		{"pool reserved, not allocated", a + 4096, cudart.PointerAttributes{Type: cudart.MemoryTypeDevice, Device: 1, DevicePointer: a + 4096}},
		{"freed", freed, cudart.PointerAttributes{Type: cudart.MemoryTypeUnregistered, Device: cudart.InvalidDeviceID, HostPointer: freed}},
		{"pageable host", hostAddr, cudart.PointerAttributes{Type: cudart.MemoryTypeUnregistered, Device: cudart.InvalidDeviceID, HostPointer: hostAddr}},
	}
	for _, tt := range tests {
		got, err := s.PointerGetAttributes(tt.ptr)
		require.NoError(t, err, tt.name)
		assert.Equal(t, tt.want, got, tt.name)
	}
	_, err = s.PointerGetAttributes(0)
	requireCode(t, err, cudart.ErrorInvalidValue)

	// With pageable memory access the device reaches host memory at its
	// own address.
	pageable := newTestSim(t, Config{MemoryPerDevice: mib, PageableMemoryAccess: true})
	got, err := pageable.PointerGetAttributes(hostAddr)
	require.NoError(t, err)
	assert.Equal(t, cudart.PointerAttributes{Type: cudart.MemoryTypeUnregistered, Device: cudart.InvalidDeviceID, DevicePointer: hostAddr, HostPointer: hostAddr}, got)

	require.NoError(t, s.Free(d))
	require.NoError(t, s.Free(m))
	require.NoError(t, s.FreeHost(h))
	require.NoError(t, s.FreeAsync(a, cudart.DefaultStream))
	assert.Zero(t, s.LiveAllocations(1))
}

func TestSimHostAndManagedArguments(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 16 * mib})
	p, err := s.MallocManaged(0, cudart.MemAttachGlobal)
	require.NoError(t, err, "zero bytes succeed, as on CUDA 13.0")
	assert.Zero(t, p)
	_, err = s.MallocManaged(0, cudart.MemAttachSingle)
	requireCode(t, err, cudart.ErrorInvalidValue, "flags are checked even for zero bytes")
	for _, flags := range []uint32{0, cudart.MemAttachSingle, 3, 8} {
		_, err = s.MallocManaged(64, flags)
		requireCode(t, err, cudart.ErrorInvalidValue, "flags %d", flags)
	}
	p, err = s.MallocManaged(64, cudart.MemAttachHost)
	require.NoError(t, err)
	require.NoError(t, s.Free(p))

	p, err = s.HostAlloc(0, cudart.HostAllocDefault)
	require.NoError(t, err)
	assert.Zero(t, p)
	_, err = s.HostAlloc(64, 8)
	requireCode(t, err, cudart.ErrorInvalidValue)
	p, err = s.HostAlloc(64, cudart.HostAllocPortable|cudart.HostAllocMapped|cudart.HostAllocWriteCombined)
	require.NoError(t, err)
	require.NoError(t, s.FreeHost(p))

	// Pinned and managed memory do not use device capacity; each has a limit
	// of four device capacities.
	var pinned, managed []uintptr
	for i := 0; i < 4; i++ {
		p, err := s.HostAlloc(16*mib, cudart.HostAllocDefault)
		require.NoError(t, err)
		pinned = append(pinned, p)
		p, err = s.MallocManaged(16*mib, cudart.MemAttachGlobal)
		require.NoError(t, err)
		managed = append(managed, p)
	}
	free, _, err := s.MemGetInfo()
	require.NoError(t, err)
	assert.Equal(t, uint64(16*mib), free)
	_, err = s.HostAlloc(1, cudart.HostAllocDefault)
	requireCode(t, err, cudart.ErrorMemoryAllocation)
	_, err = s.MallocManaged(1, cudart.MemAttachGlobal)
	requireCode(t, err, cudart.ErrorMemoryAllocation)
	assert.Equal(t, 8, s.LiveAllocations(0))
	for i := range pinned {
		require.NoError(t, s.FreeHost(pinned[i]))
		require.NoError(t, s.Free(managed[i]))
	}
	assert.Zero(t, s.LiveAllocations(0))
}

func TestSimInjectAllocFailures(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 16 * mib})
	s.InjectAllocFailures(5)
	_, err := s.Malloc(1)
	requireCode(t, err, cudart.ErrorMemoryAllocation)
	assert.Contains(t, err.Error(), "injected")
	_, err = s.MallocManaged(1, cudart.MemAttachGlobal)
	requireCode(t, err, cudart.ErrorMemoryAllocation)
	_, err = s.HostAlloc(1, 0)
	requireCode(t, err, cudart.ErrorMemoryAllocation)
	// Zero-byte and invalid calls do not use up a failure.
	_, err = s.Malloc(0)
	require.NoError(t, err)
	_, err = s.MallocManaged(1, 0)
	requireCode(t, err, cudart.ErrorInvalidValue)
	_, err = s.MallocAsync(1, cudart.DefaultStream)
	requireCode(t, err, cudart.ErrorMemoryAllocation)
	pool, err := s.DeviceGetDefaultMemPool(0)
	require.NoError(t, err)
	_, err = s.MallocFromPoolAsync(1, pool, cudart.DefaultStream)
	requireCode(t, err, cudart.ErrorMemoryAllocation)
	// Used up: allocations work again.
	p, err := s.Malloc(1)
	require.NoError(t, err)
	require.NoError(t, s.Free(p))

	s.InjectAllocFailures(3)
	s.InjectAllocFailures(0)
	p, err = s.Malloc(1)
	require.NoError(t, err)
	require.NoError(t, s.Free(p))
	assert.Zero(t, s.LiveAllocations(0))
	assert.Zero(t, s.UsedBytes(0))
}

// TestSimReleasesPages checks that a large freed block gives its pages back:
// they read as zeros when allocated again.
func TestSimReleasesPages(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 64 * mib})
	p, err := s.Malloc(4 * mib)
	require.NoError(t, err)
	require.NoError(t, s.Memset(p, 0x5a, 4*mib))
	require.NoError(t, s.Free(p))
	q, err := s.Malloc(4 * mib)
	require.NoError(t, err)
	require.Equal(t, p, q, "best fit reuses the freed block")
	b := bytesAt(q, 4*mib)
	assert.Zero(t, b[0])
	assert.Zero(t, b[4*mib-1])
	require.NoError(t, s.Free(q))
}

func TestSimClose(t *testing.T) {
	s := New(Config{MemoryPerDevice: 16 * mib})
	st, err := s.StreamCreate(0)
	require.NoError(t, err)
	require.NoError(t, s.PauseStream(st))
	d, err := s.Malloc(64)
	require.NoError(t, err)
	require.NoError(t, s.MemsetAsync(d, 1, 64, st))
	done := make(chan error)
	go func() { done <- s.StreamSynchronize(st) }()
	require.NoError(t, s.Close())
	requireCode(t, <-done, cudart.ErrorCudartUnloading)
	_, err = s.Malloc(1)
	requireCode(t, err, cudart.ErrorCudartUnloading)
	requireCode(t, s.Free(d), cudart.ErrorCudartUnloading)
	require.NoError(t, s.Close(), "Close twice")
}

// TestSimManyAllocations checks that the allocator stays fast with many live
// allocations (30k allocations, then 30k frees in random order).
func TestSimManyAllocations(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 1 << 30})
	rng := rand.New(rand.NewSource(2))
	ptrs := make([]uintptr, 0, 30000)
	for i := 0; i < 30000; i++ {
		p, err := s.Malloc(uintptr(256 + rng.Intn(4096)))
		if err != nil {
			t.Fatal(err)
		}
		ptrs = append(ptrs, p)
	}
	rng.Shuffle(len(ptrs), func(i, j int) { ptrs[i], ptrs[j] = ptrs[j], ptrs[i] })
	for _, p := range ptrs {
		if err := s.Free(p); err != nil {
			t.Fatal(err)
		}
	}
	assert.Zero(t, s.UsedBytes(0))
	// Everything coalesced back into one free block.
	assert.Equal(t, 1, treapSize(s.devs[0].rng.arena.addr.root))
}

func treapSize(n *treapNode) int {
	if n == nil {
		return 0
	}
	return 1 + treapSize(n.left) + treapSize(n.right)
}

// TestSimConcurrent hammers one simulator from 16 goroutines (run it with
// -race): allocations of every kind, copies, stream work and frees.
func TestSimConcurrent(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 256 * mib})
	const workers, rounds = 16, 500
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			fail := func(err error) bool {
				if err != nil {
					errs <- err
					return true
				}
				return false
			}
			if fail(s.SetDevice(w % 2)) {
				return
			}
			st, err := s.StreamCreate(cudart.StreamFlagNonBlocking)
			if fail(err) {
				return
			}
			host, hostAddr := hostBuf(4096)
			for i := 0; i < rounds; i++ {
				n := uintptr(1 + (i*131+w*17)%4096)
				var p uintptr
				switch i % 3 {
				case 0:
					p, err = s.Malloc(n)
				case 1:
					p, err = s.MallocAsync(n, st)
				default:
					p, err = s.MallocManaged(n, cudart.MemAttachGlobal)
				}
				if fail(err) {
					return
				}
				for j := range host[:n] {
					host[j] = byte(w + i + j)
				}
				if fail(s.MemcpyAsync(p, hostAddr, n, cudart.MemcpyHostToDevice, st)) ||
					fail(s.StreamSynchronize(st)) {
					return
				}
				got := bytesAt(p, n)
				for j := range got {
					if got[j] != byte(w+i+j) {
						errs <- fmt.Errorf("copy corrupted: worker %d round %d ptr %#x n %d byte %d: got %d want %d", w, i, p, n, j, got[j], byte(w+i+j))
						return
					}
				}
				switch i % 3 {
				case 1:
					err = s.FreeAsync(p, st)
				default:
					err = s.Free(p)
				}
				if fail(err) {
					return
				}
			}
			if fail(s.StreamSynchronize(st)) || fail(s.StreamDestroy(st)) || fail(s.SetDevice(0)) {
				return
			}
			runtime.KeepAlive(host)
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, s.DeviceSynchronize())
	for dev := 0; dev < 2; dev++ {
		assert.Zero(t, s.LiveAllocations(dev), "device %d", dev)
	}
}

// TestSimArenaInvariants drives an arena with random allocations and frees,
// checking after each step that blocks tile the region, free neighbours have
// coalesced, and both indexes agree with the blocks.
func TestSimArenaInvariants(t *testing.T) {
	a := newSimArena()
	type region struct{ start, size uintptr }
	// Two regions, adjacent in address space: blocks never merge across them.
	regions := []region{{1 << 20, 1 << 24}, {1<<20 + 1<<24, 8192}}
	for _, r := range regions {
		b := a.addRegion(r.start, r.size)
		_, whole := a.wholeFree[b]
		require.True(t, whole)
	}
	rng := rand.New(rand.NewSource(3))
	var live []*simBlock
	check := func() {
		t.Helper()
		nfree, nwhole := 0, 0
		for _, r := range regions {
			b := a.find(r.start)
			require.NotNil(t, b)
			require.Nil(t, b.prev, "a region starts with a block of its own")
			end := r.start
			for ; b != nil; b = b.next {
				require.Equal(t, end, b.start, "blocks tile the region")
				require.Zero(t, b.size%simAlign)
				require.Equal(t, b, a.find(b.start+b.size/2))
				if b.free {
					nfree++
					require.False(t, b.next != nil && b.next.free, "adjacent free blocks at %#x", b.start)
					require.Equal(t, b, a.free.ceil(treapKey{b.size, b.start}).blk)
					if b.whole() {
						nwhole++
					}
				}
				end = b.end()
			}
			require.Equal(t, r.start+r.size, end)
		}
		require.Equal(t, nfree, treapSize(a.free.root))
		require.Equal(t, nwhole, len(a.wholeFree))
	}
	for i := 0; i < 3000; i++ {
		if len(live) > 0 && rng.Intn(2) == 0 {
			j := rng.Intn(len(live))
			a.release(live[j])
			live = append(live[:j], live[j+1:]...)
		} else if b := a.alloc(uintptr(1+rng.Intn(64)) * simAlign); b != nil {
			require.False(t, b.free)
			live = append(live, b)
		}
		if i%50 == 0 {
			check()
		}
	}
	for _, b := range live {
		a.release(b)
	}
	check()
	require.Equal(t, 2, len(a.wholeFree))
	// Best fit: a request that fits the small region exactly goes there.
	b := a.alloc(8192)
	require.Equal(t, regions[1].start, b.start)
	assert.Nil(t, a.alloc(1<<24+simAlign))
	assert.Nil(t, a.find(regions[0].start-1))
	assert.Nil(t, a.find(regions[1].start+regions[1].size))
	a.release(b)
	check()
	// A whole free region can be taken out.
	a.removeRegion(a.find(regions[1].start))
	assert.Nil(t, a.find(regions[1].start))
	assert.Equal(t, 1, len(a.wholeFree))
}

// BenchmarkSimMallocFree measures an allocation and a free with 10k other
// allocations live.
func BenchmarkSimMallocFree(b *testing.B) {
	s := newTestSim(b, Config{})
	for i := 0; i < 10000; i++ {
		if _, err := s.Malloc(uintptr(256 + i%4096)); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := s.Malloc(uintptr(256 + i%8192))
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Free(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSimMallocAsync measures a stream-ordered allocation and free from
// a pool that keeps its memory.
func BenchmarkSimMallocAsync(b *testing.B) {
	s := newTestSim(b, Config{})
	pool, err := s.DeviceGetDefaultMemPool(0)
	require.NoError(b, err)
	require.NoError(b, s.MemPoolSetAttribute(pool, cudart.MemPoolAttrReleaseThreshold, ^uint64(0)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := s.MallocAsync(uintptr(256+i%8192), cudart.DefaultStream)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.FreeAsync(p, cudart.DefaultStream); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSimGetDevice measures the per-thread current-device lookup.
func BenchmarkSimGetDevice(b *testing.B) {
	s := newTestSim(b, Config{})
	for i := 0; i < b.N; i++ {
		if _, err := s.GetDevice(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSimCapacityRounding(t *testing.T) {
	for _, tt := range []struct{ cfg, want uint64 }{{1000, 768}, {100, 256}, {4096, 4096}} {
		s := newTestSim(t, Config{MemoryPerDevice: tt.cfg})
		free, total, err := s.MemGetInfo()
		require.NoError(t, err)
		assert.Equal(t, tt.want, total, "configured %d", tt.cfg)
		assert.Equal(t, tt.want, free)
		p, err := s.Malloc(uintptr(tt.want))
		require.NoError(t, err)
		_, err = s.Malloc(1)
		requireCode(t, err, cudart.ErrorMemoryAllocation)
		require.NoError(t, s.Free(p))
	}
}
