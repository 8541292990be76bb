package core_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/cudart"
)

// Make a resource, allocate, use the memory, free it.
func ExampleNewCuda() {
	mr, err := core.NewCuda()
	if err != nil {
		log.Fatal(err)
	}
	const n = 1 << 20
	p, err := mr.AllocateSync(n, core.DefaultAlignment)
	if err != nil {
		log.Fatal(err)
	}
	// Use it: fill the device memory with CUDA.
	rt, err := cudart.Default()
	if err != nil {
		log.Fatal(err)
	}
	if err := rt.Memset(p, 0, n); err != nil {
		log.Fatal(err)
	}
	fmt.Println(mr.Kind(), mr.Properties(), "aligned:", p%core.DefaultAlignment == 0)
	if err := mr.DeallocateSync(p, n, core.DefaultAlignment); err != nil {
		log.Fatal(err)
	}
	// Output: cuda device_accessible aligned: true
}

// Stream-ordered allocation from a pool the resource owns.
func ExampleNewCudaAsync() {
	mr, err := core.NewCudaAsync(core.CudaAsyncOptions{InitialPoolSize: 16 << 20})
	if err != nil {
		log.Fatal(err)
	}
	defer mr.Close()
	rt, err := cudart.Default()
	if err != nil {
		log.Fatal(err)
	}
	stream, err := rt.StreamCreate(cudart.StreamFlagDefault)
	if err != nil {
		log.Fatal(err)
	}
	defer rt.StreamDestroy(stream)

	// The memory is ready for work enqueued on stream after Allocate...
	p, err := mr.Allocate(stream, 4096, core.DefaultAlignment)
	if err != nil {
		log.Fatal(err)
	}
	if err := rt.MemsetAsync(p, 0xFF, 4096, stream); err != nil {
		log.Fatal(err)
	}
	// ...and free for reuse once work enqueued before Deallocate is done.
	if err := mr.Deallocate(stream, p, 4096, core.DefaultAlignment); err != nil {
		log.Fatal(err)
	}
	if err := rt.StreamSynchronize(stream); err != nil {
		log.Fatal(err)
	}
	fmt.Println(mr.Kind(), "pool:", mr.PoolHandle() != 0)
	// Output: cuda_async pool: true
}

// Bad requests are errors that say what went wrong.
func ExampleResource_errors() {
	mr, err := core.NewCuda()
	if err != nil {
		log.Fatal(err)
	}
	_, err = mr.Allocate(core.DefaultStream, 1024, 100)
	fmt.Println(errors.Is(err, core.ErrBadAlignment))
	_, err = mr.Allocate(core.DefaultStream, ^uintptr(0), core.DefaultAlignment)
	fmt.Println(errors.Is(err, core.ErrOutOfMemory))
	p, err := mr.Allocate(core.DefaultStream, 0, core.DefaultAlignment)
	fmt.Println(p, err)
	// Output:
	// true
	// true
	// 0 <nil>
}

// Each device has a current resource, a Cuda resource until one is set.
func ExampleCurrentDeviceResource() {
	initial, err := core.CurrentDeviceResource()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("initial:", initial.Kind())

	mr, err := core.NewManaged()
	if err != nil {
		log.Fatal(err)
	}
	prev, err := core.SetCurrentDeviceResource(mr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("replaced:", prev.Kind())

	cur, err := core.CurrentDeviceResource()
	if err != nil {
		log.Fatal(err)
	}
	p, err := cur.AllocateSync(1<<20, core.DefaultAlignment)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("allocated from:", cur.Kind(), cur.Properties())
	if err := cur.DeallocateSync(p, 1<<20, core.DefaultAlignment); err != nil {
		log.Fatal(err)
	}

	prev, err = core.ResetCurrentDeviceResource()
	if err != nil {
		log.Fatal(err)
	}
	cur, _ = core.CurrentDeviceResource()
	fmt.Println("reset from:", prev.Kind(), "to:", cur.Kind())
	// Output:
	// initial: cuda
	// replaced: cuda
	// allocated from: managed device_accessible|host_accessible
	// reset from: managed to: cuda
}
