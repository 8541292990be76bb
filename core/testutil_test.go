package core

// Test helpers shared by every test file of package core (internal tests;
// files in package core_test cannot see them). They work on either backend:
// the simulated device, or the real GPU with RMMGO_BACKEND=cuda.
//
//	testRuntime(t)              the process runtime (cudart.Default), or fail
//	isSimulated(t)              whether the tests run on the simulated device
//	skipOnCUDA(t, why)          skip a test that only makes sense simulated
//	newStream(t, r)             a new stream, destroyed when the test ends
//	fillAndCheck(t, r, p, n, v, s)
//	                            memset n bytes at p to v on stream s, copy
//	                            them back on s, synchronize s and compare
//	expect(r, p, n, v, s)       copy back and compare only (returns an error)
//	withDevice(t, r, dev, fn)   run fn with dev current on a locked OS thread,
//	                            then restore the thread's device
//	requireDevices(t, r, n)     skip unless the machine has n devices
//	pageableRuntime(t)          a runtime whose devices have pageable memory
//	                            access (the default one, or on the simulated
//	                            backend a private simulated machine), else skip
//	newSimRuntime(t, cfg)       a private simulated machine for tests that
//	                            need another configuration (no pageable
//	                            access, old CUDA, no memory pools, ...)

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
	"github.com/rmmgo/rmmgo/cudart/sim"
)

// testRuntime returns the process runtime that the resources use.
func testRuntime(t testing.TB) cudart.Runtime {
	t.Helper()
	r, err := cudart.Default()
	require.NoError(t, err, "no CUDA runtime for the tests")
	return r
}

// isSimulated reports whether the tests run on the simulated device.
func isSimulated(t testing.TB) bool {
	return testRuntime(t).Backend() == cudart.BackendSimulated
}

// skipOnCUDA skips a test that relies on the simulated device.
func skipOnCUDA(t testing.TB, why string) {
	t.Helper()
	if !isSimulated(t) {
		t.Skipf("simulated device only: %s", why)
	}
}

// newStream creates a stream on r's current device and destroys it (after
// synchronizing it) when the test ends.
func newStream(t testing.TB, r cudart.Runtime) Stream {
	t.Helper()
	s, err := r.StreamCreate(cudart.StreamFlagDefault)
	require.NoError(t, err, "StreamCreate")
	t.Cleanup(func() {
		_ = r.StreamSynchronize(s)
		if err := r.StreamDestroy(s); err != nil {
			t.Errorf("StreamDestroy: %v", err)
		}
	})
	return s
}

// fillAndCheck sets n bytes at ptr to value with MemsetAsync on stream s,
// copies them into Go memory with MemcpyAsync on s, synchronizes s and
// checks every byte. The copy starts from a buffer holding ^value, so a
// copy that did not happen is caught. ptr may be any memory the device can
// reach (device, managed, pinned, or system memory with pageable access).
func fillAndCheck(t testing.TB, r cudart.Runtime, ptr, n uintptr, value byte, s Stream) {
	t.Helper()
	require.NoError(t, fill(r, ptr, n, value, s))
}

// fill is fillAndCheck returning an error instead of failing the test, for
// use from goroutines.
func fill(r cudart.Runtime, ptr, n uintptr, value byte, s Stream) error {
	if n == 0 {
		return nil
	}
	if err := r.MemsetAsync(ptr, int(value), n, s); err != nil {
		return fmt.Errorf("MemsetAsync(%#x, %d, %d): %w", ptr, value, n, err)
	}
	return expect(r, ptr, n, value, s)
}

// expect copies n bytes at ptr into Go memory with MemcpyAsync on stream s,
// synchronizes s and checks that every byte is value.
func expect(r cudart.Runtime, ptr, n uintptr, value byte, s Stream) error {
	if n == 0 {
		return nil
	}
	buf := bytes.Repeat([]byte{^value}, int(n))
	dst := uintptr(unsafe.Pointer(&buf[0]))
	if err := r.MemcpyAsync(dst, ptr, n, cudart.MemcpyDefault, s); err != nil {
		return fmt.Errorf("MemcpyAsync(%d bytes from %#x): %w", n, ptr, err)
	}
	if err := r.StreamSynchronize(s); err != nil {
		return fmt.Errorf("StreamSynchronize: %w", err)
	}
	runtime.KeepAlive(buf)
	for i, b := range buf {
		if b != value {
			return fmt.Errorf("byte %d of %d at %#x is %#x, want %#x", i, n, ptr, b, value)
		}
	}
	return nil
}

// withDevice runs fn on a locked OS thread with device dev current, then
// restores the thread's previous device.
func withDevice(t testing.TB, r cudart.Runtime, dev int, fn func()) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	prev, err := r.GetDevice()
	require.NoError(t, err)
	require.NoError(t, r.SetDevice(dev))
	defer func() {
		if err := r.SetDevice(prev); err != nil {
			t.Errorf("restoring device %d: %v", prev, err)
		}
	}()
	fn()
}

// requireDevices skips the test unless r has at least n devices; where
// RMMGO_TEST_MIN_DEVICES says the machine has n (make test on the simulated
// device, the GPU bundle on two GPUs), fewer fails the test instead.
func requireDevices(t testing.TB, r cudart.Runtime, n int) {
	t.Helper()
	count, err := r.GetDeviceCount()
	require.NoError(t, err)
	if count < n {
		if min, _ := strconv.Atoi(os.Getenv("RMMGO_TEST_MIN_DEVICES")); min >= n {
			t.Fatalf("needs %d devices: RMMGO_TEST_MIN_DEVICES=%d, but the machine has %d", n, min, count)
		}
		t.Skipf("needs %d devices, the machine has %d", n, count)
	}
}

// pageableRuntime returns a runtime whose current device can use pageable
// host memory: the process runtime when it can; on the simulated backend
// otherwise a private simulated machine that can; else it skips the test.
func pageableRuntime(t testing.TB) cudart.Runtime {
	t.Helper()
	r := testRuntime(t)
	dev, err := r.GetDevice()
	require.NoError(t, err)
	v, err := r.DeviceGetAttribute(cudart.DevAttrPageableMemoryAccess, dev)
	require.NoError(t, err)
	if v != 0 {
		return r
	}
	if r.Backend() != cudart.BackendSimulated {
		t.Skipf("device %d has no pageable memory access", dev)
	}
	return newSimRuntime(t, sim.Config{Devices: 2, MemoryPerDevice: 1 << 30, PageableMemoryAccess: true})
}

// newSimRuntime returns a private simulated machine with configuration cfg,
// closed when the test ends. It is not the process runtime: only resources
// made with the internal constructors that take a runtime (newSystem(r),
// ...) use it.
func newSimRuntime(t testing.TB, cfg sim.Config) *sim.Runtime {
	t.Helper()
	sim := sim.New(cfg)
	t.Cleanup(func() { _ = sim.Close() })
	return sim
}

// requireIs fails unless errors.Is(err, target), showing err.
func requireIs(t testing.TB, err, target error, msgAndArgs ...any) {
	t.Helper()
	if !errors.Is(err, target) {
		require.Failf(t, "wrong error", "got %v, want an error wrapping %q. %v", err, target, fmt.Sprint(msgAndArgs...))
	}
}
