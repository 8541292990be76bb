/*
 * thread_cache.c -- allocations and frees through the per-thread cache of
 * free blocks, so that the common call never crosses into Go
 * (docs/thread-cache.md says why and how; tc.h lists the cache's other
 * files). route.c sends here the calls on the handles the registry
 * published with the cache's tag: those whose resource is a fastpath.Cacheable
 * one (pool, arena, fixed_size, binning, expandable), with the limits that
 * resource gave (which requests, how many bytes all threads together may
 * keep). Every request the cache does not take (sizes above the limit, a
 * stream it cannot key, a limit an adaptor sets) goes back to route.c,
 * which hands it to Go.
 *
 * An allocation pops a block off the calling thread's stack for its
 * (handle, stream key, size class) and marks its table entry LIVE; a free
 * finds the entry, turns it CACHED with one compare-and-swap (of two frees
 * racing, one wins; a foreign, stale, interior or double free goes to Go,
 * which says what is wrong) and pushes the block. A miss (refill) or a
 * full class (drain) is ONE crossing into Go (tc_collect.c). All of it runs
 * inside the calling thread's section (tc.h), outside any lock.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "tc.h"

static rmm_status tc_fail(rmm_status st, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

static rmm_status tc_fail(rmm_status st, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) {
    n = 0;
  }
  rmmgo_set_message(buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
  return st;
}

/* A miss: one crossing allocates a batch of the class; the first block is
 * the caller's, as many others as the pair's budget allows are cached. */
static rmm_status tc_refill(tc_cache* c, tc_mslot* ms, uint64_t h, uint64_t key, rmm_stream_t stream, int k,
                            size_t size, size_t bytes, size_t alignment, size_t fixed, void** ptr, bool* go) {
  uintptr_t buf[TC_BUF];
  /* How many blocks: the batch, cut to what the pair may keep. */
  int want = 1;
  tc_enter(c);
  tc_pair* p = rmmgo_mirror_alive(ms, h) ? tc_pair_for(c, h, key, fixed) : NULL;
  if (p != NULL) {
    size_t bb = atomic_load_explicit(&ms->batch_bytes, memory_order_relaxed);
    int bn = atomic_load_explicit(&ms->batch_blocks, memory_order_relaxed);
    size_t bmin = (size_t)atomic_load_explicit(&ms->batch_min_blocks, memory_order_relaxed);
    size_t extra = (bb / size > bmin ? bb / size : bmin) - 1;
    if (extra > (size_t)(bn - 1)) {
      extra = (size_t)(bn - 1);
    }
    tc_trim_quota(ms, p);
    while (extra > 0 && !tc_reserve(ms, p, extra * size)) {
      extra /= 2;
    }
    want = 1 + (int)extra;
  }
  tc_leave(c);
  rmmgo_tc_call call = {
      .handle = h, .stream = (uintptr_t)stream, .size = size, .bytes = bytes, .alignment = alignment,
      .ptrs = buf, .n = want, .got = 0,
  };
  rmm_status st = tc_cross(true, &call, ms);
  if (st != RMM_SUCCESS) {
    return st;
  }
  int got = call.got;
  if (got < 1 || got > want) {
    return tc_fail(RMM_ERROR_INTERNAL, "rmm_allocate(%zu bytes, alignment %zu): internal error (a bug in rmmgo): refill gave %d blocks",
                   bytes, alignment, got);
  }
  /* Into the table first (outside the section: the table may grow), the
   * first block LIVE, the others CACHED; nobody else knows them yet. */
  size_t units = (bytes + 255) >> 8;
  tc_item items[TC_BUF];
  bool tracked[TC_BUF];
  uintptr_t back[TC_BUF];
  int nback = 0;
  for (int i = 0; i < got; i++) {
    uint64_t m = i == 0 ? tc_meta(TC_LIVE, k, units, h) : tc_meta(TC_CACHED, k, 0, h);
    tracked[i] = tc_insert(buf[i], m, &items[i]);
    if (!tracked[i]) {
      back[nback++] = buf[i]; /* untracked: goes back to Go */
    }
  }
  tc_enter(c);
  if (!rmmgo_mirror_alive(ms, h)) {
    /* Released during the call (a race in the caller): give it all back. */
    tc_leave(c);
    tc_give_back(h, stream, size, buf, got);
    return tc_fail(RMM_ERROR_INVALID_HANDLE, "rmm_allocate: invalid handle: %#" PRIx64 " was released during the call", h);
  }
  p = tc_pair_for(c, h, key, fixed);
  tc_stack* stk = p != NULL ? &p->cls[k] : NULL;
  int nkeep = 0;
  for (int i = 1; i < got; i++) {
    if (!tracked[i]) {
      continue;
    }
    if (stk != NULL && p->bytes + size <= p->quota && tc_stack_room(stk)) {
      stk->v[stk->n++] = items[i];
      p->bytes += size;
      p->blocks++;
      nkeep++;
    } else {
      back[nback++] = buf[i]; /* no room: forgotten and given back below */
    }
  }
  if (tracked[0]) {
    if (p != NULL) {
      p->round += (int64_t)size - (int64_t)(units << 8);
    } else {
      atomic_fetch_add_explicit(&ms->round_gone, (int64_t)size - (int64_t)(units << 8), memory_order_relaxed);
    }
  }
  if (p != NULL) {
    tc_trim_quota(ms, p);
  }
  tc_leave(c);
  if (nback > 0) {
    /* Host memory ran out (the table or a stack could not grow), or the
     * quota shrank meanwhile. */
    tc_give_back(h, stream, size, back, nback);
  }
  if (!tracked[0]) {
    /* No host memory to track it: serve this call uncached. */
    *go = true;
    return RMM_SUCCESS;
  }
  *ptr = (void*)buf[0];
  return RMM_SUCCESS;
}

/* A cached allocation: a hit, or a refill. *go is set when the call must
 * go to Go instead (nothing was done). */
static rmm_status tc_allocate(tc_cache* c, tc_mslot* ms, uint64_t h, uint64_t key, rmm_stream_t stream, int k,
                              size_t size, size_t bytes, size_t alignment, void** ptr, bool* go) {
  size_t fixed = atomic_load_explicit(&ms->block, memory_order_relaxed);
  bool adopted = false;
again:
  tc_enter(c);
  tc_pair* p = NULL;
  if (!rmmgo_mirror_alive(ms, h) || (p = tc_pair_for(c, h, key, fixed)) == NULL) {
    tc_leave(c);
    *go = true;
    return RMM_SUCCESS;
  }
  tc_stack* st = &p->cls[k];
  if (st->n > 0) {
    tc_item it = st->v[--st->n];
    if (st->n > 0) {
      /* The next pop of this class: its entry (written then), and the
       * stack further down (a run of allocations walks it). */
      tc_prefetch_entry(&st->v[st->n - 1]);
      __builtin_prefetch(&st->v[st->n > 8 ? st->n - 8 : 0]);
    }
    size_t units = (bytes + 255) >> 8;
    p->bytes -= size;
    p->blocks--;
    p->round += (int64_t)size - (int64_t)(units << 8);
    tc_ent* e = tc_item_entry(&it);
    if (e != NULL) {
      /* The block is ours alone while it sits in our stack: its entry is
       * written, not read (no miss to wait for). */
      atomic_store_explicit(&e->meta, tc_meta(TC_LIVE, k, units, h), memory_order_release);
    }
    tc_leave(c);
    if (e == NULL) {
      /* Never happens: a cached block is always in the table. */
      return tc_fail(RMM_ERROR_INTERNAL, "rmm_allocate: internal error (a bug in rmmgo): cached block %#" PRIxPTR " is not in the table",
                     it.ptr);
    }
    *ptr = (void*)it.ptr;
    return RMM_SUCCESS;
  }
  tc_leave(c);
  /* Before a crossing: what an exited thread left on this handle and
   * stream (once per call). */
  if (!adopted && atomic_load_explicit(&tc_depot_n, memory_order_relaxed) != 0) {
    adopted = true;
    if (tc_adopt(c, ms, h, key, fixed)) {
      goto again;
    }
  }
  return tc_refill(c, ms, h, key, stream, k, size, bytes, alignment, fixed, ptr, go);
}

rmm_status rmmgo_tc_allocate(tc_mslot* ms, uint64_t h, rmm_stream_t stream, size_t bytes, size_t alignment, void** ptr,
                             bool* go) {
  int k;
  size_t size;
  uint64_t key;
  tc_cache* c;
  if (!tc_classify(ms, bytes, &k, &size) || (c = tc_cache_mine()) == NULL ||
      ((uintptr_t)stream <= 1 ? (key = 0, 0) : rmmgo_stream_key(&c->streams, (uintptr_t)stream, &key)) != 0) {
    *go = true;
    return RMM_SUCCESS;
  }
  int nsteps = atomic_load_explicit(&ms->nsteps, memory_order_relaxed);
  if (nsteps != 0 && !tc_steps_charge(ms, nsteps, bytes)) {
    *go = true; /* a limit refuses it: Go says so */
    return RMM_SUCCESS;
  }
  rmm_status st = tc_allocate(c, ms, h, key, stream, k, size, bytes, alignment, ptr, go);
  if (nsteps != 0) {
    if (*go || st != RMM_SUCCESS) {
      tc_steps_refund(ms, nsteps, bytes);
    } else {
      tc_steps_count(ms, nsteps, bytes);
    }
  }
  return st;
}

rmm_status rmmgo_tc_free(tc_mslot* ms, uint64_t h, int which, rmm_stream_t stream, void* ptr, size_t bytes,
                         bool* go_path) {
  *go_path = true;
  tc_cache* c = tc_cache_mine();
  uint64_t key = 0;
  if (c == NULL || ((uintptr_t)stream > 1 && rmmgo_stream_key(&c->streams, (uintptr_t)stream, &key) != 0)) {
    return RMM_SUCCESS;
  }
  if (ptr == NULL) {
    *go_path = false;
    return RMM_SUCCESS;
  }
  uintptr_t b = (uintptr_t)ptr;
  if ((b & 255) != 0) {
    /* Every block of a cached handle starts on 256 bytes; p+1..p+255 would
     * reach p's slot in the resource's index (issue 24). Refused here, for
     * one AND and a branch on the hit path. */
    *go_path = false;
    return rmmgo_go_free_check(h, which, b, bytes, 0, RMMGO_TC_INTERIOR);
  }
  size_t want = bytes > (SIZE_MAX - 255) ? SIZE_MAX : (bytes + 255) & ~(size_t)255;
  uint64_t hid = tc_hid(h);
  int nsteps = atomic_load_explicit(&ms->nsteps, memory_order_relaxed);
  bool verdict = false; /* a size mismatch the resource has accepted */
recheck:
  tc_enter(c);
  if (!rmmgo_mirror_alive(ms, h)) {
    tc_leave(c);
    return RMM_SUCCESS;
  }
  tc_shard* s = tc_shard_of(b);
  tc_tab* t = atomic_load_explicit(&s->tab, memory_order_relaxed);
  tc_ent* e = tc_lookup(t, b);
  if (e == NULL) {
    tc_leave(c);
    return RMM_SUCCESS; /* not from the cache: Go knows it, or says it is bogus */
  }
  *go_path = false;
  uint64_t m = atomic_load_explicit(&e->meta, memory_order_acquire);
  int why;
  size_t had;
  for (;;) {
    why = tc_meta_hid(m) != hid ? RMMGO_TC_FOREIGN : tc_meta_state(m) != TC_LIVE ? RMMGO_TC_NOT_LIVE : RMMGO_TC_OK;
    had = tc_meta_units(m) * 256;
    if (why == RMMGO_TC_OK && want != had && !verdict) {
      why = RMMGO_TC_SIZE;
    }
    if (why != RMMGO_TC_OK) {
      break;
    }
    /* The handle's statistics uncount it first (a refusal: Go says why). */
    if (nsteps != 0 && !tc_steps_uncount(ms, nsteps, bytes)) {
      tc_leave(c);
      *go_path = true;
      return RMM_SUCCESS;
    }
    /* LIVE -> CACHED, once: of two frees of one block racing, one wins. */
    if (atomic_compare_exchange_weak_explicit(&e->meta, &m, tc_meta(TC_CACHED, tc_meta_cls(m), 0, h),
                                              memory_order_acq_rel, memory_order_acquire)) {
      break;
    }
    if (nsteps != 0) {
      tc_steps_unfree(ms, nsteps, bytes);
    }
  }
  if (why == RMMGO_TC_OK && nsteps != 0) {
    tc_steps_refund(ms, nsteps, bytes); /* freed: the limits take their charge back */
  }
  if (why != RMMGO_TC_OK) {
    tc_leave(c);
    /* Go writes the message, as the resource would (a size that differs
     * may still be one the resource takes: fixed_size, a binning bin). */
    rmm_status st = rmmgo_go_free_check(h, which, b, bytes, had, why);
    if (st == RMM_SUCCESS && why == RMMGO_TC_SIZE) {
      verdict = true;
      goto recheck;
    }
    return st;
  }
  int k = tc_meta_cls(m);
  tc_item it = {.ptr = b, .slot = (uint32_t)(e - t->e), .gen = atomic_load_explicit(&s->gen, memory_order_relaxed)};

  size_t fixed = atomic_load_explicit(&ms->block, memory_order_relaxed);
  size_t size = fixed != 0 ? fixed : tc_class_size(k);
  uintptr_t out[TC_MAX_DRAIN];
  int nout = 0;
  tc_pair* p = tc_pair_for(c, h, key, fixed);
  tc_stack* st = p != NULL ? &p->cls[k] : NULL;
  int64_t round = (int64_t)size - (int64_t)had;
  if (p != NULL) {
    p->round -= round;
  } else {
    atomic_fetch_sub_explicit(&ms->round_gone, round, memory_order_relaxed);
  }
  if (st == NULL) {
    out[nout++] = b; /* nowhere to cache it: straight back */
  } else if (!tc_reserve(ms, p, size) || !tc_stack_room(st)) {
    if (st->n == 0) {
      out[nout++] = b;
    } else {
      /* Full: half of the class, at most TC_MAX_DRAIN - 1 blocks, goes back
       * in one crossing. They come off the top, so this costs O(m) however
       * many the class holds (the oldest stay; reuse order is still LIFO). */
      uint32_t mm = st->n / 2 > 0 ? st->n / 2 : 1;
      if (mm > TC_MAX_DRAIN - 1) {
        mm = TC_MAX_DRAIN - 1;
      }
      st->n -= mm;
      for (uint32_t i = 0; i < mm; i++) {
        out[i] = st->v[st->n + i].ptr;
      }
      p->bytes -= mm * size;
      p->blocks -= mm;
      nout = (int)mm;
      if (p->bytes + size <= p->quota) {
        st->v[st->n++] = it;
        p->bytes += size;
        p->blocks++;
      } else {
        out[nout++] = b;
      }
    }
  } else {
    st->v[st->n++] = it;
    p->bytes += size;
    p->blocks++;
  }
  if (p != NULL && nout > 0) {
    tc_trim_quota(ms, p);
  }
  tc_leave(c);
  if (nout == 0) {
    return RMM_SUCCESS;
  }
  /* Out of the table before Go has them (Go may hand them out again at
   * once, to a thread that enters them anew), then back on this very
   * stream (the pair's key is its key). */
  for (int i = 0; i < nout; i++) {
    tc_forget(out[i]);
  }
  rmmgo_tc_call call = {.handle = h, .stream = (uintptr_t)stream, .size = size, .ptrs = out, .n = nout};
  return tc_cross(false, &call, ms);
}
