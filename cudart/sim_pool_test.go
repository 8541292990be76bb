package cudart

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// poolAttrs reads a pool's reserved and used memory, current and high.
func poolAttrs(t *testing.T, s *Sim, pool MemPool) (reserved, used, reservedHigh, usedHigh uint64) {
	t.Helper()
	get := func(a MemPoolAttr) uint64 {
		v, err := s.MemPoolGetAttribute(pool, a)
		require.NoError(t, err)
		return v
	}
	return get(MemPoolAttrReservedMemCurrent), get(MemPoolAttrUsedMemCurrent),
		get(MemPoolAttrReservedMemHigh), get(MemPoolAttrUsedMemHigh)
}

func freeMem(t *testing.T, s *Sim) uint64 {
	t.Helper()
	free, _, err := s.MemGetInfo()
	require.NoError(t, err)
	return free
}

func TestSimPoolReuseAndRelease(t *testing.T) {
	s := newTestSim(t, SimConfig{MemoryPerDevice: 64 * mib})
	pool, err := s.DeviceGetDefaultMemPool(0)
	require.NoError(t, err)
	th, err := s.MemPoolGetAttribute(pool, MemPoolAttrReleaseThreshold)
	require.NoError(t, err)
	assert.Zero(t, th, "CUDA's default release threshold is 0")

	p, err := s.MallocAsync(mib, DefaultStream)
	require.NoError(t, err)
	assert.Zero(t, p%256)
	res, used, _, _ := poolAttrs(t, s, pool)
	assert.Equal(t, uint64(2*mib), res, "the pool reserves 2 MiB chunks")
	assert.Equal(t, uint64(mib), used)
	assert.Equal(t, uint64(62*mib), freeMem(t, s), "reserved memory counts against the device")
	assert.Equal(t, uint64(2*mib), s.UsedBytes(0))

	q, err := s.MallocAsync(mib/2, DefaultStream)
	require.NoError(t, err)
	res, used, _, _ = poolAttrs(t, s, pool)
	assert.Equal(t, uint64(2*mib), res, "the second allocation fits the first chunk")
	assert.Equal(t, uint64(mib+mib/2), used)

	require.NoError(t, s.FreeAsync(p, DefaultStream))
	r, err := s.MallocAsync(mib, DefaultStream)
	require.NoError(t, err)
	assert.Equal(t, p, r, "freed memory is reused")
	require.NoError(t, s.FreeAsync(r, DefaultStream))
	require.NoError(t, s.FreeAsync(q, DefaultStream))
	res, used, resHigh, usedHigh := poolAttrs(t, s, pool)
	assert.Equal(t, uint64(2*mib), res, "nothing is released before a synchronization")
	assert.Zero(t, used)
	assert.Equal(t, uint64(2*mib), resHigh)
	assert.Equal(t, uint64(mib+mib/2), usedHigh)
	assert.Equal(t, 0, s.LiveAllocations(0))

	// Synchronizing releases everything above the threshold (0).
	require.NoError(t, s.StreamSynchronize(DefaultStream))
	res, _, _, _ = poolAttrs(t, s, pool)
	assert.Zero(t, res)
	assert.Equal(t, uint64(64*mib), freeMem(t, s))

	// With a threshold the pool keeps that much across synchronizations.
	require.NoError(t, s.MemPoolSetAttribute(pool, MemPoolAttrReleaseThreshold, 3*mib))
	var ps []uintptr
	for i := 0; i < 3; i++ { // three chunks of 2 MiB
		p, err := s.MallocAsync(2*mib, DefaultStream)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	for _, p := range ps {
		require.NoError(t, s.FreeAsync(p, DefaultStream))
	}
	ev, err := s.EventCreate(0)
	require.NoError(t, err)
	require.NoError(t, s.EventRecord(ev, DefaultStream))
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
	require.NoError(t, s.MemPoolSetAttribute(pool, MemPoolAttrReservedMemHigh, 0))
	require.NoError(t, s.MemPoolSetAttribute(pool, MemPoolAttrUsedMemHigh, 0))
	_, _, resHigh, usedHigh = poolAttrs(t, s, pool)
	assert.Zero(t, resHigh)
	assert.Zero(t, usedHigh)
	requireCode(t, s.MemPoolSetAttribute(pool, MemPoolAttrUsedMemHigh, 5), ErrorInvalidValue)
	requireCode(t, s.MemPoolSetAttribute(pool, MemPoolAttrReservedMemCurrent, 0), ErrorInvalidValue)
	requireCode(t, s.MemPoolSetAttribute(pool, MemPoolAttrUsedMemCurrent, 0), ErrorInvalidValue)

	// A device synchronization releases too; the threshold may be "all".
	require.NoError(t, s.MemPoolSetAttribute(pool, MemPoolAttrReleaseThreshold, ^uint64(0)))
	p, err = s.MallocAsync(5*mib, DefaultStream)
	require.NoError(t, err)
	require.NoError(t, s.FreeAsync(p, DefaultStream))
	require.NoError(t, s.DeviceSynchronize())
	res, _, _, _ = poolAttrs(t, s, pool)
	assert.Equal(t, uint64(6*mib), res)
	require.NoError(t, s.MemPoolSetAttribute(pool, MemPoolAttrReleaseThreshold, 0))
	require.NoError(t, s.DeviceSynchronize())
	res, _, _, _ = poolAttrs(t, s, pool)
	assert.Zero(t, res)
}

func TestSimPoolAttributes(t *testing.T) {
	s := newTestSim(t, SimConfig{MemoryPerDevice: 16 * mib})
	pool, err := s.DeviceGetDefaultMemPool(0)
	require.NoError(t, err)
	for _, a := range []MemPoolAttr{MemPoolReuseFollowEventDependencies, MemPoolReuseAllowOpportunistic, MemPoolReuseAllowInternalDependencies} {
		v, err := s.MemPoolGetAttribute(pool, a)
		require.NoError(t, err)
		assert.Equal(t, uint64(1), v, "reuse policies are on by default")
		require.NoError(t, s.MemPoolSetAttribute(pool, a, 0))
		v, err = s.MemPoolGetAttribute(pool, a)
		require.NoError(t, err)
		assert.Zero(t, v)
		requireCode(t, s.MemPoolSetAttribute(pool, a, 2), ErrorInvalidValue)
	}
	_, err = s.MemPoolGetAttribute(pool, MemPoolAttr(99))
	requireCode(t, err, ErrorInvalidValue)
	requireCode(t, s.MemPoolSetAttribute(pool, MemPoolAttr(0), 0), ErrorInvalidValue)

	// Unknown pools.
	for _, bad := range []MemPool{0, 0x12345} {
		_, err = s.MemPoolGetAttribute(bad, MemPoolAttrReleaseThreshold)
		requireCode(t, err, ErrorInvalidValue)
		requireCode(t, s.MemPoolSetAttribute(bad, MemPoolAttrReleaseThreshold, 0), ErrorInvalidValue)
		requireCode(t, s.MemPoolTrimTo(bad, 0), ErrorInvalidValue)
		requireCode(t, s.MemPoolDestroy(bad), ErrorInvalidValue)
		_, err = s.MallocFromPoolAsync(1, bad, DefaultStream)
		requireCode(t, err, ErrorInvalidValue)
	}
	// Each device has its own default pool, which cannot be destroyed.
	pool1, err := s.DeviceGetDefaultMemPool(1)
	require.NoError(t, err)
	assert.NotEqual(t, pool, pool1)
	again, err := s.DeviceGetDefaultMemPool(0)
	require.NoError(t, err)
	assert.Equal(t, pool, again)
	requireCode(t, s.MemPoolDestroy(pool), ErrorInvalidValue)
}

func TestSimPoolOutOfMemory(t *testing.T) {
	s := newTestSim(t, SimConfig{MemoryPerDevice: 64 * mib})
	pool, err := s.DeviceGetDefaultMemPool(0)
	require.NoError(t, err)
	_, err = s.MallocAsync(64*mib+1, DefaultStream)
	requireCode(t, err, ErrorMemoryAllocation)
	_, err = s.MallocAsync(^uintptr(0), DefaultStream)
	requireCode(t, err, ErrorMemoryAllocation)

	// A pool that cannot grow gives back its own free chunks and tries again.
	p, err := s.MallocAsync(2*mib, DefaultStream)
	require.NoError(t, err)
	require.NoError(t, s.FreeAsync(p, DefaultStream)) // 2 MiB stay reserved: no sync
	big, err := s.Malloc(60 * mib)
	require.NoError(t, err)
	p, err = s.MallocAsync(3*mib, DefaultStream)
	require.NoError(t, err)
	res, _, _, _ := poolAttrs(t, s, pool)
	assert.Equal(t, uint64(3*mib), res, "the free 2 MiB chunk went back; exactly 3 MiB fit")
	_, err = s.MallocAsync(2*mib, DefaultStream)
	requireCode(t, err, ErrorMemoryAllocation)
	require.NoError(t, s.FreeAsync(p, DefaultStream))
	require.NoError(t, s.Free(big))
	require.NoError(t, s.StreamSynchronize(DefaultStream))
	assert.Equal(t, uint64(64*mib), freeMem(t, s))

	// A pool's maximum size caps its reservation.
	capped, err := s.MemPoolCreate(MemPoolProps{AllocType: MemAllocationTypePinned, Location: DeviceLocation(0), MaxSize: 5 * mib})
	require.NoError(t, err)
	a, err := s.MallocFromPoolAsync(3*mib, capped, DefaultStream) // a 4 MiB chunk
	require.NoError(t, err)
	b, err := s.MallocFromPoolAsync(mib, capped, DefaultStream) // the rest of it
	require.NoError(t, err)
	_, err = s.MallocFromPoolAsync(2*mib, capped, DefaultStream)
	requireCode(t, err, ErrorMemoryAllocation, "4 + 2 MiB is over the cap")
	c, err := s.MallocFromPoolAsync(mib, capped, DefaultStream) // a chunk of exactly the 1 MiB left
	require.NoError(t, err)
	res, _, _, _ = poolAttrs(t, s, capped)
	assert.Equal(t, uint64(5*mib), res)
	_, err = s.MallocFromPoolAsync(1, capped, DefaultStream)
	requireCode(t, err, ErrorMemoryAllocation)
	assert.Contains(t, err.Error(), "maximum size")
	for _, p := range []uintptr{a, b, c} {
		require.NoError(t, s.FreeAsync(p, DefaultStream))
	}
	require.NoError(t, s.MemPoolDestroy(capped))
	require.NoError(t, s.DeviceSynchronize())
	assert.Equal(t, uint64(64*mib), freeMem(t, s))
}

func TestSimPoolPendingFree(t *testing.T) {
	s := newTestSim(t, SimConfig{MemoryPerDevice: 64 * mib})
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
	q, err := s.MallocAsync(mib, DefaultStream)
	require.NoError(t, err)
	assert.NotEqual(t, p, q, "memory still in use by the paused stream is not handed out")
	require.NoError(t, s.FreeAsync(q, DefaultStream))
	require.NoError(t, s.StreamSynchronize(DefaultStream))
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
	s := newTestSim(t, SimConfig{MemoryPerDevice: 64 * mib})
	pool, err := s.DeviceGetDefaultMemPool(0)
	require.NoError(t, err)
	p, err := s.MallocAsync(1000, DefaultStream)
	require.NoError(t, err)
	require.NoError(t, s.Free(p), "cudaFree accepts stream-ordered allocations")
	_, used, _, _ := poolAttrs(t, s, pool)
	assert.Zero(t, used)
	requireCode(t, s.Free(p), ErrorInvalidValue)
}

func TestSimPoolDestroyWithOutstanding(t *testing.T) {
	s := newTestSim(t, SimConfig{MemoryPerDevice: 64 * mib})
	pool, err := s.MemPoolCreate(MemPoolProps{AllocType: MemAllocationTypePinned, Location: DeviceLocation(0)})
	require.NoError(t, err)
	p, err := s.MallocFromPoolAsync(mib, pool, DefaultStream)
	require.NoError(t, err)
	q, err := s.MallocFromPoolAsync(3*mib, pool, DefaultStream)
	require.NoError(t, err)
	require.NoError(t, s.MemPoolDestroy(pool))
	requireCode(t, s.MemPoolDestroy(pool), ErrorInvalidValue, "the handle is gone")
	_, err = s.MemPoolGetAttribute(pool, MemPoolAttrReservedMemCurrent)
	requireCode(t, err, ErrorInvalidValue)
	// Outstanding allocations stay usable and are freed as usual.
	require.NoError(t, s.Memset(p, 3, mib))
	assert.Equal(t, uint64(6*mib), s.UsedBytes(0))
	require.NoError(t, s.Free(p))
	assert.Equal(t, uint64(4*mib), s.UsedBytes(0), "p's free chunk went back at once")
	require.NoError(t, s.FreeAsync(q, DefaultStream))
	assert.Zero(t, s.UsedBytes(0), "the last free gives back the pool's memory")
	assert.Zero(t, s.LiveAllocations(0))
}

func TestSimMemPoolCreate(t *testing.T) {
	s := newTestSim(t, SimConfig{MemoryPerDevice: 64 * mib})
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tests := []struct {
		name     string
		props    MemPoolProps
		code     ErrorCode  // 0: success
		wantType MemoryType // of an allocation from it
		wantDev  int
	}{
		{"device 1", MemPoolProps{AllocType: MemAllocationTypePinned, Location: DeviceLocation(1)}, 0, MemoryTypeDevice, 1},
		{"device with POSIX fd export", MemPoolProps{AllocType: MemAllocationTypePinned, Location: DeviceLocation(0), HandleTypes: MemHandleTypePosixFileDescriptor}, 0, MemoryTypeDevice, 0},
		{"pinned host", MemPoolProps{AllocType: MemAllocationTypePinned, Location: HostLocation()}, 0, MemoryTypeHost, 0},
		{"pinned host NUMA 0", MemPoolProps{AllocType: MemAllocationTypePinned, Location: MemLocation{MemLocationTypeHostNuma, 0}}, 0, MemoryTypeHost, 0},
		{"managed on device", MemPoolProps{AllocType: MemAllocationTypeManaged, Location: DeviceLocation(1)}, 0, MemoryTypeManaged, 1},
		{"managed on host", MemPoolProps{AllocType: MemAllocationTypeManaged, Location: HostLocation()}, 0, MemoryTypeManaged, 0},
		{"invalid alloc type", MemPoolProps{AllocType: MemAllocationTypeInvalid, Location: DeviceLocation(0)}, ErrorInvalidValue, 0, 0},
		{"invalid location", MemPoolProps{AllocType: MemAllocationTypePinned}, ErrorInvalidValue, 0, 0},
		{"missing NUMA node", MemPoolProps{AllocType: MemAllocationTypePinned, Location: MemLocation{MemLocationTypeHostNuma, 1}}, ErrorInvalidValue, 0, 0},
		{"missing device", MemPoolProps{AllocType: MemAllocationTypePinned, Location: DeviceLocation(2)}, ErrorInvalidDevice, 0, 0},
		{"fabric export", MemPoolProps{AllocType: MemAllocationTypePinned, Location: DeviceLocation(0), HandleTypes: MemHandleTypeFabric}, ErrorNotSupported, 0, 0},
		{"win32 export", MemPoolProps{AllocType: MemAllocationTypePinned, Location: DeviceLocation(0), HandleTypes: MemHandleTypeWin32}, ErrorNotSupported, 0, 0},
		{"unknown export", MemPoolProps{AllocType: MemAllocationTypePinned, Location: DeviceLocation(0), HandleTypes: 0x100}, ErrorInvalidValue, 0, 0},
		{"managed export", MemPoolProps{AllocType: MemAllocationTypeManaged, Location: DeviceLocation(0), HandleTypes: MemHandleTypePosixFileDescriptor}, ErrorNotSupported, 0, 0},
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
			p, err := s.MallocFromPoolAsync(1000, pool, DefaultStream)
			require.NoError(t, err)
			a, err := s.PointerGetAttributes(p)
			require.NoError(t, err)
			assert.Equal(t, tt.wantType, a.Type)
			assert.Equal(t, tt.wantDev, a.Device)
			require.NoError(t, s.Memset(p, 1, 1000))
			require.NoError(t, s.FreeAsync(p, DefaultStream))
		})
	}
	require.NoError(t, s.DeviceSynchronize())
	assert.Zero(t, s.UsedBytes(0))
	assert.Zero(t, s.UsedBytes(1))

	// Managed pools need CUDA 13 and concurrent managed access.
	managed := MemPoolProps{AllocType: MemAllocationTypeManaged, Location: DeviceLocation(0)}
	_, err := newTestSim(t, SimConfig{MemoryPerDevice: mib, RuntimeVersion: 12080}).MemPoolCreate(managed)
	requireCode(t, err, ErrorInvalidValue)
	_, err = newTestSim(t, SimConfig{MemoryPerDevice: mib, NoConcurrentManaged: true}).MemPoolCreate(managed)
	requireCode(t, err, ErrorNotSupported)
}

func TestSimNoMemoryPools(t *testing.T) {
	s := newTestSim(t, SimConfig{MemoryPerDevice: mib, NoMemoryPools: true})
	_, err := s.MemPoolCreate(MemPoolProps{AllocType: MemAllocationTypePinned, Location: DeviceLocation(0)})
	requireCode(t, err, ErrorNotSupported)
	_, err = s.DeviceGetDefaultMemPool(0)
	requireCode(t, err, ErrorNotSupported)
	_, err = s.MallocAsync(1, DefaultStream)
	requireCode(t, err, ErrorNotSupported)
	_, err = s.MallocFromPoolAsync(1, 0x10010, DefaultStream)
	requireCode(t, err, ErrorNotSupported)
	requireCode(t, s.FreeAsync(0x1000, DefaultStream), ErrorNotSupported)
	_, err = s.MemPoolGetAttribute(0x10010, MemPoolAttrReleaseThreshold)
	requireCode(t, err, ErrorNotSupported)
	// Plain allocations still work, and synchronizing has no pools to trim.
	p, err := s.Malloc(100)
	require.NoError(t, err)
	require.NoError(t, s.DeviceSynchronize())
	require.NoError(t, s.Free(p))
}

func TestSimMallocAsyncUsesStreamDevice(t *testing.T) {
	s := newTestSim(t, SimConfig{MemoryPerDevice: 16 * mib})
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
	s := newTestSim(t, SimConfig{MemoryPerDevice: 16 * mib})
	m, err := s.MallocManaged(8192, MemAttachGlobal)
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
	require.NoError(t, s.MemPrefetchAsync(m, 8192, DeviceLocation(1), st))
	info, ok := s.ManagedInfo(m + 100)
	require.True(t, ok)
	assert.Equal(t, MemLocation{}, info.LastPrefetch)
	require.NoError(t, s.ResumeStream(st))
	info, _ = s.ManagedInfo(m)
	assert.Equal(t, DeviceLocation(1), info.LastPrefetch)
	require.NoError(t, s.MemPrefetchAsync(m+4096, 4096, HostLocation(), DefaultStream))
	info, _ = s.ManagedInfo(m)
	assert.Equal(t, HostLocation(), info.LastPrefetch)
	_, ok = s.ManagedInfo(d)
	assert.False(t, ok)

	tests := []struct {
		name string
		err  error
		code ErrorCode
	}{
		{"prefetch device memory", s.MemPrefetchAsync(d, 100, DeviceLocation(0), DefaultStream), ErrorInvalidValue},
		{"prefetch pinned memory", s.MemPrefetchAsync(h, 100, DeviceLocation(0), DefaultStream), ErrorInvalidValue},
		{"prefetch pageable memory", s.MemPrefetchAsync(hostAddr, 100, DeviceLocation(0), DefaultStream), ErrorInvalidValue},
		{"prefetch past the end", s.MemPrefetchAsync(m, 8193, DeviceLocation(0), DefaultStream), ErrorInvalidValue},
		{"prefetch nothing", s.MemPrefetchAsync(m, 0, DeviceLocation(0), DefaultStream), ErrorInvalidValue},
		{"prefetch null", s.MemPrefetchAsync(0, 1, DeviceLocation(0), DefaultStream), ErrorInvalidValue},
		{"prefetch to a missing device", s.MemPrefetchAsync(m, 1, DeviceLocation(5), DefaultStream), ErrorInvalidDevice},
		{"prefetch to an invalid location", s.MemPrefetchAsync(m, 1, MemLocation{}, DefaultStream), ErrorInvalidValue},
		{"advise device memory", s.MemAdvise(d, 100, MemAdviseSetReadMostly, MemLocation{}), ErrorInvalidValue},
		{"advise pinned memory", s.MemAdvise(h, 100, MemAdviseSetReadMostly, MemLocation{}), ErrorInvalidValue},
		{"advise pageable memory", s.MemAdvise(hostAddr, 100, MemAdviseSetPreferredLocation, HostLocation()), ErrorInvalidValue},
		{"unknown advice", s.MemAdvise(m, 100, MemoryAdvise(0), MemLocation{}), ErrorInvalidValue},
		{"unknown advice 7", s.MemAdvise(m, 100, MemoryAdvise(7), MemLocation{}), ErrorInvalidValue},
		{"prefer a missing device", s.MemAdvise(m, 100, MemAdviseSetPreferredLocation, DeviceLocation(2)), ErrorInvalidDevice},
		{"prefer an invalid location", s.MemAdvise(m, 100, MemAdviseSetPreferredLocation, MemLocation{Type: 9}), ErrorInvalidValue},
		{"advise past the end", s.MemAdvise(m+4096, 4097, MemAdviseSetReadMostly, MemLocation{}), ErrorInvalidValue},
	}
	for _, tt := range tests {
		requireCode(t, tt.err, tt.code, tt.name)
	}

	requireCode(t, s.MemAdvise(m, 8192, MemAdviseSetReadMostly, MemLocation{}), ErrorInvalidValue, "CUDA 13: every hint needs a valid location")
	requireCode(t, s.MemAdvise(m, 8192, MemAdviseUnsetReadMostly, MemLocation{Type: 77}), ErrorInvalidValue)
	requireCode(t, s.MemAdvise(m, 8192, MemAdviseUnsetPreferredLocation, DeviceLocation(2)), ErrorInvalidDevice)
	require.NoError(t, s.MemAdvise(m, 8192, MemAdviseSetReadMostly, DeviceLocation(0)))
	require.NoError(t, s.MemAdvise(m, 8192, MemAdviseSetPreferredLocation, DeviceLocation(1)))
	require.NoError(t, s.MemAdvise(m, 4096, MemAdviseSetAccessedBy, DeviceLocation(0)))
	require.NoError(t, s.MemAdvise(m, 4096, MemAdviseSetAccessedBy, DeviceLocation(0)))
	require.NoError(t, s.MemAdvise(m, 4096, MemAdviseSetAccessedBy, HostLocation()))
	info, _ = s.ManagedInfo(m)
	assert.True(t, info.ReadMostly)
	assert.Equal(t, DeviceLocation(1), info.PreferredLocation)
	assert.Equal(t, []MemLocation{DeviceLocation(0), HostLocation()}, info.AccessedBy)
	require.NoError(t, s.MemAdvise(m, 8192, MemAdviseUnsetReadMostly, HostLocation()))
	require.NoError(t, s.MemAdvise(m, 8192, MemAdviseUnsetPreferredLocation, DeviceLocation(0)))
	require.NoError(t, s.MemAdvise(m, 4096, MemAdviseUnsetAccessedBy, DeviceLocation(0)))
	info, _ = s.ManagedInfo(m)
	assert.False(t, info.ReadMostly)
	assert.Equal(t, MemLocation{}, info.PreferredLocation)
	assert.Equal(t, []MemLocation{HostLocation()}, info.AccessedBy)
	calls := s.MemAdviseCalls()
	require.Len(t, calls, 8)
	assert.Equal(t, SimAdvice{Ptr: m, Count: 8192, Advice: MemAdviseSetPreferredLocation, Location: DeviceLocation(1)}, calls[1])

	// Managed pool allocations take hints too.
	mp, err := s.MemPoolCreate(MemPoolProps{AllocType: MemAllocationTypeManaged, Location: DeviceLocation(0)})
	require.NoError(t, err)
	pm, err := s.MallocFromPoolAsync(4096, mp, DefaultStream)
	require.NoError(t, err)
	require.NoError(t, s.MemPrefetchAsync(pm, 4096, DeviceLocation(0), DefaultStream))
	require.NoError(t, s.MemAdvise(pm, 4096, MemAdviseSetPreferredLocation, DeviceLocation(0)))
	info, ok = s.ManagedInfo(pm)
	require.True(t, ok)
	assert.Equal(t, DeviceLocation(0), info.PreferredLocation)
	require.NoError(t, s.FreeAsync(pm, DefaultStream))
	require.NoError(t, s.MemPoolDestroy(mp))

	require.NoError(t, s.Free(m))
	require.NoError(t, s.Free(d))
	require.NoError(t, s.FreeHost(h))
}

// Before CUDA 13, cudaMemAdvise took a device number that the read-mostly
// and unset-preferred-location hints ignore; the simulator ignores their
// location there.
func TestSimAdviceLocationBeforeCUDA13(t *testing.T) {
	s := newTestSim(t, SimConfig{MemoryPerDevice: mib, RuntimeVersion: 12080})
	m, err := s.MallocManaged(4096, MemAttachGlobal)
	require.NoError(t, err)
	for _, advice := range []MemoryAdvise{MemAdviseSetReadMostly, MemAdviseUnsetReadMostly, MemAdviseUnsetPreferredLocation} {
		require.NoError(t, s.MemAdvise(m, 4096, advice, MemLocation{}), "advice %d", advice)
		require.NoError(t, s.MemAdvise(m, 4096, advice, MemLocation{Type: 77}), "advice %d", advice)
	}
	for _, advice := range []MemoryAdvise{MemAdviseSetPreferredLocation, MemAdviseSetAccessedBy, MemAdviseUnsetAccessedBy} {
		requireCode(t, s.MemAdvise(m, 4096, advice, MemLocation{}), ErrorInvalidValue, "advice %d", advice)
	}
	info, ok := s.ManagedInfo(m)
	require.True(t, ok)
	assert.False(t, info.ReadMostly)
	require.NoError(t, s.Free(m))
}

func TestSimHintsOnPageableMemory(t *testing.T) {
	s := newTestSim(t, SimConfig{MemoryPerDevice: mib, PageableMemoryAccess: true})
	host, hostAddr := hostBuf(8192)
	require.NoError(t, s.MemAdvise(hostAddr, 4096, MemAdviseSetPreferredLocation, DeviceLocation(0)))
	require.NoError(t, s.MemAdvise(hostAddr+4096, 4096, MemAdviseSetPreferredLocation, HostLocation()))
	require.NoError(t, s.MemPrefetchAsync(hostAddr, 8192, DeviceLocation(1), DefaultStream))
	assert.Equal(t, []SimAdvice{
		{Ptr: hostAddr, Count: 4096, Advice: MemAdviseSetPreferredLocation, Location: DeviceLocation(0)},
		{Ptr: hostAddr + 4096, Count: 4096, Advice: MemAdviseSetPreferredLocation, Location: HostLocation()},
	}, s.MemAdviseCalls())
	// Device memory is still not managed memory.
	d, err := s.Malloc(100)
	require.NoError(t, err)
	requireCode(t, s.MemAdvise(d, 100, MemAdviseSetReadMostly, MemLocation{}), ErrorInvalidValue)
	require.NoError(t, s.Free(d))
	runtime.KeepAlive(host)

	// Without concurrent managed access, a device target is refused.
	s2 := newTestSim(t, SimConfig{MemoryPerDevice: mib, NoConcurrentManaged: true})
	m, err := s2.MallocManaged(100, MemAttachGlobal)
	require.NoError(t, err)
	requireCode(t, s2.MemPrefetchAsync(m, 100, DeviceLocation(0), DefaultStream), ErrorInvalidDevice)
	require.NoError(t, s2.MemPrefetchAsync(m, 100, HostLocation(), DefaultStream))
	require.NoError(t, s2.Free(m))
}
