/*
 * stream_check.h -- whether a stream may be served in C, and its key: the
 * one check the thread cache and the async path share (stream_check.c
 * holds its state). C only: it defines functions.
 *
 * A stream rmm_stream_destroy retired must never reach CUDA or a cache:
 * Go knows which (rmmgo_go_stream_live). A thread asks it once per stream
 * and retirement, remembering the answers in a small memo of its own;
 * each retirement moves the epoch on, which empties every memo at once.
 */
#ifndef RMMGO_CAPI_STREAM_CHECK_H
#define RMMGO_CAPI_STREAM_CHECK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "capi_internal.h"

enum { RMMGO_STREAM_MEMO = 4 };

/* Streams Go said were not retired, and the epoch it said so in. One per
 * thread per user (the thread cache's, the async path's). */
typedef struct rmmgo_stream_memo {
  uintptr_t stream[RMMGO_STREAM_MEMO];
  uint64_t epoch[RMMGO_STREAM_MEMO];
  unsigned next;
} rmmgo_stream_memo;

/* Bumped by Go each time rmm_stream_destroy retires a stream. */
RMMGO_INTERNAL extern _Atomic uint64_t rmmgo_stream_epoch;

/* The CUDA backend's stream-id function and cudaGetLastError (0 on the
 * simulated backend, where C asks Go). The key of a stream of id i is
 * i | RMMGO_STREAM_KEY_FLAG (internal/cabi). */
typedef int (*rmmgo_get_id_fn)(void* stream, unsigned long long* id);
typedef int (*rmmgo_get_last_error_fn)(void);
RMMGO_INTERNAL extern _Atomic uintptr_t rmmgo_stream_get_id;
RMMGO_INTERNAL extern _Atomic uintptr_t rmmgo_stream_get_last_error;

/* Whether stream s may be served: not one rmm_stream_destroy retired. The
 * default streams (0, 1) are never retired. */
static inline bool rmmgo_stream_live(rmmgo_stream_memo* m, uintptr_t s) {
  if (s <= 1) {
    return true;
  }
  uint64_t epoch = atomic_load_explicit(&rmmgo_stream_epoch, memory_order_relaxed);
  for (int i = 0; i < RMMGO_STREAM_MEMO; i++) {
    if (m->stream[i] == s && m->epoch[i] == epoch) {
      return true;
    }
  }
  if (rmmgo_go_stream_live(s) == 0) {
    return false;
  }
  unsigned i = m->next;
  m->next = (i + 1) % RMMGO_STREAM_MEMO;
  m->stream[i] = s;
  m->epoch[i] = epoch;
  return true;
}

/* rmmgo_stream_live, and the stream's key (0 for the
 * default streams). Nonzero: the caller goes to Go, which reports what is
 * wrong. */
static inline int rmmgo_stream_key(rmmgo_stream_memo* m, uintptr_t s, uint64_t* key) {
  if (s <= 1) {
    *key = 0;
    return 0;
  }
  if (!rmmgo_stream_live(m, s)) {
    return -1;
  }
  uintptr_t fn = atomic_load_explicit(&rmmgo_stream_get_id, memory_order_relaxed);
  if (fn != 0) {
    unsigned long long id = 0;
    if (((rmmgo_get_id_fn)fn)((void*)s, &id) != 0) {
      uintptr_t le = atomic_load_explicit(&rmmgo_stream_get_last_error, memory_order_relaxed);
      if (le != 0) {
        (void)((rmmgo_get_last_error_fn)le)(); /* as every rmmgo call, leave no error behind */
      }
      return -1;
    }
    *key = (uint64_t)id | RMMGO_STREAM_KEY_FLAG;
    return 0;
  }
  return rmmgo_go_stream_key(s, key);
}

#endif /* RMMGO_CAPI_STREAM_CHECK_H */
