/*
 * async_path.c -- rmm_allocate, rmm_deallocate and rmm_deallocate_sync for
 * the pool-based kinds (cuda_async, cuda_async_managed, cuda_async_view),
 * served in C: the calling thread never enters Go. route.c sends here the
 * calls on the handles the registry published with the async tag, with
 * their resource's C state and generation (mirror.h).
 *
 * What such a call must do (the gate Close waits for, the device check,
 * cudaMallocFromPoolAsync or cudaFreeAsync, the record of the block in the
 * one table every path shares) is core's C path (core/internal/asyncpath,
 * fastpath.CPath). This file adds what the C ABI checks before it: the
 * request's checks (bytes, alignment) and the stream's (stream_check.h: a
 * stream rmm_stream_destroy retired is never passed to CUDA).
 *
 * Whatever this path does not serve (a request or stream it does not take,
 * and any call that did not succeed: closed, wrong device, out of memory,
 * a free the record refuses) returns false, and route.c goes on to the Go
 * path, which does the call again and reports what is wrong.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "mirror.h"
#include "stream_check.h"

/* fastpath.CPath's functions: the C path's calls (0 until Go hands them over). */
static _Atomic uintptr_t ap_allocate_fn, ap_deallocate_fn;

void rmmgo_ap_set_funcs(uintptr_t allocate, uintptr_t deallocate) {
  atomic_store(&ap_allocate_fn, allocate);
  atomic_store(&ap_deallocate_fn, deallocate);
}

/* The state and generation h's slot holds for it; false when h left the
 * slot meanwhile. The handle is read again after the state: a slot reused
 * meanwhile by another handle is not mistaken for h's. */
static inline bool ap_state_of(rmmgo_mslot* s, uint64_t h, uintptr_t* state, uint64_t* gen) {
  *state = atomic_load_explicit(&s->ap_state, memory_order_acquire);
  *gen = atomic_load_explicit(&s->ap_gen, memory_order_acquire);
  return rmmgo_mirror_alive(s, h);
}

/* Per thread: the streams Go said were not retired, and the calls this
 * path served (for tests). initial-exec: one instruction per access, not a
 * __tls_get_addr call (the library already uses static TLS: Go's runtime
 * does). */
typedef struct {
  rmmgo_stream_memo streams;
  uint64_t served;
} ap_tls;

static __thread ap_tls ap_mine __attribute__((tls_model("initial-exec")));

uint64_t rmmgo_ap_served_mine(void) { return ap_mine.served; }

bool rmmgo_async_allocate(rmmgo_mslot* ms, uint64_t h, rmm_stream_t stream, size_t bytes, size_t alignment, void** ptr) {
  uintptr_t state;
  uint64_t gen;
  if (ptr == NULL || bytes - 1 >= RMMGO_MAX_ALLOCATION || alignment - 1 >= RMM_DEFAULT_ALIGNMENT ||
      (alignment & (alignment - 1)) != 0 || !ap_state_of(ms, h, &state, &gen) ||
      !rmmgo_stream_live(&ap_mine.streams, (uintptr_t)stream)) {
    return false;
  }
  uintptr_t fn = atomic_load_explicit(&ap_allocate_fn, memory_order_relaxed);
  uintptr_t p = 0;
  if (fn == 0 || ((rmmgo_ap_allocate_fn)fn)(state, gen, bytes, (uintptr_t)stream, &p) != 0) {
    return false;
  }
  *ptr = (void*)p;
  ap_mine.served++;
  return true;
}

bool rmmgo_async_deallocate(rmmgo_mslot* ms, uint64_t h, rmm_stream_t stream, void* ptr, size_t bytes) {
  uintptr_t state;
  uint64_t gen;
  if (ptr == NULL || !ap_state_of(ms, h, &state, &gen) || !rmmgo_stream_live(&ap_mine.streams, (uintptr_t)stream)) {
    return false;
  }
  uintptr_t fn = atomic_load_explicit(&ap_deallocate_fn, memory_order_relaxed);
  if (fn == 0 || ((rmmgo_ap_deallocate_fn)fn)(state, gen, (uintptr_t)stream, (uintptr_t)ptr, bytes) != 0) {
    return false;
  }
  ap_mine.served++;
  return true;
}
