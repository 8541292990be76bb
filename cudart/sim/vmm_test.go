package sim

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
)

// Tests of the simulator's virtual memory management beyond what the
// conformance tests can ask of a GPU (errors that would leave a sticky
// error, or that CUDA does not document).

const gran = simGranularity

// vmSetup reserves n granules on s and maps physical memory of device dev
// at granules [from, to), accessible to nobody yet.
func vmSetup(t *testing.T, s *Runtime, n, from, to uintptr, dev int) (base uintptr, hs []cudart.MemHandle) {
	t.Helper()
	base, err := s.MemAddressReserve(n*gran, 0)
	require.NoError(t, err)
	for i := from; i < to; i++ {
		h, err := s.MemCreate(gran, cudart.DeviceMemoryProp(dev))
		require.NoError(t, err)
		require.NoError(t, s.MemMap(base+i*gran, gran, 0, h))
		hs = append(hs, h)
	}
	return base, hs
}

func TestSimVirtualMemoryAccess(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 64 * mib})
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	base, _ := vmSetup(t, s, 4, 0, 2, 0)
	buf, addr := hostBuf(64)
	defer runtime.KeepAlive(buf)

	// Mapped memory is not accessible until cuMemSetAccess.
	err := s.Memset(base, 1, 64)
	requireCode(t, err, cudart.ErrorInvalidValue)
	assert.ErrorContains(t, err, "device 0 may not write the mapping")
	require.NoError(t, s.MemSetAccess(base, 2*gran, cudart.MemAccessDesc{Location: cudart.DeviceLocation(0), Flags: cudart.MemAccessFlagsProtReadWrite}))
	require.NoError(t, s.Memset(base, 1, 2*gran))

	// Reserved but unmapped memory, and memory outside any reservation.
	err = s.Memset(base+2*gran-64, 1, 128)
	requireCode(t, err, cudart.ErrorInvalidValue)
	assert.ErrorContains(t, err, "reserved but not mapped")
	requireCode(t, s.Memcpy(addr, base+3*gran, 64, cudart.MemcpyDeviceToHost), cudart.ErrorInvalidValue)

	// Another device needs its own access: none, then read-only, then
	// read-write.
	require.NoError(t, s.SetDevice(1))
	requireCode(t, s.Memcpy(addr, base, 64, cudart.MemcpyDeviceToHost), cudart.ErrorInvalidValue)
	require.NoError(t, s.MemSetAccess(base, gran, cudart.MemAccessDesc{Location: cudart.DeviceLocation(1), Flags: cudart.MemAccessFlagsProtRead}))
	require.NoError(t, s.Memcpy(addr, base, 64, cudart.MemcpyDeviceToHost))
	assert.Equal(t, byte(1), buf[0])
	err = s.Memset(base, 2, 64)
	requireCode(t, err, cudart.ErrorInvalidValue)
	assert.ErrorContains(t, err, "device 1 may not write")
	require.NoError(t, s.MemSetAccess(base, gran, cudart.MemAccessDesc{Location: cudart.DeviceLocation(1), Flags: cudart.MemAccessFlagsProtReadWrite}))
	require.NoError(t, s.Memset(base, 2, 64))
	require.NoError(t, s.SetDevice(0))

	// Access is set on whole mappings only.
	requireCode(t, s.MemSetAccess(base, gran/2, cudart.MemAccessDesc{Location: cudart.DeviceLocation(0), Flags: cudart.MemAccessFlagsProtRead}), cudart.ErrorInvalidValue)
	requireCode(t, s.MemSetAccess(base, 3*gran, cudart.MemAccessDesc{Location: cudart.DeviceLocation(0), Flags: cudart.MemAccessFlagsProtRead}), cudart.ErrorInvalidValue)
	requireCode(t, s.MemSetAccess(base, gran, cudart.MemAccessDesc{Location: cudart.DeviceLocation(5), Flags: cudart.MemAccessFlagsProtRead}), cudart.ErrorInvalidDevice)

	// cudaFree refuses virtual memory; cuMemAddressFree refuses while mapped.
	requireCode(t, s.Free(base), cudart.ErrorInvalidValue)
	requireCode(t, s.MemAddressFree(base, 4*gran), cudart.ErrorInvalidValue)
	requireCode(t, s.MemAddressFree(base, 2*gran), cudart.ErrorInvalidValue)
	a, err := s.PointerGetAttributes(base + 3*gran)
	require.NoError(t, err)
	assert.Equal(t, cudart.MemoryTypeUnregistered, a.Type, "unmapped reserved memory")
}

func TestSimVirtualMemoryUnmapDropsContents(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 64 * mib})
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rw := cudart.MemAccessDesc{Location: cudart.DeviceLocation(0), Flags: cudart.MemAccessFlagsProtReadWrite}
	base, hs := vmSetup(t, s, 1, 0, 1, 0)
	require.NoError(t, s.MemSetAccess(base, gran, rw))
	require.NoError(t, s.Memset(base, 0x77, gran))
	require.NoError(t, s.MemUnmap(base, gran))
	// Released while mapped elsewhere: it goes back at the last unmap.
	require.NoError(t, s.MemMap(base, gran, 0, hs[0]))
	require.NoError(t, s.MemRelease(hs[0]))
	assert.EqualValues(t, gran, s.UsedBytes(0))
	assert.Equal(t, 1, s.LiveAllocations(0))
	require.NoError(t, s.MemSetAccess(base, gran, rw))
	buf, addr := hostBuf(int(gran))
	require.NoError(t, s.Memcpy(addr, base, gran, cudart.MemcpyDeviceToHost))
	assert.Equal(t, make([]byte, gran), buf, "fresh memory after an unmap reads back as zeros")
	runtime.KeepAlive(buf)
	requireCode(t, s.MemMap(base, gran, 0, hs[0]), cudart.ErrorInvalidValue, "a released handle")
	require.NoError(t, s.MemUnmap(base, gran))
	assert.Zero(t, s.UsedBytes(0))
	assert.Zero(t, s.LiveAllocations(0))
	require.NoError(t, s.MemAddressFree(base, gran))
	assert.Equal(t, VirtualMemoryState{}, s.VirtualMemory())
}

func TestSimVirtualMemoryOutOfMemory(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 8 * mib})
	var hs []cudart.MemHandle
	for i := 0; i < 4; i++ {
		h, err := s.MemCreate(gran, cudart.DeviceMemoryProp(1))
		require.NoError(t, err)
		hs = append(hs, h)
	}
	_, err := s.MemCreate(gran, cudart.DeviceMemoryProp(1))
	requireCode(t, err, cudart.ErrorMemoryAllocation)
	assert.ErrorContains(t, err, "cuMemCreate: CUDA_ERROR_OUT_OF_MEMORY (out of memory: simulated device 1 has 0 of 8388608 bytes free")
	_, err = s.Malloc(256)
	require.NoError(t, err, "device 0 is not device 1")
	require.NoError(t, s.SetDevice(1))
	free, _, err := s.MemGetInfo()
	require.NoError(t, err)
	assert.Zero(t, free)
	require.NoError(t, s.SetDevice(0))
	require.NoError(t, s.MemRelease(hs[0]))
	s.InjectAllocFailures(1)
	_, err = s.MemCreate(gran, cudart.DeviceMemoryProp(1))
	requireCode(t, err, cudart.ErrorMemoryAllocation, "injected")
	h, err := s.MemCreate(gran, cudart.DeviceMemoryProp(1))
	require.NoError(t, err)
	hs[0] = h
	for _, h := range hs {
		require.NoError(t, s.MemRelease(h))
	}
	requireCode(t, s.MemRelease(hs[1]), cudart.ErrorInvalidValue, "released twice")
	assert.Zero(t, s.UsedBytes(1))
	// Bad properties.
	_, err = s.MemCreate(gran, cudart.DeviceMemoryProp(7))
	requireCode(t, err, cudart.ErrorInvalidDevice)
	_, err = s.MemCreate(gran, cudart.MemAllocationProp{Type: cudart.MemAllocationTypeManaged, Location: cudart.DeviceLocation(0)})
	requireCode(t, err, cudart.ErrorInvalidValue)
	_, err = s.MemGetAllocationGranularity(cudart.MemAllocationProp{Type: cudart.MemAllocationTypePinned, Location: cudart.HostLocation()}, cudart.MemGranularityMinimum)
	requireCode(t, err, cudart.ErrorInvalidValue)
}

func TestSimVirtualMemoryReservations(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 16 * mib})
	// Reservations hold no memory: far more than the devices have.
	big, err := s.MemAddressReserve(64*gran, 0)
	require.NoError(t, err)
	aligned, err := s.MemAddressReserve(4096, 16*gran)
	require.NoError(t, err)
	assert.Zero(t, aligned%(16*gran))
	_, err = s.MemAddressReserve(1000, 0)
	requireCode(t, err, cudart.ErrorInvalidValue, "not a multiple of the page size")
	_, err = s.MemAddressReserve(gran, 3*gran)
	requireCode(t, err, cudart.ErrorInvalidValue, "alignment not a power of two")
	assert.Equal(t, VirtualMemoryState{Reservations: 2, ReservedBytes: 64*gran + 4096}, s.VirtualMemory())
	assert.Zero(t, s.UsedBytes(0))
	requireCode(t, s.MemAddressFree(big+gran, 63*gran), cudart.ErrorInvalidValue, "not the start")
	require.NoError(t, s.MemAddressFree(big, 64*gran))
	require.NoError(t, s.MemAddressFree(aligned, 4096))
	requireCode(t, s.MemUnmap(big, gran), cudart.ErrorInvalidValue, "freed reservation")
	assert.Equal(t, VirtualMemoryState{}, s.VirtualMemory())

	off := newTestSim(t, Config{NoVirtualMemory: true})
	_, err = off.MemAddressReserve(gran, 0)
	requireCode(t, err, cudart.ErrorNotSupported)
	assert.ErrorContains(t, err, "cuMemAddressReserve: CUDA_ERROR_NOT_SUPPORTED")
}

// TestSimVirtualMemoryFault: a fill queued behind paused work, whose memory
// is unmapped before it runs, writes nothing and is recorded as a fault, as
// a GPU would fault on the illegal address.
func TestSimVirtualMemoryFault(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 16 * mib})
	base, hs := vmSetup(t, s, 1, 0, 1, 0)
	require.NoError(t, s.MemSetAccess(base, gran, cudart.MemAccessDesc{Location: cudart.DeviceLocation(0), Flags: cudart.MemAccessFlagsProtReadWrite}))
	st, err := s.StreamCreate(0)
	require.NoError(t, err)
	require.NoError(t, s.PauseStream(st))
	require.NoError(t, s.MemsetAsync(base, 9, 4096, st))
	require.NoError(t, s.MemUnmap(base, gran))
	require.NoError(t, s.ResumeStream(st))
	require.NoError(t, s.StreamSynchronize(st))
	faults := s.VirtualMemory().Faults
	require.Len(t, faults, 1)
	assert.Contains(t, faults[0], "cudaMemsetAsync on device 0, when it ran:")
	assert.Contains(t, faults[0], "reserved but not mapped")
	require.NoError(t, s.MemRelease(hs[0]))
	require.NoError(t, s.StreamDestroy(st))
}
