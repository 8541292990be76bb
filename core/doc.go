// Package core is rmmgo's memory manager: every memory resource, sub-allocator
// and adaptor of the RAPIDS Memory Manager (RMM), written in Go, and the
// per-device current resources. The C ABI (librmmgo.so) and the Python and
// C++ packages are thin layers over it, so every language in a process
// shares these resources.
//
// # Resources
//
// A Resource hands out memory and takes it back. Its shape follows the
// CUDA C++ Core Libraries' memory resource concept, as RMM uses it since
// 26.06:
//
//	p, err := mr.Allocate(stream, bytes, core.DefaultAlignment)
//	...
//	err = mr.Deallocate(stream, p, bytes, core.DefaultAlignment)
//
// Constructors return concrete pointer types (*Cuda, *Pool, *Statistics,
// ...) that implement Resource and offer their own extra methods; resources
// that own state also implement io.Closer. Memory is a uintptr: it is
// device, managed or host memory outside Go's heap, never a Go pointer.
//
// # Stream order
//
// Allocate(stream, ...) returns memory that is ready in stream order on
// stream: work enqueued on stream after the call may use it at once, while
// other streams must first wait for stream (an event). Deallocate(stream,
// ...) gives memory back in stream order: work enqueued on stream before the
// call may still be using it, and the resource reuses it only after that
// work. A resource with no stream-ordered allocator underneath (Cuda,
// Managed, PinnedHost) ignores the stream, and cudaFree waits for the
// device; System and SAMHeadroom synchronize the stream before freeing.
// AllocateSync and DeallocateSync are for callers with no stream: the memory
// is ready for any use when AllocateSync returns (the stream-ordered base
// resources synchronize the default stream after allocating).
//
// # Sizes, alignment and properties
//
// Every pointer is aligned to at least DefaultAlignment (256 bytes, as
// cudaMalloc). An alignment that is not a power of two is an error wrapping
// ErrBadAlignment; so is one above 256 for a base resource (as in RMM since
// 2026: wrap the resource in an aligned adaptor for more). A zero-byte
// Allocate returns 0 and no error without touching CUDA, and Deallocate of 0
// does nothing. Deallocate takes the size and alignment given to Allocate.
//
// Properties reports where memory can be used: DeviceAccessible (kernels),
// HostAccessible (host code), or both. Equal reports whether memory from one
// resource may be deallocated by another: stateless resources equal every
// instance of their type, stateful ones only themselves (and what shares
// their state, such as a view of the same pool).
//
// # Errors
//
// Failures are errors that wrap one of the sentinel errors (ErrOutOfMemory,
// ErrBadAlignment, ErrInvalidArgument, ErrInvalidPointer, ErrWrongDevice,
// ErrNotSupported, ErrClosed, ErrCUDA, ErrBadAlloc) and say what failed; test
// them with errors.Is. A failed CUDA call also wraps the *cudart.Error, whose
// message carries CUDA's error name (for example cudaErrorMemoryAllocation,
// which is also ErrOutOfMemory). Requests no memory can satisfy (SIZE_MAX,
// more than the device has) are ErrOutOfMemory, never a crash. Freeing memory
// twice, or memory a resource did not hand out, is ErrInvalidPointer where
// the resource can know, and freeing it with another size than was allocated
// is ErrInvalidArgument; nothing is freed then. Base resources record every
// allocation with its size (shared by equal resources: see Resource.Equal),
// so such a free never reaches cudaFree or the C heap; the sub-allocators
// know their blocks. Adaptors leave their counters, accounts and logs as
// they were when their upstream refuses a free. Nothing in core panics into
// its caller.
//
// # Devices and threads
//
// As in CUDA, the current device belongs to the calling OS thread. A
// resource that allocates device-specific memory (Cuda, Managed, CudaAsync,
// CudaAsyncView, CudaAsyncManaged, SAMHeadroom) records the device current
// when it is made and must be used while that device is current; otherwise
// Allocate fails with ErrWrongDevice (RMM's rule, checked with one
// cudaGetDevice call). Go code that switches devices must hold its goroutine
// on its thread with runtime.LockOSThread for as long as it relies on the
// switch. Every resource reports its device with Device().
//
// Resources are safe for concurrent use by many goroutines, and by C threads
// through the C ABI, unless their documentation says otherwise.
//
// # Per-device resources
//
// Each device has a current resource: CurrentDeviceResource,
// SetCurrentDeviceResource and ResetCurrentDeviceResource act on the calling
// thread's current device; PerDeviceResource, SetPerDeviceResource and
// ResetPerDeviceResource on any device. Until a resource is set, a device's
// resource is a *Cuda for that device, made on first use. Setters and
// resetters return the previous resource. The table is process-wide and
// shared with the C ABI, so Go, C, C++ and Python code see the same
// resources. It is safe for concurrent use.
//
// # Kinds of resources
//
// Base resources (RMM's eight), with their properties (D: device
// accessible, H: host accessible):
//
//	Cuda              cuda                D    cudaMalloc/cudaFree
//	Managed           managed             D H  cudaMallocManaged
//	PinnedHost        pinned_host         D H  cudaHostAlloc/cudaFreeHost
//	System            system              D H  the C heap, on devices with pageable memory access
//	SAMHeadroom       sam_headroom        D H  system memory, advised so device memory keeps a headroom
//	CudaAsync         cuda_async          D    cudaMallocFromPoolAsync on a pool it owns
//	CudaAsyncView     cuda_async_view     D    the same on a pool it does not own
//	CudaAsyncManaged  cuda_async_managed  D H  stream-ordered managed memory from a pool it owns
//
// Sub-allocators take large blocks from an upstream resource and carve them
// up: Pool (coalescing best fit), Arena, FixedSize and Binning. Expandable
// is the pool's heap over one reserved range of device addresses that it
// maps itself, in granules, through CUDA's virtual memory management: it
// grows without fragmenting across chunks and gives free granules back.
//
// Adaptors wrap an upstream resource (Adaptor.Upstream) and add one
// behaviour: Aligned, Callback, FailureCallback, Limiting, Logging,
// Prefetch, Statistics, ThreadSafe and Tracking.
//
// # Packages and files
//
// Each resource is in a file named for it, as RMM's kinds are (pool.go,
// arena.go, cuda_async.go, statistics.go, ...); per_device.go holds the
// per-device table; cache.go is the sub-allocators' side of the C ABI's
// per-thread caches, whose contract (internal/fastpath: Cacheable, CPath)
// Go programs need none of. Package core/eventlog reads and writes the
// memory-event log that Logging writes, in RMM's CSV format. The machinery
// behind the sub-allocators is internal: core/internal/heap is the
// coalescing block heap of Pool, Expandable and Arena's global arena (with
// the pool's magazines, and Expandable's holes), core/internal/streamorder the stream-ordered free
// lists that Pool, FixedSize and Arena share (stream ids, event records
// and waits, shards per P), core/internal/cachepolicy the one policy for how
// much memory caches and magazines may hold and when they give it back,
// core/internal/asyncpath the pool-based kinds' allocation and free written
// once in C (their table of blocks and the per-thread gate CudaAsync's Close
// waits for; the C ABI runs it with no Go on the path, Go through one cgo
// call), core/internal/inflight the per-P count of calls in flight (the
// pool-based kinds' slow path), and core/internal/addr,
// errs and relaxed hold the address arithmetic, the sentinel errors and
// the relaxed shared words. live_table.go records what the base resources
// hand out, for checked frees and for CudaAsync's and CudaAsyncManaged's
// Close (the pool-based kinds' records live in asyncpath's C table).
//
// # Closing
//
// The sub-allocators and the pool-owning kinds are io.Closers. Close may run
// while other goroutines are inside calls on the resource (the C API closes
// a resource when its last handle goes, whatever other threads are doing):
// those calls finish, or fail with an error wrapping ErrClosed, and every
// byte goes back upstream, blocks still allocated included (they must not
// be used after Close). Calls made after Close returned fail with ErrClosed.
// Sub-allocators get this at no cost per call: their heaps never grow once
// closed (checked under the growth lock), and a call that fails once the
// resource is closed reports ErrClosed. CudaAsync and CudaAsyncManaged wait
// for the calls in flight (per thread on the C path, per P on the slow path)
// before they free what is outstanding and destroy their CUDA pool.
//
// # Backends
//
// Resources call CUDA through package cudart, which is either the real CUDA
// runtime, loaded at run time, or a simulated device for machines without a
// GPU (RMMGO_BACKEND=simulated). Nothing in core knows which one runs.
package core
