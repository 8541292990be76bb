// Package cudart is rmmgo's view of the CUDA runtime: the Runtime interface
// with the calls rmmgo's memory resources make, and the real CUDA backend
// behind it. The simulated device, the other backend, is package cudart/sim.
//
// # Backends
//
// The real backend (OpenCUDA) loads libcudart at run time with dlopen and
// calls it through small C trampolines, one cgo call per runtime call. Nothing
// of CUDA is needed to build rmmgo: the package declares the few functions,
// enums and structs it uses itself (types.go, errors.go, cuda_abi.h, and the
// list of functions in internal/abi, from which go generate writes the
// trampolines), and the declaration check in cudart/check proves them
// against the real headers on a GPU machine. CUDA runtime 12.0 or later is
// required. Where the runtime's
// API differs between versions, the backend chooses by cudaRuntimeGetVersion
// at load time: MemPrefetchAsync and MemAdvise take a cudaMemLocation on
// CUDA 13, use the *_v2 functions on CUDA 12.2 and later, and pass a device
// ordinal (cudaCpuDeviceId for the host) on 12.0 and 12.1, where host NUMA
// locations are refused.
//
// The simulated backend (package cudart/sim: sim.New) models devices,
// memory, streams, events and memory pools in host memory, for development
// machines and CI. It registers itself with RegisterBackend when imported.
// Package core imports it (so librmmgo.so and every Go program that uses
// core have it) unless built with -tags rmmgo_nosim; a program that uses
// cudart alone imports it (import _ "github.com/rmmgo/rmmgo/cudart/sim").
// Asked for where it is not linked, Open says so.
//
// Code above this package sees only Runtime and never asks which backend
// runs; Backend reports it for messages and for tests that only make sense
// on one of them.
//
// # Choosing a backend
//
// Default returns the process's Runtime, shared by every caller in the
// process, Go or C. It is opened on first use as Open describes, from the
// environment:
//
//	RMMGO_BACKEND=cuda        the real CUDA runtime (the default)
//	RMMGO_BACKEND=simulated   the simulated device of cudart/sim
//	                          (RMMGO_SIM_DEVICES, RMMGO_SIM_MEMORY,
//	                          RMMGO_SIM_PAGEABLE configure it)
//	RMMGO_CUDART_LIBRARY=path load exactly this libcudart
//
// Programs and tests can choose in code instead, with Open and Options, or
// install a Runtime with SetDefault before any resource is made.
//
// There is never a silent fallback from one backend to the other. When the
// CUDA runtime cannot be loaded, lacks a function rmmgo needs, finds no
// driver, a driver too old for it, or no device, the error says which and
// how to choose the simulated device instead.
//
// Without RMMGO_CUDART_LIBRARY, a libcudart that the process has already
// loaded (for example by PyTorch, CuPy or a CUDA program that loads rmmgo) is
// used first, so that the whole process shares one runtime; otherwise
// libcudart.so.13, libcudart.so.12 and libcudart.so are tried in turn, going
// on to the next only when one does not load or needs a newer driver than
// the installed one. A library named by RMMGO_CUDART_LIBRARY is the only one
// tried. The library is never unloaded.
//
// # Threads and the current device
//
// As in CUDA, the current device (SetDevice, GetDevice) belongs to the
// calling OS thread, and a thread starts on device 0. The real backend passes
// these calls straight to CUDA, which keeps the state. A goroutine may move
// between OS threads at any point, so Go code that calls SetDevice and relies
// on the device afterwards must stay on its thread for that span:
//
//	runtime.LockOSThread()
//	defer runtime.UnlockOSThread()
//	if err := rt.SetDevice(1); err != nil { ... }
//	p, err := rt.Malloc(n) // on device 1
//
// C, C++ and Python callers reach rmmgo on their own threads and need nothing
// special. Every Runtime method is safe for concurrent use.
//
// # Errors
//
// A failed runtime call returns an *Error carrying the cudaError_t code, its
// CUDA name and description (from the runtime's cudaGetErrorName and
// cudaGetErrorString on the real backend) and the function that failed, e.g.
//
//	cudaMalloc: cudaErrorMemoryAllocation (out of memory)
//
// errors.Is matches by code, against the sentinels (ErrMemoryAllocation,
// ErrInvalidValue, ErrNotReady, ...) or any *Error:
//
//	if errors.Is(err, cudart.ErrMemoryAllocation) { ... }
//
// StreamQuery and EventQuery report pending work as an *Error with
// ErrorNotReady, without allocating. After a call fails, the real backend
// clears the calling thread's CUDA last-error state (cudaGetLastError), so
// that rmmgo's failures, an out-of-memory handled by a pool for example,
// never surface in another library's later cudaGetLastError check; sticky
// errors stay, as CUDA keeps them.
//
// Device, managed and pinned pointers are uintptr values, never Go pointers;
// streams, events and pools are opaque integer handles.
package cudart
