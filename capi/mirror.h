/*
 * mirror.h -- the registry's mirror in C: slot index -> the live handle of
 * the slot, which C path serves it (its tag) and what that path needs. Go
 * writes it (registry.go, through rmmgo_mirror_publish and
 * rmmgo_mirror_unpublish, mirror.c); rmm_allocate and rmm_deallocate
 * (route.c) read it on every call, with atomic loads only. A handle is
 * served in C only while it equals its slot's handle, so forged, stale and
 * released handles go to Go, which reports them. C only: it defines
 * functions.
 */
#ifndef RMMGO_CAPI_MIRROR_H
#define RMMGO_CAPI_MIRROR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capi_internal.h"

#define RMMGO_MIRROR_CHUNK_BITS 10
#define RMMGO_MIRROR_CHUNK ((size_t)1 << RMMGO_MIRROR_CHUNK_BITS)

typedef struct rmmgo_mslot {
  /* Read on every call; written when Go publishes. */
  _Atomic uint64_t handle; /* the live handle of this slot, 0 when none */
  atomic_int tag;          /* RMMGO_MIRROR_*: which C path serves handle */
  /* The cache: adaptors between the handle and its resource, run in C
   * (set before the handle is published). */
  atomic_int nsteps;
  /* The resource's fastpath.CacheLimits, as Go last published them. */
  _Atomic size_t max_request; /* largest request served */
  _Atomic size_t block;       /* every block's size (fixed_size), else 0 */
  /* The async path: the resource's fastpath.CPath. */
  _Atomic uintptr_t ap_state;
  _Atomic uint64_t ap_gen;
  _Atomic size_t quantum;
  _Atomic size_t batch_bytes;
  atomic_int batch_blocks;
  atomic_int batch_min_blocks;
  _Atomic int64_t exited_wait_ns;
  _Atomic int64_t lone_after_ns;
  /* The handle last published here with the cache's tag: the budget's and
   * round_gone's owner, also while it is unpublished for a moment
   * (rmm_binning_add_bin). */
  _Atomic uint64_t last;
  rmmgo_tc_step steps[RMMGO_TC_MAX_STEPS];
  /* The resource's block sizes (a binning resource's bins), ascending. */
  atomic_int nsizes;
  size_t sizes[RMMGO_TC_MAX_SIZES];
  /* Written by the cache's pairs: on a line of their own, so that a
   * reservation does not take the line every call reads away from the
   * other threads. */
  _Atomic int64_t avail __attribute__((aligned(64))); /* the part of the budget no pair or depot entry reserved */
  /* Rounding (class size - the user's size) of live blocks counted by
   * pairs that left the handle (their thread exited, or they were bound to
   * another handle); see rmmgo_tc_holding. */
  _Atomic int64_t round_gone;
  /* The budget: all pairs together reserve at most budget (avail is what
   * is left), and they reserve no more than shared in all unless one pair
   * has held a quota alone (holders) for lone_after_ns (cachepolicy: a
   * thread working alone keeps more than many threads together). budget
   * and shared change under blk. */
  _Atomic size_t budget, shared;
  _Atomic int64_t holders;
  _Atomic int64_t crowd_ns; /* when two or more pairs last held a quota */
  atomic_int blk;
} __attribute__((aligned(64))) rmmgo_mslot;

/* Chunks of RMMGO_MIRROR_CHUNK slots, made on first use and kept for the
 * process's life. */
RMMGO_INTERNAL extern _Atomic(rmmgo_mslot*) rmmgo_mirror[((size_t)1 << RMMGO_HANDLE_INDEX_BITS) / RMMGO_MIRROR_CHUNK];

/* The slot of handle h's index, or NULL when its chunk was never made. */
static inline rmmgo_mslot* rmmgo_mslot_of(uint64_t h) {
  size_t index = (size_t)(h & (((uint64_t)1 << RMMGO_HANDLE_INDEX_BITS) - 1));
  rmmgo_mslot* chunk = atomic_load_explicit(&rmmgo_mirror[index >> RMMGO_MIRROR_CHUNK_BITS], memory_order_acquire);
  return chunk == NULL ? NULL : &chunk[index & (RMMGO_MIRROR_CHUNK - 1)];
}

/* The slot of handle h if h is published, else NULL. */
static inline rmmgo_mslot* rmmgo_mirror_find(uint64_t h) {
  if (h == 0) {
    return NULL;
  }
  rmmgo_mslot* s = rmmgo_mslot_of(h);
  if (s == NULL || atomic_load_explicit(&s->handle, memory_order_acquire) != h) {
    return NULL;
  }
  return s;
}

/* Whether h is still the slot's handle (a second look, after reading what
 * it published). */
static inline bool rmmgo_mirror_alive(rmmgo_mslot* s, uint64_t h) {
  return atomic_load_explicit(&s->handle, memory_order_seq_cst) == h;
}

/* The cache's part of a publication (tc_budget.c): the limits and a new
 * handle's budget, under the mirror's lock, before the handle is
 * published. */
RMMGO_INTERNAL void rmmgo_tc_publish_limits(rmmgo_mslot* s, uint64_t handle, const rmmgo_tc_limits* lim);

/* The C paths route.c sends a published handle's calls to. */

/* The cache (thread_cache.c): *go set when Go must serve the call instead
 * (nothing was done); otherwise the call's status. A free's which is
 * RMMGO_TC_FREE or RMMGO_TC_FREE_SYNC. */
RMMGO_INTERNAL rmm_status rmmgo_tc_allocate(rmmgo_mslot* ms, uint64_t h, rmm_stream_t stream, size_t bytes,
                                            size_t alignment, void** ptr, bool* go);
RMMGO_INTERNAL rmm_status rmmgo_tc_free(rmmgo_mslot* ms, uint64_t h, int which, rmm_stream_t stream, void* ptr,
                                        size_t bytes, bool* go);

/* The async path (async_path.c): true when the call was served and
 * succeeded; false: Go serves and reports it. */
RMMGO_INTERNAL bool rmmgo_async_allocate(rmmgo_mslot* ms, uint64_t h, rmm_stream_t stream, size_t bytes,
                                      size_t alignment, void** ptr);
RMMGO_INTERNAL bool rmmgo_async_deallocate(rmmgo_mslot* ms, uint64_t h, rmm_stream_t stream, void* ptr, size_t bytes);

#endif /* RMMGO_CAPI_MIRROR_H */
