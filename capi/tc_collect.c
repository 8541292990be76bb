/*
 * tc_collect.c -- what Go asks of the per-thread caches, and the cache's
 * crossings into Go. Go takes blocks out of every thread's cache and the
 * depot (a flush, a reclaim before its resource grows, a handle's release:
 * rmmgo_tc_collect) and reads what they hold (rmmgo_tc_holding, and for
 * tests rmmgo_tc_budget and rmmgo_tc_counts); a miss (refill) or a full
 * class (drain) is ONE crossing into Go, which also carries back the
 * depot's expired pairs (tc_cross).
 */
#include <stdlib.h>

#include "tc.h"

rmmgo_tc_block* rmmgo_tc_collect(uint64_t handle, int by_key, uint64_t key, int drop_live, size_t lo, size_t hi,
                                 size_t* n) {
  rmmgo_tc_block* out = NULL;
  size_t cnt = 0, cap = 0;
  tc_sections_init();
  pthread_mutex_lock(&tc_list_mu);
  tc_stop_all();
  for (tc_cache* c = tc_list; c != NULL; c = c->next) {
    for (int i = 0; i < TC_PAIRS; i++) {
      tc_pair* p = c->pairs[i];
      if (p == NULL || p->handle == 0 || (handle != 0 && p->handle != handle) || (by_key && p->key != key)) {
        continue;
      }
      if (p->blocks > 0) {
        tc_pair_take_sizes(p, &out, &cnt, &cap, lo, hi);
      }
      /* Whatever it reserved beyond what it keeps goes back: the blocks are
       * on their way. */
      tc_mslot* ms = tc_account(p->handle);
      if (ms != NULL) {
        atomic_fetch_add_explicit(&ms->avail, (int64_t)(p->quota - p->bytes), memory_order_relaxed);
      }
      tc_set_quota(p, p->bytes); /* 0 unless the array could not grow */
    }
  }
  tc_resume_all();
  pthread_mutex_lock(&tc_depot_mu);
  for (size_t i = 0; i < tc_ndepot;) {
    tc_pair* p = tc_depot[i];
    if ((handle != 0 && p->handle != handle) || (by_key && p->key != key)) {
      i++;
      continue;
    }
    if (!tc_pair_take_sizes(p, &out, &cnt, &cap, lo, hi)) {
      break;
    }
    if (p->blocks > 0) {
      /* Blocks of other sizes stay, with their quota. */
      tc_unreserve(p->handle, p->quota - p->bytes);
      tc_set_quota(p, p->bytes);
      i++;
      continue;
    }
    tc_depot[i] = tc_depot[--tc_ndepot];
    tc_unreserve(p->handle, p->quota);
    tc_set_quota(p, 0);
    tc_pair_free(p);
  }
  atomic_store(&tc_depot_n, tc_ndepot);
  pthread_mutex_unlock(&tc_depot_mu);
  pthread_mutex_unlock(&tc_list_mu);
  if (drop_live && handle != 0) {
    uint64_t hid = tc_hid(handle);
    for (int i = 0; i < TC_SHARDS; i++) {
      tc_shard* s = &tc_table[i];
      rmmgo_spin_lock(&s->wlock);
      tc_tab* t = atomic_load_explicit(&s->tab, memory_order_relaxed);
      for (size_t j = 0; t != NULL && j <= t->mask; j++) {
        uintptr_t q = atomic_load_explicit(&t->e[j].ptr, memory_order_relaxed);
        if (q > TC_TOMB && tc_meta_hid(atomic_load_explicit(&t->e[j].meta, memory_order_relaxed)) == hid) {
          tc_erase(s, t, &t->e[j]);
        }
      }
      rmmgo_spin_unlock(&s->wlock);
    }
  }
  *n = cnt;
  if (cnt == 0) {
    free(out);
    return NULL;
  }
  return out;
}

size_t rmmgo_tc_holding(uint64_t handle) {
  int64_t total = 0;
  tc_sections_init();
  pthread_mutex_lock(&tc_list_mu);
  tc_stop_all();
  for (tc_cache* c = tc_list; c != NULL; c = c->next) {
    for (int i = 0; i < TC_PAIRS; i++) {
      tc_pair* p = c->pairs[i];
      if (p != NULL && p->handle == handle) {
        total += (int64_t)p->bytes + p->round;
      }
    }
  }
  /* The depot, and the rounding of pairs that left: read while no pair can
   * move (the caches stopped, exits waiting for the depot). */
  pthread_mutex_lock(&tc_depot_mu);
  for (size_t i = 0; i < tc_ndepot; i++) {
    if (tc_depot[i]->handle == handle) {
      total += (int64_t)tc_depot[i]->bytes;
    }
  }
  tc_mslot* ms = tc_account(handle);
  if (ms != NULL) {
    total += atomic_load_explicit(&ms->round_gone, memory_order_relaxed);
  }
  pthread_mutex_unlock(&tc_depot_mu);
  tc_resume_all();
  pthread_mutex_unlock(&tc_list_mu);
  return total > 0 ? (size_t)total : 0;
}

void rmmgo_tc_budget(uint64_t handle, size_t* budget, int64_t* unreserved, size_t* cached) {
  *budget = 0;
  *unreserved = 0;
  *cached = 0;
  tc_mslot* ms = tc_account(handle);
  if (ms == NULL) {
    return;
  }
  *budget = atomic_load(&ms->budget);
  *unreserved = atomic_load(&ms->avail);
  size_t c = 0;
  tc_sections_init();
  pthread_mutex_lock(&tc_list_mu);
  tc_stop_all();
  for (tc_cache* x = tc_list; x != NULL; x = x->next) {
    for (int i = 0; i < TC_PAIRS; i++) {
      if (x->pairs[i] != NULL && x->pairs[i]->handle == handle) {
        c += x->pairs[i]->bytes;
      }
    }
  }
  tc_resume_all();
  pthread_mutex_lock(&tc_depot_mu);
  for (size_t i = 0; i < tc_ndepot; i++) {
    if (tc_depot[i]->handle == handle) {
      c += tc_depot[i]->bytes;
    }
  }
  pthread_mutex_unlock(&tc_depot_mu);
  pthread_mutex_unlock(&tc_list_mu);
  *cached = c;
}

void rmmgo_tc_counts(size_t* live, size_t* cached, size_t* depot, size_t* caches) {
  size_t l = 0, c = 0, k = 0;
  for (int i = 0; i < TC_SHARDS; i++) {
    tc_shard* s = &tc_table[i];
    rmmgo_spin_lock(&s->wlock);
    tc_tab* t = atomic_load_explicit(&s->tab, memory_order_relaxed);
    for (size_t j = 0; t != NULL && j <= t->mask; j++) {
      if (atomic_load_explicit(&t->e[j].ptr, memory_order_relaxed) > TC_TOMB) {
        if (tc_meta_state(atomic_load_explicit(&t->e[j].meta, memory_order_relaxed)) == TC_LIVE) {
          l++;
        } else {
          c++;
        }
      }
    }
    rmmgo_spin_unlock(&s->wlock);
  }
  pthread_mutex_lock(&tc_list_mu);
  for (tc_cache* x = tc_list; x != NULL; x = x->next) {
    k++;
  }
  pthread_mutex_lock(&tc_depot_mu);
  size_t d = 0;
  for (size_t i = 0; i < tc_ndepot; i++) {
    d += tc_depot[i]->blocks;
  }
  pthread_mutex_unlock(&tc_depot_mu);
  pthread_mutex_unlock(&tc_list_mu);
  *live = l;
  *cached = c;
  *depot = d;
  *caches = k;
}

/* After Go took back blocks handed to it, their budget returns to their
 * handles. */
static void tc_release_given(const rmmgo_tc_block* b, size_t n) {
  for (size_t i = 0; i < n; i++) {
    tc_unreserve(b[i].handle, b[i].size);
  }
}

/* A call into Go (refill or drain) that also gives back what the depot
 * holds past its wait: one crossing for both. Outside sections. */
rmm_status tc_cross(bool refill, rmmgo_tc_call* call, tc_mslot* ms) {
  rmmgo_tc_block* give = NULL;
  size_t ngive = 0, cap = 0;
  tc_depot_expire(&give, &ngive, &cap);
  call->give = give;
  call->ngive = ngive;
  call->budget = 0;
  call->shared = 0;
  rmm_status st = refill ? rmmgo_go_refill(call) : rmmgo_go_drain(call);
  if (ngive > 0) {
    tc_release_given(give, ngive);
  }
  free(give);
  if (call->budget != 0 && rmmgo_mirror_alive(ms, call->handle)) {
    tc_set_budget(ms, call->budget, call->shared);
  }
  return st;
}

/* Gives blocks of handle h back to Go after forgetting them in the table
 * (outside sections). */
void tc_give_back(uint64_t h, rmm_stream_t stream, size_t size, uintptr_t* ptrs, int n) {
  if (n <= 0) {
    return;
  }
  for (int i = 0; i < n; i++) {
    tc_forget(ptrs[i]);
  }
  rmmgo_tc_call d = {.handle = h, .stream = (uintptr_t)stream, .size = size, .ptrs = ptrs, .n = n};
  (void)rmmgo_go_drain(&d);
}
