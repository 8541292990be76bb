/*
 * thread_cache.c -- rmm_allocate, rmm_deallocate and rmm_deallocate_sync,
 * served from a per-thread cache of free blocks so that the common call
 * never crosses into Go (docs/thread-cache.md says why and how).
 *
 * The cache serves handles whose resource is a bare pool, arena, fixed_size
 * or binning resource (the registry publishes those in the mirror below);
 * every other handle, and every request the cache does not take (bytes == 0,
 * alignment other than a power of two <= 256, sizes above the largest
 * class), goes to the Go halves as before.
 *
 * Pieces:
 *   - the mirror: slot index -> the full live handle (tag, generation,
 *     index), written by Go; a handle is served only if it equals the slot's
 *     value, so forged, stale and released handles fall through to Go, which
 *     reports them;
 *   - the table: every block the C side got from Go, ptr -> {handle, size
 *     class, size the user asked for, LIVE or CACHED}, sharded, one spinlock
 *     per shard; it makes frees exact (double frees, wrong sizes, another
 *     resource's memory);
 *   - per thread, per (handle, stream key), per size class: a LIFO of free
 *     blocks, under the cache's own spinlock (the owner takes it on every
 *     call; other threads only to flush);
 *   - the orphan list: blocks of threads that exited, given back by a later
 *     crossing (a pthread key destructor must not enter Go).
 *
 * Lock order: tc_list_mu -> a cache's lock -> a shard's lock. No C lock is
 * held across a call into Go that can come back for it (refill, drain and
 * the flushes run with no cache lock held; the stream-key call of the
 * simulated backend takes none of these locks).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capi_internal.h"

/* ------------------------------------------------------------- policy */

/* Size classes: 256-byte steps up to 4 KiB (classes 0..15), then four per
 * power of two up to 4 MiB (16..55). Larger requests are not cached. */
enum { TC_SMALL_CLASSES = 16, TC_CLASSES = 56, TC_PAIRS = 16, TC_SHARDS = 64, TC_MAX_BATCH = 32, TC_MAX_DRAIN = 64 };
#define TC_SMALL_LIMIT ((size_t)4096)
#define TC_MAX_SIZE ((size_t)4 << 20)
/* A refill takes at most this many bytes (and TC_MAX_BATCH blocks). */
#define TC_REFILL_BYTES ((size_t)1 << 20)
/* What one (thread, handle, stream) may cache: the handle's share of an
 * eighth of its resource's size (its capacity, which Go refreshes on every
 * refill), split among the pairs bound to the handle, so that all threads
 * together park at most about an eighth of the resource; at least
 * TC_PAIR_MIN_BYTES. An arena's pairs hold at most 1/64 of it each (its
 * per-thread arenas and superblocks make parked memory costlier there). */
#define TC_PAIR_MIN_BYTES ((size_t)8 << 20)
/* A class's stack grows by doubling up to this many blocks. */
#define TC_STACK_MAX ((uint32_t)1 << 24)
/* Stream keys of streams other than the legacy default stream. */
#define TC_KEY_NONDEFAULT ((uint64_t)1 << 63)

static int tc_class_of(size_t bytes) {
  if (bytes <= TC_SMALL_LIMIT) {
    return (int)((bytes + 255) / 256) - 1;
  }
  unsigned k = 63u - (unsigned)__builtin_clzll((unsigned long long)(bytes - 1)); /* 2^k < bytes <= 2^(k+1) */
  size_t base = (size_t)1 << k, step = base >> 2;
  size_t j = (bytes - base + step - 1) / step; /* 1..4 */
  return TC_SMALL_CLASSES + (int)(k - 12) * 4 + (int)(j - 1);
}

static size_t tc_class_size(int c) {
  if (c < TC_SMALL_CLASSES) {
    return (size_t)(c + 1) * 256;
  }
  unsigned k = 12u + (unsigned)(c - TC_SMALL_CLASSES) / 4;
  size_t j = (size_t)((c - TC_SMALL_CLASSES) % 4) + 1;
  return ((size_t)1 << k) + j * ((size_t)1 << (k - 2));
}

static int tc_batch(size_t size, size_t pair_bytes) {
  size_t b = (TC_REFILL_BYTES < pair_bytes ? TC_REFILL_BYTES : pair_bytes) / size;
  return b < 1 ? 1 : b > TC_MAX_BATCH ? TC_MAX_BATCH : (int)b;
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

/* --------------------------------------------------------------- mirror */

#define TC_INDEX_BITS 24
#define TC_MCHUNK_BITS 10
#define TC_MCHUNK ((size_t)1 << TC_MCHUNK_BITS)

typedef struct {
  _Atomic uint64_t handle; /* the live handle of this slot, 0 when none */
  atomic_int kind;
  _Atomic size_t limit;
  _Atomic size_t capacity; /* the resource's size as Go last saw it; 0: unknown */
  atomic_int pairs;        /* thread pairs bound to the handle */
} tc_mslot;

/* The bytes one pair of s may cache (see TC_PAIR_MIN_BYTES). */
static size_t tc_pair_bytes(tc_mslot* s) {
  size_t cap = atomic_load_explicit(&s->capacity, memory_order_relaxed);
  if (atomic_load_explicit(&s->kind, memory_order_relaxed) == RMMGO_TC_ARENA) {
    return cap / 64 < TC_PAIR_MIN_BYTES ? cap / 64 : TC_PAIR_MIN_BYTES;
  }
  int n = atomic_load_explicit(&s->pairs, memory_order_relaxed);
  size_t share = cap / 8 / (size_t)(n > 1 ? n : 1);
  return share > TC_PAIR_MIN_BYTES ? share : TC_PAIR_MIN_BYTES;
}

static _Atomic(tc_mslot*) tc_mirror[((size_t)1 << TC_INDEX_BITS) / TC_MCHUNK];
static pthread_mutex_t tc_mirror_mu = PTHREAD_MUTEX_INITIALIZER;

static tc_mslot* tc_mslot_of(uint64_t h, bool make) {
  size_t index = (size_t)(h & (((uint64_t)1 << TC_INDEX_BITS) - 1));
  _Atomic(tc_mslot*)* cp = &tc_mirror[index >> TC_MCHUNK_BITS];
  tc_mslot* chunk = atomic_load_explicit(cp, memory_order_acquire);
  if (chunk == NULL && make) {
    pthread_mutex_lock(&tc_mirror_mu);
    chunk = atomic_load_explicit(cp, memory_order_acquire);
    if (chunk == NULL) {
      chunk = calloc(TC_MCHUNK, sizeof *chunk); /* kept for the process's life */
      if (chunk != NULL) {
        atomic_store_explicit(cp, chunk, memory_order_release);
      }
    }
    pthread_mutex_unlock(&tc_mirror_mu);
  }
  return chunk == NULL ? NULL : &chunk[index & (TC_MCHUNK - 1)];
}

void rmmgo_tc_publish(uint64_t handle, int kind, size_t limit, size_t capacity) {
  tc_mslot* s = tc_mslot_of(handle, true);
  if (s == NULL || handle == 0) {
    return; /* no memory for the mirror: the handle is simply not cached */
  }
  atomic_store_explicit(&s->kind, kind, memory_order_relaxed);
  atomic_store_explicit(&s->limit, limit, memory_order_relaxed);
  atomic_store_explicit(&s->capacity, capacity, memory_order_relaxed);
  atomic_store_explicit(&s->pairs, 0, memory_order_relaxed);
  atomic_store_explicit(&s->handle, handle, memory_order_seq_cst);
}

void rmmgo_tc_unpublish(uint64_t handle) {
  tc_mslot* s = tc_mslot_of(handle, false);
  if (s == NULL) {
    return;
  }
  uint64_t expected = handle;
  atomic_compare_exchange_strong(&s->handle, &expected, 0);
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

void rmmgo_tc_set_capacity(uint64_t handle, size_t capacity) {
  tc_mslot* s = tc_mirror_find(handle);
  if (s != NULL) {
    atomic_store_explicit(&s->capacity, capacity, memory_order_relaxed);
  }
}


static inline bool tc_alive(tc_mslot* s, uint64_t h) {
  return atomic_load_explicit(&s->handle, memory_order_seq_cst) == h;
}

/* The class and class size of a request of bytes to the handle of slot s;
 * false when the cache does not take it. */
static bool tc_classify(tc_mslot* s, size_t bytes, int* cls, size_t* size) {
  int kind = atomic_load_explicit(&s->kind, memory_order_relaxed);
  size_t limit = atomic_load_explicit(&s->limit, memory_order_relaxed);
  if (kind == RMMGO_TC_FIXED_SIZE) {
    /* One class: the block size. */
    if (bytes > limit || limit > TC_MAX_SIZE || limit == 0) {
      return false;
    }
    *cls = 0;
    *size = limit;
    return true;
  }
  if (bytes > TC_MAX_SIZE) {
    return false;
  }
  int c = tc_class_of(bytes);
  size_t sz = tc_class_size(c);
  /* binning: only sizes a bin serves (the upstream's are not cached). */
  if (kind == RMMGO_TC_BINNING && sz > limit) {
    return false;
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

void rmmgo_tc_set_stream_funcs(uintptr_t get_id, uintptr_t get_last_error) {
  atomic_store(&tc_get_last_error, get_last_error);
  atomic_store(&tc_get_id, get_id);
}

/* The cache key of stream, as core computes it: 0 for the legacy default
 * stream (0 and cudaStreamLegacy), else the CUDA stream id (never the
 * handle, which CUDA may reuse after a destroy). Nonzero when the stream is
 * not known: the caller then goes to Go, which reports it. */
static int tc_stream_key(rmm_stream_t stream, uint64_t* key) {
  uintptr_t s = (uintptr_t)stream;
  if (s == 0 || s == 1) {
    *key = 0;
    return 0;
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
    *key = (uint64_t)id | TC_KEY_NONDEFAULT;
    return 0;
  }
  return rmmgo_go_stream_key(s, key);
}

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
  size_t fixed; /* a fixed_size handle's block size (its one class), else 0 */
  size_t bytes; /* cached bytes */
  size_t blocks;
  tc_stack cls[TC_CLASSES];
} tc_pair;

typedef struct tc_cache {
  atomic_int lock;
  char pad_[64 - sizeof(atomic_int)];
  tc_pair* pairs[TC_PAIRS];
  int hint;
  struct tc_cache* prev;
  struct tc_cache* next;
} __attribute__((aligned(64))) tc_cache;

static inline size_t tc_pair_class_size(const tc_pair* p, int c) { return p->fixed != 0 ? p->fixed : tc_class_size(c); }

static pthread_mutex_t tc_list_mu = PTHREAD_MUTEX_INITIALIZER;
static tc_cache* tc_list; /* every thread's cache, under tc_list_mu */

/* Blocks of threads that exited, under tc_list_mu; their table entries stay
 * CACHED until they are given back. */
static rmmgo_tc_block* tc_orphans;
static size_t tc_norphans, tc_orphans_cap;
static atomic_size_t tc_orphan_count;
/* When a thread last left blocks there (CLOCK_MONOTONIC, ns). Orphans are
 * given back to Go only once none arrived for TC_ORPHAN_WAIT_NS: until then
 * a new thread on the same handle and stream adopts them (a thread pool
 * that replaces its threads keeps its caches). */
static _Atomic int64_t tc_orphaned_ns;
#define TC_ORPHAN_WAIT_NS ((int64_t)100 * 1000 * 1000)

static int64_t tc_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

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
  if (p->handle != 0 && p->handle != h) {
    tc_mslot* old = tc_mirror_find(p->handle);
    if (old != NULL) {
      atomic_fetch_sub_explicit(&old->pairs, 1, memory_order_relaxed);
    }
  }
  if (p->handle != h) {
    tc_mslot* ms = tc_mirror_find(h);
    if (ms != NULL) {
      atomic_fetch_add_explicit(&ms->pairs, 1, memory_order_relaxed);
    }
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

/* Moves every block of pair p into out (grown as needed), forgetting them
 * in the table. Stops early (leaving the rest cached) if out cannot grow. */
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

static void tc_pair_take(tc_pair* p, rmmgo_tc_block** out, size_t* n, size_t* cap, bool forget) {
  for (int k = 0; k < TC_CLASSES; k++) {
    tc_stack* st = &p->cls[k];
    size_t size = tc_pair_class_size(p, k);
    while (st->n > 0) {
      uintptr_t b = st->v[st->n - 1];
      if (!tc_out_push(out, n, cap, p->handle, p->key, b, size)) {
        return;
      }
      st->n--;
      p->bytes -= size;
      p->blocks--;
      if (forget) {
        tc_forget(b);
      }
    }
  }
}

/* The key's destructor: runs as the thread exits, must not enter Go. Its
 * blocks go to the orphan list, given back by a later crossing. */
static void tc_thread_exit(void* arg) {
  tc_cache* c = arg;
  tc_mine = NULL;
  pthread_mutex_lock(&tc_list_mu);
  tc_lock(&c->lock);
  for (int i = 0; i < TC_PAIRS; i++) {
    tc_pair* p = c->pairs[i];
    if (p != NULL) {
      /* Table entries stay CACHED: a free of one is still a double free. */
      tc_pair_take(p, &tc_orphans, &tc_norphans, &tc_orphans_cap, false);
      tc_mslot* ms = p->handle != 0 ? tc_mirror_find(p->handle) : NULL;
      if (ms != NULL) {
        atomic_fetch_sub_explicit(&ms->pairs, 1, memory_order_relaxed);
      }
    }
  }
  atomic_store(&tc_orphan_count, tc_norphans);
  atomic_store(&tc_orphaned_ns, tc_now_ns());
  if (c->prev != NULL) {
    c->prev->next = c->next;
  } else {
    tc_list = c->next;
  }
  if (c->next != NULL) {
    c->next->prev = c->prev;
  }
  tc_unlock(&c->lock);
  pthread_mutex_unlock(&tc_list_mu);
  /* Blocks that did not fit the orphan list (no memory) are lost to the
   * cache; their resource still counts them until it is closed. */
  for (int i = 0; i < TC_PAIRS; i++) {
    tc_pair* p = c->pairs[i];
    if (p != NULL) {
      for (int k = 0; k < TC_CLASSES; k++) {
        free(p->cls[k].v);
      }
      free(p);
    }
  }
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

/* -------------------------------------------------------------- flushes */

rmmgo_tc_block* rmmgo_tc_collect(uint64_t handle, int by_key, uint64_t key, int drop_live, size_t* n) {
  rmmgo_tc_block* out = NULL;
  size_t cnt = 0, cap = 0;
  pthread_mutex_lock(&tc_list_mu);
  for (tc_cache* c = tc_list; c != NULL; c = c->next) {
    tc_lock(&c->lock);
    for (int i = 0; i < TC_PAIRS; i++) {
      tc_pair* p = c->pairs[i];
      if (p == NULL || p->blocks == 0 || (handle != 0 && p->handle != handle) || (by_key && p->key != key)) {
        continue;
      }
      tc_pair_take(p, &out, &cnt, &cap, true);
    }
    tc_unlock(&c->lock);
  }
  if (!by_key) {
    size_t kept = 0;
    for (size_t i = 0; i < tc_norphans; i++) {
      rmmgo_tc_block b = tc_orphans[i];
      if ((handle == 0 || b.handle == handle) && tc_out_push(&out, &cnt, &cap, b.handle, b.key, b.ptr, b.size)) {
        tc_forget(b.ptr);
      } else {
        tc_orphans[kept++] = b;
      }
    }
    tc_norphans = kept;
    atomic_store(&tc_orphan_count, kept);
  }
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

rmmgo_tc_block* rmmgo_tc_take_orphans(size_t* n) {
  pthread_mutex_lock(&tc_list_mu);
  rmmgo_tc_block* out = NULL;
  size_t cnt = tc_norphans;
  if (cnt > 0) {
    out = tc_orphans;
    for (size_t i = 0; i < cnt; i++) {
      tc_forget(out[i].ptr);
    }
    tc_orphans = NULL;
    tc_norphans = tc_orphans_cap = 0;
    atomic_store(&tc_orphan_count, 0);
  }
  pthread_mutex_unlock(&tc_list_mu);
  *n = cnt;
  return out;
}

void rmmgo_tc_handle_bytes(uint64_t handle, size_t* cached, size_t* rounding) {
  size_t c = 0, r = 0;
  for (int i = 0; i < TC_SHARDS; i++) {
    tc_shard* s = &tc_table[i];
    tc_lock(&s->lock);
    for (size_t j = 0; s->slots != NULL && j <= s->mask; j++) {
      tc_ent* e = &s->slots[j];
      if (e->ptr == 0 || e->handle != handle) {
        continue;
      }
      size_t size = tc_class_size(e->cls);
      if (e->state == TC_CACHED) {
        c += size;
      } else if ((size_t)e->units * 256 < size) {
        r += size - (size_t)e->units * 256;
      }
    }
    tc_unlock(&s->lock);
  }
  *cached = c;
  *rounding = r;
}

void rmmgo_tc_counts(size_t* live, size_t* cached, size_t* orphans, size_t* caches) {
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
  *orphans = tc_norphans;
  pthread_mutex_unlock(&tc_list_mu);
  *live = l;
  *cached = c;
  *caches = k;
}

/* ------------------------------------------------------------- messages */

static rmm_status tc_fail(rmm_status st, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

#include <stdarg.h>

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

static const char* tc_kind_name(int kind) {
  switch (kind) {
    case RMMGO_TC_POOL: return "pool";
    case RMMGO_TC_ARENA: return "arena";
    case RMMGO_TC_FIXED_SIZE: return "fixed_size";
    case RMMGO_TC_BINNING: return "binning";
  }
  return "resource";
}

/* ------------------------------------------------------------ allocate */

static inline bool tc_alignment_ok(size_t a) { return a - 1 < 256 && (a & (a - 1)) == 0; }

static inline void tc_drain_orphans_if_any(void) {
  if (atomic_load_explicit(&tc_orphan_count, memory_order_relaxed) != 0 &&
      tc_now_ns() - atomic_load_explicit(&tc_orphaned_ns, memory_order_relaxed) > TC_ORPHAN_WAIT_NS) {
    rmmgo_go_drain_orphans();
  }
}

/* A miss with orphans about: takes the orphans of (h, key) -- blocks an
 * exited thread freed on this very stream (its key: the legacy default
 * stream, or a created stream, whose ids are never reused), so later work on
 * the stream may reuse them at once -- into the caller's pair, up to its
 * share. Their table entries are CACHED already. What does not fit goes
 * back to the orphan list. Takes no lock while holding another. Returns
 * whether it adopted anything. */
static bool tc_adopt(tc_cache* c, tc_mslot* ms, uint64_t h, uint64_t key, size_t fixed) {
  rmmgo_tc_block* mine = NULL;
  size_t n = 0, cap = 0;
  pthread_mutex_lock(&tc_list_mu);
  for (size_t i = 0; i < tc_norphans;) {
    rmmgo_tc_block b = tc_orphans[i];
    if (b.handle == h && b.key == key && tc_out_push(&mine, &n, &cap, b.handle, b.key, b.ptr, b.size)) {
      tc_orphans[i] = tc_orphans[--tc_norphans];
    } else {
      i++;
    }
  }
  atomic_store(&tc_orphan_count, tc_norphans);
  pthread_mutex_unlock(&tc_list_mu);
  if (n == 0) {
    free(mine);
    return false;
  }
  size_t back = 0, adopted = 0;
  tc_lock(&c->lock);
  tc_pair* p = tc_alive(ms, h) ? tc_pair_for(c, h, key, fixed) : NULL;
  size_t limit = p != NULL ? tc_pair_bytes(ms) : 0;
  for (size_t i = 0; i < n; i++) {
    int k;
    size_t size;
    tc_stack* st = NULL;
    if (p != NULL && tc_classify(ms, mine[i].size, &k, &size) && size == mine[i].size) {
      st = &p->cls[k];
    }
    if (st != NULL && p->bytes + size <= limit && tc_stack_room(st)) {
      st->v[st->n++] = mine[i].ptr;
      p->bytes += size;
      p->blocks++;
      adopted++;
    } else {
      mine[back++] = mine[i];
    }
  }
  tc_unlock(&c->lock);
  if (back > 0) {
    pthread_mutex_lock(&tc_list_mu);
    for (size_t i = 0; i < back; i++) {
      if (!tc_out_push(&tc_orphans, &tc_norphans, &tc_orphans_cap, mine[i].handle, mine[i].key, mine[i].ptr,
                       mine[i].size)) {
        /* No host memory: the block stays allocated in its resource
         * until it closes (and its table entry until then). */
      }
    }
    atomic_store(&tc_orphan_count, tc_norphans);
    pthread_mutex_unlock(&tc_list_mu);
  }
  free(mine);
  return adopted > 0;
}

/* A miss: one crossing allocates a batch of the class; the first block is
 * the caller's, the rest are cached. */
static rmm_status tc_refill(tc_cache* c, tc_mslot* ms, uint64_t h, uint64_t key, rmm_stream_t stream, int k,
                            size_t size, size_t bytes, size_t alignment, void** ptr) {
  uintptr_t buf[TC_MAX_BATCH];
  int got = 0;
  tc_drain_orphans_if_any();
  rmm_status st = rmmgo_go_refill((uintptr_t)h, (uintptr_t)stream, size, bytes, alignment,
                                   tc_batch(size, tc_pair_bytes(ms)), buf, &got);
  if (st != RMM_SUCCESS) {
    return st;
  }
  if (got < 1 || got > TC_MAX_BATCH) {
    return tc_fail(RMM_ERROR_INTERNAL, "rmm_allocate(%zu bytes, alignment %zu): internal error (a bug in rmmgo): refill gave %d blocks",
                   bytes, alignment, got);
  }
  int kind = atomic_load_explicit(&ms->kind, memory_order_relaxed);
  size_t fixed = kind == RMMGO_TC_FIXED_SIZE ? size : 0;
  size_t pair_bytes = tc_pair_bytes(ms);
  uintptr_t back[TC_MAX_BATCH];
  int nback = 0;
  bool tracked = false;
  tc_lock(&c->lock);
  if (!tc_alive(ms, h)) {
    /* Released during the call (a race in the caller): give it all back. */
    tc_unlock(&c->lock);
    (void)rmmgo_go_drain((uintptr_t)h, (uintptr_t)stream, size, buf, got);
    return tc_fail(RMM_ERROR_INVALID_HANDLE, "rmm_allocate: invalid handle: %#" PRIx64 " was released during the call", h);
  }
  tc_pair* p = tc_pair_for(c, h, key, fixed);
  tc_stack* stk = p != NULL ? &p->cls[k] : NULL;
  for (int i = 0; i < got; i++) {
    uintptr_t b = buf[i];
    bool keep = i == 0 || (stk != NULL && p->bytes + size <= pair_bytes && tc_stack_room(stk));
    tc_ent* e = NULL;
    if (keep) {
      tc_shard* s = tc_shard_of(b);
      tc_lock(&s->lock);
      e = tc_insert(s, b);
      if (e != NULL) {
        e->handle = h;
        e->cls = (uint16_t)k;
        e->state = i == 0 ? TC_LIVE : TC_CACHED;
        e->units = i == 0 ? (uint32_t)((bytes + 255) >> 8) : 0;
      }
      tc_unlock(&s->lock);
    }
    if (e == NULL) {
      back[nback++] = b; /* untracked: goes back to Go */
      continue;
    }
    if (i == 0) {
      tracked = true;
    } else {
      stk->v[stk->n++] = b;
      p->bytes += size;
      p->blocks++;
    }
  }
  tc_unlock(&c->lock);
  if (nback > 0) {
    (void)rmmgo_go_drain((uintptr_t)h, (uintptr_t)stream, size, back, nback);
  }
  if (!tracked) {
    /* No host memory to track it: serve this call uncached. */
    return rmmgo_go_allocate((rmm_resource_t)(uintptr_t)h, stream, bytes, alignment, ptr);
  }
  *ptr = (void*)buf[0];
  return RMM_SUCCESS;
}

rmm_status rmm_allocate(rmm_resource_t mr, rmm_stream_t stream, size_t bytes, size_t alignment, void** ptr) {
  if (ptr == NULL || bytes == 0 || !tc_alignment_ok(alignment) || !rmmgo_tc_enabled()) {
    return rmmgo_go_allocate(mr, stream, bytes, alignment, ptr);
  }
  uint64_t h = (uint64_t)(uintptr_t)mr;
  tc_mslot* ms = tc_mirror_find(h);
  int k;
  size_t size;
  uint64_t key;
  if (ms == NULL || !tc_classify(ms, bytes, &k, &size) || tc_stream_key(stream, &key) != 0) {
    return rmmgo_go_allocate(mr, stream, bytes, alignment, ptr);
  }
  tc_cache* c = tc_cache_mine();
  if (c == NULL) {
    return rmmgo_go_allocate(mr, stream, bytes, alignment, ptr);
  }
  size_t fixed = atomic_load_explicit(&ms->kind, memory_order_relaxed) == RMMGO_TC_FIXED_SIZE ? size : 0;
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
    p->bytes -= size;
    p->blocks--;
    tc_shard* s = tc_shard_of(b);
    tc_lock(&s->lock);
    tc_ent* e = tc_find(s, b);
    if (e != NULL) {
      e->state = TC_LIVE;
      e->units = (uint32_t)((bytes + 255) >> 8);
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
  /* Before a crossing: what an exited thread cached on this handle and
   * stream (once per call). */
  if (!adopted && atomic_load_explicit(&tc_orphan_count, memory_order_relaxed) != 0) {
    adopted = true;
    if (tc_adopt(c, ms, h, key, fixed)) {
      goto again;
    }
  }
  return tc_refill(c, ms, h, key, stream, k, size, bytes, alignment, ptr);
}

/* ---------------------------------------------------------- deallocate */

/* The free of a block the table holds; fn names the call in messages. The
 * Go path (go_path) serves everything the cache does not. */
static rmm_status tc_free(const char* fn, rmm_resource_t mr, rmm_stream_t stream, void* ptr, size_t bytes,
                          size_t alignment, bool* go_path) {
  *go_path = true;
  uint64_t h = (uint64_t)(uintptr_t)mr;
  tc_mslot* ms = tc_mirror_find(h);
  if (ms == NULL) {
    return RMM_SUCCESS;
  }
  if (ptr == NULL) {
    *go_path = false;
    return RMM_SUCCESS;
  }
  uint64_t key;
  if (tc_stream_key(stream, &key) != 0) {
    return RMM_SUCCESS;
  }
  tc_cache* c = tc_cache_mine();
  if (c == NULL) {
    return RMM_SUCCESS;
  }
  uintptr_t b = (uintptr_t)ptr;
  int kind = atomic_load_explicit(&ms->kind, memory_order_relaxed);
  size_t limit = atomic_load_explicit(&ms->limit, memory_order_relaxed);
  const char* kname = tc_kind_name(kind);

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
  if (e->handle != h) {
    tc_unlock(&s->lock);
    tc_unlock(&c->lock);
    return tc_fail(RMM_ERROR_INVALID_POINTER, "%s(%#" PRIxPTR ", %zu bytes): %s: pointer not allocated by this resource: %#" PRIxPTR " belongs to another resource",
                   fn, b, bytes, kname, b);
  }
  if (e->state != TC_LIVE) {
    tc_unlock(&s->lock);
    tc_unlock(&c->lock);
    return tc_fail(RMM_ERROR_INVALID_POINTER, "%s(%#" PRIxPTR ", %zu bytes): %s: pointer not allocated by this resource: %#" PRIxPTR " is not a live allocation (deallocated already?)",
                   fn, b, bytes, kname, b);
  }
  /* The size checks of the Go resources. */
  size_t had = (size_t)e->units * 256;
  size_t want = bytes > (SIZE_MAX - 255) ? SIZE_MAX : (bytes + 255) & ~(size_t)255;
  rmm_status bad = RMM_SUCCESS;
  switch (kind) {
    case RMMGO_TC_FIXED_SIZE:
      if (bytes > limit) {
        bad = tc_fail(RMM_ERROR_INVALID_ARGUMENT, "%s(%#" PRIxPTR ", %zu bytes): fixed_size: invalid argument: deallocating %zu bytes at %#" PRIxPTR ", more than a block (%zu bytes)",
                      fn, b, bytes, bytes, b, limit);
      }
      break;
    case RMMGO_TC_ARENA:
      if (want != had) {
        bad = tc_fail(RMM_ERROR_INVALID_POINTER, "%s(%#" PRIxPTR ", %zu bytes): arena: pointer not allocated by this resource: %#" PRIxPTR " is not a live allocation of %zu bytes (deallocated already, or another size?)",
                      fn, b, bytes, b, want);
      }
      break;
    case RMMGO_TC_BINNING:
      /* Go would give it to the bin (or upstream) of that size, which would
       * not know it. */
      if (bytes > TC_MAX_SIZE || tc_class_of(bytes) != e->cls) {
        bad = tc_fail(RMM_ERROR_INVALID_POINTER, "%s(%#" PRIxPTR ", %zu bytes): binning: pointer not allocated by this resource: %#" PRIxPTR " is not a live allocation of %zu bytes (it was allocated with %zu, rounded to 256)",
                      fn, b, bytes, b, bytes, had);
      }
      break;
    default:
      if (want != had) {
        bad = tc_fail(RMM_ERROR_INVALID_ARGUMENT, "%s(%#" PRIxPTR ", %zu bytes): %s: invalid argument: deallocating %#" PRIxPTR " with size %zu, but it was allocated with size %zu (rounded to 256)",
                      fn, b, bytes, kname, b, want, had);
      }
  }
  if (bad != RMM_SUCCESS) {
    tc_unlock(&s->lock);
    tc_unlock(&c->lock);
    return bad;
  }
  int k = e->cls;
  e->state = TC_CACHED;
  tc_unlock(&s->lock);

  size_t size = kind == RMMGO_TC_FIXED_SIZE ? limit : tc_class_size(k);
  uintptr_t out[TC_MAX_DRAIN];
  int nout = 0;
  tc_pair* p = tc_pair_for(c, h, key, kind == RMMGO_TC_FIXED_SIZE ? limit : 0);
  tc_stack* st = p != NULL ? &p->cls[k] : NULL;
  if (st == NULL) {
    out[nout++] = b; /* nowhere to cache it: straight back */
  } else if (p->bytes + size > tc_pair_bytes(ms) || !tc_stack_room(st)) {
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
      st->v[st->n++] = b;
      p->bytes += size;
      p->blocks++;
    }
  } else {
    st->v[st->n++] = b;
    p->bytes += size;
    p->blocks++;
  }
  for (int i = 0; i < nout; i++) {
    tc_forget(out[i]);
  }
  tc_unlock(&c->lock);
  if (nout == 0) {
    return RMM_SUCCESS;
  }
  tc_drain_orphans_if_any();
  /* The blocks were freed on this very stream (the pair's key is its key). */
  return rmmgo_go_drain((uintptr_t)h, (uintptr_t)stream, size, out, nout);
}

rmm_status rmm_deallocate(rmm_resource_t mr, rmm_stream_t stream, void* ptr, size_t bytes, size_t alignment) {
  if (bytes == 0 || !tc_alignment_ok(alignment) || !rmmgo_tc_enabled()) {
    return rmmgo_go_deallocate(mr, stream, ptr, bytes, alignment);
  }
  bool go_path;
  rmm_status st = tc_free("rmm_deallocate", mr, stream, ptr, bytes, alignment, &go_path);
  return go_path ? rmmgo_go_deallocate(mr, stream, ptr, bytes, alignment) : st;
}

/* Without a stream: the caller vouches that no work uses the memory, which
 * is a free on the default stream for every resource the cache serves. */
rmm_status rmm_deallocate_sync(rmm_resource_t mr, void* ptr, size_t bytes, size_t alignment) {
  if (bytes == 0 || !tc_alignment_ok(alignment) || !rmmgo_tc_enabled()) {
    return rmmgo_go_deallocate_sync(mr, ptr, bytes, alignment);
  }
  bool go_path;
  rmm_status st = tc_free("rmm_deallocate_sync", mr, NULL, ptr, bytes, alignment, &go_path);
  return go_path ? rmmgo_go_deallocate_sync(mr, ptr, bytes, alignment) : st;
}

/* rmm_deallocate with the pointer as an integer (for Go tests, which hold
 * device addresses as uintptr). */
rmm_status rmmgo_tc_deallocate_at(rmm_resource_t mr, uintptr_t stream, uintptr_t ptr, size_t bytes, size_t alignment) {
  return rmm_deallocate(mr, (rmm_stream_t)stream, (void*)ptr, bytes, alignment);
}
