package core

// The pool-based kinds' C path (cuda_async_path.go, internal/asyncpath):
// with the real backend it calls the CUDA runtime's own functions, which
// these tests check against cudart's fake libcudart (a C library that
// journals its calls); with any other runtime it calls back into Go. Both
// paths share one table of blocks with the slow path.

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
)

// fakeCUDA builds cudart's fake libcudart with a journal and opens it with
// the real backend; journal returns the runtime calls made while f ran
// (cudaGetDevice is not journaled).
func fakeCUDA(t *testing.T) (r cudart.Runtime, journal func(f func()) []string) {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s): cannot build the fake libcudart", cc)
	}
	dir := t.TempDir()
	lib, log := filepath.Join(dir, "libfakecudart.so"), filepath.Join(dir, "calls.log")
	out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", fmt.Sprintf("-DFAKE_LOG=%q", log), "-o", lib,
		filepath.Join("..", "cudart", "testdata", "fake_cudart.c"), "-lpthread").CombinedOutput()
	require.NoError(t, err, "building the fake libcudart: %s", out)
	r, err = cudart.OpenCUDA(lib)
	require.NoError(t, err)
	lines := func() []string {
		f, err := os.Open(log)
		if os.IsNotExist(err) {
			return nil
		}
		require.NoError(t, err)
		defer f.Close()
		var l []string
		for sc := bufio.NewScanner(f); sc.Scan(); {
			name, _, _ := strings.Cut(sc.Text(), " ")
			l = append(l, name)
		}
		return l
	}
	return r, func(f func()) []string {
		before := len(lines())
		f()
		return lines()[before:]
	}
}

// TestCudaAsyncCPathOnCUDA: on the real backend the C path calls the
// runtime directly (no Go callback), once per call; frees its record
// refuses never reach cudaFreeAsync; a failed allocation reports the
// runtime's error; another current device is refused before the pool is
// asked; Close gives back what is outstanding, whichever path allocated it.
func TestCudaAsyncCPathOnCUDA(t *testing.T) {
	r, journal := fakeCUDA(t)
	runtime.LockOSThread() // the fake's current device belongs to the thread
	defer runtime.UnlockOSThread()
	require.NoError(t, r.SetDevice(0))
	free0, _, err := r.MemGetInfo()
	require.NoError(t, err)
	c, err := newCudaAsync(r, CudaAsyncOptions{})
	require.NoError(t, err)
	assert.True(t, c.state.Direct(), "the CUDA runtime is called from C directly")

	var p uintptr
	calls := journal(func() {
		p, err = c.Allocate(DefaultStream, 1000, DefaultAlignment)
		require.NoError(t, err)
	})
	assert.Equal(t, []string{"cudaMallocFromPoolAsync"}, calls)
	assert.True(t, asyncLive.has(p))

	calls = journal(func() {
		requireIs(t, c.Deallocate(DefaultStream, p, 999, DefaultAlignment), ErrInvalidArgument, "a wrong size")
		requireIs(t, c.Deallocate(DefaultStream, p+256, 1000, DefaultAlignment), ErrInvalidPointer, "an interior pointer")
	})
	assert.Empty(t, calls, "refused frees reach no runtime call")
	calls = journal(func() { require.NoError(t, c.Deallocate(DefaultStream, p, 1000, DefaultAlignment)) })
	assert.Equal(t, []string{"cudaFreeAsync"}, calls)
	requireIs(t, c.Deallocate(DefaultStream, p, 1000, DefaultAlignment), ErrInvalidPointer, "a second free")

	// Out of memory: the runtime's own error, through the slow path.
	_, err = c.Allocate(DefaultStream, 2<<30, DefaultAlignment)
	requireIs(t, err, ErrOutOfMemory)
	assert.Contains(t, err.Error(), "cudaMallocFromPoolAsync")
	assert.Contains(t, err.Error(), "fake: out of memory")

	// Another device current: refused, with both devices named.
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // the thread ends with device 1 current
		if err := r.SetDevice(1); err != nil {
			done <- err
			return
		}
		var err error
		calls = journal(func() { _, err = c.Allocate(DefaultStream, 256, DefaultAlignment) })
		done <- err
	}()
	err = <-done
	requireIs(t, err, ErrWrongDevice)
	assert.Contains(t, err.Error(), "made on device 0 but device 1 is current")
	assert.Empty(t, calls)

	// Blocks from both paths: Close gives them back. A view of the pool
	// frees the owner's blocks, and the owner the view's.
	fast, err := c.Allocate(DefaultStream, 4096, DefaultAlignment)
	require.NoError(t, err)
	slow, err := c.allocateSlow(DefaultStream, 8192)
	require.NoError(t, err)
	view, err := newCudaAsyncView(r, c.PoolHandle())
	require.NoError(t, err)
	assert.True(t, view.state.Direct())
	require.NoError(t, view.Deallocate(DefaultStream, fast, 4096, DefaultAlignment), "a view frees its owner's block")
	vp, err := view.Allocate(DefaultStream, 512, DefaultAlignment)
	require.NoError(t, err)
	require.NoError(t, c.Deallocate(DefaultStream, vp, 512, DefaultAlignment), "the owner frees its view's block")
	fast, err = c.Allocate(DefaultStream, 4096, DefaultAlignment)
	require.NoError(t, err)
	calls = journal(func() { require.NoError(t, c.Close()) })
	assert.ElementsMatch(t, []string{"cudaDeviceSynchronize", "cudaFreeAsync", "cudaFreeAsync", "cudaMemPoolDestroy"}, calls)
	assert.False(t, asyncLive.has(fast) || asyncLive.has(slow))
	requireIs(t, c.Deallocate(DefaultStream, fast, 4096, DefaultAlignment), ErrClosed)
	_, err = c.Allocate(DefaultStream, 256, DefaultAlignment)
	requireIs(t, err, ErrClosed)
	free1, _, err := r.MemGetInfo()
	require.NoError(t, err)
	assert.Equal(t, free0, free1, "every byte back")
}

// TestCudaAsyncPathsShareRecords: a block allocated on one path is freed on
// the other (the C path and the slow path keep one record), with the same
// refusals on both.
func TestCudaAsyncPathsShareRecords(t *testing.T) {
	c := newTestCudaAsync(t, CudaAsyncOptions{})
	p, err := c.allocateSlow(DefaultStream, 3000)
	require.NoError(t, err)
	requireIs(t, c.Deallocate(DefaultStream, p, 3001, DefaultAlignment), ErrInvalidArgument)
	require.NoError(t, c.Deallocate(DefaultStream, p, 3000, DefaultAlignment))
	p, err = c.Allocate(DefaultStream, 3000, DefaultAlignment)
	require.NoError(t, err)
	err = c.deallocateSlow(DefaultStream, p, 2999)
	requireIs(t, err, ErrInvalidArgument)
	assert.Contains(t, err.Error(), "allocated with size 3000")
	require.NoError(t, c.deallocateSlow(DefaultStream, p, 3000))
	requireIs(t, c.Deallocate(DefaultStream, p, 3000, DefaultAlignment), ErrInvalidPointer)
}

// TestCudaAsyncCPathGoroutines: goroutines on both paths allocate and free
// one resource's blocks, each freeing on the path the other allocated on;
// nothing is lost or freed twice.
func TestCudaAsyncCPathGoroutines(t *testing.T) {
	c := newTestCudaAsync(t, CudaAsyncOptions{})
	r := c.runtime()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				n := uintptr(256 * (1 + (g+i)%16))
				var p uintptr
				var err error
				if i%2 == 0 {
					p, err = c.Allocate(DefaultStream, n, DefaultAlignment)
				} else {
					p, err = c.allocateSlow(DefaultStream, n)
				}
				if !assert.NoError(t, err) {
					return
				}
				if i%2 == 0 {
					err = c.deallocateSlow(DefaultStream, p, n)
				} else {
					err = c.Deallocate(DefaultStream, p, n, DefaultAlignment)
				}
				if !assert.NoError(t, err) {
					return
				}
			}
		}(g)
	}
	wg.Wait()
	require.NoError(t, r.DeviceSynchronize())
	used, err := r.MemPoolGetAttribute(c.PoolHandle(), cudart.MemPoolAttrUsedMemCurrent)
	require.NoError(t, err)
	assert.Zero(t, used, "every block back in the pool")
}

// BenchmarkCudaAsyncOnFakeCUDA: Allocate + Deallocate of 4 KiB from Go on
// the real backend over the fake libcudart (no journal), against the same
// calls made directly on the runtime: what the resource adds per pair.
func BenchmarkCudaAsyncOnFakeCUDA(b *testing.B) {
	r, err := openFakeNoLog(b)
	if err != nil {
		b.Skip(err)
	}
	c, err := newCudaAsync(r, CudaAsyncOptions{})
	require.NoError(b, err)
	defer c.Close()
	pool := c.PoolHandle()
	b.Run("direct", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			p, _ := r.MallocFromPoolAsync(4096, pool, DefaultStream)
			_ = r.FreeAsync(p, DefaultStream)
		}
	})
	b.Run("cuda_async", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			p, _ := c.Allocate(DefaultStream, 4096, DefaultAlignment)
			_ = c.Deallocate(DefaultStream, p, 4096, DefaultAlignment)
		}
	})
}

// openFakeNoLog builds the fake libcudart without a journal, optimized.
func openFakeNoLog(b *testing.B) (cudart.Runtime, error) {
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		return nil, err
	}
	lib := filepath.Join(b.TempDir(), "libfakecudart.so")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", lib,
		filepath.Join("..", "cudart", "testdata", "fake_cudart.c"), "-lpthread").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the fake libcudart: %v: %s", err, out)
	}
	return cudart.OpenCUDA(lib)
}
