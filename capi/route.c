/*
 * route.c -- rmm_allocate, rmm_deallocate and rmm_deallocate_sync: where
 * each call goes. The registry's mirror (mirror.h) says which C path serves
 * a handle: the per-thread cache (thread_cache.c) for the handles of
 * fastpath.Cacheable resources, the async path (async_path.c) for the
 * pool-based kinds. Everything else -- a handle neither serves, a forged,
 * stale or released handle, a request or stream the path does not take,
 * a call it did not complete -- goes to the Go halves (rmmgo_go_*), which
 * serve it or report what is wrong.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "mirror.h"

/* An alignment the cache takes: a power of two up to 256 (its blocks
 * start on 256 bytes). */
static inline bool cache_alignment_ok(size_t a) { return a - 1 < 256 && (a & (a - 1)) == 0; }
/* A power of two: any other alignment goes to Go, which refuses it. */
static inline bool pow2(size_t a) { return a != 0 && (a & (a - 1)) == 0; }

rmm_status rmm_allocate(rmm_resource_t mr, rmm_stream_t stream, size_t bytes, size_t alignment, void** ptr) {
  uint64_t h = (uint64_t)(uintptr_t)mr;
  rmmgo_mslot* ms = rmmgo_mirror_find(h);
  if (ms != NULL) {
    int tag = atomic_load_explicit(&ms->tag, memory_order_relaxed);
    if (tag == RMMGO_MIRROR_CACHE) {
      if (ptr != NULL && bytes != 0 && cache_alignment_ok(alignment)) {
        bool go = false;
        rmm_status st = rmmgo_tc_allocate(ms, h, stream, bytes, alignment, ptr, &go);
        if (!go) {
          return st;
        }
      }
    } else if (tag == RMMGO_MIRROR_ASYNC && rmmgo_async_allocate(ms, h, stream, bytes, alignment, ptr)) {
      return RMM_SUCCESS;
    }
  }
  return rmmgo_go_allocate(mr, stream, bytes, alignment, ptr);
}

/* A free through the C path that serves mr; false: Go serves it. */
static inline bool free_in_c(rmm_resource_t mr, int which, rmm_stream_t stream, void* ptr, size_t bytes,
                             size_t alignment, rmm_status* st) {
  uint64_t h = (uint64_t)(uintptr_t)mr;
  rmmgo_mslot* ms = rmmgo_mirror_find(h);
  if (ms == NULL) {
    return false;
  }
  int tag = atomic_load_explicit(&ms->tag, memory_order_relaxed);
  if (tag == RMMGO_MIRROR_CACHE) {
    if (bytes == 0 || !cache_alignment_ok(alignment)) {
      return false;
    }
    bool go = false;
    *st = rmmgo_tc_free(ms, h, which, stream, ptr, bytes, &go);
    return !go;
  }
  if (tag == RMMGO_MIRROR_ASYNC && pow2(alignment) && rmmgo_async_deallocate(ms, h, stream, ptr, bytes)) {
    *st = RMM_SUCCESS;
    return true;
  }
  return false;
}

rmm_status rmm_deallocate(rmm_resource_t mr, rmm_stream_t stream, void* ptr, size_t bytes, size_t alignment) {
  rmm_status st;
  if (free_in_c(mr, RMMGO_TC_FREE, stream, ptr, bytes, alignment, &st)) {
    return st;
  }
  return rmmgo_go_deallocate(mr, stream, ptr, bytes, alignment);
}

/* Without a stream: the caller vouches that no work uses the memory, which
 * is a free on the default stream for every resource C serves (the
 * pool-based kinds' DeallocateSync is one too). */
rmm_status rmm_deallocate_sync(rmm_resource_t mr, void* ptr, size_t bytes, size_t alignment) {
  rmm_status st;
  if (free_in_c(mr, RMMGO_TC_FREE_SYNC, NULL, ptr, bytes, alignment, &st)) {
    return st;
  }
  return rmmgo_go_deallocate_sync(mr, ptr, bytes, alignment);
}

/* rmm_deallocate with the pointer as an integer (for Go tests, which hold
 * device addresses as uintptr). */
rmm_status rmmgo_tc_deallocate_at(rmm_resource_t mr, uintptr_t stream, uintptr_t ptr, size_t bytes, size_t alignment) {
  return rmm_deallocate(mr, (rmm_stream_t)stream, (void*)ptr, bytes, alignment);
}
