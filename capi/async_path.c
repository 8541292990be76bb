/*
 * async_path.c -- rmm_allocate, rmm_deallocate and rmm_deallocate_sync for
 * the pool-based kinds (cuda_async, cuda_async_managed, cuda_async_view),
 * served in C: the calling thread never enters Go.
 *
 * What such a call must do (the gate Close waits for, the device check,
 * cudaMallocFromPoolAsync or cudaFreeAsync, the record of the block in the
 * one table every path shares) is core's C path (core/internal/asyncpath,
 * core.CPath). This file adds what the C ABI checks before it:
 *
 *   - the mirror: slot index -> {live handle, C state, generation}, written
 *     by Go when a handle of such a resource is made (rmmgo_ap_publish) and
 *     taken back before its resource is closed (rmmgo_ap_unpublish). A
 *     handle is served only while it equals its slot's handle, so forged,
 *     stale and released handles go to Go, which reports them;
 *   - the request's checks (bytes, alignment) and the stream's: a stream
 *     rmm_stream_destroy retired is never passed to CUDA. A thread asks Go
 *     once per stream and retirement (rmmgo_go_stream_live and the epoch of
 *     thread_cache.c), as the thread cache does.
 *
 * Whatever this path does not serve (a request or stream it does not take,
 * and any call that did not succeed: closed, wrong device, out of memory,
 * a free the record refuses) returns false, and the caller goes on to the
 * Go path, which does the call again and reports what is wrong.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "capi_internal.h"

/* core.CPathFuncs: the C path's calls (0 until Go hands them over). */
static _Atomic uintptr_t ap_allocate_fn, ap_deallocate_fn;

void rmmgo_ap_set_funcs(uintptr_t allocate, uintptr_t deallocate) {
  atomic_store(&ap_allocate_fn, allocate);
  atomic_store(&ap_deallocate_fn, deallocate);
}

/* ---------------------------------------------------------------- mirror */

/* How many handles are published: while none is, rmm_allocate and
 * rmm_deallocate do not look here (one relaxed load instead of a call). */
int rmmgo_ap_published;

#define AP_INDEX_BITS 24 /* a handle's low bits: its registry slot */
#define AP_CHUNK_BITS 10
#define AP_CHUNK ((size_t)1 << AP_CHUNK_BITS)

typedef struct {
  _Atomic uint64_t handle; /* the live handle of this slot, 0 when none */
  _Atomic uintptr_t state;
  _Atomic uint64_t gen;
  uint64_t pad_;
} ap_mslot;

static _Atomic(ap_mslot*) ap_mirror[((size_t)1 << AP_INDEX_BITS) / AP_CHUNK];
static pthread_mutex_t ap_mirror_mu = PTHREAD_MUTEX_INITIALIZER;

static ap_mslot* ap_mslot_of(uint64_t h, bool make) {
  size_t index = (size_t)(h & (((uint64_t)1 << AP_INDEX_BITS) - 1));
  _Atomic(ap_mslot*)* cp = &ap_mirror[index >> AP_CHUNK_BITS];
  ap_mslot* chunk = atomic_load_explicit(cp, memory_order_acquire);
  if (chunk == NULL && make) {
    chunk = calloc(AP_CHUNK, sizeof *chunk); /* kept for the process's life */
    if (chunk != NULL) {
      atomic_store_explicit(cp, chunk, memory_order_release);
    }
  }
  return chunk == NULL ? NULL : &chunk[index & (AP_CHUNK - 1)];
}

int rmmgo_ap_publish(uint64_t handle, uintptr_t state, uint64_t gen) {
  if (handle == 0 || state == 0) {
    return 0;
  }
  pthread_mutex_lock(&ap_mirror_mu);
  ap_mslot* s = ap_mslot_of(handle, true);
  if (s != NULL) {
    if (atomic_exchange_explicit(&s->handle, 0, memory_order_seq_cst) == 0) {
      __atomic_fetch_add(&rmmgo_ap_published, 1, __ATOMIC_SEQ_CST);
    }
    atomic_store_explicit(&s->state, state, memory_order_relaxed);
    atomic_store_explicit(&s->gen, gen, memory_order_relaxed);
    atomic_store_explicit(&s->handle, handle, memory_order_seq_cst);
  }
  pthread_mutex_unlock(&ap_mirror_mu);
  return s != NULL; /* no memory for the mirror: the handle takes the Go path */
}

void rmmgo_ap_unpublish(uint64_t handle) {
  ap_mslot* s = ap_mslot_of(handle, false);
  if (s != NULL) {
    uint64_t expected = handle;
    if (atomic_compare_exchange_strong(&s->handle, &expected, 0)) {
      __atomic_fetch_sub(&rmmgo_ap_published, 1, __ATOMIC_SEQ_CST);
    }
  }
}

/* The state and generation of a published handle h; false when h is not
 * one. The handle is read again after the state: a slot reused meanwhile
 * by another handle is not mistaken for h's. */
static inline bool ap_lookup(uint64_t h, uintptr_t* state, uint64_t* gen) {
  if (h == 0) {
    return false;
  }
  size_t index = (size_t)(h & (((uint64_t)1 << AP_INDEX_BITS) - 1));
  ap_mslot* chunk = atomic_load_explicit(&ap_mirror[index >> AP_CHUNK_BITS], memory_order_acquire);
  if (chunk == NULL) {
    return false;
  }
  ap_mslot* s = &chunk[index & (AP_CHUNK - 1)];
  if (atomic_load_explicit(&s->handle, memory_order_acquire) != h) {
    return false;
  }
  *state = atomic_load_explicit(&s->state, memory_order_acquire);
  *gen = atomic_load_explicit(&s->gen, memory_order_acquire);
  return atomic_load_explicit(&s->handle, memory_order_seq_cst) == h;
}

/* ---------------------------------------------------------------- streams */

enum { AP_STREAM_MEMO = 4 };

/* Per thread: the streams Go said were not retired and the epoch it said
 * so in, and the calls this path served (for tests). initial-exec: one
 * instruction per access, not a __tls_get_addr call (the library already
 * uses static TLS: Go's runtime does). */
typedef struct {
  uintptr_t stream[AP_STREAM_MEMO];
  uint64_t epoch[AP_STREAM_MEMO];
  unsigned next;
  uint64_t served;
} ap_tls;

static __thread ap_tls ap_mine __attribute__((tls_model("initial-exec")));

/* Whether the stream may be passed to CUDA: not one rmm_stream_destroy
 * retired. A thread asks Go once per stream and retirement. */
static inline bool ap_stream_ok(uintptr_t s) {
  if (s == 0 || s == 1) {
    return true; /* the default streams: never retired */
  }
  uint64_t epoch = rmmgo_tc_stream_epoch();
  ap_tls* m = &ap_mine;
  for (int i = 0; i < AP_STREAM_MEMO; i++) {
    if (m->stream[i] == s && m->epoch[i] == epoch) {
      return true;
    }
  }
  if (rmmgo_go_stream_live(s) == 0) {
    return false;
  }
  unsigned i = m->next;
  m->next = (i + 1) % AP_STREAM_MEMO;
  m->stream[i] = s;
  m->epoch[i] = epoch;
  return true;
}

/* ---------------------------------------------------------------- calls */

uint64_t rmmgo_ap_served_mine(void) { return ap_mine.served; }

/* core.maxAllocation: larger requests fail in Go without a CUDA call. */
#define AP_MAX_ALLOCATION ((size_t)1 << 57)

bool rmmgo_ap_try_allocate(rmm_resource_t mr, rmm_stream_t stream, size_t bytes, size_t alignment, void** ptr) {
  uintptr_t state;
  uint64_t gen;
  if (ptr == NULL || bytes - 1 >= AP_MAX_ALLOCATION || alignment - 1 >= RMM_DEFAULT_ALIGNMENT ||
      (alignment & (alignment - 1)) != 0 || !ap_lookup((uint64_t)(uintptr_t)mr, &state, &gen) ||
      !ap_stream_ok((uintptr_t)stream)) {
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

bool rmmgo_ap_try_deallocate(rmm_resource_t mr, rmm_stream_t stream, void* ptr, size_t bytes) {
  uintptr_t state;
  uint64_t gen;
  if (ptr == NULL || !ap_lookup((uint64_t)(uintptr_t)mr, &state, &gen) || !ap_stream_ok((uintptr_t)stream)) {
    return false;
  }
  uintptr_t fn = atomic_load_explicit(&ap_deallocate_fn, memory_order_relaxed);
  if (fn == 0 || ((rmmgo_ap_deallocate_fn)fn)(state, gen, (uintptr_t)stream, (uintptr_t)ptr, bytes) != 0) {
    return false;
  }
  ap_mine.served++;
  return true;
}
