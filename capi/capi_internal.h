/*
 * capi_internal.h -- declarations shared by the Go and C halves of the C ABI.
 * Not installed; include/rmmgo.h is the public header.
 *
 * Only declarations live here: cgo copies the preamble of every Go file with
 * //export functions into its generated header, which must not define
 * anything.
 */
#ifndef RMMGO_CAPI_INTERNAL_H
#define RMMGO_CAPI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "rmmgo.h"

/* Internal C functions stay out of librmmgo.so's dynamic symbol table. */
#define RMMGO_INTERNAL __attribute__((visibility("hidden")))

/* Const-qualified spellings of the public parameter types. cgo writes the
 * prototypes of exported Go functions from the C type names a Go signature
 * uses, so the Go side names these to produce exactly the prototypes that
 * rmmgo.h declares (const included). */
typedef const rmm_resource_options rmmgo_const_options;
typedef const char* rmmgo_cstr;
typedef const void* rmmgo_const_voidp;

/* The calling thread's last error message (errors.c). */
RMMGO_INTERNAL void rmmgo_set_message(const char* msg, size_t len);

/* The option defaults rmm_resource_options_init sets (options.c). */
RMMGO_INTERNAL void rmmgo_options_defaults(rmm_resource_options* options);

/* Structures that carry their size: the smallest struct_size a caller can
 * have is that of the structure's first published version (0.1: everything
 * up to its last field); fields added later go at the end. No structure is
 * larger than RMMGO_STRUCT_SIZE_MAX, so a larger struct_size is a field that
 * was never set, and is refused before anything is read or written. */
#define RMMGO_OPTIONS_MIN_SIZE (offsetof(rmm_resource_options, failure_arg) + sizeof(void*))
#define RMMGO_STATISTICS_MIN_SIZE (offsetof(rmm_statistics, count) + sizeof(rmm_counter))
#define RMMGO_STRUCT_SIZE_MAX 4096

/* Checks a struct_size against that rule: 1 when it holds; otherwise 0, after
 * setting the thread's message "fn: field is N, ...: how" (fn is fn_len
 * bytes, not NUL-terminated). options.c. */
RMMGO_INTERNAL int rmmgo_check_struct_size(const char* fn, size_t fn_len, const char* field, size_t size, size_t min,
                                           const char* how);

/* Static strings for the backend names: "cuda", or "simulated" when
 * simulated is nonzero (backend.c). */
RMMGO_INTERNAL const char* rmmgo_backend_string(int simulated);

/* Trampolines that call user callbacks (callbacks.c). Pointers cross as
 * uintptr_t so that Go never holds them in pointer-typed values. */
RMMGO_INTERNAL uintptr_t rmmgo_call_allocate(rmm_allocate_callback fn, size_t bytes, uintptr_t stream, uintptr_t arg);
RMMGO_INTERNAL void rmmgo_call_deallocate(rmm_deallocate_callback fn, uintptr_t ptr, size_t bytes, uintptr_t stream,
                           uintptr_t arg);
RMMGO_INTERNAL int rmmgo_call_failure(rmm_failure_callback fn, size_t bytes, uintptr_t arg);

/* The framework allocators' Go halves (framework.go); the C entry points in
 * framework.c turn their uintptr_t results into void*. They return an
 * rmm_status and set the thread's message on failure. */
rmm_status rmmgo_framework_allocate(int which, uintptr_t param, size_t bytes, int device,
                                    uintptr_t stream, uintptr_t* out);
rmm_status rmmgo_framework_deallocate(int which, uintptr_t param, uintptr_t ptr, size_t bytes, int device,
                                      uintptr_t stream);

/* Calls for bindings (bindings.c). The calling thread's last status, for
 * the calls that return none (rmm_last_error_status reads it). */
RMMGO_INTERNAL void rmmgo_set_last_status(rmm_status st);
/* Advances the generation rmm_current_resource_token carries: called after
 * every change of a device's resource. */
RMMGO_INTERNAL void rmmgo_resource_generation_bump(void);
/* A token's low bits hold the device. */
#define RMMGO_TOKEN_DEVICE_BITS 16
#define RMMGO_TOKEN_DEVICE_MASK ((1 << RMMGO_TOKEN_DEVICE_BITS) - 1)
/* The Go halves (bindings.go): the CUDA runtime's cudaGetDevice and
 * cudaGetLastError addresses (0 when the backend has none to call from C)
 * and the device count, and the calling thread's current device as Go
 * reads it. */
rmm_status rmmgo_go_device_funcs(uintptr_t* get_device, uintptr_t* get_last_error, int* count);
rmm_status rmmgo_go_current_device(int* device);

/* Framework ids for the two functions above. */
#define RMMGO_FRAMEWORK_CUPY 1
#define RMMGO_FRAMEWORK_TORCH 2

/* Frees ptr (bytes from handle's resource) with device current: the C side
 * of the framework allocators calls it when another device is current. */
rmm_status rmmgo_framework_deallocate_on(int which, int device, uint64_t handle, uintptr_t stream, uintptr_t ptr,
                                         size_t bytes);
/* Drops the framework allocators' entry for device dev (framework.c): called
 * when dev's resource is set or reset. */
RMMGO_INTERNAL void rmmgo_framework_forget(int dev);

/* rmm_allocate and rmm_deallocate with the default alignment, for the Go
 * halves above (framework.c), so that the per-thread cache serves them. */
RMMGO_INTERNAL rmm_status rmmgo_allocate_at(uint64_t handle, uintptr_t stream, size_t bytes, uintptr_t* out);
RMMGO_INTERNAL rmm_status rmmgo_deallocate_at(uint64_t handle, uintptr_t stream, uintptr_t ptr, size_t bytes);

/* ------------------------------------------- the per-thread cache
 * thread_cache.c serves rmm_allocate, rmm_deallocate and
 * rmm_deallocate_sync from a per-thread cache of free blocks for bare pool,
 * arena, fixed_size and binning handles (docs/thread-cache.md); the Go
 * halves below do what the cache cannot. */

/* Kinds of handle the cache serves, as the registry publishes them. */
#define RMMGO_TC_POOL 1
#define RMMGO_TC_ARENA 2
#define RMMGO_TC_FIXED_SIZE 3
#define RMMGO_TC_BINNING 4

/* A block taken out of the cache, to give back to its resource. */
typedef struct rmmgo_tc_block {
  uint64_t handle;
  uint64_t key; /* the stream key it is cached under */
  uintptr_t ptr;
  size_t size; /* the size it was allocated with from the resource */
} rmmgo_tc_block;

/* Whether the cache is on: RMMGO_THREAD_CACHE=0 (or off, false, no) in the
 * environment turns it off; read once. */
RMMGO_INTERNAL int rmmgo_tc_enabled(void);

/* The registry's mirror: publish makes handle servable from C (kind one of
 * RMMGO_TC_*; limit: a fixed_size resource's block size, a binning
 * resource's largest bin; capacity: an arena's size, 0 if unbounded);
 * unpublish takes it back. */
RMMGO_INTERNAL void rmmgo_tc_publish(uint64_t handle, int kind, size_t limit, size_t capacity);
RMMGO_INTERNAL void rmmgo_tc_unpublish(uint64_t handle);
/* Refreshes the resource size a handle's pairs share (see tc_pair_bytes). */
RMMGO_INTERNAL void rmmgo_tc_set_capacity(uint64_t handle, size_t capacity);

/* The CUDA backend's cudaStreamGetId and cudaGetLastError, for C to call
 * (0 on the simulated backend, where C asks Go). */
RMMGO_INTERNAL void rmmgo_tc_set_stream_funcs(uintptr_t get_id, uintptr_t get_last_error);

/* Takes out of every thread's cache and the orphan list the cached blocks of
 * handle (0: of every handle); with by_key, only those cached under stream
 * key `key` (orphans have no key and are left alone then). With drop_live,
 * the table also forgets the handle's live blocks. Returns a malloc'd array
 * the caller frees, and its length in *n (NULL and 0 when none). */
/* For tests: runs the calling thread's exit handling of its cache now. */
RMMGO_INTERNAL void rmmgo_tc_exit_mine(void);
RMMGO_INTERNAL rmmgo_tc_block* rmmgo_tc_collect(uint64_t handle, int by_key, uint64_t key, int drop_live, size_t* n);

/* Takes the orphan list alone (as rmmgo_tc_collect returns blocks). */
RMMGO_INTERNAL rmmgo_tc_block* rmmgo_tc_take_orphans(size_t* n);

/* Bytes of handle's (a pool's) blocks that its resource counts as used but
 * that the user does not hold: cached blocks, and the rounding of live ones
 * to their size class. */
RMMGO_INTERNAL void rmmgo_tc_handle_bytes(uint64_t handle, size_t* cached, size_t* rounding);

/* rmm_deallocate taking the pointer as an integer (for Go tests). */
RMMGO_INTERNAL rmm_status rmmgo_tc_deallocate_at(rmm_resource_t mr, uintptr_t stream, uintptr_t ptr, size_t bytes,
                                                 size_t alignment);

/* Blocks the cache holds (live or cached) and threads with a cache, for
 * tests. */
RMMGO_INTERNAL void rmmgo_tc_counts(size_t* live, size_t* cached, size_t* orphans, size_t* caches);

/* The Go halves (thread_cache.go). The first three are the uncached calls;
 * refill allocates up to n blocks of size bytes (bytes and alignment are the
 * caller's, for messages) into out; drain deallocates n blocks of size
 * bytes; drain_orphans gives back what exited threads left; stream_key
 * returns 0 and the stream's cache key, or nonzero when the stream is not
 * known. */
rmm_status rmmgo_go_allocate(rmm_resource_t mr, rmm_stream_t stream, size_t bytes, size_t alignment, void** ptr);
rmm_status rmmgo_go_deallocate(rmm_resource_t mr, rmm_stream_t stream, void* ptr, size_t bytes, size_t alignment);
rmm_status rmmgo_go_deallocate_sync(rmm_resource_t mr, void* ptr, size_t bytes, size_t alignment);
rmm_status rmmgo_go_refill(uintptr_t handle, uintptr_t stream, size_t size, size_t bytes, size_t alignment, int n,
                           uintptr_t* out, int* got);
rmm_status rmmgo_go_drain(uintptr_t handle, uintptr_t stream, size_t size, uintptr_t* ptrs, int n);
void rmmgo_go_drain_orphans(void);
int rmmgo_go_stream_key(uintptr_t stream, uint64_t* key);

#endif /* RMMGO_CAPI_INTERNAL_H */
