/*
 * thread_cache.c -- rmm_allocate, rmm_deallocate and rmm_deallocate_sync,
 * served from a per-thread cache of free blocks so that the common call
 * never crosses into Go (docs/thread-cache.md says why and how).
 *
 * The cache serves the handles the registry publishes in the mirror below:
 * those whose resource is a core.Cacheable one (pool, arena, fixed_size,
 * binning), with the limits that resource gave (which requests, how many
 * bytes all threads together may keep). Every other handle, and every
 * request the cache does not take (bytes == 0, alignment other than a power
 * of two <= 256, sizes above the limit), goes to the Go halves.
 *
 * Pieces:
 *   - the mirror: slot index -> the full live handle (tag, generation,
 *     index) and its limits and budget, written by Go; a handle is served
 *     only if it equals the slot's value, so forged, stale and released
 *     handles fall through to Go, which reports them;
 *   - the table: every block the C side got from Go, ptr -> {handle, size
 *     class, size the user asked for, LIVE or CACHED}, sharded, one spinlock
 *     per shard; it makes frees exact (double frees, wrong sizes, another
 *     resource's memory);
 *   - per thread, per (handle, stream key), per size class: a LIFO of free
 *     blocks, under the cache's own spinlock (the owner takes it on every
 *     call; other threads only to collect blocks);
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
 * Lock order: tc_list_mu -> tc_depot_mu -> a cache's lock -> a shard's
 * lock. No C lock is held across a call into Go (refill, drain, the stream
 * checks).
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

#include "capi_internal.h"

/* ----------------------------------------------------------- size classes */

/* Size classes: 256-byte steps up to 4 KiB (classes 0..15), then four per
 * power of two up to 4 MiB (16..55): a block is at most 1/4 larger than the
 * request it serves. (Eight per power of two halve that and left the pool
 * of the thread-churn workload about 0.05x smaller, but spread the cached
 * blocks over twice the stacks: the random medium workload missed so much
 * more often that it ran 1.5-2x slower.) A handle's limit (its resource's
 * CacheLimits, never above 4 MiB) says which classes it serves. These sizes
 * are the cache's own mechanism; what it may hold is the policy Go hands
 * it. */
enum {
  TC_SMALL_CLASSES = 16,
  TC_STEPS = 4, /* classes per power of two above 4 KiB */
  TC_CLASSES = TC_SMALL_CLASSES + 10 * TC_STEPS,
  TC_PAIRS = 16,
  TC_SHARDS = 64,
  TC_BUF = 64, /* most blocks one refill crossing takes */
  TC_MAX_DRAIN = 64
};
#define TC_SMALL_LIMIT ((size_t)4096)
#define TC_CLASS_MAX ((size_t)4 << 20)
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

/* ------------------------------------------------------------ on / off */

static atomic_int tc_state = -1; /* -1 not read yet, 0 off, 1 on */

int rmmgo_tc_enabled(void) {
  int s = atomic_load_explicit(&tc_state, memory_order_acquire);
  if (s < 0) {
    const char* v = getenv("RMMGO_THREAD_CACHE");
    s = !(v != NULL && (strcmp(v, "0") == 0 || strcasecmp(v, "off") == 0 || strcasecmp(v, "false") == 0 ||
                        strcasecmp(v, "no") == 0));
    int expected = -1;
    if (!atomic_compare_exchange_strong(&tc_state, &expected, s)) {
      s = expected;
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

static inline void tc_lock(atomic_int* l) {
  for (int spins = 0; atomic_exchange_explicit(l, 1, memory_order_acquire) != 0;) {
    while (atomic_load_explicit(l, memory_order_relaxed) != 0) {
      if (++spins < 128) {
        tc_pause();
      } else {
        sched_yield();
      }
    }
  }
}

static inline void tc_unlock(atomic_int* l) { atomic_store_explicit(l, 0, memory_order_release); }

static int64_t tc_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* --------------------------------------------------------------- mirror */

#define TC_INDEX_BITS 24
#define TC_MCHUNK_BITS 10
#define TC_MCHUNK ((size_t)1 << TC_MCHUNK_BITS)

typedef struct {
  _Atomic uint64_t handle; /* the live handle of this slot, 0 when none */
  /* The resource's core.CacheLimits, as Go last published them. */
  _Atomic size_t max_request; /* largest request served */
  _Atomic size_t block;       /* every block's size (fixed_size), else 0 */
  _Atomic size_t quantum;
  _Atomic size_t batch_bytes;
  atomic_int batch_blocks;
  _Atomic int64_t exited_wait_ns;
  _Atomic size_t budget; /* bytes all pairs of the handle may keep */
  _Atomic int64_t avail; /* the part of budget no pair or depot entry reserved */
  /* Rounding (class size - the user's size) of live blocks counted by
   * pairs that left the handle (their thread exited, or they were bound to
   * another handle); see rmmgo_tc_holding. */
  _Atomic int64_t round_gone;
  /* The handle last published here: the budget's and round_gone's owner,
   * also while it is unpublished for a moment (rmm_binning_add_bin). */
  _Atomic uint64_t last;
} tc_mslot;

static _Atomic(tc_mslot*) tc_mirror[((size_t)1 << TC_INDEX_BITS) / TC_MCHUNK];
static pthread_mutex_t tc_mirror_mu = PTHREAD_MUTEX_INITIALIZER;

static tc_mslot* tc_mslot_of(uint64_t h, bool make) {
  size_t index = (size_t)(h & (((uint64_t)1 << TC_INDEX_BITS) - 1));
  _Atomic(tc_mslot*)* cp = &tc_mirror[index >> TC_MCHUNK_BITS];
  tc_mslot* chunk = atomic_load_explicit(cp, memory_order_acquire);
  if (chunk == NULL && make) {
    chunk = atomic_load_explicit(cp, memory_order_acquire);
    if (chunk == NULL) {
      chunk = calloc(TC_MCHUNK, sizeof *chunk); /* kept for the process's life */
      if (chunk != NULL) {
        atomic_store_explicit(cp, chunk, memory_order_release);
      }
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

/* Sets the budget of s; what it adds or takes goes to avail. */
static void tc_set_budget(tc_mslot* s, size_t budget) {
  size_t old = atomic_exchange_explicit(&s->budget, budget, memory_order_relaxed);
  if (old != budget) {
    atomic_fetch_add_explicit(&s->avail, (int64_t)budget - (int64_t)old, memory_order_relaxed);
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
  atomic_store_explicit(&s->exited_wait_ns, lim->exited_wait_ns, memory_order_relaxed);
  if (atomic_load_explicit(&s->last, memory_order_relaxed) != handle) {
    /* A new handle in this slot: a budget of its own. */
    atomic_store_explicit(&s->budget, lim->budget, memory_order_relaxed);
    atomic_store_explicit(&s->avail, (int64_t)lim->budget, memory_order_relaxed);
    atomic_store_explicit(&s->round_gone, 0, memory_order_relaxed);
    atomic_store_explicit(&s->last, handle, memory_order_release);
  } else {
    /* The same handle again: what its pairs reserved stays reserved. */
    tc_set_budget(s, lim->budget);
  }
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

enum { TC_EMPTY = 0, TC_LIVE = 1, TC_CACHED = 2 };

typedef struct {
  uintptr_t ptr; /* 0: empty slot */
  uint64_t handle;
  uint32_t units; /* the user's size rounded up to 256, in units of 256 (LIVE) */
  uint16_t cls;
  uint8_t state;
} tc_ent;

typedef struct {
  atomic_int lock;
  size_t mask; /* capacity - 1; capacity 0 when slots is NULL */
  size_t n;
  tc_ent* slots;
} __attribute__((aligned(64))) tc_shard;

static tc_shard tc_table[TC_SHARDS];

static inline uint64_t tc_mix(uintptr_t p) {
  uint64_t x = (uint64_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

static inline tc_shard* tc_shard_of(uintptr_t p) { return &tc_table[tc_mix(p) & (TC_SHARDS - 1)]; }

static inline size_t tc_home(const tc_shard* s, uintptr_t p) { return (size_t)(tc_mix(p) >> 6) & s->mask; }

static tc_ent* tc_find(tc_shard* s, uintptr_t p) {
  if (s->slots == NULL) {
    return NULL;
  }
  for (size_t i = tc_home(s, p);; i = (i + 1) & s->mask) {
    tc_ent* e = &s->slots[i];
    if (e->ptr == p) {
      return e;
    }
    if (e->ptr == 0) {
      return NULL;
    }
  }
}

static bool tc_grow(tc_shard* s) {
  size_t cap = s->slots == NULL ? 256 : (s->mask + 1) * 2;
  tc_ent* slots = calloc(cap, sizeof *slots);
  if (slots == NULL) {
    return false;
  }
  tc_ent* old = s->slots;
  size_t oldcap = old == NULL ? 0 : s->mask + 1;
  s->slots = slots;
  s->mask = cap - 1;
  for (size_t i = 0; i < oldcap; i++) {
    if (old[i].ptr != 0) {
      size_t j = tc_home(s, old[i].ptr);
      while (slots[j].ptr != 0) {
        j = (j + 1) & s->mask;
      }
      slots[j] = old[i];
    }
  }
  free(old);
  return true;
}

/* The entry of p, made empty if new (ptr set, the rest zero); NULL when no
 * memory. An entry already there (a stale one: a block given back to Go by
 * a path the cache did not see) is reused. */
static tc_ent* tc_insert(tc_shard* s, uintptr_t p) {
  tc_ent* e = tc_find(s, p);
  if (e != NULL) {
    return e;
  }
  if (s->slots == NULL || (s->n + 1) * 4 > (s->mask + 1) * 3) {
    if (!tc_grow(s)) {
      return NULL;
    }
  }
  size_t i = tc_home(s, p);
  while (s->slots[i].ptr != 0) {
    i = (i + 1) & s->mask;
  }
  e = &s->slots[i];
  memset(e, 0, sizeof *e);
  e->ptr = p;
  s->n++;
  return e;
}

/* Removes e (backward-shift deletion: no tombstones). */
static void tc_erase(tc_shard* s, tc_ent* e) {
  size_t i = (size_t)(e - s->slots);
  size_t j = i;
  for (;;) {
    j = (j + 1) & s->mask;
    if (s->slots[j].ptr == 0) {
      break;
    }
    size_t k = tc_home(s, s->slots[j].ptr);
    /* Move j back to i unless its home lies cyclically in (i, j]. */
    bool in_range = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (!in_range) {
      s->slots[i] = s->slots[j];
      i = j;
    }
  }
  memset(&s->slots[i], 0, sizeof s->slots[i]);
  s->n--;
}

/* Forgets p (if the table has it). */
static void tc_forget(uintptr_t p) {
  tc_shard* s = tc_shard_of(p);
  tc_lock(&s->lock);
  tc_ent* e = tc_find(s, p);
  if (e != NULL) {
    tc_erase(s, e);
  }
  tc_unlock(&s->lock);
}

/* --------------------------------------------------------- the caches */

typedef struct {
  uintptr_t* v; /* cap entries, allocated on first push, grown by doubling */
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
  atomic_int lock;
  char pad_[64 - sizeof(atomic_int)];
  tc_pair* pairs[TC_PAIRS];
  int hint;
  /* Streams Go said were not retired, and the epoch it said so in. */
  uintptr_t memo_stream[TC_STREAM_MEMO];
  uint64_t memo_epoch[TC_STREAM_MEMO];
  int memo_next;
  struct tc_cache* prev;
  struct tc_cache* next;
} __attribute__((aligned(64))) tc_cache;

static inline size_t tc_pair_class_size(const tc_pair* p, int c) { return p->fixed != 0 ? p->fixed : tc_class_size(c); }

static pthread_mutex_t tc_list_mu = PTHREAD_MUTEX_INITIALIZER;
static tc_cache* tc_list; /* every thread's cache, under tc_list_mu */

/* The depot: pairs of threads that exited, with their blocks (CACHED in
 * the table: a free of one is still a double free) and their quota. Under
 * tc_depot_mu; tc_depot_n is its length, for a look without the lock. */
static pthread_mutex_t tc_depot_mu = PTHREAD_MUTEX_INITIALIZER;
static tc_pair** tc_depot;
static size_t tc_ndepot, tc_depot_cap;
static atomic_size_t tc_depot_n;

static __thread tc_cache* tc_mine;
static pthread_key_t tc_key;
static pthread_once_t tc_key_once = PTHREAD_ONCE_INIT;
static bool tc_key_ok;

static void tc_thread_exit(void* arg);

static void tc_key_init(void) { tc_key_ok = pthread_key_create(&tc_key, tc_thread_exit) == 0; }

static tc_cache* tc_cache_mine(void) {
  tc_cache* c = tc_mine;
  if (c != NULL) {
    return c;
  }
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
  p->quota = 0;
  p->round = 0;
}

/* The pair of (h, key) in c, bound on first use to a free (or empty) pair;
 * NULL when all TC_PAIRS hold blocks of other pairs. Under c's lock. */
static tc_pair* tc_pair_for(tc_cache* c, uint64_t h, uint64_t key, size_t fixed) {
  tc_pair* p = c->pairs[c->hint];
  if (p != NULL && p->handle == h && p->key == key) {
    return p;
  }
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
  uintptr_t* v = realloc(st->v, (size_t)nc * sizeof *v);
  if (v == NULL) {
    return false;
  }
  st->v = v;
  st->cap = nc;
  return true;
}

/* Reserves budget for p to hold `more` bytes more than it does: a quantum
 * at a time, or what is missing when the budget has less left. Under the
 * cache's lock; touches the handle's shared account only when p's quota
 * runs out. */
static bool tc_reserve(tc_mslot* ms, tc_pair* p, size_t more) {
  if (p->bytes + more <= p->quota) {
    return true;
  }
  size_t need = p->bytes + more - p->quota;
  size_t q = atomic_load_explicit(&ms->quantum, memory_order_relaxed);
  size_t tries[2] = {need > q ? need : q, need};
  for (int t = 0; t < 2; t++) {
    int64_t want = (int64_t)tries[t];
    int64_t avail = atomic_load_explicit(&ms->avail, memory_order_relaxed);
    while (avail >= want) {
      if (atomic_compare_exchange_weak_explicit(&ms->avail, &avail, avail - want, memory_order_relaxed,
                                                memory_order_relaxed)) {
        p->quota += (size_t)want;
        return true;
      }
    }
  }
  return false;
}

/* Gives back the part of p's quota above what it holds plus one quantum.
 * Under the cache's lock. */
static void tc_trim_quota(tc_mslot* ms, tc_pair* p) {
  size_t keep = p->bytes + atomic_load_explicit(&ms->quantum, memory_order_relaxed);
  if (p->quota > keep) {
    atomic_fetch_add_explicit(&ms->avail, (int64_t)(p->quota - keep), memory_order_relaxed);
    p->quota = keep;
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

/* Moves every block of p into out (grown as needed), forgetting them in
 * the table. Stops early (leaving the rest cached) if out cannot grow.
 * Returns whether it took them all. */
static bool tc_pair_take(tc_pair* p, rmmgo_tc_block** out, size_t* n, size_t* cap) {
  for (int k = 0; k < TC_CLASSES; k++) {
    tc_stack* st = &p->cls[k];
    size_t size = tc_pair_class_size(p, k);
    while (st->n > 0) {
      uintptr_t b = st->v[st->n - 1];
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
   * moved while c leaves the list: rmmgo_tc_holding, which reads round_gone
   * and walks the list under tc_list_mu, sees it in one place or the other,
   * never in neither. */
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
  /* Nobody else can reach c now: collects walk tc_list under tc_list_mu. */
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
 * Returns whether it did. */
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
  tc_lock(&c->lock);
  tc_pair* mine = tc_alive(ms, h) ? tc_pair_for(c, h, key, fixed) : NULL;
  if (mine != NULL && mine->blocks == 0) {
    int i = c->hint; /* tc_pair_for left it on mine */
    got->round = mine->round;
    mine->round = 0;
    tc_pair_unbind(mine); /* its quota back; got brings its own */
    tc_pair_free(mine);
    c->pairs[i] = got;
    tc_unlock(&c->lock);
    return true;
  }
  tc_unlock(&c->lock);
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

rmmgo_tc_block* rmmgo_tc_collect(uint64_t handle, int by_key, uint64_t key, int drop_live, size_t* n) {
  rmmgo_tc_block* out = NULL;
  size_t cnt = 0, cap = 0;
  pthread_mutex_lock(&tc_list_mu);
  for (tc_cache* c = tc_list; c != NULL; c = c->next) {
    tc_lock(&c->lock);
    for (int i = 0; i < TC_PAIRS; i++) {
      tc_pair* p = c->pairs[i];
      if (p == NULL || p->handle == 0 || (handle != 0 && p->handle != handle) || (by_key && p->key != key)) {
        continue;
      }
      if (p->blocks > 0) {
        tc_pair_take(p, &out, &cnt, &cap);
      }
      /* Whatever it reserved goes back: the blocks are on their way. */
      tc_mslot* ms = tc_account(p->handle);
      if (ms != NULL) {
        atomic_fetch_add_explicit(&ms->avail, (int64_t)(p->quota - p->bytes), memory_order_relaxed);
      }
      p->quota = p->bytes; /* 0 unless the array could not grow */
    }
    tc_unlock(&c->lock);
  }
  pthread_mutex_lock(&tc_depot_mu);
  for (size_t i = 0; i < tc_ndepot;) {
    tc_pair* p = tc_depot[i];
    if ((handle != 0 && p->handle != handle) || (by_key && p->key != key)) {
      i++;
      continue;
    }
    if (!tc_pair_take(p, &out, &cnt, &cap)) {
      break;
    }
    tc_depot[i] = tc_depot[--tc_ndepot];
    tc_unreserve(p->handle, p->quota);
    tc_pair_free(p);
  }
  atomic_store(&tc_depot_n, tc_ndepot);
  pthread_mutex_unlock(&tc_depot_mu);
  pthread_mutex_unlock(&tc_list_mu);
  if (drop_live && handle != 0) {
    for (int i = 0; i < TC_SHARDS; i++) {
      tc_shard* s = &tc_table[i];
      tc_lock(&s->lock);
      for (size_t j = 0; s->slots != NULL && j <= s->mask;) {
        if (s->slots[j].ptr != 0 && s->slots[j].handle == handle) {
          tc_erase(s, &s->slots[j]); /* may move a later entry into j: look again */
        } else {
          j++;
        }
      }
      tc_unlock(&s->lock);
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
  pthread_mutex_lock(&tc_list_mu);
  /* Read under tc_list_mu: an exiting thread moves its pairs' rounding
   * here as its cache leaves the list, under the same lock. */
  tc_mslot* ms = tc_account(handle);
  if (ms != NULL) {
    total += atomic_load_explicit(&ms->round_gone, memory_order_relaxed);
  }
  for (tc_cache* c = tc_list; c != NULL; c = c->next) {
    tc_lock(&c->lock);
    for (int i = 0; i < TC_PAIRS; i++) {
      tc_pair* p = c->pairs[i];
      if (p != NULL && p->handle == handle) {
        total += (int64_t)p->bytes + p->round;
      }
    }
    tc_unlock(&c->lock);
  }
  pthread_mutex_lock(&tc_depot_mu);
  for (size_t i = 0; i < tc_ndepot; i++) {
    if (tc_depot[i]->handle == handle) {
      total += (int64_t)tc_depot[i]->bytes;
    }
  }
  pthread_mutex_unlock(&tc_depot_mu);
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
  pthread_mutex_lock(&tc_list_mu);
  for (tc_cache* x = tc_list; x != NULL; x = x->next) {
    tc_lock(&x->lock);
    for (int i = 0; i < TC_PAIRS; i++) {
      if (x->pairs[i] != NULL && x->pairs[i]->handle == handle) {
        c += x->pairs[i]->bytes;
      }
    }
    tc_unlock(&x->lock);
  }
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
    tc_lock(&s->lock);
    for (size_t j = 0; s->slots != NULL && j <= s->mask; j++) {
      if (s->slots[j].ptr != 0) {
        if (s->slots[j].state == TC_LIVE) {
          l++;
        } else {
          c++;
        }
      }
    }
    tc_unlock(&s->lock);
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

/* ------------------------------------------------------------ crossings */

/* A call into Go (refill or drain) that also gives back what the depot
 * holds past its wait: one crossing for both. */
static rmm_status tc_cross(bool refill, rmmgo_tc_call* call, tc_mslot* ms) {
  rmmgo_tc_block* give = NULL;
  size_t ngive = 0, cap = 0;
  tc_depot_expire(&give, &ngive, &cap);
  call->give = give;
  call->ngive = ngive;
  call->budget = 0;
  rmm_status st = refill ? rmmgo_go_refill(call) : rmmgo_go_drain(call);
  if (ngive > 0) {
    tc_release_given(give, ngive);
  }
  free(give);
  if (call->budget != 0 && tc_alive(ms, call->handle)) {
    tc_set_budget(ms, call->budget);
  }
  return st;
}

/* ---------------------------------------------------------- stream checks */

/* Whether the stream may be served: not one rmm_stream_destroy retired (Go
 * knows; a thread asks once per stream and epoch), and its key. Nonzero:
 * the caller goes to Go, which reports what is wrong. */
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

/* ------------------------------------------------------------ allocate */

static inline bool tc_alignment_ok(size_t a) { return a - 1 < 256 && (a & (a - 1)) == 0; }

/* A miss: one crossing allocates a batch of the class; the first block is
 * the caller's, as many others as the pair's budget allows are cached. */
static rmm_status tc_refill(tc_cache* c, tc_mslot* ms, uint64_t h, uint64_t key, rmm_stream_t stream, int k,
                            size_t size, size_t bytes, size_t alignment, size_t fixed, void** ptr) {
  uintptr_t buf[TC_BUF];
  /* How many blocks: the batch, cut to what the pair may keep. */
  int want = 1;
  tc_lock(&c->lock);
  tc_pair* p = tc_alive(ms, h) ? tc_pair_for(c, h, key, fixed) : NULL;
  if (p != NULL) {
    size_t bb = atomic_load_explicit(&ms->batch_bytes, memory_order_relaxed);
    int bn = atomic_load_explicit(&ms->batch_blocks, memory_order_relaxed);
    size_t extra = (bb > size ? bb / size : 1) - 1;
    if (extra > (size_t)(bn - 1)) {
      extra = (size_t)(bn - 1);
    }
    tc_trim_quota(ms, p);
    while (extra > 0 && !tc_reserve(ms, p, extra * size)) {
      extra /= 2;
    }
    want = 1 + (int)extra;
  }
  tc_unlock(&c->lock);
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
  uintptr_t back[TC_BUF];
  int nback = 0;
  bool tracked = false;
  tc_lock(&c->lock);
  if (!tc_alive(ms, h)) {
    /* Released during the call (a race in the caller): give it all back. */
    tc_unlock(&c->lock);
    rmmgo_tc_call d = {.handle = h, .stream = (uintptr_t)stream, .size = size, .ptrs = buf, .n = got};
    (void)rmmgo_go_drain(&d);
    return tc_fail(RMM_ERROR_INVALID_HANDLE, "rmm_allocate: invalid handle: %#" PRIx64 " was released during the call", h);
  }
  p = tc_pair_for(c, h, key, fixed);
  tc_stack* stk = p != NULL ? &p->cls[k] : NULL;
  size_t units = (bytes + 255) >> 8;
  for (int i = 0; i < got; i++) {
    uintptr_t b = buf[i];
    bool keep = i == 0 || (stk != NULL && p->bytes + size <= p->quota && tc_stack_room(stk));
    tc_ent* e = NULL;
    if (keep) {
      tc_shard* s = tc_shard_of(b);
      tc_lock(&s->lock);
      e = tc_insert(s, b);
      if (e != NULL) {
        e->handle = h;
        e->cls = (uint16_t)k;
        e->state = i == 0 ? TC_LIVE : TC_CACHED;
        e->units = i == 0 ? (uint32_t)units : 0;
      }
      tc_unlock(&s->lock);
    }
    if (e == NULL) {
      back[nback++] = b; /* untracked: goes back to Go */
      continue;
    }
    if (i == 0) {
      tracked = true;
      if (p != NULL) {
        p->round += (int64_t)size - (int64_t)(units << 8);
      } else {
        atomic_fetch_add_explicit(&ms->round_gone, (int64_t)size - (int64_t)(units << 8), memory_order_relaxed);
      }
    } else {
      stk->v[stk->n++] = b;
      p->bytes += size;
      p->blocks++;
    }
  }
  if (p != NULL) {
    tc_trim_quota(ms, p);
  }
  tc_unlock(&c->lock);
  if (nback > 0) {
    /* Host memory ran out (the table or a stack could not grow). */
    rmmgo_tc_call d = {.handle = h, .stream = (uintptr_t)stream, .size = size, .ptrs = back, .n = nback};
    (void)rmmgo_go_drain(&d);
  }
  if (!tracked) {
    /* No host memory to track it: serve this call uncached. */
    return rmmgo_go_allocate((rmm_resource_t)(uintptr_t)h, stream, bytes, alignment, ptr);
  }
  *ptr = (void*)buf[0];
  return RMM_SUCCESS;
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
      tc_stream_key(c, stream, &key) != 0) {
    return rmmgo_go_allocate(mr, stream, bytes, alignment, ptr);
  }
  size_t fixed = atomic_load_explicit(&ms->block, memory_order_relaxed);
  bool adopted = false;
again:
  tc_lock(&c->lock);
  tc_pair* p = NULL;
  if (!tc_alive(ms, h) || (p = tc_pair_for(c, h, key, fixed)) == NULL) {
    tc_unlock(&c->lock);
    return rmmgo_go_allocate(mr, stream, bytes, alignment, ptr);
  }
  tc_stack* st = &p->cls[k];
  if (st->n > 0) {
    uintptr_t b = st->v[--st->n];
    size_t units = (bytes + 255) >> 8;
    p->bytes -= size;
    p->blocks--;
    p->round += (int64_t)size - (int64_t)(units << 8);
    tc_shard* s = tc_shard_of(b);
    tc_lock(&s->lock);
    tc_ent* e = tc_find(s, b);
    if (e != NULL) {
      e->state = TC_LIVE;
      e->units = (uint32_t)units;
    }
    tc_unlock(&s->lock);
    tc_unlock(&c->lock);
    if (e == NULL) {
      /* Never happens: a cached block is always in the table. */
      return tc_fail(RMM_ERROR_INTERNAL, "rmm_allocate: internal error (a bug in rmmgo): cached block %#" PRIxPTR " is not in the table", b);
    }
    *ptr = (void*)b;
    return RMM_SUCCESS;
  }
  tc_unlock(&c->lock);
  /* Before a crossing: what an exited thread left on this handle and
   * stream (once per call). */
  if (!adopted && atomic_load_explicit(&tc_depot_n, memory_order_relaxed) != 0) {
    adopted = true;
    if (tc_adopt(c, ms, h, key, fixed)) {
      goto again;
    }
  }
  return tc_refill(c, ms, h, key, stream, k, size, bytes, alignment, fixed, ptr);
}

/* ---------------------------------------------------------- deallocate */

/* The free of a block the table holds; fn names the call in messages. The
 * Go path (go_path) serves everything the cache does not. */
static rmm_status tc_free(const char* fn, int which, rmm_resource_t mr, rmm_stream_t stream, void* ptr, size_t bytes,
                          bool* go_path) {
  *go_path = true;
  uint64_t h = (uint64_t)(uintptr_t)mr;
  tc_mslot* ms = tc_mirror_find(h);
  if (ms == NULL) {
    return RMM_SUCCESS;
  }
  tc_cache* c = tc_cache_mine();
  uint64_t key;
  if (c == NULL || tc_stream_key(c, stream, &key) != 0) {
    return RMM_SUCCESS;
  }
  if (ptr == NULL) {
    *go_path = false;
    return RMM_SUCCESS;
  }
  uintptr_t b = (uintptr_t)ptr;
  size_t want = bytes > (SIZE_MAX - 255) ? SIZE_MAX : (bytes + 255) & ~(size_t)255;
  bool verdict = false; /* a size mismatch the resource has accepted */
recheck:
  tc_lock(&c->lock);
  if (!tc_alive(ms, h)) {
    tc_unlock(&c->lock);
    return RMM_SUCCESS;
  }
  tc_shard* s = tc_shard_of(b);
  tc_lock(&s->lock);
  tc_ent* e = tc_find(s, b);
  if (e == NULL) {
    tc_unlock(&s->lock);
    tc_unlock(&c->lock);
    return RMM_SUCCESS; /* not from the cache: Go knows it, or says it is bogus */
  }
  *go_path = false;
  int why = e->handle != h ? RMMGO_TC_FOREIGN : e->state != TC_LIVE ? RMMGO_TC_NOT_LIVE : RMMGO_TC_OK;
  size_t had = (size_t)e->units * 256;
  if (why == RMMGO_TC_OK && want != had && !verdict) {
    why = RMMGO_TC_SIZE;
  }
  if (why != RMMGO_TC_OK) {
    tc_unlock(&s->lock);
    tc_unlock(&c->lock);
    /* Go writes the message, as the resource would (a size that differs
     * may still be one the resource takes: fixed_size, a binning bin). */
    rmm_status st = rmmgo_go_free_check(h, which, b, bytes, had, why);
    if (st == RMM_SUCCESS && why == RMMGO_TC_SIZE) {
      verdict = true;
      goto recheck;
    }
    return st;
  }
  int k = e->cls;
  e->state = TC_CACHED;
  tc_unlock(&s->lock);

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
      uint32_t m = st->n / 2 > 0 ? st->n / 2 : 1;
      if (m > TC_MAX_DRAIN - 1) {
        m = TC_MAX_DRAIN - 1;
      }
      st->n -= m;
      memcpy(out, st->v + st->n, m * sizeof *out);
      p->bytes -= m * size;
      p->blocks -= m;
      nout = (int)m;
      if (p->bytes + size <= p->quota) {
        st->v[st->n++] = b;
        p->bytes += size;
        p->blocks++;
      } else {
        out[nout++] = b;
      }
    }
  } else {
    st->v[st->n++] = b;
    p->bytes += size;
    p->blocks++;
  }
  for (int i = 0; i < nout; i++) {
    tc_forget(out[i]);
  }
  if (p != NULL && nout > 0) {
    tc_trim_quota(ms, p);
  }
  tc_unlock(&c->lock);
  if (nout == 0) {
    return RMM_SUCCESS;
  }
  /* The blocks were freed on this very stream (the pair's key is its key). */
  rmmgo_tc_call call = {.handle = h, .stream = (uintptr_t)stream, .size = size, .ptrs = out, .n = nout};
  return tc_cross(false, &call, ms);
}

rmm_status rmm_deallocate(rmm_resource_t mr, rmm_stream_t stream, void* ptr, size_t bytes, size_t alignment) {
  /* The pool-based kinds: served in C by async_path.c. */
  if (RMMGO_AP_ANY() && rmmgo_ap_try_deallocate(mr, stream, ptr, bytes)) {
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
  if (RMMGO_AP_ANY() && rmmgo_ap_try_deallocate(mr, NULL, ptr, bytes)) {
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
