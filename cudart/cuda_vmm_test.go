//go:build cgo && unix

package cudart

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCUDAFakeVirtualMemory checks what crosses the ABI in the driver's
// virtual memory calls, taken through cudaGetDriverEntryPointByVersion, and
// how their failures are reported.
func TestCUDAFakeVirtualMemory(t *testing.T) {
	t.Parallel()
	c, lib := openFake(t)
	vm, err := VirtualMemoryOf(c)
	require.NoError(t, err)
	prop := DeviceMemoryProp(1)

	var g uintptr
	calls := lib.calls(t, func() { g, err = vm.MemGetAllocationGranularity(prop, MemGranularityRecommended) })
	require.NoError(t, err)
	assert.EqualValues(t, 2<<20, g)
	assert.Equal(t, []string{"cuMemGetAllocationGranularity type=1 handles=0 location=1/1 option=1"}, calls)

	var base uintptr
	calls = lib.calls(t, func() { base, err = vm.MemAddressReserve(8<<20, 0) })
	require.NoError(t, err)
	assert.NotZero(t, base)
	assert.Equal(t, []string{"cuMemAddressReserve size=8388608 alignment=0 addr=0 flags=0"}, calls)

	var h MemHandle
	calls = lib.calls(t, func() { h, err = vm.MemCreate(4<<20, prop) })
	require.NoError(t, err)
	assert.Equal(t, []string{"cuMemCreate size=4194304 type=1 handles=0 location=1/1 flags=0"}, calls)

	calls = lib.calls(t, func() {
		require.NoError(t, vm.MemMap(base+2<<20, 4<<20, 0, h))
		require.NoError(t, vm.MemSetAccess(base+2<<20, 4<<20,
			MemAccessDesc{DeviceLocation(1), MemAccessFlagsProtReadWrite},
			MemAccessDesc{DeviceLocation(0), MemAccessFlagsProtRead}))
		f, err := vm.MemGetAccess(DeviceLocation(0), base+2<<20)
		require.NoError(t, err)
		assert.Equal(t, MemAccessFlagsProtReadWrite, f)
		require.NoError(t, vm.MemUnmap(base+2<<20, 4<<20))
		require.NoError(t, vm.MemRelease(h))
		require.NoError(t, vm.MemAddressFree(base, 8<<20))
	})
	assert.Equal(t, []string{
		"cuMemMap size=4194304 offset=0 handle_size=4194304 flags=0",
		"cuMemSetAccess size=4194304 location=1/1 flags=3 count=1",
		"cuMemSetAccess size=4194304 location=1/0 flags=1 count=1",
		"cuMemGetAccess location=1/0",
		"cuMemUnmap size=4194304",
		"cuMemRelease size=4194304",
		"cuMemAddressFree size=8388608",
	}, calls)

	// The driver's out of memory is the runtime's, named as the driver names it.
	_, err = vm.MemCreate(2<<30, prop)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrMemoryAllocation), "%v", err)
	var ce *Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "cuMemCreate: CUDA_ERROR_OUT_OF_MEMORY (out of memory)", ce.Error())
	_, err = vm.MemGetAllocationGranularity(MemAllocationProp{Type: MemAllocationTypePinned}, MemGranularityMinimum)
	assert.True(t, errors.Is(err, ErrInvalidValue), "%v", err)
	assert.Equal(t, Success, c.peekAtLastError(), "driver failures leave no runtime error")
}

// TestCUDAFakeVirtualMemoryContext: a thread with no current context gets
// CUDA_ERROR_INVALID_CONTEXT from the driver; the backend makes the
// thread's device's context current and calls again.
func TestCUDAFakeVirtualMemoryContext(t *testing.T) {
	t.Parallel()
	c, lib := openFake(t, "FAKE_VMM_NEEDS_CONTEXT")
	var g uintptr
	var err error
	calls := lib.calls(t, func() { g, err = c.MemGetAllocationGranularity(DeviceMemoryProp(0), MemGranularityMinimum) })
	require.NoError(t, err)
	assert.EqualValues(t, 2<<20, g)
	assert.Len(t, calls, 2, "the failed call and the one after cudaSetDevice: %v", calls)
}

// TestCUDAFakeVirtualMemoryMissing: a runtime without
// cudaGetDriverEntryPointByVersion has no virtual memory calls, and says
// why.
func TestCUDAFakeVirtualMemoryMissing(t *testing.T) {
	t.Parallel()
	for _, opts := range [][]fakeOption{{fakeVersion(12040)}, {fakeNoDriverEntry}} {
		c, _ := openFake(t, opts...)
		_, err := c.MemAddressReserve(2<<20, 0)
		require.Error(t, err)
		assert.True(t, errors.Is(err, ErrNotSupported), "%v", err)
		assert.ErrorContains(t, err, "cuMemAddressReserve: CUDA_ERROR_NOT_SUPPORTED")
		assert.ErrorContains(t, err, "has no cudaGetDriverEntryPointByVersion (CUDA 12.5 and later)")
	}
}

func TestVirtualMemoryOfWrapper(t *testing.T) {
	c, _ := openFake(t)
	_, err := VirtualMemoryOf(struct{ Runtime }{c})
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrNotSupported))
	assert.ErrorContains(t, err, "offers no virtual memory management")
}
