package main

// The pool-based kinds' C path (async_path.c): rmm_allocate and
// rmm_deallocate serve cuda_async, cuda_async_managed and cuda_async_view
// without Go, and keep every check the Go path makes. Each test runs on the
// process backend; TestAsyncPathOnFakeCUDA runs them again with the real
// backend over cudart's fake libcudart, where C calls the runtime directly.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/cudart"
)

// asyncKinds' C kinds, with a maker for each (a view over a new owner).
type asyncCase struct {
	name string
	make func(t *testing.T) uintptr // the handle; released when the test ends
}

var asyncCases = []asyncCase{
	{"cuda_async", func(t *testing.T) uintptr { return makeAsync(t, 6) }},
	{"cuda_async_managed", func(t *testing.T) uintptr { return makeAsync(t, 8) }},
	{"cuda_async_view", func(t *testing.T) uintptr {
		owner := makeAsync(t, 6)
		e, ok := reg.lookup(owner)
		require.True(t, ok)
		view, err := core.NewCudaAsyncView(e.res.(*core.CudaAsync).PoolHandle())
		require.NoError(t, err)
		ve, err := reg.add(view, true, 0, nil)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, reg.release(ve.handle)) })
		return ve.handle
	}},
}

// makeAsync creates a resource of C kind k (skipping the test where the
// backend lacks it), released when the test ends.
func makeAsync(t *testing.T, k int) uintptr {
	t.Helper()
	h, st := createPlain(k)
	if st != statusSuccess {
		if k == 8 {
			t.Skipf("cuda_async_managed: %s", lastMessage())
		}
		require.Equal(t, statusSuccess, st, lastMessage())
	}
	t.Cleanup(func() { _ = reg.release(h) })
	return h
}

// cAlloc and cFree are rmm_allocate and rmm_deallocate as C calls them.
func cAlloc(h, stream uintptr, n uint64) (uintptr, status) {
	var p unsafe.Pointer
	st := rmm_allocate(toHandle(h), toStream(stream), cSize(n), 256, &p)
	return uintptr(p), st
}

func cFree(h, stream, p uintptr, n uint64) status { return deallocateOn(h, stream, p, n) }

// withUpstream is the default options with upstream h.
func withUpstream(h uintptr) testOptions {
	o := defaultTestOptions()
	o.upstream = h
	return o
}

// TestAsyncPathServesInC: rmm_allocate, rmm_deallocate and
// rmm_deallocate_sync of each pool-based kind are served by the C path.
func TestAsyncPathServesInC(t *testing.T) {
	for _, c := range asyncCases {
		t.Run(c.name, func(t *testing.T) {
			h := c.make(t)
			onThread(func() {
				n0 := apServedMine()
				p, st := cAlloc(h, 0, 1000)
				require.Equal(t, statusSuccess, st, lastMessage())
				require.Equal(t, statusSuccess, cFree(h, 0, p, 1000), lastMessage())
				p, st = cAlloc(h, 0, 3000)
				require.Equal(t, statusSuccess, st, lastMessage())
				require.Equal(t, statusSuccess, deallocateSyncAt(h, p, 3000), lastMessage())
				assert.Equal(t, n0+4, apServedMine(), "every call served in C")

				// What the C path leaves to Go: zero bytes, a bad alignment,
				// a NULL free.
				p, st = cAlloc(h, 0, 0)
				assert.Equal(t, statusSuccess, st)
				assert.Zero(t, p)
				var q unsafe.Pointer
				assert.Equal(t, statusBadAlignment, rmm_allocate(toHandle(h), nil, 256, 3, &q))
				assert.Equal(t, statusSuccess, cFree(h, 0, 0, 256))
				assert.Equal(t, n0+4, apServedMine())
			})
		})
	}
}

// TestAsyncPathMixedFrees: one record per block, whichever path made it:
// memory allocated in C is freed from Go (directly, through an adaptor, or
// through an equal resource) and the other way round.
func TestAsyncPathMixedFrees(t *testing.T) {
	owner := makeAsync(t, 6)
	oe, _ := reg.lookup(owner)
	res := oe.res.(*core.CudaAsync)
	view := asyncCases[2].make(t) // over its own owner: another pool
	ts, st := createWithOptions(47, withUpstream(owner))
	require.Equal(t, statusSuccess, st, lastMessage())
	defer reg.release(ts)
	onThread(func() {
		// C -> Go.
		p, st := cAlloc(owner, 0, 5000)
		require.Equal(t, statusSuccess, st, lastMessage())
		require.NoError(t, res.Deallocate(core.DefaultStream, p, 5000, 256))
		// Go -> C.
		p2, err := res.Allocate(core.DefaultStream, 6000, 256)
		require.NoError(t, err)
		n0 := apServedMine()
		require.Equal(t, statusSuccess, cFree(owner, 0, p2, 6000), lastMessage())
		assert.Equal(t, n0+1, apServedMine())
		// C -> an adaptor over it (thread_safe), in Go.
		p, st = cAlloc(owner, 0, 7000)
		require.Equal(t, statusSuccess, st, lastMessage())
		require.Equal(t, statusSuccess, cFree(ts, 0, p, 7000), lastMessage())
		// Through the adaptor (Go) -> C.
		p, st = cAlloc(ts, 0, 7000)
		require.Equal(t, statusSuccess, st, lastMessage())
		require.Equal(t, statusSuccess, cFree(owner, 0, p, 7000), lastMessage())
		// Another pool's view refuses the owner's block, in C and in Go
		// alike, and frees nothing.
		p, st = cAlloc(owner, 0, 512)
		require.Equal(t, statusSuccess, st, lastMessage())
		assert.Equal(t, statusInvalidPointer, cFree(view, 0, p, 512))
		assert.Contains(t, lastMessage(), "allocates from memory pool")
		ve, _ := reg.lookup(view)
		require.ErrorIs(t, ve.res.Deallocate(core.DefaultStream, p, 512, 256), core.ErrInvalidPointer)
		require.Equal(t, statusSuccess, cFree(owner, 0, p, 512), lastMessage())
	})
}

// TestAsyncPathRefusesBadFrees: a wrong size, an interior pointer, a second
// free and memory of another resource are refused with the Go path's
// statuses and messages, free nothing, and leave the block usable.
func TestAsyncPathRefusesBadFrees(t *testing.T) {
	for _, c := range asyncCases {
		t.Run(c.name, func(t *testing.T) {
			h := c.make(t)
			other := makeAsync(t, 6)
			onThread(func() {
				p, st := cAlloc(h, 0, 4096)
				require.Equal(t, statusSuccess, st, lastMessage())
				n0 := apServedMine()
				assert.Equal(t, statusInvalidArgument, cFree(h, 0, p, 4000))
				assert.Contains(t, lastMessage(), "allocated with size 4096")
				assert.Equal(t, statusInvalidPointer, cFree(h, 0, p+256, 4096))
				assert.Equal(t, statusInvalidPointer, cFree(other, 0, p, 4096))
				q, st := cAlloc(other, 0, 4096)
				require.Equal(t, statusSuccess, st)
				assert.Equal(t, statusInvalidPointer, cFree(h, 0, q, 4096))
				assert.Equal(t, n0+1, apServedMine(), "only the allocation from other was served in C")
				require.Equal(t, statusSuccess, cFree(other, 0, q, 4096))
				require.Equal(t, statusSuccess, cFree(h, 0, p, 4096), lastMessage())
				assert.Equal(t, statusInvalidPointer, cFree(h, 0, p, 4096), "a second free")
				assert.Contains(t, lastMessage(), "already deallocated")
			})
		})
	}
}

// TestAsyncPathStreams: a stream the library made is served in C; once
// rmm_stream_destroy retired it, every call naming it is refused, also on
// a thread that used it before (it asks Go again after a retirement).
func TestAsyncPathStreams(t *testing.T) {
	h := makeAsync(t, 6)
	s, st := newStreamValue()
	require.Equal(t, statusSuccess, st, lastMessage())
	used := make(chan struct{})
	retired := make(chan struct{})
	done := make(chan struct{})
	go func() { // a thread that knows the stream from before
		defer close(done)
		runtime.LockOSThread()
		p, st := cAlloc(h, s, 256)
		require.Equal(t, statusSuccess, st, lastMessage())
		require.Equal(t, statusSuccess, cFree(h, s, p, 256))
		close(used)
		<-retired
		n0 := apServedMine()
		_, st = cAlloc(h, s, 256)
		assert.Equal(t, statusInvalidArgument, st)
		assert.Contains(t, lastMessage(), "destroyed")
		assert.Equal(t, n0, apServedMine())
	}()
	<-used
	var p unsafe.Pointer
	onThread(func() {
		var st status
		require.Equal(t, statusSuccess, rmm_allocate(toHandle(h), toStream(s), 512, 256, &p), lastMessage())
		require.Equal(t, statusSuccess, rmm_stream_destroy(toStream(s)), lastMessage())
		st = rmm_deallocate(toHandle(h), toStream(s), p, 512, 256)
		assert.Equal(t, statusInvalidArgument, st)
		assert.Contains(t, lastMessage(), "destroyed")
		require.Equal(t, statusSuccess, cFree(h, 0, uintptr(p), 512), lastMessage())
	})
	close(retired)
	<-done
}

// TestAsyncPathDeviceCheck: with another device current, an allocation is
// refused (RMM_ERROR_WRONG_DEVICE) before the pool is asked.
func TestAsyncPathDeviceCheck(t *testing.T) {
	r, err := cudart.Default()
	require.NoError(t, err)
	if n, _ := r.GetDeviceCount(); n < 2 {
		if min, _ := strconv.Atoi(os.Getenv("RMMGO_TEST_MIN_DEVICES")); min >= 2 {
			t.Fatalf("needs 2 devices: RMMGO_TEST_MIN_DEVICES=%d, but the machine has %d", min, n)
		}
		t.Skip("one device")
	}
	var h uintptr
	onThread(func() {
		require.Equal(t, statusSuccess, rmm_set_device(0))
		h = makeAsync(t, 6)
	})
	e, _ := reg.lookup(h)
	pool := e.res.(*core.CudaAsync).PoolHandle()
	onThread(func() {
		require.Equal(t, statusSuccess, rmm_set_device(1))
		n0 := apServedMine()
		_, st := cAlloc(h, 0, 256)
		assert.Equal(t, statusWrongDevice, st)
		assert.Contains(t, lastMessage(), "made on device 0 but device 1 is current")
		assert.Equal(t, n0, apServedMine())
		used, err := r.MemPoolGetAttribute(pool, cudart.MemPoolAttrUsedMemCurrent)
		require.NoError(t, err)
		assert.Zero(t, used)
		require.Equal(t, statusSuccess, rmm_set_device(0))
		p, st := cAlloc(h, 0, 256)
		require.Equal(t, statusSuccess, st, lastMessage())
		require.Equal(t, statusSuccess, cFree(h, 0, p, 256))
	})
}

// TestAsyncPathReleaseRacingCalls: threads allocate and free in C while the
// last handle goes: every call succeeds or fails with
// RMM_ERROR_INVALID_HANDLE, and the device gets every byte back.
func TestAsyncPathReleaseRacingCalls(t *testing.T) {
	for _, c := range asyncCases[:2] { // the owners: their release destroys the pool
		t.Run(c.name, func(t *testing.T) {
			free0, st := memFree()
			require.Equal(t, statusSuccess, st)
			for round := 0; round < 5; round++ {
				h, st := createPlain(map[string]int{"cuda_async": 6, "cuda_async_managed": 8}[c.name])
				if st != statusSuccess {
					t.Skip(lastMessage())
				}
				var wg sync.WaitGroup
				var bad atomic.Int64
				var badMsg atomic.Value
				for g := 0; g < 4; g++ {
					wg.Add(1)
					go func(g int) {
						defer wg.Done()
						runtime.LockOSThread()
						defer runtime.UnlockOSThread()
						for i := 0; ; i++ {
							n := uint64(1<<20 + 256*(g+i%8))
							p, st := cAlloc(h, 0, n)
							if st == statusInvalidHandle {
								return
							}
							if st != statusSuccess {
								bad.Add(1)
								badMsg.Store(fmt.Sprintf("allocate: %d %s", st, lastMessage()))
								return
							}
							if st := cFree(h, 0, p, n); st != statusSuccess && st != statusInvalidHandle {
								bad.Add(1)
								badMsg.Store(fmt.Sprintf("free: %d %s", st, lastMessage()))
								return
							}
						}
					}(g)
				}
				time.Sleep(time.Duration(1+round) * time.Millisecond)
				require.NoError(t, reg.release(h))
				wg.Wait()
				require.Zero(t, bad.Load(), "round %d: %v", round, badMsg.Load())
			}
			// Managed memory is not device memory to cudaMemGetInfo, and on a
			// GPU the driver's own allocations move it (the stress program
			// checks device memory there).
			if c.name == "cuda_async" && exactMemInfo(t) {
				free1, _ := memFree()
				assert.Equal(t, free0, free1, "every byte back")
			}
		})
	}
}

// exactMemInfo reports whether the backend's free memory is exact: the
// simulated device, or the fake libcudart of TestAsyncPathOnFakeCUDA.
func exactMemInfo(t *testing.T) bool {
	r, err := cudart.Default()
	require.NoError(t, err)
	return r.Backend() == cudart.BackendSimulated || os.Getenv("RMMGO_TEST_ASYNC_FAKE") != ""
}

// TestAsyncPathResourceClosedInGo: a resource Go made and closes while C
// holds a handle to it: later C calls get RMM_ERROR_INVALID_HANDLE, and the
// block C held went back with the Close.
func TestAsyncPathResourceClosedInGo(t *testing.T) {
	res, err := core.NewCudaAsync(core.CudaAsyncOptions{})
	require.NoError(t, err)
	e, err := reg.handleFor(res)
	require.NoError(t, err)
	defer reg.release(e.handle)
	onThread(func() {
		p, st := cAlloc(e.handle, 0, 2048)
		require.Equal(t, statusSuccess, st, lastMessage())
		require.NoError(t, res.Close())
		n0 := apServedMine()
		_, st = cAlloc(e.handle, 0, 2048)
		assert.Equal(t, statusInvalidHandle, st)
		assert.Equal(t, statusInvalidHandle, cFree(e.handle, 0, p, 2048))
		assert.Equal(t, n0, apServedMine())
	})
}

// TestAsyncPathOnFakeCUDA runs the tests above again in a child process on
// the real backend over cudart's fake libcudart: there the C path calls the
// runtime's functions itself, with no Go callback.
func TestAsyncPathOnFakeCUDA(t *testing.T) {
	if os.Getenv("RMMGO_TEST_ASYNC_FAKE") != "" {
		t.Skip("the child itself")
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s)", cc)
	}
	lib := filepath.Join(t.TempDir(), "libfakecudart.so")
	out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", lib,
		filepath.Join("..", "cudart", "testdata", "fake_cudart.c"), "-lpthread").CombinedOutput()
	require.NoError(t, err, "building the fake libcudart: %s", out)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestAsyncPath", "-test.count", "1", "-test.v")
	cmd.Env = append(os.Environ(), cudart.EnvBackend+"=cuda", cudart.EnvLibrary+"="+lib, "RMMGO_TEST_ASYNC_FAKE=1")
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "on the cuda backend")
	assert.Contains(t, string(out), "--- PASS: TestAsyncPathServesInC")
	assert.NotContains(t, string(out), "--- SKIP: TestAsyncPathDeviceCheck")
}
