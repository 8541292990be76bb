/*
 * mirror.c -- the registry's mirror (mirror.h): what Go publishes and takes
 * back, one call each.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mirror.h"

_Atomic(rmmgo_mslot*) rmmgo_mirror[((size_t)1 << RMMGO_HANDLE_INDEX_BITS) / RMMGO_MIRROR_CHUNK];
static pthread_mutex_t mirror_mu = PTHREAD_MUTEX_INITIALIZER;

/* Handle h's slot, its chunk made if need be (mirror_mu held); NULL when
 * there is no host memory for it. */
static rmmgo_mslot* mslot_make(uint64_t h) {
  size_t index = (size_t)(h & (((uint64_t)1 << RMMGO_HANDLE_INDEX_BITS) - 1));
  _Atomic(rmmgo_mslot*)* cp = &rmmgo_mirror[index >> RMMGO_MIRROR_CHUNK_BITS];
  rmmgo_mslot* chunk = atomic_load_explicit(cp, memory_order_acquire);
  if (chunk == NULL) {
    chunk = aligned_alloc(64, RMMGO_MIRROR_CHUNK * sizeof *chunk); /* kept for the process's life */
    if (chunk == NULL) {
      return NULL;
    }
    memset(chunk, 0, RMMGO_MIRROR_CHUNK * sizeof *chunk);
    atomic_store_explicit(cp, chunk, memory_order_release);
  }
  return &chunk[index & (RMMGO_MIRROR_CHUNK - 1)];
}

int rmmgo_mirror_publish(uint64_t handle, const rmmgo_publication* p) {
  if (handle == 0 || p == NULL) {
    return 0;
  }
  if ((p->tag == RMMGO_MIRROR_CACHE && p->limits.max_request == 0) ||
      (p->tag == RMMGO_MIRROR_ASYNC && p->ap_state == 0) ||
      (p->tag != RMMGO_MIRROR_CACHE && p->tag != RMMGO_MIRROR_ASYNC)) {
    return 0; /* nothing C can serve: the handle takes the Go path */
  }
  pthread_mutex_lock(&mirror_mu);
  rmmgo_mslot* s = mslot_make(handle);
  if (s == NULL) {
    pthread_mutex_unlock(&mirror_mu);
    return 0; /* no memory for the mirror: the handle takes the Go path */
  }
  if (atomic_load_explicit(&s->handle, memory_order_relaxed) != handle) {
    /* Nobody is served from this slot while it changes hands. */
    atomic_store_explicit(&s->handle, 0, memory_order_seq_cst);
  }
  atomic_store_explicit(&s->tag, p->tag, memory_order_relaxed);
  if (p->tag == RMMGO_MIRROR_CACHE) {
    rmmgo_tc_publish_limits(s, handle, &p->limits);
  } else {
    atomic_store_explicit(&s->ap_state, p->ap_state, memory_order_relaxed);
    atomic_store_explicit(&s->ap_gen, p->ap_gen, memory_order_relaxed);
  }
  atomic_store_explicit(&s->handle, handle, memory_order_seq_cst);
  pthread_mutex_unlock(&mirror_mu);
  return 1;
}

void rmmgo_mirror_unpublish(uint64_t handle) {
  rmmgo_mslot* s = handle != 0 ? rmmgo_mslot_of(handle) : NULL;
  if (s != NULL) {
    uint64_t expected = handle;
    atomic_compare_exchange_strong(&s->handle, &expected, 0);
  }
}
