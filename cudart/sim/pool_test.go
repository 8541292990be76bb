package sim

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
)

// poolAttrs reads a pool's reserved and used memory, current and high.
func poolAttrs(t *testing.T, s *Runtime, pool cudart.MemPool) (reserved, used, reservedHigh, usedHigh uint64) {
	t.Helper()
	get := func(a cudart.MemPoolAttr) uint64 {
		v, err := s.MemPoolGetAttribute(pool, a)
		require.NoError(t, err)
		return v
	}
	return get(cudart.MemPoolAttrReservedMemCurrent), get(cudart.MemPoolAttrUsedMemCurrent),
		get(cudart.MemPoolAttrReservedMemHigh), get(cudart.MemPoolAttrUsedMemHigh)
}

func freeMem(t *testing.T, s *Runtime) uint64 {
	t.Helper()
	free, _, err := s.MemGetInfo()
	require.NoError(t, err)
	return free
}

func TestSimPoolReuseAndRelease(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 64 * mib})
	pool, err := s.DeviceGetDefaultMemPool(0)
	require.NoError(t, err)
	th, err := s.MemPoolGetAttribute(pool, cudart.MemPoolAttrReleaseThreshold)
	require.NoError(t, err)
	assert.Zero(t, th, "CUDA's default release threshold is 0")

	p, err := s.MallocAsync(mib, cudart.DefaultStream)
	require.NoError(t, err)
	assert.Zero(t, p%256)
	res, used, _, _ := poolAttrs(t, s, pool)
	assert.Equal(t, uint64(2*mib), res, "the pool reserves 2 MiB chunks")
	assert.Equal(t, uint64(mib), used)
	assert.Equal(t, uint64(62*mib), freeMem(t, s), "reserved memory counts against the device")
	assert.Equal(t, uint64(2*mib), s.UsedBytes(0))

	q, err := s.MallocAsync(mib/2, cudart.DefaultStream)
	require.NoError(t, err)
	res, used, _, _ = poolAttrs(t, s, pool)
	assert.Equal(t, uint64(2*mib), res, "the second allocation fits the first chunk")
	assert.Equal(t, uint64(mib+mib/2), used)

	require.NoError(t, s.FreeAsync(p, cudart.DefaultStream))
	r, err := s.MallocAsync(mib, cudart.DefaultStream)
	require.NoError(t, err)
	assert.Equal(t, p, r, "freed memory is reused")
	require.NoError(t, s.FreeAsync(r, cudart.DefaultStream))
	require.NoError(t, s.FreeAsync(q, cudart.DefaultStream))
	res, used, resHigh, usedHigh := poolAttrs(t, s, pool)
	assert.Equal(t, uint64(2*mib), res, "nothing is released before a synchronization")
	assert.Zero(t, used)
	assert.Equal(t, uint64(2*mib), resHigh)
	assert.Equal(t, uint64(mib+mib/2), usedHigh)
	assert.Equal(t, 0, s.LiveAllocations(0))

	// Synchronizing releases everything above the threshold (0).
	require.NoError(t, s.StreamSynchronize(cudart.DefaultStream))
	res, _, _, _ = poolAttrs(t, s, pool)
	assert.Zero(t, res)
	assert.Equal(t, uint64(64*mib), freeMem(t, s))

	// With a threshold the pool keeps that much across synchronizations.
	require.NoError(t, s.MemPoolSetAttribute(pool, cudart.MemPoolAttrReleaseThreshold, 3*mib))
	var ps []uintptr
	for i := 0; i < 3; i++ { // three chunks of 2 MiB
		p, err := s.MallocAsync(2*mib, cudart.DefaultStream)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	for _, p := range ps {
		require.NoError(t, s.FreeAsync(p, cudart.DefaultStream))
	}
	ev, err := s.EventCreate(0)
	require.NoError(t, err)
	require.NoError(t, s.EventRecord(ev, cudart.DefaultStream))
	require.NoError(t, s.EventSynchronize(ev))
	res, _, _, _ = poolAttrs(t, s, pool)
	assert.Equal(t, uint64(4*mib), res, "release down to, and not below, the threshold")

	// TrimTo keeps at least what it is asked to.
	require.NoError(t, s.MemPoolTrimTo(pool, 3*mib))
	res, _, _, _ = poolAttrs(t, s, pool)
	assert.Equal(t, uint64(4*mib), res)
	require.NoError(t, s.MemPoolTrimTo(pool, mib))
	res, _, _, _ = poolAttrs(t, s, pool)
	assert.Equal(t, uint64(2*mib), res)
	require.NoError(t, s.MemPoolTrimTo(pool, 0))
	res, _, resHigh, _ = poolAttrs(t, s, pool)
	assert.Zero(t, res)
	assert.Equal(t, uint64(6*mib), resHigh)

	// High-water marks reset to the current value, and only that.
	require.NoError(t, s.MemPoolSetAttribute(pool, cudart.MemPoolAttrReservedMemHigh, 0))
	require.NoError(t, s.MemPoolSetAttribute(pool, cudart.MemPoolAttrUsedMemHigh, 0))
	_, _, resHigh, usedHigh = poolAttrs(t, s, pool)
	assert.Zero(t, resHigh)
	assert.Zero(t, usedHigh)
	requireCode(t, s.MemPoolSetAttribute(pool, cudart.MemPoolAttrUsedMemHigh, 5), cudart.ErrorInvalidValue)
	requireCode(t, s.MemPoolSetAttribute(pool, cudart.MemPoolAttrReservedMemCurrent, 0), cudart.ErrorInvalidValue)
	requireCode(t, s.MemPoolSetAttribute(pool, cudart.MemPoolAttrUsedMemCurrent, 0), cudart.ErrorInvalidValue)

	// A device synchronization releases too; the threshold may be "all".
	require.NoError(t, s.MemPoolSetAttribute(pool, cudart.MemPoolAttrReleaseThreshold, ^uint64(0)))
	p, err = s.MallocAsync(5*mib, cudart.DefaultStream)
	require.NoError(t, err)
	require.NoError(t, s.FreeAsync(p, cudart.DefaultStream))
	require.NoError(t, s.DeviceSynchronize())
	res, _, _, _ = poolAttrs(t, s, pool)
	assert.Equal(t, uint64(6*mib), res)
	require.NoError(t, s.MemPoolSetAttribute(pool, cudart.MemPoolAttrReleaseThreshold, 0))
	require.NoError(t, s.DeviceSynchronize())
	res, _, _, _ = poolAttrs(t, s, pool)
	assert.Zero(t, res)
}

func TestSimPoolAttributes(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 16 * mib})
	pool, err := s.DeviceGetDefaultMemPool(0)
	require.NoError(t, err)
	for _, a := range []cudart.MemPoolAttr{cudart.MemPoolReuseFollowEventDependencies, cudart.MemPoolReuseAllowOpportunistic, cudart.MemPoolReuseAllowInternalDependencies} {
		v, err := s.MemPoolGetAttribute(pool, a)
		require.NoError(t, err)
		assert.Equal(t, uint64(1), v, "reuse policies are on by default")
		require.NoError(t, s.MemPoolSetAttribute(pool, a, 0))
		v, err = s.MemPoolGetAttribute(pool, a)
		require.NoError(t, err)
		assert.Zero(t, v)
		requireCode(t, s.MemPoolSetAttribute(pool, a, 2), cudart.ErrorInvalidValue)
	}
	_, err = s.MemPoolGetAttribute(pool, cudart.MemPoolAttr(99))
	requireCode(t, err, cudart.ErrorInvalidValue)
	requireCode(t, s.MemPoolSetAttribute(pool, cudart.MemPoolAttr(0), 0), cudart.ErrorInvalidValue)

	// Unknown pools.
	for _, bad := range []cudart.MemPool{0, 0x12345} {
		_, err = s.MemPoolGetAttribute(bad, cudart.MemPoolAttrReleaseThreshold)
		requireCode(t, err, cudart.ErrorInvalidValue)
		requireCode(t, s.MemPoolSetAttribute(bad, cudart.MemPoolAttrReleaseThreshold, 0), cudart.ErrorInvalidValue)
		requireCode(t, s.MemPoolTrimTo(bad, 0), cudart.ErrorInvalidValue)
		requireCode(t, s.MemPoolDestroy(bad), cudart.ErrorInvalidValue)
		_, err = s.MallocFromPoolAsync(1, bad, cudart.DefaultStream)
		requireCode(t, err, cudart.ErrorInvalidValue)
	}
	// Each device has its own default pool, which cannot be destroyed.
	pool1, err := s.DeviceGetDefaultMemPool(1)
	require.NoError(t, err)
	assert.NotEqual(t, pool, pool1)
	again, err := s.DeviceGetDefaultMemPool(0)
	require.NoError(t, err)
	assert.Equal(t, pool, again)
	requireCode(t, s.MemPoolDestroy(pool), cudart.ErrorInvalidValue)
}

func TestSimPoolOutOfMemory(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 64 * mib})
	pool, err := s.DeviceGetDefaultMemPool(0)
	require.NoError(t, err)
	_, err = s.MallocAsync(64*mib+1, cudart.DefaultStream)
	requireCode(t, err, cudart.ErrorMemoryAllocation)
	_, err = s.MallocAsync(^uintptr(0), cudart.DefaultStream)
	requireCode(t, err, cudart.ErrorMemoryAllocation)

	// A pool that cannot grow gives back its own free chunks and tries again.
	p, err := s.MallocAsync(2*mib, cudart.DefaultStream)
	require.NoError(t, err)
	require.NoError(t, s.FreeAsync(p, cudart.DefaultStream)) // 2 MiB stay reserved: no sync
	big, err := s.Malloc(60 * mib)
	require.NoError(t, err)
	p, err = s.MallocAsync(3*mib, cudart.DefaultStream)
	require.NoError(t, err)
	res, _, _, _ := poolAttrs(t, s, pool)
	assert.Equal(t, uint64(3*mib), res, "the free 2 MiB chunk went back; exactly 3 MiB fit")
	_, err = s.MallocAsync(2*mib, cudart.DefaultStream)
	requireCode(t, err, cudart.ErrorMemoryAllocation)
	require.NoError(t, s.FreeAsync(p, cudart.DefaultStream))
	require.NoError(t, s.Free(big))
	require.NoError(t, s.StreamSynchronize(cudart.DefaultStream))
	assert.Equal(t, uint64(64*mib), freeMem(t, s))

	// A pool's maximum size caps its reservation.
	capped, err := s.MemPoolCreate(cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned, Location: cudart.DeviceLocation(0), MaxSize: 5 * mib})
	require.NoError(t, err)
	a, err := s.MallocFromPoolAsync(3*mib, capped, cudart.DefaultStream) // a 4 MiB chunk
	require.NoError(t, err)
	b, err := s.MallocFromPoolAsync(mib, capped, cudart.DefaultStream) // the rest of it
	require.NoError(t, err)
	_, err = s.MallocFromPoolAsync(2*mib, capped, cudart.DefaultStream)
	requireCode(t, err, cudart.ErrorMemoryAllocation, "4 + 2 MiB is over the cap")
	c, err := s.MallocFromPoolAsync(mib, capped, cudart.DefaultStream) // a chunk of exactly the 1 MiB left
	require.NoError(t, err)
	res, _, _, _ = poolAttrs(t, s, capped)
	assert.Equal(t, uint64(5*mib), res)
	_, err = s.MallocFromPoolAsync(1, capped, cudart.DefaultStream)
	requireCode(t, err, cudart.ErrorMemoryAllocation)
	assert.Contains(t, err.Error(), "maximum size")
	for _, p := range []uintptr{a, b, c} {
		require.NoError(t, s.FreeAsync(p, cudart.DefaultStream))
	}
	require.NoError(t, s.MemPoolDestroy(capped))
	require.NoError(t, s.DeviceSynchronize())
	assert.Equal(t, uint64(64*mib), freeMem(t, s))
}

func TestSimPoolPendingFree(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 64 * mib})
	pool, err := s.DeviceGetDefaultMemPool(0)
	require.NoError(t, err)
	st, err := s.StreamCreate(0)
	require.NoError(t, err)
	p, err := s.MallocAsync(mib, st)
	require.NoError(t, err)
	require.NoError(t, s.PauseStream(st))
	require.NoError(t, s.MemsetAsync(p, 1, mib, st))
	require.NoError(t, s.FreeAsync(p, st))
	_, used, _, _ := poolAttrs(t, s, pool)
	assert.Equal(t, uint64(mib), used, "the free has not run")
	assert.Equal(t, 1, s.LiveAllocations(0))
	q, err := s.MallocAsync(mib, cudart.DefaultStream)
	require.NoError(t, err)
	assert.NotEqual(t, p, q, "memory still in use by the paused stream is not handed out")
	require.NoError(t, s.FreeAsync(q, cudart.DefaultStream))
	require.NoError(t, s.StreamSynchronize(cudart.DefaultStream))
	res, _, _, _ := poolAttrs(t, s, pool)
	assert.Equal(t, uint64(2*mib), res, "a chunk with a pending free is not released")
	require.NoError(t, s.MemPoolTrimTo(pool, 0))
	res, _, _, _ = poolAttrs(t, s, pool)
	assert.Equal(t, uint64(2*mib), res)

	require.NoError(t, s.ResumeStream(st))
	_, used, _, _ = poolAttrs(t, s, pool)
	assert.Zero(t, used)
	assert.Zero(t, s.LiveAllocations(0))
	require.NoError(t, s.StreamSynchronize(st))
	res, _, _, _ = poolAttrs(t, s, pool)
	assert.Zero(t, res)
}

func TestSimPoolFreeWithCudaFree(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 64 * mib})
	pool, err := s.DeviceGetDefaultMemPool(0)
	require.NoError(t, err)
	p, err := s.MallocAsync(1000, cudart.DefaultStream)
	require.NoError(t, err)
	require.NoError(t, s.Free(p), "cudaFree accepts stream-ordered allocations")
	_, used, _, _ := poolAttrs(t, s, pool)
	assert.Zero(t, used)
	requireCode(t, s.Free(p), cudart.ErrorInvalidValue)
}

func TestSimPoolDestroyWithOutstanding(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 64 * mib})
	pool, err := s.MemPoolCreate(cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned, Location: cudart.DeviceLocation(0)})
	require.NoError(t, err)
	p, err := s.MallocFromPoolAsync(mib, pool, cudart.DefaultStream)
	require.NoError(t, err)
	q, err := s.MallocFromPoolAsync(3*mib, pool, cudart.DefaultStream)
	require.NoError(t, err)
	require.NoError(t, s.MemPoolDestroy(pool))
	requireCode(t, s.MemPoolDestroy(pool), cudart.ErrorInvalidValue, "the handle is gone")
	_, err = s.MemPoolGetAttribute(pool, cudart.MemPoolAttrReservedMemCurrent)
	requireCode(t, err, cudart.ErrorInvalidValue)
	// Outstanding allocations stay usable and are freed as usual.
	require.NoError(t, s.Memset(p, 3, mib))
	assert.Equal(t, uint64(6*mib), s.UsedBytes(0))
	require.NoError(t, s.Free(p))
	assert.Equal(t, uint64(4*mib), s.UsedBytes(0), "p's free chunk went back at once")
	require.NoError(t, s.FreeAsync(q, cudart.DefaultStream))
	assert.Zero(t, s.UsedBytes(0), "the last free gives back the pool's memory")
	assert.Zero(t, s.LiveAllocations(0))
}

func TestSimMemPoolCreate(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 64 * mib})
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tests := []struct {
		name     string
		props    cudart.MemPoolProps
		code     cudart.ErrorCode  // 0: success
		wantType cudart.MemoryType // of an allocation from it
		wantDev  int
	}{
		{"device 1", cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned, Location: cudart.DeviceLocation(1)}, 0, cudart.MemoryTypeDevice, 1},
		{"device with POSIX fd export", cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned, Location: cudart.DeviceLocation(0), HandleTypes: cudart.MemHandleTypePosixFileDescriptor}, 0, cudart.MemoryTypeDevice, 0},
		{"pinned host", cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned, Location: cudart.HostLocation()}, 0, cudart.MemoryTypeHost, 0},
		{"pinned host NUMA 0", cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned, Location: cudart.MemLocation{Type: cudart.MemLocationTypeHostNuma, ID: 0}}, 0, cudart.MemoryTypeHost, 0},
		{"managed on device", cudart.MemPoolProps{AllocType: cudart.MemAllocationTypeManaged, Location: cudart.DeviceLocation(1)}, 0, cudart.MemoryTypeManaged, 1},
		{"managed on host", cudart.MemPoolProps{AllocType: cudart.MemAllocationTypeManaged, Location: cudart.HostLocation()}, 0, cudart.MemoryTypeManaged, 0},
		{"invalid alloc type", cudart.MemPoolProps{AllocType: cudart.MemAllocationTypeInvalid, Location: cudart.DeviceLocation(0)}, cudart.ErrorInvalidValue, 0, 0},
		{"invalid location", cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned}, cudart.ErrorInvalidValue, 0, 0},
		{"missing NUMA node", cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned, Location: cudart.MemLocation{Type: cudart.MemLocationTypeHostNuma, ID: 1}}, cudart.ErrorInvalidValue, 0, 0},
		{"missing device", cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned, Location: cudart.DeviceLocation(2)}, cudart.ErrorInvalidDevice, 0, 0},
		{"fabric export", cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned, Location: cudart.DeviceLocation(0), HandleTypes: cudart.MemHandleTypeFabric}, cudart.ErrorNotSupported, 0, 0},
		{"win32 export", cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned, Location: cudart.DeviceLocation(0), HandleTypes: cudart.MemHandleTypeWin32}, cudart.ErrorNotSupported, 0, 0},
		{"unknown export", cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned, Location: cudart.DeviceLocation(0), HandleTypes: 0x100}, cudart.ErrorInvalidValue, 0, 0},
		{"managed export", cudart.MemPoolProps{AllocType: cudart.MemAllocationTypeManaged, Location: cudart.DeviceLocation(0), HandleTypes: cudart.MemHandleTypePosixFileDescriptor}, cudart.ErrorNotSupported, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool, err := s.MemPoolCreate(tt.props)
			if tt.code != 0 {
				requireCode(t, err, tt.code)
				return
			}
			require.NoError(t, err)
			defer func() { require.NoError(t, s.MemPoolDestroy(pool)) }()
			p, err := s.MallocFromPoolAsync(1000, pool, cudart.DefaultStream)
			require.NoError(t, err)
			a, err := s.PointerGetAttributes(p)
			require.NoError(t, err)
			assert.Equal(t, tt.wantType, a.Type)
			assert.Equal(t, tt.wantDev, a.Device)
			require.NoError(t, s.Memset(p, 1, 1000))
			require.NoError(t, s.FreeAsync(p, cudart.DefaultStream))
		})
	}
	require.NoError(t, s.DeviceSynchronize())
	assert.Zero(t, s.UsedBytes(0))
	assert.Zero(t, s.UsedBytes(1))

	// Managed pools need CUDA 13 and concurrent managed access.
	managed := cudart.MemPoolProps{AllocType: cudart.MemAllocationTypeManaged, Location: cudart.DeviceLocation(0)}
	_, err := newTestSim(t, Config{MemoryPerDevice: mib, RuntimeVersion: 12080}).MemPoolCreate(managed)
	requireCode(t, err, cudart.ErrorInvalidValue)
	_, err = newTestSim(t, Config{MemoryPerDevice: mib, NoConcurrentManaged: true}).MemPoolCreate(managed)
	requireCode(t, err, cudart.ErrorNotSupported)
}

func TestSimNoMemoryPools(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: mib, NoMemoryPools: true})
	_, err := s.MemPoolCreate(cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned, Location: cudart.DeviceLocation(0)})
	requireCode(t, err, cudart.ErrorNotSupported)
	_, err = s.DeviceGetDefaultMemPool(0)
	requireCode(t, err, cudart.ErrorNotSupported)
	_, err = s.MallocAsync(1, cudart.DefaultStream)
	requireCode(t, err, cudart.ErrorNotSupported)
	_, err = s.MallocFromPoolAsync(1, 0x10010, cudart.DefaultStream)
	requireCode(t, err, cudart.ErrorNotSupported)
	requireCode(t, s.FreeAsync(0x1000, cudart.DefaultStream), cudart.ErrorNotSupported)
	_, err = s.MemPoolGetAttribute(0x10010, cudart.MemPoolAttrReleaseThreshold)
	requireCode(t, err, cudart.ErrorNotSupported)
	// Plain allocations still work, and synchronizing has no pools to trim.
	p, err := s.Malloc(100)
	require.NoError(t, err)
	require.NoError(t, s.DeviceSynchronize())
	require.NoError(t, s.Free(p))
}

func TestSimMallocAsyncUsesStreamDevice(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 16 * mib})
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	require.NoError(t, s.SetDevice(1))
	st, err := s.StreamCreate(0)
	require.NoError(t, err)
	require.NoError(t, s.SetDevice(0))
	p, err := s.MallocAsync(100, st)
	require.NoError(t, err)
	a, err := s.PointerGetAttributes(p)
	require.NoError(t, err)
	assert.Equal(t, 1, a.Device, "the pool of the stream's device")
	assert.Equal(t, 1, s.LiveAllocations(1))
	assert.Equal(t, uint64(2*mib), s.UsedBytes(1))
	require.NoError(t, s.FreeAsync(p, st))
	require.NoError(t, s.StreamSynchronize(st))
	assert.Zero(t, s.UsedBytes(1))
}

func TestSimManagedHints(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 16 * mib})
	m, err := s.MallocManaged(8192, cudart.MemAttachGlobal)
	require.NoError(t, err)
	d, err := s.Malloc(8192)
	require.NoError(t, err)
	h, err := s.HostAlloc(8192, 0)
	require.NoError(t, err)
	_, hostAddr := hostBuf(4096)
	st, err := s.StreamCreate(0)
	require.NoError(t, err)

	// Prefetch runs in stream order.
	require.NoError(t, s.PauseStream(st))
	require.NoError(t, s.MemPrefetchAsync(m, 8192, cudart.DeviceLocation(1), st))
	info, ok := s.ManagedInfo(m + 100)
	require.True(t, ok)
	assert.Equal(t, cudart.MemLocation{}, info.LastPrefetch)
	require.NoError(t, s.ResumeStream(st))
	info, _ = s.ManagedInfo(m)
	assert.Equal(t, cudart.DeviceLocation(1), info.LastPrefetch)
	require.NoError(t, s.MemPrefetchAsync(m+4096, 4096, cudart.HostLocation(), cudart.DefaultStream))
	info, _ = s.ManagedInfo(m)
	assert.Equal(t, cudart.HostLocation(), info.LastPrefetch)
	_, ok = s.ManagedInfo(d)
	assert.False(t, ok)

	tests := []struct {
		name string
		err  error
		code cudart.ErrorCode
	}{
		{"prefetch device memory", s.MemPrefetchAsync(d, 100, cudart.DeviceLocation(0), cudart.DefaultStream), cudart.ErrorInvalidValue},
		{"prefetch pinned memory", s.MemPrefetchAsync(h, 100, cudart.DeviceLocation(0), cudart.DefaultStream), cudart.ErrorInvalidValue},
		{"prefetch pageable memory", s.MemPrefetchAsync(hostAddr, 100, cudart.DeviceLocation(0), cudart.DefaultStream), cudart.ErrorInvalidValue},
		{"prefetch past the end", s.MemPrefetchAsync(m, 8193, cudart.DeviceLocation(0), cudart.DefaultStream), cudart.ErrorInvalidValue},
		{"prefetch nothing", s.MemPrefetchAsync(m, 0, cudart.DeviceLocation(0), cudart.DefaultStream), cudart.ErrorInvalidValue},
		{"prefetch null", s.MemPrefetchAsync(0, 1, cudart.DeviceLocation(0), cudart.DefaultStream), cudart.ErrorInvalidValue},
		{"prefetch to a missing device", s.MemPrefetchAsync(m, 1, cudart.DeviceLocation(5), cudart.DefaultStream), cudart.ErrorInvalidDevice},
		{"prefetch to an invalid location", s.MemPrefetchAsync(m, 1, cudart.MemLocation{}, cudart.DefaultStream), cudart.ErrorInvalidValue},
		{"advise device memory", s.MemAdvise(d, 100, cudart.MemAdviseSetReadMostly, cudart.MemLocation{}), cudart.ErrorInvalidValue},
		{"advise pinned memory", s.MemAdvise(h, 100, cudart.MemAdviseSetReadMostly, cudart.MemLocation{}), cudart.ErrorInvalidValue},
		{"advise pageable memory", s.MemAdvise(hostAddr, 100, cudart.MemAdviseSetPreferredLocation, cudart.HostLocation()), cudart.ErrorInvalidValue},
		{"unknown advice", s.MemAdvise(m, 100, cudart.MemoryAdvise(0), cudart.MemLocation{}), cudart.ErrorInvalidValue},
		{"unknown advice 7", s.MemAdvise(m, 100, cudart.MemoryAdvise(7), cudart.MemLocation{}), cudart.ErrorInvalidValue},
		{"prefer a missing device", s.MemAdvise(m, 100, cudart.MemAdviseSetPreferredLocation, cudart.DeviceLocation(2)), cudart.ErrorInvalidDevice},
		{"prefer an invalid location", s.MemAdvise(m, 100, cudart.MemAdviseSetPreferredLocation, cudart.MemLocation{Type: 9}), cudart.ErrorInvalidValue},
		{"advise past the end", s.MemAdvise(m+4096, 4097, cudart.MemAdviseSetReadMostly, cudart.MemLocation{}), cudart.ErrorInvalidValue},
	}
	for _, tt := range tests {
		requireCode(t, tt.err, tt.code, tt.name)
	}

	requireCode(t, s.MemAdvise(m, 8192, cudart.MemAdviseSetReadMostly, cudart.MemLocation{}), cudart.ErrorInvalidValue, "CUDA 13: every hint needs a valid location")
	requireCode(t, s.MemAdvise(m, 8192, cudart.MemAdviseUnsetReadMostly, cudart.MemLocation{Type: 77}), cudart.ErrorInvalidValue)
	requireCode(t, s.MemAdvise(m, 8192, cudart.MemAdviseUnsetPreferredLocation, cudart.DeviceLocation(2)), cudart.ErrorInvalidDevice)
	require.NoError(t, s.MemAdvise(m, 8192, cudart.MemAdviseSetReadMostly, cudart.DeviceLocation(0)))
	require.NoError(t, s.MemAdvise(m, 8192, cudart.MemAdviseSetPreferredLocation, cudart.DeviceLocation(1)))
	require.NoError(t, s.MemAdvise(m, 4096, cudart.MemAdviseSetAccessedBy, cudart.DeviceLocation(0)))
	require.NoError(t, s.MemAdvise(m, 4096, cudart.MemAdviseSetAccessedBy, cudart.DeviceLocation(0)))
	require.NoError(t, s.MemAdvise(m, 4096, cudart.MemAdviseSetAccessedBy, cudart.HostLocation()))
	info, _ = s.ManagedInfo(m)
	assert.True(t, info.ReadMostly)
	assert.Equal(t, cudart.DeviceLocation(1), info.PreferredLocation)
	assert.Equal(t, []cudart.MemLocation{cudart.DeviceLocation(0), cudart.HostLocation()}, info.AccessedBy)
	require.NoError(t, s.MemAdvise(m, 8192, cudart.MemAdviseUnsetReadMostly, cudart.HostLocation()))
	require.NoError(t, s.MemAdvise(m, 8192, cudart.MemAdviseUnsetPreferredLocation, cudart.DeviceLocation(0)))
	require.NoError(t, s.MemAdvise(m, 4096, cudart.MemAdviseUnsetAccessedBy, cudart.DeviceLocation(0)))
	info, _ = s.ManagedInfo(m)
	assert.False(t, info.ReadMostly)
	assert.Equal(t, cudart.MemLocation{}, info.PreferredLocation)
	assert.Equal(t, []cudart.MemLocation{cudart.HostLocation()}, info.AccessedBy)
	calls := s.MemAdviseCalls()
	require.Len(t, calls, 8)
	assert.Equal(t, Advice{Ptr: m, Count: 8192, Advice: cudart.MemAdviseSetPreferredLocation, Location: cudart.DeviceLocation(1)}, calls[1])

	// Managed pool allocations take hints too.
	mp, err := s.MemPoolCreate(cudart.MemPoolProps{AllocType: cudart.MemAllocationTypeManaged, Location: cudart.DeviceLocation(0)})
	require.NoError(t, err)
	pm, err := s.MallocFromPoolAsync(4096, mp, cudart.DefaultStream)
	require.NoError(t, err)
	require.NoError(t, s.MemPrefetchAsync(pm, 4096, cudart.DeviceLocation(0), cudart.DefaultStream))
	require.NoError(t, s.MemAdvise(pm, 4096, cudart.MemAdviseSetPreferredLocation, cudart.DeviceLocation(0)))
	info, ok = s.ManagedInfo(pm)
	require.True(t, ok)
	assert.Equal(t, cudart.DeviceLocation(0), info.PreferredLocation)
	require.NoError(t, s.FreeAsync(pm, cudart.DefaultStream))
	require.NoError(t, s.MemPoolDestroy(mp))

	require.NoError(t, s.Free(m))
	require.NoError(t, s.Free(d))
	require.NoError(t, s.FreeHost(h))
}

// Before CUDA 13, cudaMemAdvise took a device number that the read-mostly
// and unset-preferred-location hints ignore; the simulator ignores their
// location there.
func TestSimAdviceLocationBeforeCUDA13(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: mib, RuntimeVersion: 12080})
	m, err := s.MallocManaged(4096, cudart.MemAttachGlobal)
	require.NoError(t, err)
	for _, advice := range []cudart.MemoryAdvise{cudart.MemAdviseSetReadMostly, cudart.MemAdviseUnsetReadMostly, cudart.MemAdviseUnsetPreferredLocation} {
		require.NoError(t, s.MemAdvise(m, 4096, advice, cudart.MemLocation{}), "advice %d", advice)
		require.NoError(t, s.MemAdvise(m, 4096, advice, cudart.MemLocation{Type: 77}), "advice %d", advice)
	}
	for _, advice := range []cudart.MemoryAdvise{cudart.MemAdviseSetPreferredLocation, cudart.MemAdviseSetAccessedBy, cudart.MemAdviseUnsetAccessedBy} {
		requireCode(t, s.MemAdvise(m, 4096, advice, cudart.MemLocation{}), cudart.ErrorInvalidValue, "advice %d", advice)
	}
	info, ok := s.ManagedInfo(m)
	require.True(t, ok)
	assert.False(t, info.ReadMostly)
	require.NoError(t, s.Free(m))
}

func TestSimHintsOnPageableMemory(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: mib, PageableMemoryAccess: true})
	host, hostAddr := hostBuf(8192)
	require.NoError(t, s.MemAdvise(hostAddr, 4096, cudart.MemAdviseSetPreferredLocation, cudart.DeviceLocation(0)))
	require.NoError(t, s.MemAdvise(hostAddr+4096, 4096, cudart.MemAdviseSetPreferredLocation, cudart.HostLocation()))
	require.NoError(t, s.MemPrefetchAsync(hostAddr, 8192, cudart.DeviceLocation(1), cudart.DefaultStream))
	assert.Equal(t, []Advice{
		{Ptr: hostAddr, Count: 4096, Advice: cudart.MemAdviseSetPreferredLocation, Location: cudart.DeviceLocation(0)},
		{Ptr: hostAddr + 4096, Count: 4096, Advice: cudart.MemAdviseSetPreferredLocation, Location: cudart.HostLocation()},
	}, s.MemAdviseCalls())
	// Device memory is still not managed memory.
	d, err := s.Malloc(100)
	require.NoError(t, err)
	requireCode(t, s.MemAdvise(d, 100, cudart.MemAdviseSetReadMostly, cudart.MemLocation{}), cudart.ErrorInvalidValue)
	require.NoError(t, s.Free(d))
	runtime.KeepAlive(host)

	// Without concurrent managed access, a device target is refused.
	s2 := newTestSim(t, Config{MemoryPerDevice: mib, NoConcurrentManaged: true})
	m, err := s2.MallocManaged(100, cudart.MemAttachGlobal)
	require.NoError(t, err)
	requireCode(t, s2.MemPrefetchAsync(m, 100, cudart.DeviceLocation(0), cudart.DefaultStream), cudart.ErrorInvalidDevice)
	require.NoError(t, s2.MemPrefetchAsync(m, 100, cudart.HostLocation(), cudart.DefaultStream))
	require.NoError(t, s2.Free(m))
}

// TestSimDeferredPoolDestroys: a pool destroyed with allocations out, or
// with stream-ordered frees no host synchronization covered (even on an
// idle stream, where they already ran), is one CUDA releases later; the
// simulator counts those. Synchronizing the stream or the device first
// leaves nothing to defer.
func TestSimDeferredPoolDestroys(t *testing.T) {
	s := newTestSim(t, Config{Devices: 1, MemoryPerDevice: 64 * mib})
	st, err := s.StreamCreate(cudart.StreamFlagNonBlocking)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.StreamDestroy(st)) }()
	tests := []struct {
		name   string
		before func(p uintptr) // what happens to the one allocation
		defers bool
	}{
		{"outstanding", func(uintptr) {}, true},
		{"freed on the idle default stream", func(p uintptr) { require.NoError(t, s.FreeAsync(p, cudart.DefaultStream)) }, true},
		{"freed, stream synchronized", func(p uintptr) {
			require.NoError(t, s.FreeAsync(p, st))
			require.NoError(t, s.StreamSynchronize(st))
		}, false},
		{"freed, another stream synchronized", func(p uintptr) {
			require.NoError(t, s.FreeAsync(p, st))
			require.NoError(t, s.StreamSynchronize(cudart.DefaultStream))
		}, true},
		{"freed, device synchronized", func(p uintptr) {
			require.NoError(t, s.FreeAsync(p, st))
			require.NoError(t, s.DeviceSynchronize())
		}, false},
		{"freed with cudaFree", func(p uintptr) { require.NoError(t, s.Free(p)) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool, err := s.MemPoolCreate(cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned, Location: cudart.DeviceLocation(0)})
			require.NoError(t, err)
			p, err := s.MallocFromPoolAsync(4096, pool, cudart.DefaultStream)
			require.NoError(t, err)
			n := s.DeferredPoolDestroys()
			tt.before(p)
			require.NoError(t, s.MemPoolDestroy(pool))
			want := n
			if tt.defers {
				want++
			}
			assert.Equal(t, want, s.DeferredPoolDestroys())
			if !tt.defers {
				return
			}
			// Let the outstanding block go, so that the pool is released.
			if tt.name == "outstanding" {
				require.NoError(t, s.FreeAsync(p, cudart.DefaultStream))
			}
			require.NoError(t, s.DeviceSynchronize())
		})
	}
}

// TestSimPoolReusesPhysicalMemory: reserved memory counts mapped 2 MiB
// granules, and the pool reuses the physical memory of free granules
// anywhere in its chunks before it maps more, as the driver's pool does
// (docs: pool.go's model; on an H100 the gpt2-train log of bench/traces
// holds 1.03x its live bytes with cuda_async).
func TestSimPoolReusesPhysicalMemory(t *testing.T) {
	const dev = 512 * mib
	s := newTestSim(t, Config{MemoryPerDevice: dev})
	pool, err := s.MemPoolCreate(cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned, Location: cudart.DeviceLocation(0)})
	require.NoError(t, err)
	require.NoError(t, s.MemPoolSetAttribute(pool, cudart.MemPoolAttrReleaseThreshold, ^uint64(0)))
	alloc := func(n uintptr) uintptr {
		p, err := s.MallocFromPoolAsync(n, pool, cudart.DefaultStream)
		require.NoError(t, err)
		return p
	}
	free := func(p uintptr) { require.NoError(t, s.FreeAsync(p, cudart.DefaultStream)) }
	reserved := func() uint64 { r, _, _, _ := poolAttrs(t, s, pool); return r }
	group := uint64(simUnmapGranules * simChunk)

	// Four chunks of 4 MiB, all freed: a 16 MiB request reuses their memory.
	var ps []uintptr
	for i := 0; i < 4; i++ {
		ps = append(ps, alloc(4*mib))
	}
	for _, p := range ps {
		free(p)
	}
	require.NoError(t, s.DeviceSynchronize()) // the threshold keeps everything
	assert.Equal(t, uint64(16*mib), reserved())
	big := alloc(16 * mib)
	assert.Equal(t, uint64(16*mib), reserved(), "the free chunks' memory went to the new one")
	assert.Equal(t, uint64(dev-16*mib), freeMem(t, s))
	free(big)
	require.NoError(t, s.MemPoolTrimTo(pool, 0))
	require.Zero(t, reserved())

	// Part of a chunk of two groups: the wholly free group is unmapped for
	// the next growth, the one a live block touches is not, and unmapped
	// granules are mapped again when an allocation lands on them.
	free(alloc(uintptr(2 * group)))
	a := alloc(mib) // in the free chunk: its first granule
	assert.Equal(t, 2*group, reserved())
	b := alloc(uintptr(2*group + 32*mib)) // fits nowhere: the chunk's second group is unmapped first
	assert.Equal(t, group+2*group+32*mib, reserved())
	free(b)
	c := alloc(100 * mib) // best fit: back in the first chunk, after a, over 19 unmapped granules
	assert.Equal(t, group+38*mib, reserved(), "mapped again, with the wholly free chunk's memory")
	assert.Equal(t, uint64(dev)-group-38*mib, freeMem(t, s))
	free(a)
	free(c)
	require.NoError(t, s.MemPoolTrimTo(pool, 0))
	assert.Zero(t, reserved())
	assert.Equal(t, uint64(dev), freeMem(t, s), "every byte back to the device")
	require.NoError(t, s.MemPoolDestroy(pool))
}
