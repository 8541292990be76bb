package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/cudart"
	"github.com/rmmgo/rmmgo/cudart/sim"
)

// TestMain chooses the backend: with RMMGO_BACKEND unset, a simulated
// machine of 2 devices; otherwise cudart.Default (the GPU bundle sets cuda).
func TestMain(m *testing.M) {
	if os.Getenv(cudart.EnvBackend) == "" {
		if err := cudart.SetDefault(sim.New(sim.Config{Devices: 2, MemoryPerDevice: 1 << 30})); err != nil {
			fmt.Fprintf(os.Stderr, "capi tests: installing the simulated device: %v\n", err)
			os.Exit(2)
		}
	}
	r, err := cudart.Default()
	if err != nil {
		fmt.Fprintf(os.Stderr, "capi tests: no CUDA runtime: %v\n", err)
		os.Exit(2)
	}
	n, _ := r.GetDeviceCount()
	fmt.Printf("capi tests run on the %s backend: %d device(s)\n", r.Backend(), n)
	os.Exit(m.Run())
}

func TestStatusOf(t *testing.T) {
	cudaOOM := fmt.Errorf("cuda: %w: %w", core.ErrOutOfMemory, cudart.NewError("cudaMalloc", cudart.ErrorMemoryAllocation, ""))
	for _, tc := range []struct {
		name string
		err  error
		want status
	}{
		{"out of memory over a CUDA error", cudaOOM, statusOutOfMemory},
		{"bad alignment", fmt.Errorf("x: %w", core.ErrBadAlignment), statusBadAlignment},
		{"invalid pointer", fmt.Errorf("x: %w", core.ErrInvalidPointer), statusInvalidPointer},
		{"wrong device", fmt.Errorf("x: %w", core.ErrWrongDevice), statusWrongDevice},
		{"not supported", fmt.Errorf("x: %w", core.ErrNotSupported), statusNotSupported},
		{"invalid device over invalid argument", fmt.Errorf("x: %w: %w", core.ErrInvalidArgument, cudart.NewError("cudaSetDevice", cudart.ErrorInvalidDevice, "")), statusInvalidDevice},
		{"invalid argument", fmt.Errorf("x: %w", core.ErrInvalidArgument), statusInvalidArgument},
		{"our invalid device", fmt.Errorf("x: %w", errInvalidDevice), statusInvalidDevice},
		{"backend", fmt.Errorf("x: %w", cudart.ErrBackendUnavailable), statusBackendUnavailable},
		{"out of range", fmt.Errorf("x: %w", core.ErrOutOfRange), statusOutOfRange},
		{"CUDA", fmt.Errorf("x: %w: %w", core.ErrCUDA, cudart.NewError("cudaStreamCreate", cudart.ErrorNotReady, "")), statusCUDA},
		{"bare CUDA error", cudart.NewError("cudaEventRecord", cudart.ErrorIllegalAddress, ""), statusCUDA},
		{"bad alloc", fmt.Errorf("x: %w", core.ErrBadAlloc), statusBadAlloc},
		{"invalid handle", fmt.Errorf("x: %w", errInvalidHandle), statusInvalidHandle},
		{"closed under the call", fmt.Errorf("x: %w", core.ErrClosed), statusInvalidHandle},
		{"closed over out of memory", fmt.Errorf("x: %w: %w", core.ErrClosed, core.ErrOutOfMemory), statusInvalidHandle},
		{"unknown, allocating", errors.New("what"), statusBadAlloc},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, statusOf(tc.err, statusBadAlloc))
		})
	}
	assert.Equal(t, statusInternal, statusOf(errors.New("what"), statusInternal))
}

// The exports called from Go, on one OS thread so that the thread's message
// is the one read back.

func TestAllocateThroughTheExports(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	out := toHandle(0)
	require.Equal(t, statusSuccess, rmm_resource_create(1 /* cuda */, nil, &out), lastMessage())
	var p unsafe.Pointer
	require.Equal(t, statusSuccess, rmm_allocate(out, nil, 4096, 256, &p), lastMessage())
	assert.NotNil(t, p)
	assert.Zero(t, uintptr(p)%256)
	require.Equal(t, statusSuccess, rmm_memset(p, 7, 4096, nil))
	require.Equal(t, statusSuccess, rmm_deallocate(out, nil, p, 4096, 256), lastMessage())
	assert.Equal(t, statusInvalidPointer, rmm_deallocate(out, nil, p, 4096, 256))
	assert.Contains(t, lastMessage(), "rmm_deallocate")
	assert.Equal(t, statusBadAlignment, rmm_allocate(out, nil, 4096, 3, &p))
	assert.Contains(t, lastMessage(), "alignment 3")
	require.Equal(t, statusSuccess, rmm_resource_release(out))
	assert.Equal(t, statusInvalidHandle, rmm_allocate(out, nil, 4096, 256, &p))
	assert.Equal(t, statusInvalidHandle, rmm_resource_release(out))
}

func TestPanicsBecomeInternalErrors(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	e, err := reg.add(&fakeResource{panics: true}, false, 0, nil)
	require.NoError(t, err)
	defer reg.release(e.handle)
	var p unsafe.Pointer
	assert.Equal(t, statusInternal, rmm_allocate(toHandle(e.handle), nil, 64, 256, &p))
	msg := lastMessage()
	assert.Contains(t, msg, "rmm_allocate")
	assert.Contains(t, msg, "panic")
	assert.Contains(t, msg, "assignment to entry in nil map")
	assert.Contains(t, msg, "registry_test.go", "the message says where")
	assert.Nil(t, p, "no result written")
}

func TestMessagesArePerThread(t *testing.T) {
	var wg sync.WaitGroup
	out := toHandle(0)
	require.Equal(t, statusSuccess, rmm_resource_create(1, nil, &out))
	defer rmm_resource_release(out)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var p unsafe.Pointer
			for k := 0; k < 50; k++ {
				bytes := uint64(1000*(i+1) + k)
				if st := rmm_allocate(out, nil, cSize(bytes), 3, &p); st != statusBadAlignment {
					t.Errorf("status %d", st)
				}
				want := fmt.Sprintf("(%d bytes, alignment 3)", bytes)
				if got := lastMessage(); !assert.Contains(t, got, want) {
					return
				}
			}
		}(i)
	}
	wg.Wait()
}

func TestKindsAreAllNamed(t *testing.T) {
	for _, k := range kindTable {
		assert.NotEmpty(t, k.name)
		assert.NotNil(t, k.make, k.name)
		assert.Equal(t, k.kind, kindsByName[k.name].kind)
		assert.Equal(t, k.name, kindsByEnum[k.kind].name)
		assert.Equal(t, k.class, goString(className(&namedKind{fakeResource{name: k.name}})), k.name)
	}
	// The table's 22 kinds and the external kind (external.go), which
	// registers itself and is made by rmm_resource_create_external only.
	assert.Len(t, kindsByName, 23)
	assert.Len(t, kindsByEnum, 23)
	assert.Equal(t, "external_memory_resource", kindsByName["external"].class)
	// A Go resource with a kind of its own still has a name.
	assert.Equal(t, "mine", goString(className(&namedKind{fakeResource{name: "mine"}})))
}

type namedKind struct{ fakeResource }

func (n *namedKind) Kind() string { return n.name }

// BenchmarkExportAllocate measures the Go side of rmm_allocate +
// rmm_deallocate (lookup, checks, deferred recover) against calling the
// resource directly; the C-to-Go crossing comes on top (tests/c/capi_bench.c).
func BenchmarkExportAllocate(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cuda, err := core.NewCuda()
	require.NoError(b, err)
	pool, err := core.NewPool(cuda, core.PoolOptions{InitialSize: 64 << 20})
	require.NoError(b, err)
	defer pool.Close()
	for _, res := range []core.Resource{cuda, pool} {
		e, err := reg.handleFor(res)
		require.NoError(b, err)
		h := toHandle(e.handle)
		b.Run(res.Kind()+"/direct", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				p, err := res.Allocate(0, 4096, 256)
				if err != nil {
					b.Fatal(err)
				}
				if err := res.Deallocate(0, p, 4096, 256); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(res.Kind()+"/export", func(b *testing.B) {
			var p unsafe.Pointer
			for i := 0; i < b.N; i++ {
				if rmm_allocate(h, nil, 4096, 256, &p) != statusSuccess {
					b.Fatal(lastMessage())
				}
				if rmm_deallocate(h, nil, p, 4096, 256) != statusSuccess {
					b.Fatal(lastMessage())
				}
			}
		})
		_ = reg.release(e.handle)
	}
}

func TestDeviceGetAttribute(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, err := cudart.Default()
	require.NoError(t, err)
	const memoryPoolsSupported = 115 // cudaDevAttrMemoryPoolsSupported
	var v int32
	require.Equal(t, statusSuccess, rmm_device_get_attribute(cIntOut(&v), memoryPoolsSupported, 0), lastMessage())
	want, err := r.DeviceGetAttribute(cudart.DevAttrMemoryPoolsSupported, 0)
	require.NoError(t, err)
	assert.Equal(t, want, int(v))
	assert.Equal(t, statusInvalidArgument, rmm_device_get_attribute(nil, memoryPoolsSupported, 0))
	assert.Equal(t, statusInvalidDevice, rmm_device_get_attribute(cIntOut(&v), memoryPoolsSupported, 1000))
	assert.Contains(t, lastMessage(), "device 1000 does not exist")
}
