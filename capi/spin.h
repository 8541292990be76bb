/*
 * spin.h -- the library's one spin lock, its wait step and a monotonic
 * clock, for the C files (the thread cache's budget and table locks, the
 * statistics adaptors' lock that Go takes too). C only: Go preambles do not
 * include it (it defines functions).
 */
#ifndef RMMGO_CAPI_SPIN_H
#define RMMGO_CAPI_SPIN_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

static inline void rmmgo_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* One step of a wait: spin a little, then let others run. */
static inline void rmmgo_backoff(int* spins) {
  if (++*spins < 128) {
    rmmgo_pause();
  } else {
    sched_yield();
  }
}

/* A test-and-test-and-set lock: 0 free, 1 held. */
static inline void rmmgo_spin_lock(atomic_int* l) {
  for (int spins = 0; atomic_exchange_explicit(l, 1, memory_order_acquire) != 0;) {
    while (atomic_load_explicit(l, memory_order_relaxed) != 0) {
      rmmgo_backoff(&spins);
    }
  }
}

static inline void rmmgo_spin_unlock(atomic_int* l) { atomic_store_explicit(l, 0, memory_order_release); }

static inline int64_t rmmgo_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif /* RMMGO_CAPI_SPIN_H */
