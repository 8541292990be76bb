/*
 * thread_cache.c -- rmm_allocate, rmm_deallocate and rmm_deallocate_sync,
 * served from a per-thread cache of free blocks so that the common call
 * never crosses into Go (docs/thread-cache.md says why and how).
 *
 * The cache serves the handles the registry publishes in the mirror below:
 * those whose resource is a core.Cacheable one (pool, arena, fixed_size,
 * binning, expandable), with the limits that resource gave (which requests,
 * how many bytes all threads together may keep). Every other handle, and
 * every request the cache does not take (bytes == 0, alignment other than a
 * power of two <= 256, sizes above the limit), goes to the Go halves.
 *
 * Pieces:
 *   - the mirror: slot index -> the full live handle (tag, generation,
 *     index) and its limits and budget, written by Go; a handle is served
 *     only if it equals the slot's value, so forged, stale and released
 *     handles fall through to Go, which reports them;
 *   - the table: every block the C side got from Go, ptr -> {handle, size
 *     class, size the user asked for, LIVE or CACHED}, sharded; a call reads
 *     it without a lock and changes a block's state with one atomic store
 *     (allocation) or compare-and-swap (free); entries are added and removed
 *     under a shard's writer lock, and moved (a shard grows) only while no
 *     call is inside a section (below);
 *   - per thread, per (handle, stream key), per size class: a LIFO of free
 *     blocks, each with the table slot of its entry, so that handing it out
 *     writes its entry without looking for it;
 *   - sections: a thread's calls run their C work inside a *section* of its
 *     own cache, marked by a flag on the thread's own cache line (no atomic
 *     read-modify-write, nothing shared written). Another thread that must
 *     touch the cache (collecting blocks) or move table entries *stops* it:
 *     it raises the cache's request flag, runs one process-wide memory
 *     barrier (membarrier(2); a fence on every section when the kernel has
 *     none) and waits for the section to end; sections that start meanwhile
 *     see the flag and wait. A cache hit therefore writes only the calling
 *     thread's lines and the block's own table entry;
 *   - the budget: each (thread, handle, stream) pair holds a quota of its
 *     handle's budget, reserved a quantum at a time, and keeps at most that
 *     many bytes, so all threads together keep at most the budget;
 *   - the depot: pairs of threads that exited, taken over whole by a new
 *     thread on the same handle and stream, or given back by the next call
 *     into Go once they waited long enough (a pthread key destructor must
 *     not enter Go).
 *
 * A miss (refill) or a full class (drain) is ONE crossing into Go, which
 * also carries back the depot's expired pairs. Go calls back into C only to
 * collect blocks (a flush, a reclaim before its resource grows) and to read
 * what the caches hold.
 *
 * Lock order: tc_move_mu -> tc_list_mu -> tc_depot_mu -> a shard's writer
 * lock. No C lock is held across a call into Go (refill, drain, the stream
 * checks), and no section waits for a lock or for another thread: a thread
 * never stops others while inside its own section.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#endif

#include "capi_internal.h"

/* ----------------------------------------------------------- size classes */

/* Size classes: 256-byte steps up to 4 KiB (classes 0..15), then four per
 * power of two up to 64 MiB (16..71): a block is at most 1/4 larger than the
 * request it serves. (Eight per power of two halve that and left the pool
 * of the thread-churn workload about 0.05x smaller, but spread the cached
 * blocks over twice the stacks: the random medium workload missed so much
 * more often that it ran 1.5-2x slower.) A handle's limit (its resource's
 * CacheLimits, never above TC_CLASS_MAX) says which classes it serves.
 * These sizes are the cache's own mechanism; what it may hold is the policy
 * Go hands it. */
enum {
  TC_SMALL_CLASSES = 16,
  TC_STEPS = 4,    /* classes per power of two above 4 KiB */
  TC_OCTAVES = 14, /* 4 KiB .. 64 MiB */
  TC_CLASSES = TC_SMALL_CLASSES + TC_OCTAVES * TC_STEPS,
  TC_PAIRS = 16,
  TC_SHARD_BITS = 6,
  TC_SHARDS = 1 << TC_SHARD_BITS,
  TC_BUF = 64, /* most blocks one refill crossing takes */
  TC_MAX_DRAIN = 64
};
#define TC_SMALL_LIMIT ((size_t)4096)
#define TC_CLASS_MAX ((size_t)64 << 20)
/* A class's stack grows by doubling up to this many blocks. */
#define TC_STACK_MAX ((uint32_t)1 << 24)
/* Stream-check memo entries per thread. */
enum { TC_STREAM_MEMO = 4 };

static int tc_class_of(size_t bytes) {
  if (bytes <= TC_SMALL_LIMIT) {
    return (int)((bytes + 255) / 256) - 1;
  }
  unsigned k = 63u - (unsigned)__builtin_clzll((unsigned long long)(bytes - 1)); /* 2^k < bytes <= 2^(k+1) */
  size_t base = (size_t)1 << k, step = base / TC_STEPS;
  size_t j = (bytes - base + step - 1) / step; /* 1..TC_STEPS */
  return TC_SMALL_CLASSES + (int)(k - 12) * TC_STEPS + (int)(j - 1);
}

static size_t tc_class_size(int c) {
  if (c < TC_SMALL_CLASSES) {
    return (size_t)(c + 1) * 256;
  }
  unsigned k = 12u + (unsigned)(c - TC_SMALL_CLASSES) / TC_STEPS;
  size_t j = (size_t)((c - TC_SMALL_CLASSES) % TC_STEPS) + 1;
  return ((size_t)1 << k) + j * (((size_t)1 << k) / TC_STEPS);
}

size_t rmmgo_tc_class_max(void) { return TC_CLASS_MAX; }

/* ------------------------------------------------------------ on / off */

static atomic_int tc_state = -1; /* -1 not read yet, 0 off, 1 on */

/* RMMGO_THREAD_CACHE: 0, off, false, no turn the cache off; unset, empty,
 * 1, on, true, yes leave it on. Any other value leaves it on and says so on
 * stderr, once (the thread that stores the state writes it). */
int rmmgo_tc_enabled(void) {
  int s = atomic_load_explicit(&tc_state, memory_order_acquire);
  if (s < 0) {
    const char* v = getenv("RMMGO_THREAD_CACHE");
    int off = v != NULL && (strcmp(v, "0") == 0 || strcasecmp(v, "off") == 0 || strcasecmp(v, "false") == 0 ||
                            strcasecmp(v, "no") == 0);
    int on = v == NULL || v[0] == 0 || strcmp(v, "1") == 0 || strcasecmp(v, "on") == 0 || strcasecmp(v, "true") == 0 ||
             strcasecmp(v, "yes") == 0;
    s = !off;
    int expected = -1;
    if (!atomic_compare_exchange_strong(&tc_state, &expected, s)) {
      s = expected;
    } else if (!off && !on) {
      fprintf(stderr,
              "rmmgo: RMMGO_THREAD_CACHE=\"%s\" is neither 0, off, false, no (cache off) nor 1, on, true, yes "
              "(cache on): the per-thread cache stays on\n",
              v);
    }
  }
  return s;
}

/* ---------------------------------------------------------------- locks */

static inline void tc_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* One step of a wait: spin a little, then let others run. */
static inline void tc_backoff(int* spins) {
  if (++*spins < 128) {
    tc_pause();
  } else {
    sched_yield();
  }
}

static inline void tc_lock(atomic_int* l) {
  for (int spins = 0; atomic_exchange_explicit(l, 1, memory_order_acquire) != 0;) {
    while (atomic_load_explicit(l, memory_order_relaxed) != 0) {
      tc_backoff(&spins);
    }
  }
}

static inline void tc_unlock(atomic_int* l) { atomic_store_explicit(l, 0, memory_order_release); }

static int64_t tc_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ------------------------------------------------ the process-wide barrier */

/* Sections (below) are entered with a store to the thread's own flag and a
 * load of the request flags, with no fence between them: the thread that
 * stops others pays for the ordering instead, with membarrier(2), which
 * makes every running thread of the process execute a memory barrier. Where
 * the kernel has no private expedited membarrier, sections fence (a full
 * barrier per call, as a lock would cost). */
static int tc_mb_ok; /* set once, before any section: membarrier registered */
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

/* --------------------------------------------------------------- mirror */

#define TC_INDEX_BITS 24
#define TC_MCHUNK_BITS 10
#define TC_MCHUNK ((size_t)1 << TC_MCHUNK_BITS)

typedef struct {
  /* Read on every call; written when Go publishes. */
  _Atomic uint64_t handle; /* the live handle of this slot, 0 when none */
  /* The resource's core.CacheLimits, as Go last published them. */
  _Atomic size_t max_request; /* largest request served */
  _Atomic size_t block;       /* every block's size (fixed_size), else 0 */
  _Atomic size_t quantum;
  _Atomic size_t batch_bytes;
  atomic_int batch_blocks;
  atomic_int batch_min_blocks;
  _Atomic int64_t exited_wait_ns;
  _Atomic int64_t lone_after_ns;
  /* The handle last published here: the budget's and round_gone's owner,
   * also while it is unpublished for a moment (rmm_binning_add_bin). */
  _Atomic uint64_t last;
  /* Adaptors between the handle and its resource, run in C (set before the
   * handle is published). */
  atomic_int nsteps;
  rmmgo_tc_step steps[RMMGO_TC_MAX_STEPS];
  /* The resource's block sizes (a binning resource's bins), ascending. */
  atomic_int nsizes;
  size_t sizes[RMMGO_TC_MAX_SIZES];
  /* Written by pairs: on a line of their own, so that a reservation does
   * not take the line every call reads away from the other threads. */
  _Atomic int64_t avail __attribute__((aligned(64))); /* the part of the budget no pair or depot entry reserved */
  /* Rounding (class size - the user's size) of live blocks counted by
   * pairs that left the handle (their thread exited, or they were bound to
   * another handle); see rmmgo_tc_holding. */
  _Atomic int64_t round_gone;
  /* The budget: all pairs together reserve at most budget (avail is what
   * is left), and they reserve no more than shared in all unless one pair
   * has held a quota alone (holders) for lone_after_ns (cachepolicy: a
   * thread working alone keeps more than many threads together). budget
   * and shared change under blk. */
  _Atomic size_t budget, shared;
  _Atomic int64_t holders;
  _Atomic int64_t crowd_ns; /* when two or more pairs last held a quota */
  atomic_int blk;
} __attribute__((aligned(64))) tc_mslot;

static _Atomic(tc_mslot*) tc_mirror[((size_t)1 << TC_INDEX_BITS) / TC_MCHUNK];
static pthread_mutex_t tc_mirror_mu = PTHREAD_MUTEX_INITIALIZER;

static tc_mslot* tc_mslot_of(uint64_t h, bool make) {
  size_t index = (size_t)(h & (((uint64_t)1 << TC_INDEX_BITS) - 1));
  _Atomic(tc_mslot*)* cp = &tc_mirror[index >> TC_MCHUNK_BITS];
  tc_mslot* chunk = atomic_load_explicit(cp, memory_order_acquire);
  if (chunk == NULL && make) {
    chunk = aligned_alloc(64, TC_MCHUNK * sizeof *chunk); /* kept for the process's life */
    if (chunk != NULL) {
      memset(chunk, 0, TC_MCHUNK * sizeof *chunk);
      atomic_store_explicit(cp, chunk, memory_order_release);
    }
  }
  return chunk == NULL ? NULL : &chunk[index & (TC_MCHUNK - 1)];
}

/* The mirror slot of handle h if h is published, else NULL. */
static inline tc_mslot* tc_mirror_find(uint64_t h) {
  if (h == 0) {
    return NULL;
  }
  tc_mslot* s = tc_mslot_of(h, false);
  if (s == NULL || atomic_load_explicit(&s->handle, memory_order_acquire) != h) {
    return NULL;
  }
  return s;
}

/* The slot that keeps handle h's budget: its mirror slot while h is the
 * handle last published there (served or not), else NULL (h is gone, and
 * its budget with it). */
static inline tc_mslot* tc_account(uint64_t h) {
  if (h == 0) {
    return NULL;
  }
  tc_mslot* s = tc_mslot_of(h, false);
  if (s == NULL || atomic_load_explicit(&s->last, memory_order_acquire) != h) {
    return NULL;
  }
  return s;
}

static inline bool tc_alive(tc_mslot* s, uint64_t h) {
  return atomic_load_explicit(&s->handle, memory_order_seq_cst) == h;
}

/* Sets the budget of s (shared 0: all of it shared); what it adds or
 * takes goes to avail. */
static void tc_set_budget(tc_mslot* s, size_t budget, size_t shared) {
  if (shared == 0 || shared > budget) {
    shared = budget;
  }
  tc_lock(&s->blk);
  size_t old = atomic_load_explicit(&s->budget, memory_order_relaxed);
  if (old != budget) {
    atomic_store_explicit(&s->budget, budget, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->avail, (int64_t)budget - (int64_t)old, memory_order_relaxed);
  }
  atomic_store_explicit(&s->shared, shared, memory_order_relaxed);
  tc_unlock(&s->blk);
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
static void tc_unreserve(uint64_t h, size_t n) {
  tc_mslot* s = n != 0 ? tc_account(h) : NULL;
  if (s != NULL) {
    atomic_fetch_add_explicit(&s->avail, (int64_t)n, memory_order_relaxed);
  }
}

void rmmgo_tc_publish(uint64_t handle, const rmmgo_tc_limits* lim) {
  if (handle == 0 || lim == NULL || lim->max_request == 0) {
    return;
  }
  pthread_mutex_lock(&tc_mirror_mu);
  tc_mslot* s = tc_mslot_of(handle, true);
  if (s == NULL) {
    pthread_mutex_unlock(&tc_mirror_mu);
    return; /* no memory for the mirror: the handle is simply not cached */
  }
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
    tc_lock(&s->blk);
    atomic_store_explicit(&s->budget, 0, memory_order_relaxed);
    atomic_store_explicit(&s->avail, 0, memory_order_relaxed);
    tc_unlock(&s->blk);
    atomic_store_explicit(&s->holders, 0, memory_order_relaxed);
    atomic_store_explicit(&s->crowd_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&s->round_gone, 0, memory_order_relaxed);
    atomic_store_explicit(&s->last, handle, memory_order_release);
  }
  /* The same handle again: what its pairs reserved stays reserved. */
  tc_set_budget(s, lim->budget, lim->shared);
  atomic_store_explicit(&s->handle, handle, memory_order_seq_cst);
  pthread_mutex_unlock(&tc_mirror_mu);
}

void rmmgo_tc_unpublish(uint64_t handle) {
  tc_mslot* s = tc_mslot_of(handle, false);
  if (s == NULL) {
    return;
  }
  uint64_t expected = handle;
  atomic_compare_exchange_strong(&s->handle, &expected, 0);
}

/* The class and class size of a request of bytes to the handle of slot s;
 * false when the cache does not take it. */
static inline bool tc_classify(tc_mslot* s, size_t bytes, int* cls, size_t* size) {
  size_t limit = atomic_load_explicit(&s->max_request, memory_order_relaxed);
  if (bytes > limit) {
    return false;
  }
  size_t block = atomic_load_explicit(&s->block, memory_order_relaxed);
  if (block != 0) {
    *cls = 0; /* one class: the block */
    *size = block;
    return true;
  }
  int c = tc_class_of(bytes);
  int ns = atomic_load_explicit(&s->nsizes, memory_order_relaxed);
  if (ns != 0 && bytes <= s->sizes[ns - 1]) {
    /* The resource's own block sizes (a binning resource's bins): every
     * request of a bin takes a block of the bin's size, so they share one
     * class, when that size is a class. */
    int lo = 0, hi = ns - 1;
    while (lo < hi) {
      int mid = (lo + hi) / 2;
      if (s->sizes[mid] >= bytes) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    size_t bs = s->sizes[lo]; /* read once: checked, whatever a republish did */
    int b = bs >= bytes && bs <= TC_CLASS_MAX ? tc_class_of(bs) : c;
    if (tc_class_size(b) == bs) {
      c = b;
    }
  }
  size_t sz = tc_class_size(c);
  if (sz > limit) {
    return false; /* the class's blocks would come from beyond the limit */
  }
  *cls = c;
  *size = sz;
  return true;
}

/* ------------------------------------------------------- stream keys */

typedef int (*tc_get_id_fn)(void* stream, unsigned long long* id);
typedef int (*tc_get_last_error_fn)(void);
static _Atomic(uintptr_t) tc_get_id;
static _Atomic(uintptr_t) tc_get_last_error;
/* core's stream key of a stream of id i is i | tc_key_flag (Go hands it
 * over: core.StreamKeyOfID(0)). */
static _Atomic uint64_t tc_key_flag;
/* Bumped by Go each time rmm_stream_destroy retires a stream: a thread
 * asks Go again about the streams it checked before. */
static _Atomic uint64_t tc_stream_epoch = 1;

void rmmgo_tc_set_stream_funcs(uintptr_t get_id, uintptr_t get_last_error, uint64_t key_flag) {
  atomic_store(&tc_key_flag, key_flag);
  atomic_store(&tc_get_last_error, get_last_error);
  atomic_store(&tc_get_id, get_id);
}

void rmmgo_tc_stream_retired(void) { atomic_fetch_add(&tc_stream_epoch, 1); }

/* For async_path.c, which checks streams the same way. */
uint64_t rmmgo_tc_stream_epoch(void) { return atomic_load_explicit(&tc_stream_epoch, memory_order_relaxed); }

/* ---------------------------------------------------------------- table */

/* An entry: the block's address (0: empty slot, TC_TOMB: an entry that was
 * removed, which lookups pass over) and its state in one word:
 *   bits 0..1   TC_LIVE or TC_CACHED
 *   bits 2..8   size class
 *   bits 9..32  the user's size rounded up to 256, in units of 256 (LIVE)
 *   bits 33..63 the handle it belongs to: its slot index (24 bits) and the
 *               low 7 bits of its generation (tc_hid). Entries of a handle
 *               are removed when it is released, so no two live handles
 *               share these bits.
 * A lookup reads ptr (acquire) then meta; an insertion writes meta then ptr
 * (release); a removal writes TC_TOMB. */
enum { TC_LIVE = 1, TC_CACHED = 2 };
#define TC_TOMB ((uintptr_t)1)

typedef struct {
  _Atomic uintptr_t ptr;
  _Atomic uint64_t meta;
} tc_ent;

static inline uint64_t tc_hid(uint64_t h) { return (h & 0xffffffu) | (((h >> 24) & 0x7fu) << 24); }

static inline uint64_t tc_meta(int state, int cls, size_t units, uint64_t h) {
  return (uint64_t)state | (uint64_t)cls << 2 | (uint64_t)(units & 0xffffffu) << 9 | tc_hid(h) << 33;
}
static inline int tc_meta_state(uint64_t m) { return (int)(m & 3); }
static inline int tc_meta_cls(uint64_t m) { return (int)((m >> 2) & 0x7f); }
static inline size_t tc_meta_units(uint64_t m) { return (size_t)((m >> 9) & 0xffffffu); }
static inline uint64_t tc_meta_hid(uint64_t m) { return m >> 33; }

typedef struct {
  size_t mask; /* capacity - 1 */
  tc_ent e[];
} tc_tab;

typedef struct {
  /* Read by every call that looks a block up. */
  _Atomic(tc_tab*) tab; /* NULL until the first entry */
  _Atomic uint32_t gen; /* bumped each time the entries move */
  /* The writers' line. */
  atomic_int wlock __attribute__((aligned(64)));
  size_t used, tombs; /* entries, removed entries (under wlock) */
} __attribute__((aligned(64))) tc_shard;

static tc_shard tc_table[TC_SHARDS];

/* Fibonacci hashing of the 256-byte unit a block starts at: one multiply;
 * the high bits of the product pick the shard, the bits below them the
 * slot (blocks a stride apart spread as well as random ones). */
static inline uint64_t tc_mix(uintptr_t p) { return (uint64_t)(p >> 8) * 0x9e3779b97f4a7c15ULL; }

static inline tc_shard* tc_shard_of(uintptr_t p) { return &tc_table[tc_mix(p) >> (64 - TC_SHARD_BITS)]; }

static inline size_t tc_home(const tc_tab* t, uintptr_t p) { return (size_t)(tc_mix(p) >> (32 - TC_SHARD_BITS)) & t->mask; }

/* p's entry in t, or NULL. Inside a section, or under the shard's writer
 * lock. */
static inline tc_ent* tc_lookup(tc_tab* t, uintptr_t p) {
  if (t == NULL) {
    return NULL;
  }
  for (size_t i = tc_home(t, p);; i = (i + 1) & t->mask) {
    uintptr_t q = atomic_load_explicit(&t->e[i].ptr, memory_order_acquire);
    if (q == p) {
      return &t->e[i];
    }
    if (q == 0) {
      return NULL;
    }
  }
}

/* Where a block's entry is: its slot in its shard's entries, valid while
 * the shard's gen is gen. */
typedef struct {
  uintptr_t ptr;
  uint32_t slot;
  uint32_t gen;
} tc_item;

/* ------------------------------------------------------------ the caches */

typedef struct {
  tc_item* v; /* cap entries, allocated on first push, grown by doubling */
  uint32_t n;
  uint32_t cap;
} tc_stack;

typedef struct {
  uint64_t handle; /* 0: unbound */
  uint64_t key;
  size_t fixed;   /* a fixed-size handle's block size (its one class), else 0 */
  size_t bytes;   /* cached bytes */
  size_t quota;   /* budget reserved (>= bytes) */
  int64_t round;  /* class size - user's size, of live blocks handed out or taken back here */
  size_t blocks;  /* cached blocks */
  int64_t since;  /* in the depot: when its thread exited */
  tc_stack cls[TC_CLASSES];
} tc_pair;

typedef struct tc_cache {
  /* The owner's line: busy is written by the owner only (1 inside a
   * section), req by threads that stop it (rarely). */
  _Atomic int busy;
  _Atomic int req;
  int hint;
  tc_pair* pairs[TC_PAIRS];
  /* Streams Go said were not retired, and the epoch it said so in. */
  uintptr_t memo_stream[TC_STREAM_MEMO];
  uint64_t memo_epoch[TC_STREAM_MEMO];
  int memo_next;
  struct tc_cache* prev; /* tc_list, under tc_list_mu */
  struct tc_cache* next;
} __attribute__((aligned(64))) tc_cache;

static inline size_t tc_pair_class_size(const tc_pair* p, int c) { return p->fixed != 0 ? p->fixed : tc_class_size(c); }

static pthread_mutex_t tc_list_mu = PTHREAD_MUTEX_INITIALIZER;
static tc_cache* tc_list; /* every thread's cache, under tc_list_mu */

/* Entries move (a shard grows or drops its removed entries) only while
 * tc_moving is set and no section runs. */
static pthread_mutex_t tc_move_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int tc_moving;

/* ------------------------------------------------------------- sections */

/* Enters the calling thread's section of c, unless a thread is stopping c
 * or moving table entries; false then (nothing entered). */
static inline bool tc_try_enter(tc_cache* c) {
  atomic_store_explicit(&c->busy, 1, memory_order_relaxed);
  if (tc_mb_ok) {
    atomic_signal_fence(memory_order_seq_cst); /* the stopper's membarrier orders it */
  } else {
    atomic_thread_fence(memory_order_seq_cst);
  }
  if (__builtin_expect((atomic_load_explicit(&c->req, memory_order_acquire) |
                        atomic_load_explicit(&tc_moving, memory_order_acquire)) == 0,
                       1)) {
    return true;
  }
  atomic_store_explicit(&c->busy, 0, memory_order_release);
  return false;
}

static inline void tc_leave(tc_cache* c) { atomic_store_explicit(&c->busy, 0, memory_order_release); }

/* Enters c's section, waiting while it is stopped. */
static inline void tc_enter(tc_cache* c) {
  while (!tc_try_enter(c)) {
    for (int spins = 0; (atomic_load_explicit(&c->req, memory_order_acquire) |
                         atomic_load_explicit(&tc_moving, memory_order_acquire)) != 0;) {
      tc_backoff(&spins);
    }
  }
}

/* Waits until c's owner is outside its section. */
static void tc_wait_out(tc_cache* c) {
  for (int spins = 0; atomic_load_explicit(&c->busy, memory_order_acquire) != 0;) {
    tc_backoff(&spins);
  }
}

/* Stops every cache on tc_list (tc_list_mu held): when it returns, no
 * section of theirs runs until tc_resume_all. Never called inside a
 * section. */
static void tc_stop_all(void) {
  for (tc_cache* c = tc_list; c != NULL; c = c->next) {
    atomic_fetch_add_explicit(&c->req, 1, memory_order_relaxed);
  }
  tc_heavy_barrier();
  for (tc_cache* c = tc_list; c != NULL; c = c->next) {
    tc_wait_out(c);
  }
}

static void tc_resume_all(void) {
  for (tc_cache* c = tc_list; c != NULL; c = c->next) {
    atomic_fetch_sub_explicit(&c->req, 1, memory_order_release);
  }
}

/* Stops every section of every thread (to move table entries); takes
 * tc_move_mu and tc_list_mu for the time. */
static void tc_stop_world(void) {
  pthread_mutex_lock(&tc_move_mu);
  atomic_store_explicit(&tc_moving, 1, memory_order_relaxed);
  tc_heavy_barrier();
  pthread_mutex_lock(&tc_list_mu);
  for (tc_cache* c = tc_list; c != NULL; c = c->next) {
    tc_wait_out(c);
  }
}

static void tc_resume_world(void) {
  pthread_mutex_unlock(&tc_list_mu);
  atomic_store_explicit(&tc_moving, 0, memory_order_release);
  pthread_mutex_unlock(&tc_move_mu);
}

/* ------------------------------------------------------- table: writers */

/* Rebuilds shard s with room for `extra` more entries: at most 3/8 full
 * after, at most 3/4 full (removed entries included) before a rebuild (a
 * lookup reads one or two lines of four entries: the table stays small
 * enough for the caches of the CPU),
 * every section stopped. false when there is no host memory. Never called
 * inside a section or with a writer lock held. */
static bool tc_rehash(tc_shard* s, size_t extra) {
  tc_stop_world();
  tc_lock(&s->wlock);
  tc_tab* old = atomic_load_explicit(&s->tab, memory_order_relaxed);
  size_t cap = old == NULL ? 0 : old->mask + 1;
  if (old != NULL && (s->used + s->tombs + extra) * 4 <= cap * 3) {
    tc_unlock(&s->wlock); /* another thread made room meanwhile */
    tc_resume_world();
    return true;
  }
  size_t ncap = 64;
  while ((s->used + extra) * 8 > ncap * 3) {
    ncap *= 2;
  }
  tc_tab* t = aligned_alloc(64, sizeof(tc_tab) + ncap * sizeof(tc_ent));
  if (t == NULL) {
    tc_unlock(&s->wlock);
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
  tc_unlock(&s->wlock);
  tc_resume_world();
  free(old); /* no section runs on it, and writers hold the lock */
  return true;
}

/* Enters p with state m into the table (an entry already there, a stale one
 * of a block given back to Go by a path the cache did not see, is reused).
 * Returns where it is; false when there is no host memory. Outside
 * sections. */
static bool tc_insert(uintptr_t p, uint64_t m, tc_item* where) {
  tc_shard* s = tc_shard_of(p);
  for (;;) {
    tc_lock(&s->wlock);
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
        tc_unlock(&s->wlock);
        return true;
      }
    }
    tc_unlock(&s->wlock);
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
static void tc_erase(tc_shard* s, tc_tab* t, tc_ent* e) {
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
static void tc_forget(uintptr_t p) {
  tc_shard* s = tc_shard_of(p);
  tc_lock(&s->wlock);
  tc_tab* t = atomic_load_explicit(&s->tab, memory_order_relaxed);
  tc_ent* e = tc_lookup(t, p);
  if (e != NULL) {
    tc_erase(s, t, e);
  }
  tc_unlock(&s->wlock);
}

/* The entry of an item popped from a stack (inside a section). */
static inline tc_ent* tc_item_entry(const tc_item* it) {
  tc_shard* s = tc_shard_of(it->ptr);
  tc_tab* t = atomic_load_explicit(&s->tab, memory_order_relaxed);
  if (t != NULL && atomic_load_explicit(&s->gen, memory_order_relaxed) == it->gen) {
    return &t->e[it->slot];
  }
  return tc_lookup(t, it->ptr);
}

/* Fetches, for writing, the entry an item's block will need when it is
 * handed out (inside a section). */
static inline void tc_prefetch_entry(const tc_item* it) {
  tc_shard* s = tc_shard_of(it->ptr);
  tc_tab* t = atomic_load_explicit(&s->tab, memory_order_relaxed);
  if (t != NULL && atomic_load_explicit(&s->gen, memory_order_relaxed) == it->gen) {
    __builtin_prefetch(&t->e[it->slot], 1);
  }
}

/* --------------------------------------------------------- the caches */

/* The depot: pairs of threads that exited, with their blocks (CACHED in
 * the table: a free of one is still a double free) and their quota. Under
 * tc_depot_mu; tc_depot_n is its length, for a look without the lock. */
static pthread_mutex_t tc_depot_mu = PTHREAD_MUTEX_INITIALIZER;
static tc_pair** tc_depot;
static size_t tc_ndepot, tc_depot_cap;
static atomic_size_t tc_depot_n;

/* initial-exec: one load from the thread pointer, no __tls_get_addr call
 * (the Go runtime in this library uses the model too, so it is loadable
 * with dlopen where Go is). */
static __thread tc_cache* tc_mine __attribute__((tls_model("initial-exec")));
static pthread_key_t tc_key;
static pthread_once_t tc_key_once = PTHREAD_ONCE_INIT;
static bool tc_key_ok;

static void tc_thread_exit(void* arg);

static void tc_key_init(void) { tc_key_ok = pthread_key_create(&tc_key, tc_thread_exit) == 0; }

static tc_cache* tc_cache_new(void);

static inline tc_cache* tc_cache_mine(void) {
  tc_cache* c = tc_mine;
  if (__builtin_expect(c != NULL, 1)) {
    return c;
  }
  return tc_cache_new();
}

static tc_cache* tc_cache_new(void) {
  tc_cache* c;
  pthread_once(&tc_mb_once, tc_mb_init);
  pthread_once(&tc_key_once, tc_key_init);
  if (!tc_key_ok) {
    return NULL;
  }
  c = aligned_alloc(64, sizeof *c);
  if (c == NULL) {
    return NULL;
  }
  memset(c, 0, sizeof *c);
  if (pthread_setspecific(tc_key, c) != 0) {
    free(c);
    return NULL;
  }
  pthread_mutex_lock(&tc_list_mu);
  c->next = tc_list;
  if (tc_list != NULL) {
    tc_list->prev = c;
  }
  tc_list = c;
  pthread_mutex_unlock(&tc_list_mu);
  tc_mine = c;
  return c;
}

static void tc_pair_free(tc_pair* p) {
  for (int k = 0; k < TC_CLASSES; k++) {
    free(p->cls[k].v);
  }
  free(p);
}

/* Sets p's quota to q, counting p among its handle's holders while it
 * holds one. The bytes reserved or given back are the caller's business. */
static void tc_set_quota(tc_pair* p, size_t q) {
  if ((p->quota == 0) != (q == 0)) {
    tc_holders_add(p->handle, q != 0 ? 1 : -1);
  }
  p->quota = q;
}

/* Lets p go of its handle: its quota back to the budget, the rounding it
 * counted to the handle's round_gone. p holds no blocks. */
static void tc_pair_unbind(tc_pair* p) {
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

/* The pair of (h, key) in c, bound on first use to a free (or empty) pair;
 * NULL when all TC_PAIRS hold blocks of other pairs. In c's section. */
static tc_pair* tc_pair_find(tc_cache* c, uint64_t h, uint64_t key, size_t fixed);

static inline tc_pair* tc_pair_for(tc_cache* c, uint64_t h, uint64_t key, size_t fixed) {
  tc_pair* p = c->pairs[c->hint];
  if (__builtin_expect(p != NULL && p->handle == h && p->key == key, 1)) {
    return p;
  }
  return tc_pair_find(c, h, key, fixed);
}

static tc_pair* tc_pair_find(tc_cache* c, uint64_t h, uint64_t key, size_t fixed) {
  tc_pair* p;
  int spare = -1;
  for (int i = 0; i < TC_PAIRS; i++) {
    p = c->pairs[i];
    if (p == NULL || p->blocks == 0) {
      if (spare < 0 || (c->pairs[spare] == NULL && p != NULL)) {
        spare = i;
      }
      if (p == NULL) {
        continue;
      }
    }
    if (p->handle == h && p->key == key) {
      c->hint = i;
      return p;
    }
  }
  if (spare < 0) {
    return NULL;
  }
  if (c->pairs[spare] == NULL) {
    c->pairs[spare] = calloc(1, sizeof(tc_pair));
    if (c->pairs[spare] == NULL) {
      return NULL;
    }
  }
  p = c->pairs[spare];
  if (p->handle != h) {
    tc_pair_unbind(p);
  }
  p->handle = h;
  p->key = key;
  p->fixed = fixed;
  p->bytes = 0;
  p->blocks = 0;
  c->hint = spare;
  return p;
}

/* Makes room for one more block on st; false when it cannot grow. */
static bool tc_stack_room(tc_stack* st) {
  if (st->n < st->cap) {
    return true;
  }
  uint32_t nc = st->cap == 0 ? 16 : st->cap * 2;
  if (nc > TC_STACK_MAX) {
    return false;
  }
  tc_item* v = realloc(st->v, (size_t)nc * sizeof *v);
  if (v == NULL) {
    return false;
  }
  st->v = v;
  st->cap = nc;
  return true;
}

/* Reserves budget for p to hold `more` bytes more than it does: a quantum
 * at a time, or what is missing when the budget has less left. In the
 * owner's section; touches the handle's shared account only when p's quota
 * runs out. */
static bool tc_reserve(tc_mslot* ms, tc_pair* p, size_t more) {
  if (p->bytes + more <= p->quota) {
    return true;
  }
  size_t need = p->bytes + more - p->quota;
  size_t q = atomic_load_explicit(&ms->quantum, memory_order_relaxed);
  size_t tries[2] = {need > q ? need : q, need};
  /* All pairs together keep to the budget's shared part, unless this one
   * has been alone for a while (then the rest is its too). */
  size_t shared = atomic_load_explicit(&ms->shared, memory_order_relaxed);
  int64_t cap = (int64_t)atomic_load_explicit(&ms->budget, memory_order_relaxed) - (int64_t)shared;
  /* Among several holders, a pair takes no more of the shared part than
   * its even share (at least a quantum): else the first pair to fill
   * keeps nearly all of it, and the others, left one quantum, cross into
   * Go to drain a few blocks every few frees (binning small, two threads
   * on their own streams: one pair held 40 MiB of 42, the other 276 KiB). */
  int64_t holders = atomic_load_explicit(&ms->holders, memory_order_relaxed) + (p->quota > 0 ? 0 : 1);
  size_t fair = holders > 1 ? shared / (size_t)holders : SIZE_MAX;
  if (fair < q) {
    fair = q;
  }
  int lone = -1; /* not known yet */
  for (int t = 0; t < 2; t++) {
    int64_t want = (int64_t)tries[t];
    int64_t avail = atomic_load_explicit(&ms->avail, memory_order_relaxed);
    while (avail >= want) {
      if (p->quota + (size_t)want > fair || avail - want < cap) {
        if (lone < 0) {
          /* Alone now, and never in a crowd or not for lone_after. */
          int64_t crowd = atomic_load_explicit(&ms->crowd_ns, memory_order_relaxed);
          lone = atomic_load_explicit(&ms->holders, memory_order_relaxed) <= (p->quota > 0 ? 1 : 0) &&
                 (crowd == 0 ||
                  tc_now_ns() - crowd >= atomic_load_explicit(&ms->lone_after_ns, memory_order_relaxed));
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
static void tc_trim_quota(tc_mslot* ms, tc_pair* p) {
  size_t keep = p->bytes + atomic_load_explicit(&ms->quantum, memory_order_relaxed);
  if (p->quota > keep) {
    atomic_fetch_add_explicit(&ms->avail, (int64_t)(p->quota - keep), memory_order_relaxed);
    tc_set_quota(p, keep);
  }
}

/* Appends a block to a growing array. */
static bool tc_out_push(rmmgo_tc_block** out, size_t* n, size_t* cap, uint64_t h, uint64_t key, uintptr_t ptr,
                        size_t size) {
  if (*n == *cap) {
    size_t nc = *cap == 0 ? 64 : *cap * 2;
    rmmgo_tc_block* o = realloc(*out, nc * sizeof *o);
    if (o == NULL) {
      return false;
    }
    *out = o;
    *cap = nc;
  }
  (*out)[*n].handle = h;
  (*out)[*n].key = key;
  (*out)[*n].ptr = ptr;
  (*out)[*n].size = size;
  (*n)++;
  return true;
}

/* Moves every block of p whose class size is in (lo, hi] (hi 0: any) into
 * out (grown as needed), forgetting them in the table. Stops early (leaving
 * the rest cached) if out cannot grow. Returns whether it took them all.
 * p's owner is stopped (or gone). */
static bool tc_pair_take_sizes(tc_pair* p, rmmgo_tc_block** out, size_t* n, size_t* cap, size_t lo, size_t hi) {
  for (int k = 0; k < TC_CLASSES; k++) {
    tc_stack* st = &p->cls[k];
    size_t size = tc_pair_class_size(p, k);
    if (st->n > 0 && hi != 0 && (size <= lo || size > hi)) {
      continue;
    }
    while (st->n > 0) {
      uintptr_t b = st->v[st->n - 1].ptr;
      if (!tc_out_push(out, n, cap, p->handle, p->key, b, size)) {
        return false;
      }
      st->n--;
      p->bytes -= size;
      p->blocks--;
      tc_forget(b);
    }
  }
  return true;
}

/* For tests: how long a thread's exit waits once its cache left the list,
 * holding the depot's lock (a slow exit, for the tests of what others read
 * meanwhile). */
static _Atomic int64_t tc_test_exit_delay_ns;

void rmmgo_tc_test_exit_delay(int64_t ns) { atomic_store(&tc_test_exit_delay_ns, ns); }

static bool tc_pair_take(tc_pair* p, rmmgo_tc_block** out, size_t* n, size_t* cap) {
  return tc_pair_take_sizes(p, out, n, cap, 0, 0);
}

/* The key's destructor: runs as the thread exits, must not enter Go. Its
 * pairs that hold blocks go to the depot, with their quota; the others let
 * go of their handles. */
static void tc_thread_exit(void* arg) {
  tc_cache* c = arg;
  tc_mine = NULL;
  pthread_mutex_lock(&tc_list_mu);
  if (c->prev != NULL) {
    c->prev->next = c->next;
  } else {
    tc_list = c->next;
  }
  if (c->next != NULL) {
    c->next->prev = c->prev;
  }
  /* Its pairs' rounding stays counted for their handles, by the handles,
   * moved while c leaves the list: rmmgo_tc_holding, which walks the list
   * under tc_list_mu and reads round_gone, sees it in one place or the
   * other, never in neither. */
  for (int i = 0; i < TC_PAIRS; i++) {
    tc_pair* p = c->pairs[i];
    if (p != NULL && p->round != 0) {
      tc_mslot* ms = tc_account(p->handle);
      if (ms != NULL) {
        atomic_fetch_add_explicit(&ms->round_gone, p->round, memory_order_relaxed);
      }
      p->round = 0;
    }
  }
  /* Nobody else can reach c now: stoppers walk tc_list under tc_list_mu. */
  pthread_mutex_lock(&tc_depot_mu);
  pthread_mutex_unlock(&tc_list_mu);
  int64_t delay = atomic_load_explicit(&tc_test_exit_delay_ns, memory_order_relaxed);
  if (delay > 0) {
    struct timespec ts = {delay / 1000000000, delay % 1000000000};
    nanosleep(&ts, NULL);
  }
  int64_t now = tc_now_ns();
  for (int i = 0; i < TC_PAIRS; i++) {
    tc_pair* p = c->pairs[i];
    if (p == NULL) {
      continue;
    }
    c->pairs[i] = NULL;
    if (p->blocks > 0) {
      if (tc_ndepot == tc_depot_cap) {
        size_t nc = tc_depot_cap == 0 ? 64 : tc_depot_cap * 2;
        tc_pair** d = realloc(tc_depot, nc * sizeof *d);
        if (d != NULL) {
          tc_depot = d;
          tc_depot_cap = nc;
        }
      }
      if (tc_ndepot < tc_depot_cap) {
        p->since = now;
        tc_depot[tc_ndepot++] = p;
        continue;
      }
      /* No host memory for the depot: the blocks stay allocated in their
       * resource until it closes (and their table entries until then). */
    }
    tc_pair_unbind(p);
    tc_pair_free(p);
  }
  atomic_store(&tc_depot_n, tc_ndepot);
  pthread_mutex_unlock(&tc_depot_mu);
  free(c);
}

/* For tests: what the calling thread's exit does to its cache, now. */
void rmmgo_tc_exit_mine(void) {
  tc_cache* c = tc_mine;
  if (c != NULL) {
    (void)pthread_setspecific(tc_key, NULL);
    tc_thread_exit(c);
  }
}

/* Takes the depot's pairs that waited their handle's exited_wait (or whose
 * handle is gone), to give back: their blocks into *out (forgotten in the
 * table). The pairs are freed; the budget of their blocks returns once Go
 * has them (tc_release_given), the rest of their quota now. */
static void tc_depot_expire(rmmgo_tc_block** out, size_t* n, size_t* cap) {
  if (atomic_load_explicit(&tc_depot_n, memory_order_relaxed) == 0) {
    return;
  }
  int64_t now = tc_now_ns();
  pthread_mutex_lock(&tc_depot_mu);
  for (size_t i = 0; i < tc_ndepot;) {
    tc_pair* p = tc_depot[i];
    tc_mslot* ms = tc_account(p->handle);
    if (ms != NULL && now - p->since < atomic_load_explicit(&ms->exited_wait_ns, memory_order_relaxed)) {
      i++;
      continue;
    }
    size_t held = p->bytes;
    if (!tc_pair_take(p, out, n, cap)) {
      p->quota -= held - p->bytes; /* the part taken returns by tc_release_given */
      break;
    }
    tc_depot[i] = tc_depot[--tc_ndepot];
    tc_unreserve(p->handle, p->quota - held);
    tc_set_quota(p, 0);
    tc_pair_free(p);
  }
  atomic_store(&tc_depot_n, tc_ndepot);
  pthread_mutex_unlock(&tc_depot_mu);
}

/* After Go took back blocks handed to it, their budget returns to their
 * handles. */
static void tc_release_given(const rmmgo_tc_block* b, size_t n) {
  for (size_t i = 0; i < n; i++) {
    tc_unreserve(b[i].handle, b[i].size);
  }
}

/* A miss with the depot not empty: takes over a depot pair of (h, key)
 * whole, in place of the caller's pair of (h, key) when that holds nothing.
 * Returns whether it did. Outside sections. */
static bool tc_adopt(tc_cache* c, tc_mslot* ms, uint64_t h, uint64_t key, size_t fixed) {
  tc_pair* got = NULL;
  pthread_mutex_lock(&tc_depot_mu);
  for (size_t i = 0; i < tc_ndepot; i++) {
    tc_pair* p = tc_depot[i];
    if (p->handle == h && p->key == key && p->fixed == fixed) {
      got = p;
      tc_depot[i] = tc_depot[--tc_ndepot];
      break;
    }
  }
  atomic_store(&tc_depot_n, tc_ndepot);
  pthread_mutex_unlock(&tc_depot_mu);
  if (got == NULL) {
    return false;
  }
  tc_enter(c);
  tc_pair* mine = tc_alive(ms, h) ? tc_pair_for(c, h, key, fixed) : NULL;
  if (mine != NULL && mine->blocks == 0) {
    int i = c->hint; /* tc_pair_for left it on mine */
    got->round = mine->round;
    mine->round = 0;
    tc_pair_unbind(mine); /* its quota back; got brings its own */
    tc_pair_free(mine);
    c->pairs[i] = got;
    tc_leave(c);
    return true;
  }
  tc_leave(c);
  /* Not taken (released meanwhile, or our pair holds blocks): back. */
  pthread_mutex_lock(&tc_depot_mu);
  if (tc_ndepot < tc_depot_cap) {
    tc_depot[tc_ndepot++] = got;
    atomic_store(&tc_depot_n, tc_ndepot);
    pthread_mutex_unlock(&tc_depot_mu);
  } else {
    pthread_mutex_unlock(&tc_depot_mu);
    /* Cannot happen (it was in the depot a moment ago, and the depot only
     * grows); should it, the blocks stay with their resource till it
     * closes. */
  }
  return false;
}

/* -------------------------------------------------------------- collecting */

rmmgo_tc_block* rmmgo_tc_collect(uint64_t handle, int by_key, uint64_t key, int drop_live, size_t lo, size_t hi,
                                 size_t* n) {
  rmmgo_tc_block* out = NULL;
  size_t cnt = 0, cap = 0;
  pthread_once(&tc_mb_once, tc_mb_init);
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
      tc_lock(&s->wlock);
      tc_tab* t = atomic_load_explicit(&s->tab, memory_order_relaxed);
      for (size_t j = 0; t != NULL && j <= t->mask; j++) {
        uintptr_t q = atomic_load_explicit(&t->e[j].ptr, memory_order_relaxed);
        if (q > TC_TOMB && tc_meta_hid(atomic_load_explicit(&t->e[j].meta, memory_order_relaxed)) == hid) {
          tc_erase(s, t, &t->e[j]);
        }
      }
      tc_unlock(&s->wlock);
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
  pthread_once(&tc_mb_once, tc_mb_init);
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
  pthread_once(&tc_mb_once, tc_mb_init);
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
    tc_lock(&s->wlock);
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
    tc_unlock(&s->wlock);
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

/* ------------------------------------------- frees that bypass the cache */

/* A block the table has LIVE may be freed by a path that reaches its
 * resource without rmm_deallocate on its handle (an adaptor over the
 * resource that C does not run, Go code): the resource asks its cache
 * (core.FreeClaimer, thread_cache.go), which takes the entry out here
 * before the resource frees the block, so that no later free through the
 * handle finds it LIVE (it would cache a block the resource handed out
 * again: the same address twice). Under the shard's writer lock: entries do
 * not move meanwhile, and the free's compare-and-swap of a racing
 * rmm_deallocate meets the changed state word. */

int rmmgo_tc_peek(uintptr_t ptr, uint64_t* handle, uint64_t* meta, int* live, size_t* had) {
  tc_shard* s = tc_shard_of(ptr);
  tc_lock(&s->wlock);
  tc_ent* e = tc_lookup(atomic_load_explicit(&s->tab, memory_order_relaxed), ptr);
  uint64_t m = e != NULL ? atomic_load_explicit(&e->meta, memory_order_acquire) : 0;
  tc_unlock(&s->wlock);
  if (e == NULL) {
    return 0;
  }
  uint64_t hid = tc_meta_hid(m);
  tc_mslot* ms = tc_mslot_of(hid, false);
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
  tc_lock(&s->wlock);
  tc_tab* t = atomic_load_explicit(&s->tab, memory_order_relaxed);
  tc_ent* e = tc_lookup(t, ptr);
  uint64_t m = meta;
  /* LIVE -> neither LIVE nor CACHED: a racing free through the handle is
   * refused as not live from here on. */
  if (e == NULL || !atomic_compare_exchange_strong_explicit(&e->meta, &m, meta & ~(uint64_t)3, memory_order_acq_rel,
                                                            memory_order_acquire)) {
    tc_unlock(&s->wlock);
    return 0;
  }
  tc_erase(s, t, e);
  tc_unlock(&s->wlock);
  tc_mslot* ms = tc_mslot_of(handle, false);
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
  tc_mslot* ms = tc_mslot_of(handle, false);
  size_t fixed = ms != NULL ? atomic_load_explicit(&ms->block, memory_order_relaxed) : 0;
  size_t sz = fixed != 0 ? fixed : tc_class_size(tc_meta_cls(meta));
  tc_mslot* acc = tc_account(handle);
  if (acc != NULL) {
    atomic_fetch_add_explicit(&acc->round_gone, (int64_t)sz - (int64_t)(tc_meta_units(meta) << 8), memory_order_relaxed);
  }
}

/* ------------------------------------------------------------ crossings */

/* A call into Go (refill or drain) that also gives back what the depot
 * holds past its wait: one crossing for both. Outside sections. */
static rmm_status tc_cross(bool refill, rmmgo_tc_call* call, tc_mslot* ms) {
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
  if (call->budget != 0 && tc_alive(ms, call->handle)) {
    tc_set_budget(ms, call->budget, call->shared);
  }
  return st;
}

/* Gives blocks of handle h back to Go after forgetting them in the table
 * (outside sections). */
static void tc_give_back(uint64_t h, rmm_stream_t stream, size_t size, uintptr_t* ptrs, int n) {
  if (n <= 0) {
    return;
  }
  for (int i = 0; i < n; i++) {
    tc_forget(ptrs[i]);
  }
  rmmgo_tc_call d = {.handle = h, .stream = (uintptr_t)stream, .size = size, .ptrs = ptrs, .n = n};
  (void)rmmgo_go_drain(&d);
}

/* ---------------------------------------------------------- stream checks */

/* Whether the stream may be served: not one rmm_stream_destroy retired (Go
 * knows; a thread asks once per stream and epoch), and its key. Nonzero:
 * the caller goes to Go, which reports what is wrong. Outside sections. */
static int tc_stream_key(tc_cache* c, rmm_stream_t stream, uint64_t* key) {
  uintptr_t s = (uintptr_t)stream;
  if (s == 0 || s == 1) {
    *key = 0;
    return 0;
  }
  uint64_t epoch = atomic_load_explicit(&tc_stream_epoch, memory_order_relaxed);
  bool known = false;
  for (int i = 0; i < TC_STREAM_MEMO; i++) {
    if (c->memo_stream[i] == s && c->memo_epoch[i] == epoch) {
      known = true;
      break;
    }
  }
  if (!known) {
    if (rmmgo_go_stream_live(s) == 0) {
      return -1;
    }
    int i = c->memo_next;
    c->memo_next = (i + 1) % TC_STREAM_MEMO;
    c->memo_stream[i] = s;
    c->memo_epoch[i] = epoch;
  }
  uintptr_t fn = atomic_load_explicit(&tc_get_id, memory_order_relaxed);
  if (fn != 0) {
    unsigned long long id = 0;
    if (((tc_get_id_fn)fn)((void*)s, &id) != 0) {
      uintptr_t le = atomic_load_explicit(&tc_get_last_error, memory_order_relaxed);
      if (le != 0) {
        (void)((tc_get_last_error_fn)le)(); /* as every rmmgo call, leave no error behind */
      }
      return -1;
    }
    *key = (uint64_t)id | atomic_load_explicit(&tc_key_flag, memory_order_relaxed);
    return 0;
  }
  return rmmgo_go_stream_key(s, key);
}

/* ------------------------------------------------------------- messages */

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

/* ------------------------------------------------------------- adaptors */

/* The adaptors of a cached handle, run here as core runs them (one
 * definition each, in core: StatisticsHot.Alloc/Free and Counter.add for
 * statistics, Limiting.allocate/refund for limiting; these do the same
 * arithmetic on the same memory, under the same lock or with the same
 * atomic operations; Go tests compare the two). Limiting charges come
 * before a block is taken (a refusal goes to Go, which says it), the
 * statistics count after; a free uncounts before the block is cached and
 * refunds after. */

static inline void tc_stats_lock(rmmgo_tc_stats* s) { tc_lock((atomic_int*)&s->lock); }
static inline void tc_stats_unlock(rmmgo_tc_stats* s) { tc_unlock((atomic_int*)&s->lock); }

static inline void tc_counter_add(int64_t* value, int64_t* peak, int64_t* total, int64_t n) {
  *value += n;
  *total += n;
  if (*value > *peak) {
    *peak = *value;
  }
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
static bool tc_steps_charge(tc_mslot* ms, int n, size_t bytes) {
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

static void tc_steps_refund(tc_mslot* ms, int n, size_t bytes) {
  for (int i = 0; i < n; i++) {
    if (ms->steps[i].kind == RMMGO_TC_STEP_LIMITING) {
      tc_refund(&ms->steps[i], bytes);
    }
  }
}

/* An allocation of bytes went through: the statistics count it. */
static void tc_steps_count(tc_mslot* ms, int n, size_t bytes) {
  for (int i = 0; i < n; i++) {
    if (ms->steps[i].kind != RMMGO_TC_STEP_STATISTICS) {
      continue;
    }
    rmmgo_tc_stats* s = (rmmgo_tc_stats*)ms->steps[i].state;
    rmmgo_tc_hot* h = &s->hot;
    tc_stats_lock(s);
    tc_counter_add(&h->bytes_value, &h->bytes_peak, &h->bytes_total, (int64_t)bytes);
    tc_counter_add(&h->count_value, &h->count_peak, &h->count_total, 1);
    h->out_bytes += bytes;
    h->out_count++;
    tc_stats_unlock(s);
  }
}

/* Undoes tc_steps_uncount for the first n statistics steps (a free that
 * did not go through). */
static void tc_steps_unfree(tc_mslot* ms, int n, size_t bytes) {
  for (int i = 0; i < n; i++) {
    if (ms->steps[i].kind != RMMGO_TC_STEP_STATISTICS) {
      continue;
    }
    rmmgo_tc_stats* s = (rmmgo_tc_stats*)ms->steps[i].state;
    rmmgo_tc_hot* h = &s->hot;
    tc_stats_lock(s);
    h->bytes_value += (int64_t)bytes;
    if (h->bytes_value > h->bytes_peak) {
      h->bytes_peak = h->bytes_value;
    }
    h->count_value++;
    if (h->count_value > h->count_peak) {
      h->count_peak = h->count_value;
    }
    h->out_bytes += bytes;
    h->out_count++;
    tc_stats_unlock(s);
  }
}

/* A free of bytes: the statistics uncount it; false (nothing changed) when
 * one has fewer bytes or allocations outstanding (Go says so). */
static bool tc_steps_uncount(tc_mslot* ms, int n, size_t bytes) {
  for (int i = 0; i < n; i++) {
    if (ms->steps[i].kind != RMMGO_TC_STEP_STATISTICS) {
      continue;
    }
    rmmgo_tc_stats* s = (rmmgo_tc_stats*)ms->steps[i].state;
    rmmgo_tc_hot* h = &s->hot;
    tc_stats_lock(s);
    bool ok = h->out_count >= 1 && h->out_bytes >= bytes;
    if (ok) {
      h->bytes_value -= (int64_t)bytes;
      h->count_value--;
      h->out_bytes -= bytes;
      h->out_count--;
    }
    tc_stats_unlock(s);
    if (!ok) {
      tc_steps_unfree(ms, i, bytes);
      return false;
    }
  }
  return true;
}

/* ------------------------------------------------------------ allocate */

static inline bool tc_alignment_ok(size_t a) { return a - 1 < 256 && (a & (a - 1)) == 0; }
/* A power of two: any other alignment goes to Go, which refuses it. */
static inline bool tc_pow2(size_t a) { return a != 0 && (a & (a - 1)) == 0; }

/* A miss: one crossing allocates a batch of the class; the first block is
 * the caller's, as many others as the pair's budget allows are cached. */
static rmm_status tc_refill(tc_cache* c, tc_mslot* ms, uint64_t h, uint64_t key, rmm_stream_t stream, int k,
                            size_t size, size_t bytes, size_t alignment, size_t fixed, void** ptr, bool* go) {
  uintptr_t buf[TC_BUF];
  /* How many blocks: the batch, cut to what the pair may keep. */
  int want = 1;
  tc_enter(c);
  tc_pair* p = tc_alive(ms, h) ? tc_pair_for(c, h, key, fixed) : NULL;
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
  if (!tc_alive(ms, h)) {
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
  if (!tc_alive(ms, h) || (p = tc_pair_for(c, h, key, fixed)) == NULL) {
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

rmm_status rmm_allocate(rmm_resource_t mr, rmm_stream_t stream, size_t bytes, size_t alignment, void** ptr) {
  /* The pool-based kinds: served in C by async_path.c. */
  if (RMMGO_AP_ANY() && rmmgo_ap_try_allocate(mr, stream, bytes, alignment, ptr)) {
    return RMM_SUCCESS;
  }
  if (ptr == NULL || bytes == 0 || !tc_alignment_ok(alignment) || !rmmgo_tc_enabled()) {
    return rmmgo_go_allocate(mr, stream, bytes, alignment, ptr);
  }
  uint64_t h = (uint64_t)(uintptr_t)mr;
  tc_mslot* ms = tc_mirror_find(h);
  int k;
  size_t size;
  uint64_t key;
  tc_cache* c;
  if (ms == NULL || !tc_classify(ms, bytes, &k, &size) || (c = tc_cache_mine()) == NULL ||
      ((uintptr_t)stream <= 1 ? (key = 0, 0) : tc_stream_key(c, stream, &key)) != 0) {
    return rmmgo_go_allocate(mr, stream, bytes, alignment, ptr);
  }
  int nsteps = atomic_load_explicit(&ms->nsteps, memory_order_relaxed);
  if (nsteps != 0 && !tc_steps_charge(ms, nsteps, bytes)) {
    return rmmgo_go_allocate(mr, stream, bytes, alignment, ptr); /* a limit refuses it: Go says so */
  }
  bool go = false;
  rmm_status st = tc_allocate(c, ms, h, key, stream, k, size, bytes, alignment, ptr, &go);
  if (nsteps != 0) {
    if (go || st != RMM_SUCCESS) {
      tc_steps_refund(ms, nsteps, bytes);
    } else {
      tc_steps_count(ms, nsteps, bytes);
    }
  }
  return go ? rmmgo_go_allocate(mr, stream, bytes, alignment, ptr) : st;
}

/* ---------------------------------------------------------- deallocate */

/* The free of a block the table holds; fn names the call in messages. The
 * Go path (go_path) serves everything the cache does not. */
static rmm_status tc_free(const char* fn, int which, rmm_resource_t mr, rmm_stream_t stream, void* ptr, size_t bytes,
                          bool* go_path) {
  (void)fn;
  *go_path = true;
  uint64_t h = (uint64_t)(uintptr_t)mr;
  tc_mslot* ms = tc_mirror_find(h);
  if (ms == NULL) {
    return RMM_SUCCESS;
  }
  tc_cache* c = tc_cache_mine();
  uint64_t key = 0;
  if (c == NULL || ((uintptr_t)stream > 1 && tc_stream_key(c, stream, &key) != 0)) {
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
  if (!tc_alive(ms, h)) {
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

rmm_status rmm_deallocate(rmm_resource_t mr, rmm_stream_t stream, void* ptr, size_t bytes, size_t alignment) {
  /* The pool-based kinds: served in C by async_path.c. */
  if (RMMGO_AP_ANY() && tc_pow2(alignment) && rmmgo_ap_try_deallocate(mr, stream, ptr, bytes)) {
    return RMM_SUCCESS;
  }
  if (bytes == 0 || !tc_alignment_ok(alignment) || !rmmgo_tc_enabled()) {
    return rmmgo_go_deallocate(mr, stream, ptr, bytes, alignment);
  }
  bool go_path;
  rmm_status st = tc_free("rmm_deallocate", RMMGO_TC_FREE, mr, stream, ptr, bytes, &go_path);
  return go_path ? rmmgo_go_deallocate(mr, stream, ptr, bytes, alignment) : st;
}

/* Without a stream: the caller vouches that no work uses the memory, which
 * is a free on the default stream for every resource the cache serves. */
rmm_status rmm_deallocate_sync(rmm_resource_t mr, void* ptr, size_t bytes, size_t alignment) {
  /* The pool-based kinds: served in C by async_path.c (a free on the
   * default stream, as their DeallocateSync is). */
  if (RMMGO_AP_ANY() && tc_pow2(alignment) && rmmgo_ap_try_deallocate(mr, NULL, ptr, bytes)) {
    return RMM_SUCCESS;
  }
  if (bytes == 0 || !tc_alignment_ok(alignment) || !rmmgo_tc_enabled()) {
    return rmmgo_go_deallocate_sync(mr, ptr, bytes, alignment);
  }
  bool go_path;
  rmm_status st = tc_free("rmm_deallocate_sync", RMMGO_TC_FREE_SYNC, mr, NULL, ptr, bytes, &go_path);
  return go_path ? rmmgo_go_deallocate_sync(mr, ptr, bytes, alignment) : st;
}

/* rmm_deallocate with the pointer as an integer (for Go tests, which hold
 * device addresses as uintptr). */
rmm_status rmmgo_tc_deallocate_at(rmm_resource_t mr, uintptr_t stream, uintptr_t ptr, size_t bytes, size_t alignment) {
  return rmm_deallocate(mr, (rmm_stream_t)stream, (void*)ptr, bytes, alignment);
}
