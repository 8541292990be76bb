/*
 * tc_budget.c -- how much the per-thread caches of a handle may hold (tc.h,
 * "budget"): the limits Go publishes into the handle's mirror slot, and
 * the pairs' quotas of its budget. What the numbers are is Go's policy
 * (core/internal/cachepolicy); this file applies them.
 */
#include <string.h>

#include "tc.h"

/* Sets the budget of s (shared 0: all of it shared); what it adds or
 * takes goes to avail. */
void tc_set_budget(tc_mslot* s, size_t budget, size_t shared) {
  if (shared == 0 || shared > budget) {
    shared = budget;
  }
  rmmgo_spin_lock(&s->blk);
  size_t old = atomic_load_explicit(&s->budget, memory_order_relaxed);
  if (old != budget) {
    atomic_store_explicit(&s->budget, budget, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->avail, (int64_t)budget - (int64_t)old, memory_order_relaxed);
  }
  atomic_store_explicit(&s->shared, shared, memory_order_relaxed);
  rmmgo_spin_unlock(&s->blk);
}

/* A pair of handle h started (+1) or stopped (-1) holding a quota. */
static void tc_holders_add(uint64_t h, int d) {
  tc_mslot* s = tc_account(h);
  if (s != NULL && atomic_fetch_add_explicit(&s->holders, d, memory_order_relaxed) + d > 1) {
    atomic_store_explicit(&s->crowd_ns, tc_now_ns(), memory_order_relaxed);
  }
}

/* Gives n bytes of reserved budget back to handle h, unless h is gone
 * (and its budget with it). */
void tc_unreserve(uint64_t h, size_t n) {
  tc_mslot* s = n != 0 ? tc_account(h) : NULL;
  if (s != NULL) {
    atomic_fetch_add_explicit(&s->avail, (int64_t)n, memory_order_relaxed);
  }
}

/* A new handle, or the same handle again with new limits (mirror.c, under
 * the mirror's lock, before the handle is published). */
void rmmgo_tc_publish_limits(tc_mslot* s, uint64_t handle, const rmmgo_tc_limits* lim) {
  atomic_store_explicit(&s->max_request, lim->max_request < TC_CLASS_MAX ? lim->max_request : TC_CLASS_MAX,
                        memory_order_relaxed);
  atomic_store_explicit(&s->block, lim->block, memory_order_relaxed);
  atomic_store_explicit(&s->quantum, lim->quantum > 0 ? lim->quantum : 1, memory_order_relaxed);
  atomic_store_explicit(&s->batch_bytes, lim->batch_bytes, memory_order_relaxed);
  atomic_store_explicit(&s->batch_blocks, lim->batch_blocks < 1 ? 1 : lim->batch_blocks > TC_BUF ? TC_BUF : lim->batch_blocks,
                        memory_order_relaxed);
  atomic_store_explicit(&s->batch_min_blocks, lim->batch_min_blocks < 1 ? 1 : lim->batch_min_blocks, memory_order_relaxed);
  atomic_store_explicit(&s->exited_wait_ns, lim->exited_wait_ns, memory_order_relaxed);
  atomic_store_explicit(&s->lone_after_ns, lim->lone_after_ns, memory_order_relaxed);
  /* Published while the slot serves no handle (first, or unpublished by a
   * bin change) or with the same sizes: readers never see them change. */
  int nsizes = lim->nsizes < 0 || lim->nsizes > RMMGO_TC_MAX_SIZES ? 0 : lim->nsizes;
  if (atomic_load_explicit(&s->handle, memory_order_relaxed) == 0) {
    memcpy(s->sizes, lim->sizes, (size_t)nsizes * sizeof s->sizes[0]);
    atomic_store_explicit(&s->nsizes, nsizes, memory_order_relaxed);
  }
  int nsteps = lim->nsteps < 0 ? 0 : lim->nsteps > RMMGO_TC_MAX_STEPS ? RMMGO_TC_MAX_STEPS : lim->nsteps;
  memcpy(s->steps, lim->steps, (size_t)nsteps * sizeof s->steps[0]);
  atomic_store_explicit(&s->nsteps, nsteps, memory_order_relaxed);
  if (atomic_load_explicit(&s->last, memory_order_relaxed) != handle) {
    /* A new handle in this slot: a budget of its own. */
    rmmgo_spin_lock(&s->blk);
    atomic_store_explicit(&s->budget, 0, memory_order_relaxed);
    atomic_store_explicit(&s->avail, 0, memory_order_relaxed);
    rmmgo_spin_unlock(&s->blk);
    atomic_store_explicit(&s->holders, 0, memory_order_relaxed);
    atomic_store_explicit(&s->crowd_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&s->round_gone, 0, memory_order_relaxed);
    atomic_store_explicit(&s->last, handle, memory_order_release);
  }
  /* The same handle again: what its pairs reserved stays reserved. */
  tc_set_budget(s, lim->budget, lim->shared);
}

/* Sets p's quota to q, counting p among its handle's holders while it
 * holds one. The bytes reserved or given back are the caller's business. */
void tc_set_quota(tc_pair* p, size_t q) {
  if ((p->quota == 0) != (q == 0)) {
    tc_holders_add(p->handle, q != 0 ? 1 : -1);
  }
  p->quota = q;
}

/* Lets p go of its handle: its quota back to the budget, the rounding it
 * counted to the handle's round_gone. p holds no blocks. */
void tc_pair_unbind(tc_pair* p) {
  tc_mslot* ms = tc_account(p->handle);
  if (ms != NULL) {
    atomic_fetch_add_explicit(&ms->avail, (int64_t)p->quota, memory_order_relaxed);
    if (p->round != 0) {
      atomic_fetch_add_explicit(&ms->round_gone, p->round, memory_order_relaxed);
    }
  }
  tc_set_quota(p, 0);
  p->round = 0;
}

/* The most of the shared part one pair may hold while `holders` pairs hold
 * quotas: an even share, at least a quantum. Without it the first pair to
 * fill keeps nearly all of it, and the others, left one quantum, cross
 * into Go to drain a few blocks every few frees (binning small, two threads
 * on their own streams: one pair held 40 MiB of 42, the other 276 KiB). */
size_t tc_fair_share(size_t shared, int64_t holders, size_t quantum) {
  size_t fair = holders > 1 ? shared / (size_t)holders : SIZE_MAX;
  return fair < quantum ? quantum : fair;
}

/* Whether a pair may take past its fair share, and the budget's private
 * part too: no other pair holds a quota now, and none did for lone_after
 * (crowd_ns, the last time two held one; 0: never). */
bool tc_lone(int64_t others, int64_t crowd_ns, int64_t now_ns, int64_t lone_after_ns) {
  return others <= 0 && (crowd_ns == 0 || now_ns - crowd_ns >= lone_after_ns);
}

/* Reserves budget for p to hold `more` bytes more than it does: a quantum
 * at a time, or what is missing when the budget has less left. All pairs
 * together keep to the budget's shared part and each to its fair share,
 * unless p is lone (tc_lone). In the owner's section; touches the handle's
 * shared account only when p's quota runs out. The numbers (budget, shared
 * part, quantum, lone_after) are Go's policy (cachepolicy), published in
 * the slot; these two rules apply them per call, where crossing into Go
 * would cost more than the call. */
bool tc_reserve_more(tc_mslot* ms, tc_pair* p, size_t more) {
  size_t need = p->bytes + more - p->quota;
  size_t q = atomic_load_explicit(&ms->quantum, memory_order_relaxed);
  size_t tries[2] = {need > q ? need : q, need};
  size_t shared = atomic_load_explicit(&ms->shared, memory_order_relaxed);
  int64_t cap = (int64_t)atomic_load_explicit(&ms->budget, memory_order_relaxed) - (int64_t)shared;
  int64_t mine = p->quota > 0 ? 1 : 0;
  size_t fair = tc_fair_share(shared, atomic_load_explicit(&ms->holders, memory_order_relaxed) + 1 - mine, q);
  int lone = -1; /* not known yet */
  for (int t = 0; t < 2; t++) {
    int64_t want = (int64_t)tries[t];
    int64_t avail = atomic_load_explicit(&ms->avail, memory_order_relaxed);
    while (avail >= want) {
      if (p->quota + (size_t)want > fair || avail - want < cap) {
        if (lone < 0) {
          lone = tc_lone(atomic_load_explicit(&ms->holders, memory_order_relaxed) - mine,
                         atomic_load_explicit(&ms->crowd_ns, memory_order_relaxed), tc_now_ns(),
                         atomic_load_explicit(&ms->lone_after_ns, memory_order_relaxed));
        }
        if (!lone) {
          break;
        }
      }
      if (atomic_compare_exchange_weak_explicit(&ms->avail, &avail, avail - want, memory_order_relaxed,
                                                memory_order_relaxed)) {
        tc_set_quota(p, p->quota + (size_t)want);
        return true;
      }
    }
  }
  return false;
}

/* Gives back the part of p's quota above what it holds plus one quantum.
 * In the owner's section. */
void tc_trim_quota(tc_mslot* ms, tc_pair* p) {
  size_t keep = p->bytes + atomic_load_explicit(&ms->quantum, memory_order_relaxed);
  if (p->quota > keep) {
    atomic_fetch_add_explicit(&ms->avail, (int64_t)(p->quota - keep), memory_order_relaxed);
    tc_set_quota(p, keep);
  }
}
