package cudart_test

import (
	"errors"
	"fmt"

	"github.com/rmmgo/rmmgo/cudart"
)

// A simulated machine with two 64 MiB devices: allocations use real
// capacity, and running out is CUDA's out-of-memory error.
func ExampleNewSim() {
	sim := cudart.NewSim(cudart.SimConfig{Devices: 2, MemoryPerDevice: 64 << 20})
	defer sim.Close()

	p, err := sim.Malloc(48 << 20)
	if err != nil {
		fmt.Println(err)
		return
	}
	free, total, _ := sim.MemGetInfo()
	fmt.Printf("%d of %d MiB free, pointer 256-byte aligned: %v\n", free>>20, total>>20, p%256 == 0)

	_, err = sim.Malloc(32 << 20)
	fmt.Println("out of memory:", errors.Is(err, cudart.ErrMemoryAllocation))
	fmt.Println("double free rejected:", sim.Free(p) == nil && errors.Is(sim.Free(p), cudart.ErrInvalidValue))
	// Output:
	// 16 of 64 MiB free, pointer 256-byte aligned: true
	// out of memory: true
	// double free rejected: true
}

// PauseStream makes stream-ordered completion observable: work queued on a
// paused stream, and everything that waits for it, runs only when the
// stream is resumed.
func ExampleSim_PauseStream() {
	sim := cudart.NewSim(cudart.SimConfig{MemoryPerDevice: 64 << 20})
	defer sim.Close()
	s1, _ := sim.StreamCreate(cudart.StreamFlagNonBlocking)
	s2, _ := sim.StreamCreate(cudart.StreamFlagNonBlocking)
	done, _ := sim.EventCreate(cudart.EventFlagDisableTiming)
	buf, _ := sim.Malloc(4096)

	_ = sim.PauseStream(s1)
	_ = sim.MemsetAsync(buf, 0xff, 4096, s1)
	_ = sim.EventRecord(done, s1)
	_ = sim.StreamWaitEvent(s2, done) // s2's later work waits for s1's fill
	fmt.Println("event:", sim.EventQuery(done))
	fmt.Println("s2:", sim.StreamQuery(s2) != nil)

	_ = sim.ResumeStream(s1)
	fmt.Println("event:", sim.EventQuery(done))
	fmt.Println("s2:", sim.StreamQuery(s2) != nil)
	// Output:
	// event: cudaEventQuery: cudaErrorNotReady (device not ready)
	// s2: true
	// event: <nil>
	// s2: false
}
