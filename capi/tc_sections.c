/*
 * tc_sections.c -- how a thread stops the others' sections of the
 * per-thread cache (tc.h, "sections"): to collect their blocks, or to move
 * table entries.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#endif

#include "tc.h"

pthread_mutex_t tc_list_mu = PTHREAD_MUTEX_INITIALIZER;
tc_cache* tc_list;

/* Entries move (a shard grows or drops its removed entries) only while
 * tc_moving is set and no section runs. */
static pthread_mutex_t tc_move_mu = PTHREAD_MUTEX_INITIALIZER;
_Atomic int tc_moving;

/* ------------------------------------------------ the process-wide barrier */

/* Sections (tc.h) are entered with a store to the thread's own flag and a
 * load of the request flags, with no fence between them: the thread that
 * stops others pays for the ordering instead, with membarrier(2), which
 * makes every running thread of the process execute a memory barrier. Where
 * the kernel has no private expedited membarrier, sections fence (a full
 * barrier per call, as a lock would cost). */
int tc_mb_ok;
static pthread_once_t tc_mb_once = PTHREAD_ONCE_INIT;

static void tc_mb_init(void) {
#if defined(__linux__) && defined(__NR_membarrier)
  long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
      syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 &&
      syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) {
    tc_mb_ok = 1;
  }
#endif
  if (getenv("RMMGO_TC_NO_MEMBARRIER") != NULL) { /* tests: the fallback */
    tc_mb_ok = 0;
  }
}

/* The heavy side: after it, every section that started before sees what
 * the caller stored before it, and the caller sees every section's flag. */
static void tc_heavy_barrier(void) {
  atomic_thread_fence(memory_order_seq_cst);
#if defined(__linux__) && defined(__NR_membarrier)
  if (tc_mb_ok && syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
    /* Registered, so it does not fail, but in the child of a fork (a new
     * address space, registered again here; the child has one thread,
     * which the fence above orders). */
    (void)syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);
    (void)syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  }
#endif
}

void tc_sections_init(void) { pthread_once(&tc_mb_once, tc_mb_init); }

/* Waits until c's owner is outside its section. */
static void tc_wait_out(tc_cache* c) {
  for (int spins = 0; atomic_load_explicit(&c->busy, memory_order_acquire) != 0;) {
    rmmgo_backoff(&spins);
  }
}

/* Stops every cache on tc_list (tc_list_mu held): when it returns, no
 * section of theirs runs until tc_resume_all. Never called inside a
 * section. */
void tc_stop_all(void) {
  for (tc_cache* c = tc_list; c != NULL; c = c->next) {
    atomic_fetch_add_explicit(&c->req, 1, memory_order_relaxed);
  }
  tc_heavy_barrier();
  for (tc_cache* c = tc_list; c != NULL; c = c->next) {
    tc_wait_out(c);
  }
}

void tc_resume_all(void) {
  for (tc_cache* c = tc_list; c != NULL; c = c->next) {
    atomic_fetch_sub_explicit(&c->req, 1, memory_order_release);
  }
}

/* Stops every section of every thread (to move table entries); takes
 * tc_move_mu and tc_list_mu for the time. */
void tc_stop_world(void) {
  pthread_mutex_lock(&tc_move_mu);
  atomic_store_explicit(&tc_moving, 1, memory_order_relaxed);
  tc_heavy_barrier();
  pthread_mutex_lock(&tc_list_mu);
  for (tc_cache* c = tc_list; c != NULL; c = c->next) {
    tc_wait_out(c);
  }
}

void tc_resume_world(void) {
  pthread_mutex_unlock(&tc_list_mu);
  atomic_store_explicit(&tc_moving, 0, memory_order_release);
  pthread_mutex_unlock(&tc_move_mu);
}
