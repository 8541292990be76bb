/*
 * tc.h -- the per-thread cache's pieces, shared by its files (C only: it
 * defines the functions every call runs, inline, so that a cache hit makes
 * no call out of its file). docs/thread-cache.md says what the cache is;
 * thread_cache.c says how a call runs through it. The files:
 *
 *   tc.h            size classes, the block table's lookups, the caches'
 *                   types, sections (enter, leave), the budget's fast check
 *   tc_table.c      the block table's writers, and frees that bypass the
 *                   cache (rmmgo_tc_peek, claim, unclaim)
 *   tc_sections.c   stopping other threads' sections: membarrier(2), stop
 *                   and resume
 *   tc_budget.c     the mirror's cache fields, budgets, quotas
 *   tc_caches.c     the per-thread caches, their pairs and stacks, thread
 *                   exit, the depot
 *   tc_collect.c    taking blocks out (flushes, reclaims), what the caches
 *                   hold, and the crossings into Go
 *   tc_adaptors.c   statistics and limiting adaptors run in C
 *   thread_cache.c  allocate and free through the cache
 *
 * Lock order: tc_move_mu -> tc_list_mu -> tc_depot_mu -> a shard's writer
 * lock. No C lock is held across a call into Go (refill, drain, the stream
 * checks), and no section waits for a lock or for another thread: a thread
 * never stops others while inside its own section.
 */
#ifndef RMMGO_CAPI_TC_H
#define RMMGO_CAPI_TC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capi_internal.h"
#include "mirror.h"
#include "spin.h"
#include "stream_check.h"

typedef rmmgo_mslot tc_mslot;

/* ----------------------------------------------------------- size classes */

/* Size classes: 256-byte steps up to 4 KiB (classes 0..15), then four per
 * power of two up to 64 MiB (16..71), as internal/cabi defines them (its
 * ClassOf and ClassSize are what tc_class_of and tc_class_size compute;
 * cabi_generated.h has the numbers, and a test compares the two). A
 * handle's limit (its resource's CacheLimits, never above TC_CLASS_MAX)
 * says which classes it serves. What the cache may hold is the policy Go
 * hands it. */
enum {
  TC_SMALL_CLASSES = RMMGO_SMALL_CLASSES,
  TC_STEPS = RMMGO_CLASSES_PER_DOUBLING, /* classes per power of two above TC_SMALL_LIMIT */
  TC_CLASSES = RMMGO_CLASSES,
  TC_PAIRS = 16,
  TC_SHARD_BITS = 6,
  TC_SHARDS = 1 << TC_SHARD_BITS,
  TC_BUF = 64, /* most blocks one refill crossing takes */
  TC_MAX_DRAIN = 64
};
#define TC_SMALL_LIMIT RMMGO_SMALL_LIMIT
#define TC_CLASS_MAX RMMGO_CLASS_MAX
/* A class's stack grows by doubling up to this many blocks. */
#define TC_STACK_MAX ((uint32_t)1 << 24)

static inline int tc_class_of(size_t bytes) {
  if (bytes <= TC_SMALL_LIMIT) {
    return (int)((bytes + RMMGO_CLASS_STEP - 1) / RMMGO_CLASS_STEP) - 1;
  }
  unsigned k = 63u - (unsigned)__builtin_clzll((unsigned long long)(bytes - 1)); /* 2^k < bytes <= 2^(k+1) */
  size_t base = (size_t)1 << k, step = base / TC_STEPS;
  size_t j = (bytes - base + step - 1) / step; /* 1..TC_STEPS */
  return TC_SMALL_CLASSES + (int)(k - RMMGO_SMALL_LIMIT_SHIFT) * TC_STEPS + (int)(j - 1);
}

static inline size_t tc_class_size(int c) {
  if (c < TC_SMALL_CLASSES) {
    return (size_t)(c + 1) * RMMGO_CLASS_STEP;
  }
  unsigned k = RMMGO_SMALL_LIMIT_SHIFT + (unsigned)(c - TC_SMALL_CLASSES) / TC_STEPS;
  size_t j = (size_t)((c - TC_SMALL_CLASSES) % TC_STEPS) + 1;
  return ((size_t)1 << k) + j * (((size_t)1 << k) / TC_STEPS);
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

/* ---------------------------------------------------------------- table */

/* The table: every block the C side got from Go, ptr -> {handle, size
 * class, size the user asked for, LIVE or CACHED}, sharded. A call reads it
 * without a lock and changes a block's state with one atomic store
 * (allocation) or compare-and-swap (free); entries are added and removed
 * under a shard's writer lock, and moved (a shard grows) only while no call
 * is inside a section (tc_sections.c).
 *
 * An entry: the block's address (0: empty slot, TC_TOMB: an entry that was
 * removed, which lookups pass over) and its state in one word:
 *   bits 0..1   TC_LIVE or TC_CACHED
 *   bits 2..8   size class
 *   bits 9..32  the user's size rounded up to 256, in units of 256 (LIVE)
 *   bits 33..63 the handle it belongs to: its slot index
 *               (RMMGO_HANDLE_INDEX_BITS, 24) and the low 7 bits of its
 *               generation (tc_hid). Entries of a handle are removed when
 *               it is released, so no two live handles share these bits.
 * A lookup reads ptr (acquire) then meta; an insertion writes meta then ptr
 * (release); a removal writes TC_TOMB. */
enum { TC_LIVE = 1, TC_CACHED = 2 };
#define TC_TOMB ((uintptr_t)1)

typedef struct {
  _Atomic uintptr_t ptr;
  _Atomic uint64_t meta;
} tc_ent;

_Static_assert(RMMGO_HANDLE_INDEX_BITS + 7 == 64 - 33, "a handle's id fills bits 33..63 of an entry");

static inline uint64_t tc_hid(uint64_t h) {
  const uint64_t index = ((uint64_t)1 << RMMGO_HANDLE_INDEX_BITS) - 1;
  return (h & index) | (((h >> RMMGO_HANDLE_INDEX_BITS) & 0x7fu) << RMMGO_HANDLE_INDEX_BITS);
}

static inline uint64_t tc_meta(int state, int cls, size_t units, uint64_t h) {
  return (uint64_t)state | (uint64_t)cls << 2 | (uint64_t)(units & 0xffffffu) << 9 | tc_hid(h) << 33;
}
_Static_assert(TC_CLASSES <= 128, "a class fits bits 2..8 of an entry");
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

RMMGO_INTERNAL extern tc_shard tc_table[TC_SHARDS];

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

/* Enters p with state m into the table (an entry already there, a stale one
 * of a block given back to Go by a path the cache did not see, is reused).
 * Returns where it is; false when there is no host memory. Outside
 * sections. */
RMMGO_INTERNAL bool tc_insert(uintptr_t p, uint64_t m, tc_item* where);
/* Removes the entry e of shard s (under its writer lock). */
RMMGO_INTERNAL void tc_erase(tc_shard* s, tc_tab* t, tc_ent* e);
/* Removes p's entry, if the table has it. Outside sections. */
RMMGO_INTERNAL void tc_forget(uintptr_t p);

/* ------------------------------------------------------------ the caches */

/* Per thread, per (handle, stream key) -- a pair --, per size class: a
 * LIFO of free blocks, each with the table slot of its entry, so that
 * handing it out writes its entry without looking for it. */
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
  rmmgo_stream_memo streams; /* the streams this thread checked */
  struct tc_cache* prev;     /* tc_list, under tc_list_mu */
  struct tc_cache* next;
} __attribute__((aligned(64))) tc_cache;

static inline size_t tc_pair_class_size(const tc_pair* p, int c) { return p->fixed != 0 ? p->fixed : tc_class_size(c); }

RMMGO_INTERNAL extern pthread_mutex_t tc_list_mu;
RMMGO_INTERNAL extern tc_cache* tc_list; /* every thread's cache, under tc_list_mu */

/* The depot: pairs of threads that exited, with their blocks (CACHED in
 * the table: a free of one is still a double free) and their quota, taken
 * over whole by a new thread on the same handle and stream, or given back
 * by the next call into Go once they waited long enough (a pthread key
 * destructor must not enter Go). Under tc_depot_mu; tc_depot_n is its
 * length, for a look without the lock. */
RMMGO_INTERNAL extern pthread_mutex_t tc_depot_mu;
RMMGO_INTERNAL extern tc_pair** tc_depot;
RMMGO_INTERNAL extern size_t tc_ndepot, tc_depot_cap;
RMMGO_INTERNAL extern atomic_size_t tc_depot_n;

/* initial-exec: one load from the thread pointer, no __tls_get_addr call
 * (the Go runtime in this library uses the model too, so it is loadable
 * with dlopen where Go is). */
RMMGO_INTERNAL extern __thread tc_cache* tc_mine __attribute__((tls_model("initial-exec")));

/* The calling thread's cache, made on its first call; NULL when there is
 * no host memory for it. */
RMMGO_INTERNAL tc_cache* tc_cache_new(void);

static inline tc_cache* tc_cache_mine(void) {
  tc_cache* c = tc_mine;
  if (__builtin_expect(c != NULL, 1)) {
    return c;
  }
  return tc_cache_new();
}

/* The pair of (h, key) in c, bound on first use to a free (or empty) pair;
 * NULL when all TC_PAIRS hold blocks of other pairs. In c's section. */
RMMGO_INTERNAL tc_pair* tc_pair_find(tc_cache* c, uint64_t h, uint64_t key, size_t fixed);

static inline tc_pair* tc_pair_for(tc_cache* c, uint64_t h, uint64_t key, size_t fixed) {
  tc_pair* p = c->pairs[c->hint];
  if (__builtin_expect(p != NULL && p->handle == h && p->key == key, 1)) {
    return p;
  }
  return tc_pair_find(c, h, key, fixed);
}

RMMGO_INTERNAL void tc_pair_free(tc_pair* p);

/* Grows st for one more block; false when it cannot. */
RMMGO_INTERNAL bool tc_stack_grow(tc_stack* st);

/* Makes room for one more block on st; false when it cannot grow. */
static inline bool tc_stack_room(tc_stack* st) { return st->n < st->cap || tc_stack_grow(st); }

/* Moves every block of p whose class size is in (lo, hi] (hi 0: any) into
 * out (grown as needed), forgetting them in the table. Stops early (leaving
 * the rest cached) if out cannot grow. Returns whether it took them all.
 * p's owner is stopped (or gone). */
RMMGO_INTERNAL bool tc_pair_take_sizes(tc_pair* p, rmmgo_tc_block** out, size_t* n, size_t* cap, size_t lo,
                                       size_t hi);

/* Takes the depot's pairs that waited their handle's exited_wait (or whose
 * handle is gone), to give back: their blocks into *out (forgotten in the
 * table). */
RMMGO_INTERNAL void tc_depot_expire(rmmgo_tc_block** out, size_t* n, size_t* cap);
/* A miss with the depot not empty: takes over a depot pair of (h, key)
 * whole, in place of the caller's pair of (h, key) when that holds nothing.
 * Returns whether it did. Outside sections. */
RMMGO_INTERNAL bool tc_adopt(tc_cache* c, tc_mslot* ms, uint64_t h, uint64_t key, size_t fixed);

/* ------------------------------------------------------------- sections */

/* A thread's calls run their C work inside a *section* of its own cache,
 * marked by a flag on the thread's own cache line (no atomic
 * read-modify-write, nothing shared written). Another thread that must
 * touch the cache (collecting blocks) or move table entries *stops* it
 * (tc_sections.c): it raises the cache's request flag, runs one
 * process-wide memory barrier (membarrier(2); a fence on every section when
 * the kernel has none) and waits for the section to end; sections that
 * start meanwhile see the flag and wait. A cache hit therefore writes only
 * the calling thread's lines and the block's own table entry. */

/* Set once, before any section: membarrier registered. */
RMMGO_INTERNAL extern int tc_mb_ok;
/* Entries move (a shard grows or drops its removed entries) only while
 * tc_moving is set and no section runs. */
RMMGO_INTERNAL extern _Atomic int tc_moving;

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
      rmmgo_backoff(&spins);
    }
  }
}

/* Registers membarrier, once, before the first section or stop. */
RMMGO_INTERNAL void tc_sections_init(void);
/* Stops every cache on tc_list (tc_list_mu held): when it returns, no
 * section of theirs runs until tc_resume_all. Never called inside a
 * section. */
RMMGO_INTERNAL void tc_stop_all(void);
RMMGO_INTERNAL void tc_resume_all(void);
/* Stops every section of every thread (to move table entries); takes
 * tc_move_mu and tc_list_mu for the time. */
RMMGO_INTERNAL void tc_stop_world(void);
RMMGO_INTERNAL void tc_resume_world(void);

/* ---------------------------------------------------------------- clock */

/* The clock of the policy's windows (a pair alone for lone_after_ns, an
 * exited thread's pairs waiting exited_wait_ns): monotonic time plus what
 * tests moved it on by (rmmgo_tc_clock_advance, which Go's
 * internal/cacheclock calls when it is advanced). */
RMMGO_INTERNAL extern _Atomic int64_t tc_clock_offset;

static inline int64_t tc_now_ns(void) {
  return rmmgo_now_ns() + atomic_load_explicit(&tc_clock_offset, memory_order_relaxed);
}

/* --------------------------------------------------------------- budget */

/* Each (thread, handle, stream) pair holds a quota of its handle's budget,
 * reserved a quantum at a time, and keeps at most that many bytes, so all
 * threads together keep at most the budget (tc_budget.c). */

/* The slot that keeps handle h's budget: its mirror slot while h is the
 * handle last published there (served or not), else NULL (h is gone, and
 * its budget with it). */
static inline tc_mslot* tc_account(uint64_t h) {
  if (h == 0) {
    return NULL;
  }
  tc_mslot* s = rmmgo_mslot_of(h);
  if (s == NULL || atomic_load_explicit(&s->last, memory_order_acquire) != h) {
    return NULL;
  }
  return s;
}

/* Sets the budget of s (shared 0: all of it shared); what it adds or
 * takes goes to avail. */
RMMGO_INTERNAL void tc_set_budget(tc_mslot* s, size_t budget, size_t shared);
/* Gives n bytes of reserved budget back to handle h, unless h is gone
 * (and its budget with it). */
RMMGO_INTERNAL void tc_unreserve(uint64_t h, size_t n);
/* Sets p's quota to q, counting p among its handle's holders while it
 * holds one. The bytes reserved or given back are the caller's business. */
RMMGO_INTERNAL void tc_set_quota(tc_pair* p, size_t q);
/* Lets p go of its handle: its quota back to the budget, the rounding it
 * counted to the handle's round_gone. p holds no blocks. */
RMMGO_INTERNAL void tc_pair_unbind(tc_pair* p);
/* The rules tc_reserve_more applies per call (tc_budget.c): the most of
 * the shared part one of `holders` pairs may hold, and whether a pair with
 * `others` other holders may take past it. */
RMMGO_INTERNAL size_t tc_fair_share(size_t shared, int64_t holders, size_t quantum);
RMMGO_INTERNAL bool tc_lone(int64_t others, int64_t crowd_ns, int64_t now_ns, int64_t lone_after_ns);
/* Reserves budget for p to hold `more` bytes more than its quota allows. */
RMMGO_INTERNAL bool tc_reserve_more(tc_mslot* ms, tc_pair* p, size_t more);
/* Gives back the part of p's quota above what it holds plus one quantum.
 * In the owner's section. */
RMMGO_INTERNAL void tc_trim_quota(tc_mslot* ms, tc_pair* p);

/* Reserves budget for p to hold `more` bytes more than it does. In the
 * owner's section; touches the handle's shared account only when p's quota
 * runs out. */
static inline bool tc_reserve(tc_mslot* ms, tc_pair* p, size_t more) {
  return p->bytes + more <= p->quota || tc_reserve_more(ms, p, more);
}

/* ------------------------------------------------------------- adaptors */

/* tc_adaptors.c: the first n steps of ms. */
RMMGO_INTERNAL bool tc_steps_charge(tc_mslot* ms, int n, size_t bytes);
RMMGO_INTERNAL void tc_steps_refund(tc_mslot* ms, int n, size_t bytes);
RMMGO_INTERNAL void tc_steps_count(tc_mslot* ms, int n, size_t bytes);
RMMGO_INTERNAL void tc_steps_unfree(tc_mslot* ms, int n, size_t bytes);
RMMGO_INTERNAL bool tc_steps_uncount(tc_mslot* ms, int n, size_t bytes);

/* ------------------------------------------------------------ crossings */

/* A call into Go (refill or drain) that also gives back what the depot
 * holds past its wait: one crossing for both. Outside sections. */
RMMGO_INTERNAL rmm_status tc_cross(bool refill, rmmgo_tc_call* call, tc_mslot* ms);
/* Gives blocks of handle h back to Go after forgetting them in the table
 * (outside sections). */
RMMGO_INTERNAL void tc_give_back(uint64_t h, rmm_stream_t stream, size_t size, uintptr_t* ptrs, int n);

#endif /* RMMGO_CAPI_TC_H */
