package core

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExternalAddressesPassThroughAdaptors: what a user's resource returns
// is passed on, aligned or not, as RMM's adaptors do (RMM's aligned and
// failure_callback tests use mocks that return 0x7b or a stack address); a
// sub-allocator over it refuses a chunk off the 256-byte grid and gives it
// back, since its heap needs the grid. Before, the external refused the
// address itself, under every adaptor.
func TestExternalAddressesPassThroughAdaptors(t *testing.T) {
	var next uintptr = 0x7b
	freed := map[uintptr]uintptr{}
	ext, err := NewExternal(ExternalFuncs{
		Allocate: func(_ Stream, bytes, _ uintptr) (uintptr, error) { return next, nil },
		Deallocate: func(_ Stream, ptr, bytes, _ uintptr) error {
			freed[ptr] = bytes
			return nil
		},
	}, DeviceAccessible, 0, nil, nil, -1)
	require.NoError(t, err)

	fc, err := NewFailureCallback(ext, func(uintptr) bool { return false })
	require.NoError(t, err)
	p, err := fc.Allocate(DefaultStream, 1024, 512)
	require.NoError(t, err)
	require.Equal(t, uintptr(0x7b), p)
	require.NoError(t, fc.Deallocate(DefaultStream, p, 1024, 512))
	require.Equal(t, uintptr(1024), freed[0x7b])

	al, err := NewAligned(ext, DefaultAlignment, 0)
	require.NoError(t, err)
	p, err = al.Allocate(DefaultStream, 5, DefaultAlignment)
	require.NoError(t, err)
	require.Equal(t, uintptr(0x7b), p)
	require.NoError(t, al.Deallocate(DefaultStream, p, 5, DefaultAlignment))

	r := testRuntime(t)
	delete(freed, 0x7b)
	_, err = newPool(r, ext, PoolOptions{InitialSize: 4096})
	require.ErrorIs(t, err, ErrBadAlloc)
	require.Equal(t, uintptr(4096), freed[0x7b], "the chunk was given back")
	next = 0
	_, err = newPool(r, ext, PoolOptions{InitialSize: 4096})
	require.ErrorIs(t, err, ErrOutOfMemory, "no memory, no error: out of memory")
}

// TestZeroBytesReachTheUsersBin is RMM's ZeroByteAllocationsUseBinResource:
// a binning resource sends a zero-byte request, and its free, to the
// smallest bin when that bin is a user's resource, which answers (NULL
// here). Before, neither reached it. rmmgo's own bins still answer NULL
// without being asked, and refuse a live block freed with size 0.
func TestZeroBytesReachTheUsersBin(t *testing.T) {
	r := testRuntime(t)
	cuda, err := newCuda(r)
	require.NoError(t, err)
	var allocs, frees int
	ext, err := NewExternal(ExternalFuncs{
		Allocate: func(_ Stream, bytes, alignment uintptr) (uintptr, error) {
			require.Zero(t, bytes)
			require.Equal(t, DefaultAlignment, alignment)
			allocs++
			return 0, nil
		},
		Deallocate: func(_ Stream, ptr, bytes, _ uintptr) error {
			require.Zero(t, ptr)
			require.Zero(t, bytes)
			frees++
			return nil
		},
	}, DeviceAccessible, 0, nil, nil, -1)
	require.NoError(t, err)
	b, err := newBinning(r, cuda, -1, -1)
	require.NoError(t, err)
	require.NoError(t, b.AddBin(1024, ext))
	p, err := b.Allocate(DefaultStream, 0, DefaultAlignment)
	require.NoError(t, err)
	require.Zero(t, p)
	require.NoError(t, b.Deallocate(DefaultStream, 0, 0, DefaultAlignment))
	p, err = b.AllocateSync(0, DefaultAlignment)
	require.NoError(t, err)
	require.Zero(t, p)
	require.NoError(t, b.DeallocateSync(0, 0, DefaultAlignment))
	require.Equal(t, 2, allocs)
	require.Equal(t, 2, frees)
	_, err = b.Allocate(DefaultStream, 0, 3)
	require.ErrorIs(t, err, ErrBadAlignment)
	require.Equal(t, 2, allocs, "a bad alignment is refused before the bin is asked")

	own, err := newBinning(r, cuda, -1, -1)
	require.NoError(t, err)
	require.NoError(t, own.AddBin(1024, nil))
	p, err = own.Allocate(DefaultStream, 0, DefaultAlignment)
	require.NoError(t, err)
	require.Zero(t, p)
	q, err := own.Allocate(DefaultStream, 512, DefaultAlignment)
	require.NoError(t, err)
	require.ErrorIs(t, own.Deallocate(DefaultStream, q, 0, DefaultAlignment), ErrInvalidArgument)
	require.NoError(t, own.Deallocate(DefaultStream, q, 512, DefaultAlignment))
	require.NoError(t, own.Close())
	require.NoError(t, b.Close())
}
