// Command capi is the C ABI of rmmgo: built with
//
//	go build -buildmode=c-shared -ldflags=-extldflags=-Wl,--version-script=capi/librmmgo.map -o build/librmmgo.so ./capi
//
// (the Makefile's lib target and CMakeLists.txt do this) it is
// librmmgo.so, whose interface include/rmmgo.h declares. The version script
// keeps every symbol but the header's rmm_* functions out of the library's
// dynamic symbol table; tests/c/check-exports.sh checks that the table is
// exactly the header's functions.
//
// Where each function of the header lives:
//
//   - errors.c: rmm_last_error_message and rmm_status_string, in C so that
//     they never cross into Go; errors.go maps core's errors to statuses and
//     sets the calling thread's message.
//   - version.c: rmm_version and rmm_version_number.
//   - options.c: rmm_resource_options_init_sized and the option defaults
//     (their one definition), and the struct_size rule of every structure
//     that carries its size.
//   - kinds.go: the table of resource kinds (name, RMM class name,
//     constructor and option validation), read by creation and by the name
//     queries; callbacks.go and callbacks.c: the callback and
//     failure_callback kinds over the caller's C functions.
//   - resources.go: rmm_resource_create, retain and release,
//     rmm_allocate_sync and the queries every resource answers.
//   - route.c: rmm_allocate, rmm_deallocate and rmm_deallocate_sync, sent
//     by the registry's mirror (mirror.h, mirror.c, mirror.go: each live
//     handle's tag) to the C path that serves the handle, else to their Go
//     halves (thread_cache.go):
//   - thread_cache.c and tc_*.c (tc.h lists them): the per-thread cache of
//     blocks for the handles of fastpath.Cacheable resources
//     (docs/thread-cache.md), with each cached handle's front (a
//     fastpath.BlockCache attached to its resource) in thread_cache.go;
//   - async_path.c and async_path.go: the pool-based kinds (cuda_async,
//     cuda_async_managed, cuda_async_view), served in C through core's C
//     path (fastpath.CPath);
//   - cabi_generated.h: the rules C shares with Go (the handle's index
//     bits, the largest request, the size classes, the statuses and kinds),
//     generated from internal/cabi, as are the enums of include/rmmgo.h;
//   - stream_check.h and stream_check.c: the one check both C paths make
//     that a stream was not retired; spin.h: the one spin lock of the C
//     files.
//   - streams.go: the streams the library made, and those rmm_stream_destroy
//     retired (refused by every call from then on).
//   - per_kind.go: the calls particular to one kind (rmm_pool_size,
//     rmm_statistics_get, ...).
//   - per_device.go: the current resource of each device.
//   - bindings.c: the calls shaped for bindings that pay per argument
//     (rmm_allocate_direct, rmm_deallocate_direct, rmm_last_error_status,
//     rmm_current_resource_token), with the token's Go halves in
//     bindings.go.
//   - backend.go and backend.c: the backend, devices, streams, copies and
//     fills; runtime.go: the CUDA runtime and device checks they share.
//   - framework.c: the CuPy and PyTorch allocator entry points, which return
//     no status: the current resource of the current device served in C,
//     everything else by their Go halves in framework.go.
//
// Handles are numbers looked up in one process-wide registry (registry.go):
// slot index, generation and a per-process tag, checked on every lookup with
// atomic loads only, so forged, stale and released handles are refused
// without being followed and the allocation path takes no lock. Handles are
// reference counted; adaptors and sub-allocators hold their upstream's
// handle, binning resources their bins', and per-device slots set from C
// their resource's.
//
// Every exported function validates its arguments, recovers panics (they
// become RMM_ERROR_INTERNAL with the place they happened), maps core's
// errors to statuses with errors.Is, and on failure writes a message to a
// C thread-local buffer that rmm_last_error_message returns. Success leaves
// the message alone.
package main
