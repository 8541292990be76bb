/*
 * tc_adaptors.c -- the adaptors of a cached handle (statistics, limiting),
 * run in C as Go runs them (one definition each in Go:
 * fastpath.StatisticsHot's Alloc, Free and Unfree for statistics,
 * core's Limiting.allocate/refund for limiting; these do the same arithmetic on
 * the same memory, under the same lock or with the same atomic operations;
 * Go tests compare the two). Limiting charges come before a block is taken
 * (a refusal goes to Go, which says it), the statistics count after; a
 * free uncounts before the block is cached and refunds after.
 */

#include "tc.h"

static inline void tc_stats_lock(rmmgo_tc_stats* s) { rmmgo_spin_lock((atomic_int*)&s->lock); }
static inline void tc_stats_unlock(rmmgo_tc_stats* s) { rmmgo_spin_unlock((atomic_int*)&s->lock); }

/* The statistics state of step i of ms, NULL when that step is not a
 * statistics adaptor. */
static inline rmmgo_tc_stats* tc_stats_step(tc_mslot* ms, int i) {
  return ms->steps[i].kind == RMMGO_TC_STEP_STATISTICS ? (rmmgo_tc_stats*)ms->steps[i].state : NULL;
}

/* fastpath.StatisticsHot's Alloc, Unfree and Free, on C's copy of it. */
static inline void tc_counter_raise(int64_t* value, int64_t* peak, int64_t n) {
  *value += n;
  if (*value > *peak) {
    *peak = *value;
  }
}

static inline void tc_hot_alloc(rmmgo_tc_hot* h, size_t bytes) {
  tc_counter_raise(&h->bytes_value, &h->bytes_peak, (int64_t)bytes);
  h->bytes_total += (int64_t)bytes;
  tc_counter_raise(&h->count_value, &h->count_peak, 1);
  h->count_total++;
  h->out_bytes += bytes;
  h->out_count++;
}

static inline void tc_hot_unfree(rmmgo_tc_hot* h, size_t bytes) {
  tc_counter_raise(&h->bytes_value, &h->bytes_peak, (int64_t)bytes);
  tc_counter_raise(&h->count_value, &h->count_peak, 1);
  h->out_bytes += bytes;
  h->out_count++;
}

static inline bool tc_hot_free(rmmgo_tc_hot* h, size_t bytes) {
  if (h->out_count < 1 || h->out_bytes < bytes) {
    return false;
  }
  h->bytes_value -= (int64_t)bytes;
  h->count_value--;
  h->out_bytes -= bytes;
  h->out_count--;
  return true;
}

/* A limiting step's charge for bytes; false when it cannot be charged at
 * all (rounding overflows, or it exceeds the limit). */
static inline bool tc_charge_of(const rmmgo_tc_step* st, size_t bytes, size_t* charge) {
  size_t a = st->alignment != 0 ? st->alignment : 1;
  if (bytes > SIZE_MAX - (a - 1)) {
    *charge = 0;
    return false;
  }
  *charge = (bytes + a - 1) & ~(a - 1);
  return *charge <= st->limit;
}

/* Takes a step's charge for bytes back (as Limiting.refund: never below
 * 0). Only for charges made. */
static void tc_refund(const rmmgo_tc_step* st, size_t bytes) {
  size_t charge;
  (void)tc_charge_of(st, bytes, &charge);
  _Atomic size_t* a = (_Atomic size_t*)st->state;
  size_t cur = atomic_load_explicit(a, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(a, &cur, cur - (charge < cur ? charge : cur), memory_order_relaxed,
                                                memory_order_relaxed)) {
  }
}

/* Charges every limiting step of ms for an allocation of bytes; false
 * (nothing charged) when one would pass its limit. */
bool tc_steps_charge(tc_mslot* ms, int n, size_t bytes) {
  for (int i = 0; i < n; i++) {
    const rmmgo_tc_step* st = &ms->steps[i];
    if (st->kind != RMMGO_TC_STEP_LIMITING) {
      continue;
    }
    size_t charge;
    bool ok = tc_charge_of(st, bytes, &charge);
    _Atomic size_t* a = (_Atomic size_t*)st->state;
    size_t cur = atomic_load_explicit(a, memory_order_relaxed);
    while (ok) {
      if (cur > st->limit - charge) {
        ok = false;
        break;
      }
      if (atomic_compare_exchange_weak_explicit(a, &cur, cur + charge, memory_order_relaxed, memory_order_relaxed)) {
        break;
      }
    }
    if (!ok) {
      for (int j = 0; j < i; j++) {
        if (ms->steps[j].kind == RMMGO_TC_STEP_LIMITING) {
          tc_refund(&ms->steps[j], bytes);
        }
      }
      return false;
    }
  }
  return true;
}

void tc_steps_refund(tc_mslot* ms, int n, size_t bytes) {
  for (int i = 0; i < n; i++) {
    if (ms->steps[i].kind == RMMGO_TC_STEP_LIMITING) {
      tc_refund(&ms->steps[i], bytes);
    }
  }
}

/* An allocation of bytes went through: the statistics count it. */
void tc_steps_count(tc_mslot* ms, int n, size_t bytes) {
  for (int i = 0; i < n; i++) {
    rmmgo_tc_stats* s = tc_stats_step(ms, i);
    if (s != NULL) {
      tc_stats_lock(s);
      tc_hot_alloc(&s->hot, bytes);
      tc_stats_unlock(s);
    }
  }
}

/* Undoes tc_steps_uncount for the first n statistics steps (a free that
 * did not go through). */
void tc_steps_unfree(tc_mslot* ms, int n, size_t bytes) {
  for (int i = 0; i < n; i++) {
    rmmgo_tc_stats* s = tc_stats_step(ms, i);
    if (s != NULL) {
      tc_stats_lock(s);
      tc_hot_unfree(&s->hot, bytes);
      tc_stats_unlock(s);
    }
  }
}

/* A free of bytes: the statistics uncount it; false (nothing changed) when
 * one has fewer bytes or allocations outstanding (Go says so). */
bool tc_steps_uncount(tc_mslot* ms, int n, size_t bytes) {
  for (int i = 0; i < n; i++) {
    rmmgo_tc_stats* s = tc_stats_step(ms, i);
    if (s == NULL) {
      continue;
    }
    tc_stats_lock(s);
    bool ok = tc_hot_free(&s->hot, bytes);
    tc_stats_unlock(s);
    if (!ok) {
      tc_steps_unfree(ms, i, bytes);
      return false;
    }
  }
  return true;
}
