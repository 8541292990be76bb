package sim_test

import (
	"errors"
	"fmt"

	"github.com/rmmgo/rmmgo/cudart"
	"github.com/rmmgo/rmmgo/cudart/sim"
)

// A simulated machine with two 64 MiB devices: allocations use real
// capacity, and running out is CUDA's out-of-memory error.
func ExampleNew() {
	rt := sim.New(sim.Config{Devices: 2, MemoryPerDevice: 64 << 20})
	defer rt.Close()

	p, err := rt.Malloc(48 << 20)
	if err != nil {
		fmt.Println(err)
		return
	}
	free, total, _ := rt.MemGetInfo()
	fmt.Printf("%d of %d MiB free, pointer 256-byte aligned: %v\n", free>>20, total>>20, p%256 == 0)

	_, err = rt.Malloc(32 << 20)
	fmt.Println("out of memory:", errors.Is(err, cudart.ErrMemoryAllocation))
	fmt.Println("double free rejected:", rt.Free(p) == nil && errors.Is(rt.Free(p), cudart.ErrInvalidValue))
	// Output:
	// 16 of 64 MiB free, pointer 256-byte aligned: true
	// out of memory: true
	// double free rejected: true
}

// PauseStream makes stream-ordered completion observable: work queued on a
// paused stream, and everything that waits for it, runs only when the
// stream is resumed.
func ExampleRuntime_PauseStream() {
	rt := sim.New(sim.Config{MemoryPerDevice: 64 << 20})
	defer rt.Close()
	s1, _ := rt.StreamCreate(cudart.StreamFlagNonBlocking)
	s2, _ := rt.StreamCreate(cudart.StreamFlagNonBlocking)
	done, _ := rt.EventCreate(cudart.EventFlagDisableTiming)
	buf, _ := rt.Malloc(4096)

	_ = rt.PauseStream(s1)
	_ = rt.MemsetAsync(buf, 0xff, 4096, s1)
	_ = rt.EventRecord(done, s1)
	_ = rt.StreamWaitEvent(s2, done) // s2's later work waits for s1's fill
	fmt.Println("event:", rt.EventQuery(done))
	fmt.Println("s2:", rt.StreamQuery(s2) != nil)

	_ = rt.ResumeStream(s1)
	fmt.Println("event:", rt.EventQuery(done))
	fmt.Println("s2:", rt.StreamQuery(s2) != nil)
	// Output:
	// event: cudaEventQuery: cudaErrorNotReady (device not ready)
	// s2: true
	// event: <nil>
	// s2: false
}
