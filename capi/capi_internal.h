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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Before rmmgo.h: the implementations of the entry points are named
 * rmmgo_impl_rmm_* (entry.c wraps them; entries.h says why). */
#include "entries.h"
#include "rmmgo.h"

/* Internal C functions stay out of librmmgo.so's dynamic symbol table. */
#define RMMGO_INTERNAL __attribute__((visibility("hidden")))

/* The rules C shares with Go, generated from internal/cabi: the handle's
 * index bits, the largest request, the size classes, the statuses and
 * kinds. */
#include "cabi_generated.h"

/* Nonzero in the child of a fork() (entry.c: a pthread_atfork child
 * handler sets it). Every entry point that may enter Go or take a lock
 * checks it first and refuses the call (rmmgo_refuse_forked). */
RMMGO_INTERNAL extern int rmmgo_forked;
#define RMMGO_FORKED() __builtin_expect(__atomic_load_n(&rmmgo_forked, __ATOMIC_RELAXED) != 0, 0)
/* Sets the thread's message ("fn: rmmgo cannot be used in a child process
 * created by fork(): ...") and last status, and returns
 * RMM_ERROR_NOT_SUPPORTED. Plain C: it enters neither Go nor a lock other
 * than the message's first allocation (malloc, which glibc makes safe in a
 * fork's child). */
RMMGO_INTERNAL rmm_status rmmgo_refuse_forked(const char* fn);

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
 * rmm_deallocate_sync from a per-thread cache of free blocks for the
 * handles of fastpath.Cacheable resources (docs/thread-cache.md); the Go halves
 * below (thread_cache.go) do what the cache cannot. */

/* Adaptors a cached handle's calls run in C (thread_cache_adaptors.go): the
 * chain of statistics and limiting adaptors from the handle down to the
 * fastpath.Cacheable resource whose blocks the cache keeps, outermost first. */
#define RMMGO_TC_STEP_STATISTICS 1
#define RMMGO_TC_STEP_LIMITING 2
#define RMMGO_TC_MAX_STEPS 4
/* Most block sizes a handle's limits list (a binning resource's bins). */
#define RMMGO_TC_MAX_SIZES 32

/* A statistics adaptor's core.StatisticsHot (same layout; a Go test checks
 * it): the innermost level's counters and what is outstanding. */
typedef struct rmmgo_tc_hot {
  int64_t bytes_value, bytes_peak, bytes_total;
  int64_t count_value, count_peak, count_total;
  uintptr_t out_bytes;
  int64_t out_count;
} rmmgo_tc_hot;

/* Where it lives while C counts: under lock (0 free, 1 held), which Go
 * takes too (with atomic operations on the same word). */
typedef struct rmmgo_tc_stats {
  uint32_t lock;
  uint32_t pad_;
  rmmgo_tc_hot hot;
} rmmgo_tc_stats;

typedef struct rmmgo_tc_step {
  int kind;         /* RMMGO_TC_STEP_* */
  uintptr_t state;  /* rmmgo_tc_stats*, or the limiting adaptor's account (a size_t) */
  size_t limit;     /* limiting: the allocation limit ... */
  size_t alignment; /* ... and the alignment charges are rounded up to */
} rmmgo_tc_step;

/* A resource's fastpath.CacheLimits, as the registry publishes them. */
typedef struct rmmgo_tc_limits {
  size_t max_request;     /* largest request served (0: none) */
  size_t block;           /* every block's size (fixed_size), else 0 */
  size_t budget;          /* bytes all threads' caches may hold for the handle (one thread alone) */
  size_t shared;          /* the part of it that does not shrink with the threads: n threads
                             holding part of the budget may hold shared + (budget - shared) / n */
  size_t quantum;         /* unit in which a thread reserves budget */
  size_t batch_bytes;     /* a refill takes at most this many bytes ... */
  int batch_blocks;       /* ... and blocks */
  int batch_min_blocks;   /* or this many blocks of a class too large for batch_bytes */
  int64_t exited_wait_ns; /* an exited thread's blocks wait this long for a taker */
  int64_t lone_after_ns;  /* a pair alone this long may keep more than the shared part */
  int nsizes;             /* the resource's block sizes (a binning resource's bins), ascending: */
  size_t sizes[RMMGO_TC_MAX_SIZES]; /* a request takes the first that holds it, when that is a class */
  int nsteps;             /* adaptors the handle's calls go through first */
  rmmgo_tc_step steps[RMMGO_TC_MAX_STEPS];
} rmmgo_tc_limits;

/* A block taken out of the cache, to give back to its resource. */
typedef struct rmmgo_tc_block {
  uint64_t handle;
  uint64_t key; /* the stream key it is cached under */
  uintptr_t ptr;
  size_t size; /* the size it was allocated with from the resource */
} rmmgo_tc_block;

/* One crossing into Go: a refill (allocate up to n blocks of size bytes
 * into ptrs; got says how many) or a drain (deallocate the n blocks in
 * ptrs), which first gives back the blocks in give (exited threads'). Go
 * sets budget and shared to the handle's budget now (0: unknown). bytes and alignment
 * are the caller's request, for messages. */
typedef struct rmmgo_tc_call {
  uint64_t handle;
  uintptr_t stream;
  size_t size;
  size_t bytes, alignment;
  uintptr_t* ptrs;
  int n;
  int got;
  size_t budget, shared;
  const rmmgo_tc_block* give;
  size_t ngive;
} rmmgo_tc_call;

/* What a free the cache cannot take is (rmmgo_go_free_check). */
#define RMMGO_TC_OK 0
#define RMMGO_TC_SIZE 1     /* a live block of this handle, another size */
#define RMMGO_TC_NOT_LIVE 2 /* a block the cache holds: a double free */
#define RMMGO_TC_FOREIGN 3  /* a live block of another handle */
#define RMMGO_TC_INTERIOR 4 /* not 256-byte aligned: no block starts there */
/* Which call frees (for messages). */
#define RMMGO_TC_FREE 0      /* rmm_deallocate */
#define RMMGO_TC_FREE_SYNC 1 /* rmm_deallocate_sync */

/* Whether the cache is on: RMMGO_THREAD_CACHE=0 (or off, false, no) in the
 * environment turns it off; read once. Another value than those and 1, on,
 * true, yes leaves it on with a warning on stderr. */
RMMGO_INTERNAL int rmmgo_tc_enabled(void);

/* The CUDA backend's stream-id function (cuStreamGetId or cudaStreamGetId)
 * and cudaGetLastError, for C to call (0 on the simulated backend, where C
 * asks Go). stream_check.c. */
RMMGO_INTERNAL void rmmgo_set_stream_funcs(uintptr_t get_id, uintptr_t get_last_error);
/* rmm_stream_destroy retired a stream: threads ask Go again about the
 * streams they checked (rmmgo_go_stream_live). stream_check.c. */
RMMGO_INTERNAL void rmmgo_stream_retired(void);

/* Takes out of every thread's cache and the depot the cached blocks of
 * handle (0: of every handle); with by_key, only those cached under stream
 * key `key`; with hi != 0, only those of a size class in (lo, hi]. With
 * drop_live, the table also forgets the handle's live blocks. The quota of
 * what it takes goes back to the budget. Returns a malloc'd array the
 * caller frees, and its length in *n (NULL and 0 when none). */
RMMGO_INTERNAL rmmgo_tc_block* rmmgo_tc_collect(uint64_t handle, int by_key, uint64_t key, int drop_live, size_t lo,
                                                size_t hi, size_t* n);

/* Bytes of handle's blocks that the caches hold and no user does: cached
 * blocks (threads' and the depot's) and the rounding of live blocks up to
 * their class. O(threads), not O(blocks). */
RMMGO_INTERNAL size_t rmmgo_tc_holding(uint64_t handle);

/* A user's free of ptr that reached a cached resource another way than
 * rmm_deallocate on the handle that allocated it (an adaptor over the
 * resource, Go code: fastpath.FreeClaimer, thread_cache.go). rmmgo_tc_peek: 0
 * when the table has no entry for ptr (or its handle is gone), else 1 with
 * the entry's handle, its state word (for rmmgo_tc_claim), whether it is
 * LIVE (handed out) and the user's size rounded to 256. rmmgo_tc_claim
 * takes the entry out if its state word is still meta: 1 with the size the
 * block was allocated with (its class), 0 when it changed meanwhile (look
 * again). rmmgo_tc_unclaim puts it back (the resource refused the free).
 * Outside sections. */
RMMGO_INTERNAL int rmmgo_tc_peek(uintptr_t ptr, uint64_t* handle, uint64_t* meta, int* live, size_t* had);
RMMGO_INTERNAL int rmmgo_tc_claim(uintptr_t ptr, uint64_t handle, uint64_t meta, size_t* size);
RMMGO_INTERNAL void rmmgo_tc_unclaim(uintptr_t ptr, uint64_t handle, uint64_t meta);

/* For tests: handle's budget, the part of it no pair reserved, and the
 * bytes cached for it (threads and depot). */
RMMGO_INTERNAL void rmmgo_tc_budget(uint64_t handle, size_t* budget, int64_t* unreserved, size_t* cached);

/* For tests: runs the calling thread's exit handling of its cache now. */
RMMGO_INTERNAL void rmmgo_tc_exit_mine(void);
/* For tests: a thread's exit waits ns nanoseconds once its cache left the
 * list (0: none); rmmgo_tc_test_exit_waiting is 1 while one waits so. */
RMMGO_INTERNAL void rmmgo_tc_test_exit_delay(int64_t ns);
RMMGO_INTERNAL int rmmgo_tc_test_exit_waiting(void);
/* Moves the cache's clock on by ns (tc.h, "clock"): internal/cacheclock's
 * Advance, for tests. */
RMMGO_INTERNAL void rmmgo_tc_clock_advance(int64_t ns);

/* rmm_deallocate taking the pointer as an integer (for Go tests). */
RMMGO_INTERNAL rmm_status rmmgo_tc_deallocate_at(rmm_resource_t mr, uintptr_t stream, uintptr_t ptr, size_t bytes,
                                                 size_t alignment);

/* Blocks the table holds (live, cached), blocks in the depot, and threads
 * with a cache, for tests. */
RMMGO_INTERNAL void rmmgo_tc_counts(size_t* live, size_t* cached, size_t* depot, size_t* caches);

/* The Go halves (thread_cache.go). The first three are the uncached calls;
 * refill and drain are the cache's one crossing per miss or full class
 * (rmmgo_tc_call); free_check answers a free the cache cannot take (why:
 * RMMGO_TC_*; which: RMMGO_TC_FREE*), success when the resource accepts a
 * size that differs, else the error, with its message; stream_live returns
 * 0 for a stream rmm_stream_destroy retired, 1 otherwise; stream_key (the
 * simulated backend) returns 0 and the stream's key, or nonzero when the
 * stream is not known. */
rmm_status rmmgo_go_allocate(rmm_resource_t mr, rmm_stream_t stream, size_t bytes, size_t alignment, void** ptr);
rmm_status rmmgo_go_deallocate(rmm_resource_t mr, rmm_stream_t stream, void* ptr, size_t bytes, size_t alignment);
rmm_status rmmgo_go_deallocate_sync(rmm_resource_t mr, void* ptr, size_t bytes, size_t alignment);
rmm_status rmmgo_go_refill(rmmgo_tc_call* call);
rmm_status rmmgo_go_drain(rmmgo_tc_call* call);
rmm_status rmmgo_go_free_check(uint64_t handle, int which, uintptr_t ptr, size_t bytes, size_t allocated, int why);
int rmmgo_go_stream_live(uintptr_t stream);
int rmmgo_go_stream_key(uintptr_t stream, uint64_t* key);

/* ------------------------------------------- the pool-based kinds' C path
 * async_path.c serves rmm_allocate, rmm_deallocate and rmm_deallocate_sync
 * for the handles of fastpath.CPathResource resources (cuda_async,
 * cuda_async_managed, cuda_async_view) in C, through core's C path. */

/* fastpath.CPath's Allocate and Deallocate (core/internal/asyncpath): 0 when the call
 * succeeded; anything else did nothing. */
typedef int (*rmmgo_ap_allocate_fn)(uintptr_t state, uint64_t gen, size_t bytes, uintptr_t stream, uintptr_t* out);
typedef int (*rmmgo_ap_deallocate_fn)(uintptr_t state, uint64_t gen, uintptr_t stream, uintptr_t ptr, size_t bytes);

/* Hands over fastpath.CPath's functions (async_path.go, once). */
RMMGO_INTERNAL void rmmgo_ap_set_funcs(uintptr_t allocate, uintptr_t deallocate);

/* For tests: how many calls async_path.c served on the calling thread. */
RMMGO_INTERNAL uint64_t rmmgo_ap_served_mine(void);

/* ------------------------------------------- the registry's mirror
 * mirror.c: which C path serves a handle, and what it needs (mirror.h).
 * The registry publishes a handle as it is made and takes it back before
 * its resource is closed (mirror.go). */
#define RMMGO_MIRROR_NONE 0  /* Go serves the handle */
#define RMMGO_MIRROR_CACHE 1 /* the per-thread cache (thread_cache.c) */
#define RMMGO_MIRROR_ASYNC 2 /* the pool-based kinds' C path (async_path.c) */

/* What a handle is published with: its tag, and the cache's limits
 * (RMMGO_MIRROR_CACHE) or fastpath.CPath's state and generation
 * (RMMGO_MIRROR_ASYNC). */
typedef struct rmmgo_publication {
  int tag;
  rmmgo_tc_limits limits;
  uintptr_t ap_state;
  uint64_t ap_gen;
} rmmgo_publication;

/* Makes handle servable from C (again, after an unpublish; with new limits
 * when it is): 1, or 0 when there is nothing C can serve or no host memory
 * for the mirror (the handle takes the Go path). */
RMMGO_INTERNAL int rmmgo_mirror_publish(uint64_t handle, const rmmgo_publication* p);
/* Takes handle back: from now on its calls go to Go. */
RMMGO_INTERNAL void rmmgo_mirror_unpublish(uint64_t handle);

#endif /* RMMGO_CAPI_INTERNAL_H */
