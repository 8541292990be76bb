package sim

import (
	"errors"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
)

// TestSimForeignHostPointers: a copy or fill that names host memory the
// process does not have (Python's DeviceBuffer(ptr=0xdeadbeef00, size=16))
// killed the process with Go's "fatal error: fault" in the simulator's
// copy. It is cudaErrorInvalidValue now, and nothing is copied; host memory
// the process has still copies.
func TestSimForeignHostPointers(t *testing.T) {
	s := newTestSim(t, Config{})
	d, err := s.Malloc(4096)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Free(d)) }()
	// An address with nothing mapped: a page of our own, unmapped again.
	m, err := syscall.Mmap(-1, 0, 8192, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	gone := uintptr(unsafe.Pointer(&m[0]))
	require.NoError(t, syscall.Munmap(m))
	for _, bad := range []uintptr{0xdeadbeef00, gone, gone + 4095} {
		err := s.Memcpy(d, bad, 16, cudart.MemcpyDefault)
		assert.True(t, errors.Is(err, cudart.ErrInvalidValue), "source %#x: %v", bad, err)
		err = s.Memcpy(bad, d, 16, cudart.MemcpyDefault)
		assert.True(t, errors.Is(err, cudart.ErrInvalidValue), "destination %#x: %v", bad, err)
		err = s.MemcpyAsync(d, bad, 16, cudart.MemcpyHostToDevice, cudart.DefaultStream)
		assert.True(t, errors.Is(err, cudart.ErrInvalidValue), "async source %#x: %v", bad, err)
	}
	// A range that starts in mapped host memory and runs into nothing.
	m, err = syscall.Mmap(-1, 0, 8192, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	half := uintptr(unsafe.Pointer(&m[0]))
	munmap := func(p, n uintptr) {
		_, _, e := syscall.Syscall(syscall.SYS_MUNMAP, p, n, 0)
		require.Zero(t, e)
	}
	munmap(half+4096, 4096)
	assert.Error(t, s.Memcpy(d, half+4000, 200, cudart.MemcpyDefault), "runs into an unmapped page")
	require.NoError(t, s.Memcpy(d, half+3000, 200, cudart.MemcpyDefault), "inside the mapped page")
	munmap(half, 4096)
	// Host memory of the process copies as before.
	src := []byte("never the same bytes twice")
	dst := make([]byte, len(src))
	require.NoError(t, s.Memcpy(d, uintptr(unsafe.Pointer(&src[0])), uintptr(len(src)), cudart.MemcpyDefault))
	require.NoError(t, s.Memcpy(uintptr(unsafe.Pointer(&dst[0])), d, uintptr(len(src)), cudart.MemcpyDefault))
	assert.Equal(t, src, dst)
}
