/*
 * tc_table.c -- the per-thread cache's block table (tc.h says what an entry
 * holds): its writers, which add, remove and move entries under a shard's
 * writer lock, and the frees that reach a cached resource without passing
 * through the cache.
 */
#include <stdlib.h>
#include <string.h>

#include "tc.h"

tc_shard tc_table[TC_SHARDS];

/* Rebuilds shard s with room for `extra` more entries: at most 3/8 full
 * after, at most 3/4 full (removed entries included) before a rebuild (a
 * lookup reads one or two lines of four entries: the table stays small
 * enough for the caches of the CPU),
 * every section stopped. false when there is no host memory. Never called
 * inside a section or with a writer lock held. */
static bool tc_rehash(tc_shard* s, size_t extra) {
  tc_stop_world();
  rmmgo_spin_lock(&s->wlock);
  tc_tab* old = atomic_load_explicit(&s->tab, memory_order_relaxed);
  size_t cap = old == NULL ? 0 : old->mask + 1;
  if (old != NULL && (s->used + s->tombs + extra) * 4 <= cap * 3) {
    rmmgo_spin_unlock(&s->wlock); /* another thread made room meanwhile */
    tc_resume_world();
    return true;
  }
  size_t ncap = 64;
  while ((s->used + extra) * 8 > ncap * 3) {
    ncap *= 2;
  }
  tc_tab* t = aligned_alloc(64, sizeof(tc_tab) + ncap * sizeof(tc_ent));
  if (t == NULL) {
    rmmgo_spin_unlock(&s->wlock);
    tc_resume_world();
    return false;
  }
  memset(t, 0, sizeof(tc_tab) + ncap * sizeof(tc_ent));
  t->mask = ncap - 1;
  for (size_t i = 0; i < cap; i++) {
    uintptr_t p = atomic_load_explicit(&old->e[i].ptr, memory_order_relaxed);
    if (p > TC_TOMB) {
      size_t j = tc_home(t, p);
      while (atomic_load_explicit(&t->e[j].ptr, memory_order_relaxed) != 0) {
        j = (j + 1) & t->mask;
      }
      atomic_store_explicit(&t->e[j].meta, atomic_load_explicit(&old->e[i].meta, memory_order_relaxed),
                            memory_order_relaxed);
      atomic_store_explicit(&t->e[j].ptr, p, memory_order_relaxed);
    }
  }
  s->tombs = 0;
  atomic_store_explicit(&s->tab, t, memory_order_release);
  atomic_store_explicit(&s->gen, atomic_load_explicit(&s->gen, memory_order_relaxed) + 1, memory_order_release);
  rmmgo_spin_unlock(&s->wlock);
  tc_resume_world();
  free(old); /* no section runs on it, and writers hold the lock */
  return true;
}

/* Enters p with state m into the table (an entry already there, a stale one
 * of a block given back to Go by a path the cache did not see, is reused).
 * Returns where it is; false when there is no host memory. Outside
 * sections. */
bool tc_insert(uintptr_t p, uint64_t m, tc_item* where) {
  tc_shard* s = tc_shard_of(p);
  for (;;) {
    rmmgo_spin_lock(&s->wlock);
    tc_tab* t = atomic_load_explicit(&s->tab, memory_order_relaxed);
    if (t != NULL) {
      size_t i = tc_home(t, p), tomb = SIZE_MAX;
      for (;; i = (i + 1) & t->mask) {
        uintptr_t q = atomic_load_explicit(&t->e[i].ptr, memory_order_relaxed);
        if (q == p) {
          atomic_store_explicit(&t->e[i].meta, m, memory_order_release);
          break;
        }
        if (q == TC_TOMB && tomb == SIZE_MAX) {
          tomb = i;
        }
        if (q == 0) {
          if (tomb != SIZE_MAX) {
            i = tomb;
            s->tombs--;
          } else if ((s->used + s->tombs + 1) * 4 > (t->mask + 1) * 3) {
            i = SIZE_MAX; /* full: rebuild first */
            break;
          }
          atomic_store_explicit(&t->e[i].meta, m, memory_order_relaxed);
          atomic_store_explicit(&t->e[i].ptr, p, memory_order_release);
          s->used++;
          break;
        }
      }
      if (i != SIZE_MAX) {
        where->ptr = p;
        where->slot = (uint32_t)i;
        where->gen = atomic_load_explicit(&s->gen, memory_order_relaxed);
        rmmgo_spin_unlock(&s->wlock);
        return true;
      }
    }
    rmmgo_spin_unlock(&s->wlock);
    if (!tc_rehash(s, 1)) {
      return false;
    }
  }
}

/* Removes the entry e of shard s (under its writer lock). An entry whose
 * next slot is empty becomes empty itself, and so do the removed entries
 * just before it: no lookup can need them to go on (the chain it follows
 * would end at the empty slot after them anyway). Other removed entries are
 * marked TC_TOMB, which lookups pass over, until the shard is rebuilt. */
void tc_erase(tc_shard* s, tc_tab* t, tc_ent* e) {
  size_t i = (size_t)(e - t->e);
  s->used--;
  if (atomic_load_explicit(&t->e[(i + 1) & t->mask].ptr, memory_order_relaxed) != 0) {
    atomic_store_explicit(&e->ptr, TC_TOMB, memory_order_release);
    s->tombs++;
    return;
  }
  atomic_store_explicit(&e->ptr, 0, memory_order_release);
  for (i = (i - 1) & t->mask; atomic_load_explicit(&t->e[i].ptr, memory_order_relaxed) == TC_TOMB; i = (i - 1) & t->mask) {
    atomic_store_explicit(&t->e[i].ptr, 0, memory_order_release);
    s->tombs--;
  }
}

/* Removes p's entry, if the table has it. Outside sections. */
void tc_forget(uintptr_t p) {
  tc_shard* s = tc_shard_of(p);
  rmmgo_spin_lock(&s->wlock);
  tc_tab* t = atomic_load_explicit(&s->tab, memory_order_relaxed);
  tc_ent* e = tc_lookup(t, p);
  if (e != NULL) {
    tc_erase(s, t, e);
  }
  rmmgo_spin_unlock(&s->wlock);
}

/* ------------------------------------------- frees that bypass the cache */

/* A block the table has LIVE may be freed by a path that reaches its
 * resource without rmm_deallocate on its handle (an adaptor over the
 * resource that C does not run, Go code): the resource asks its cache
 * (fastpath.FreeClaimer, thread_cache.go), which takes the entry out here
 * before the resource frees the block, so that no later free through the
 * handle finds it LIVE (it would cache a block the resource handed out
 * again: the same address twice). Under the shard's writer lock: entries do
 * not move meanwhile, and the free's compare-and-swap of a racing
 * rmm_deallocate meets the changed state word. */

int rmmgo_tc_peek(uintptr_t ptr, uint64_t* handle, uint64_t* meta, int* live, size_t* had) {
  tc_shard* s = tc_shard_of(ptr);
  rmmgo_spin_lock(&s->wlock);
  tc_ent* e = tc_lookup(atomic_load_explicit(&s->tab, memory_order_relaxed), ptr);
  uint64_t m = e != NULL ? atomic_load_explicit(&e->meta, memory_order_acquire) : 0;
  rmmgo_spin_unlock(&s->wlock);
  if (e == NULL) {
    return 0;
  }
  uint64_t hid = tc_meta_hid(m);
  tc_mslot* ms = rmmgo_mslot_of(hid);
  uint64_t h = ms != NULL ? atomic_load_explicit(&ms->last, memory_order_acquire) : 0;
  if (h == 0 || tc_hid(h) != hid) {
    return 0; /* its handle is gone: so is the entry, in a moment */
  }
  *handle = h;
  *meta = m;
  *live = tc_meta_state(m) == TC_LIVE;
  *had = tc_meta_units(m) * 256;
  return 1;
}

int rmmgo_tc_claim(uintptr_t ptr, uint64_t handle, uint64_t meta, size_t* size) {
  if (tc_meta_state(meta) != TC_LIVE) {
    return 0;
  }
  tc_shard* s = tc_shard_of(ptr);
  rmmgo_spin_lock(&s->wlock);
  tc_tab* t = atomic_load_explicit(&s->tab, memory_order_relaxed);
  tc_ent* e = tc_lookup(t, ptr);
  uint64_t m = meta;
  /* LIVE -> neither LIVE nor CACHED: a racing free through the handle is
   * refused as not live from here on. */
  if (e == NULL || !atomic_compare_exchange_strong_explicit(&e->meta, &m, meta & ~(uint64_t)3, memory_order_acq_rel,
                                                            memory_order_acquire)) {
    rmmgo_spin_unlock(&s->wlock);
    return 0;
  }
  tc_erase(s, t, e);
  rmmgo_spin_unlock(&s->wlock);
  tc_mslot* ms = rmmgo_mslot_of(handle);
  size_t fixed = ms != NULL ? atomic_load_explicit(&ms->block, memory_order_relaxed) : 0;
  size_t sz = fixed != 0 ? fixed : tc_class_size(tc_meta_cls(meta));
  /* The block's rounding left the handle's live blocks. */
  tc_mslot* acc = tc_account(handle);
  if (acc != NULL) {
    atomic_fetch_sub_explicit(&acc->round_gone, (int64_t)sz - (int64_t)(tc_meta_units(meta) << 8), memory_order_relaxed);
  }
  *size = sz;
  return 1;
}

void rmmgo_tc_unclaim(uintptr_t ptr, uint64_t handle, uint64_t meta) {
  tc_item where;
  if (!tc_insert(ptr, meta, &where)) {
    return; /* no host memory: the block is served uncached from now on */
  }
  tc_mslot* ms = rmmgo_mslot_of(handle);
  size_t fixed = ms != NULL ? atomic_load_explicit(&ms->block, memory_order_relaxed) : 0;
  size_t sz = fixed != 0 ? fixed : tc_class_size(tc_meta_cls(meta));
  tc_mslot* acc = tc_account(handle);
  if (acc != NULL) {
    atomic_fetch_add_explicit(&acc->round_gone, (int64_t)sz - (int64_t)(tc_meta_units(meta) << 8), memory_order_relaxed);
  }
}
