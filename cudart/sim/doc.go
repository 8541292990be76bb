// Package sim is the simulated device: a cudart.Runtime that models CUDA's
// devices, memory, streams, events and memory pools in host memory, so that
// rmmgo runs and is tested where there is no GPU.
//
// Choose it in code:
//
//	rt := sim.New(sim.Config{Devices: 2, MemoryPerDevice: 1 << 30})
//	if err := cudart.SetDefault(rt); err != nil { ... }
//
// or by name: importing this package registers it with cudart, so that
// RMMGO_BACKEND=simulated (cudart.Default, cudart.Open) makes one,
// configured by RMMGO_SIM_DEVICES, RMMGO_SIM_MEMORY and RMMGO_SIM_PAGEABLE.
// Package core imports it, so the C library (librmmgo.so) and every Go
// program that uses core have it, unless built with -tags rmmgo_nosim; a
// program that uses package cudart without core imports it:
//
//	import _ "github.com/rmmgo/rmmgo/cudart/sim"
//
// It is chosen explicitly, never as a fall-back from CUDA. Runtime describes
// what it models and where it simplifies; the conformance tests of this
// package run against the simulator and, with RMMGO_BACKEND=cuda on a GPU
// machine, against the real runtime, so that the model is checked against
// CUDA itself. Beyond cudart.Runtime, *Runtime has controls for tests:
// pausing streams, injecting allocation failures, reading what the device
// holds, and counting the pool destructions CUDA would defer.
package sim
