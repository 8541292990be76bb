/*
 * asyncpath.c -- the C path of the pool-based resources (doc.go says why):
 *
 *   - the table: every block a pool-based resource handed out, pointer ->
 *     {size asked for, pool, owned}; sharded, one spinlock per shard, open
 *     addressing with backward-shift deletion;
 *   - a resource's state: its pool, device and runtime functions, and a
 *     word that holds its generation and whether it is closed. States are
 *     never given back to the C heap: a closed one is reused with the next
 *     generation, so a caller that read a stale (state, generation) pair
 *     touches valid memory and is refused;
 *   - the gate: each thread that calls in has a record that says which
 *     state it is inside (one per thread, on its own cache line: a call
 *     writes only its own thread's line). A call publishes the state in its
 *     record, then reads the state's word; Close sets the word, then waits
 *     until no record names the state. Both sides are sequentially
 *     consistent, so either the call sees the word and backs out, or Close
 *     sees the call and waits for it;
 *   - an allocation and a free: gate, device check (allocation), runtime
 *     call, record; nothing else.
 *
 * The runtime is called through the CUDA runtime's own function addresses
 * (cudart resolved them) or, for any other runtime (the simulated device,
 * a test's wrapper), through Go callbacks (callbacks.go).
 *
 * Lock order: a shard's lock, then the C heap; no lock is held across a
 * runtime call.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "asyncpath.h"
#include "_cgo_export.h"

/* ---------------------------------------------------------------- locks */

static inline void ap_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Waiting: spin a little, then yield, then sleep (what is waited for may be
 * a runtime call of microseconds, or a test holding a call on purpose). */
static void ap_backoff(unsigned spins) {
  if (spins < 64) {
    ap_pause();
  } else if (spins < 1024) {
    sched_yield();
  } else {
    struct timespec ts = {0, 10000};
    nanosleep(&ts, NULL);
  }
}

static inline void ap_lock(atomic_int* l) {
  for (unsigned spins = 0; atomic_exchange_explicit(l, 1, memory_order_acquire) != 0;) {
    while (atomic_load_explicit(l, memory_order_relaxed) != 0) {
      ap_backoff(spins++);
    }
  }
}

static inline void ap_unlock(atomic_int* l) { atomic_store_explicit(l, 0, memory_order_release); }

/* ---------------------------------------------------------------- table */

enum { AP_SHARDS = 128, AP_MIN_CAP = 64 };

typedef struct {
  uintptr_t ptr; /* 0: empty */
  size_t size;
  uintptr_t pool;
  uintptr_t owned;
} ap_ent;

typedef struct {
  atomic_int lock;
  size_t mask; /* capacity - 1 when slots is not NULL */
  size_t n;
  ap_ent* slots;
} __attribute__((aligned(64))) ap_shard;

static ap_shard ap_table[AP_SHARDS];

static inline uint64_t ap_mix(uintptr_t p) {
  uint64_t x = (uint64_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

static inline ap_shard* ap_shard_of(uint64_t h) { return &ap_table[h & (AP_SHARDS - 1)]; }
static inline size_t ap_home(const ap_shard* s, uint64_t h) { return (size_t)(h >> 7) & s->mask; }

static ap_ent* ap_find(ap_shard* s, uint64_t h, uintptr_t p) {
  if (s->slots == NULL) {
    return NULL;
  }
  for (size_t i = ap_home(s, h);; i = (i + 1) & s->mask) {
    ap_ent* e = &s->slots[i];
    if (e->ptr == p) {
      return e;
    }
    if (e->ptr == 0) {
      return NULL;
    }
  }
}

/* Moves s's entries into a table of cap slots; false when no memory. */
static bool ap_rehash(ap_shard* s, size_t cap) {
  ap_ent* slots = calloc(cap, sizeof *slots);
  if (slots == NULL) {
    return false;
  }
  ap_ent* old = s->slots;
  size_t oldcap = old == NULL ? 0 : s->mask + 1;
  s->slots = slots;
  s->mask = cap - 1;
  for (size_t i = 0; i < oldcap; i++) {
    if (old[i].ptr != 0) {
      size_t j = ap_home(s, ap_mix(old[i].ptr));
      while (slots[j].ptr != 0) {
        j = (j + 1) & s->mask;
      }
      slots[j] = old[i];
    }
  }
  free(old);
  return true;
}

/* Records p; an earlier record of p is replaced (it is stale: the memory
 * was just handed out again). False when the shard could not grow. */
static bool ap_add(uintptr_t p, size_t size, uintptr_t pool, bool owned) {
  uint64_t h = ap_mix(p);
  ap_shard* s = ap_shard_of(h);
  ap_lock(&s->lock);
  ap_ent* e = ap_find(s, h, p);
  if (e == NULL) {
    if (s->slots == NULL || (s->n + 1) * 4 > (s->mask + 1) * 3) {
      if (!ap_rehash(s, s->slots == NULL ? AP_MIN_CAP : (s->mask + 1) * 2)) {
        ap_unlock(&s->lock);
        return false;
      }
    }
    size_t i = ap_home(s, h);
    while (s->slots[i].ptr != 0) {
      i = (i + 1) & s->mask;
    }
    e = &s->slots[i];
    s->n++;
  }
  e->ptr = p;
  e->size = size;
  e->pool = pool;
  e->owned = owned;
  ap_unlock(&s->lock);
  return true;
}

/* Removes e (backward-shift deletion: no tombstones); with shrink, makes
 * the shard smaller when it is mostly empty. Under the shard's lock. */
static void ap_erase(ap_shard* s, ap_ent* e, bool shrink) {
  size_t i = (size_t)(e - s->slots);
  size_t j = i;
  for (;;) {
    j = (j + 1) & s->mask;
    if (s->slots[j].ptr == 0) {
      break;
    }
    size_t k = ap_home(s, ap_mix(s->slots[j].ptr));
    /* Move j back to i unless its home lies cyclically in (i, j]. */
    bool in_range = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (!in_range) {
      s->slots[i] = s->slots[j];
      i = j;
    }
  }
  memset(&s->slots[i], 0, sizeof s->slots[i]);
  s->n--;
  if (shrink && s->mask + 1 > AP_MIN_CAP && s->n * 8 < s->mask + 1) {
    (void)ap_rehash(s, (s->mask + 1) / 2); /* no memory: stays as large */
  }
}

/* Takes p's record out when it says p was allocated with size from pool;
 * else leaves it and says why (RMMGO_AP_NOT_RECORDED, _FOREIGN, _SIZE). */
static rmmgo_ap_entry ap_take(uintptr_t p, size_t size, uintptr_t pool) {
  rmmgo_ap_entry out = {0, 0, 0, RMMGO_AP_NOT_RECORDED};
  uint64_t h = ap_mix(p);
  ap_shard* s = ap_shard_of(h);
  ap_lock(&s->lock);
  ap_ent* e = ap_find(s, h, p);
  if (e != NULL) {
    out.size = e->size;
    out.pool = e->pool;
    out.owned = e->owned != 0;
    if (e->pool != pool) {
      out.rc = RMMGO_AP_FOREIGN;
    } else if (e->size != size) {
      out.rc = RMMGO_AP_SIZE;
    } else {
      out.rc = RMMGO_AP_OK;
      ap_erase(s, e, true);
    }
  }
  ap_unlock(&s->lock);
  return out;
}

int rmmgo_ap_record(uintptr_t ptr, size_t size, uintptr_t pool, int owned) {
  return ap_add(ptr, size, pool, owned != 0);
}

rmmgo_ap_entry rmmgo_ap_take(uintptr_t ptr, size_t size, uintptr_t pool) { return ap_take(ptr, size, pool); }

uintptr_t* rmmgo_ap_take_owned(uintptr_t pool, size_t* n, int* incomplete) {
  uintptr_t* out = NULL;
  size_t cnt = 0, cap = 0;
  *incomplete = 0;
  for (int i = 0; i < AP_SHARDS; i++) {
    ap_shard* s = &ap_table[i];
    ap_lock(&s->lock);
    size_t want = 0;
    for (size_t j = 0; s->slots != NULL && j <= s->mask; j++) {
      want += s->slots[j].ptr != 0 && s->slots[j].pool == pool && s->slots[j].owned;
    }
    if (want > 0 && cnt + want > cap) {
      size_t nc = cap == 0 ? 64 : cap;
      while (nc < cnt + want) {
        nc *= 2;
      }
      uintptr_t* o = realloc(out, nc * sizeof *o);
      if (o == NULL) {
        /* The rest stay recorded; the caller says it could not give them
         * back. */
        ap_unlock(&s->lock);
        *incomplete = 1;
        break;
      }
      out = o;
      cap = nc;
    }
    for (size_t j = 0; want > 0 && j <= s->mask;) {
      ap_ent* e = &s->slots[j];
      if (e->ptr != 0 && e->pool == pool && e->owned) {
        out[cnt++] = e->ptr;
        want--;
        ap_erase(s, e, false); /* may move a later entry into j: look again */
      } else {
        j++;
      }
    }
    ap_unlock(&s->lock);
  }
  *n = cnt;
  if (cnt == 0) {
    free(out);
    return NULL;
  }
  return out;
}

int rmmgo_ap_has(uintptr_t ptr) {
  uint64_t h = ap_mix(ptr);
  ap_shard* s = ap_shard_of(h);
  ap_lock(&s->lock);
  bool ok = ap_find(s, h, ptr) != NULL;
  ap_unlock(&s->lock);
  return ok;
}

size_t rmmgo_ap_count(void) { return rmmgo_ap_totals(NULL); }

size_t rmmgo_ap_totals(uint64_t* bytes) {
  size_t n = 0;
  uint64_t b = 0;
  for (int i = 0; i < AP_SHARDS; i++) {
    ap_shard* s = &ap_table[i];
    ap_lock(&s->lock);
    n += s->n;
    for (size_t j = 0; bytes != NULL && s->slots != NULL && j <= s->mask; j++) {
      if (s->slots[j].ptr != 0) b += s->slots[j].size;
    }
    ap_unlock(&s->lock);
  }
  if (bytes != NULL) *bytes = b;
  return n;
}

/* ---------------------------------------------------------------- states */

typedef struct ap_res {
  /* generation << 1 | closed. Calls compare it with the generation they
   * were given: only gen << 1 lets them in. */
  _Atomic uint64_t word;
  uintptr_t pool;
  int device;
  int owned;
  /* Whether an allocation asks which device is current: not when the
   * process sees one device, which is then always current (the device
   * count is fixed for the life of a process). */
  int check_device;
  /* The CUDA runtime's functions, or all 0 (then go_runtime is used). */
  uintptr_t get_device, malloc_from_pool, free_async, get_last_error;
  uintptr_t go_runtime;
  struct ap_res* next_free;
} __attribute__((aligned(64))) ap_res;

static pthread_mutex_t ap_free_mu = PTHREAD_MUTEX_INITIALIZER;
static ap_res* ap_free_states;

uintptr_t rmmgo_ap_new(uintptr_t get_device, uintptr_t malloc_from_pool, uintptr_t free_async,
                       uintptr_t get_last_error, uintptr_t go_runtime, uintptr_t pool, int device, int owned,
                       int check_device, uint64_t* gen) {
  pthread_mutex_lock(&ap_free_mu);
  ap_res* r = ap_free_states;
  if (r != NULL) {
    ap_free_states = r->next_free;
  }
  pthread_mutex_unlock(&ap_free_mu);
  uint64_t g = 1;
  if (r == NULL) {
    r = aligned_alloc(64, sizeof *r); /* never freed: see the top of the file */
    if (r == NULL) {
      return 0;
    }
    memset(r, 0, sizeof *r);
    atomic_init(&r->word, (g << 1) | 1);
  } else {
    g = atomic_load(&r->word) >> 1; /* release moved it on */
  }
  r->pool = pool;
  r->device = device;
  r->owned = owned != 0;
  r->check_device = check_device != 0;
  r->get_device = get_device;
  r->malloc_from_pool = malloc_from_pool;
  r->free_async = free_async;
  r->get_last_error = get_last_error;
  r->go_runtime = go_runtime;
  r->next_free = NULL;
  atomic_store(&r->word, g << 1); /* open: the fields above are visible to whoever sees it */
  *gen = g;
  return (uintptr_t)r;
}

/* ---------------------------------------------------------------- gate */

typedef struct ap_thread {
  _Atomic uintptr_t inside; /* the state the thread is in a call on, or 0 */
  atomic_int taken;         /* a live thread owns the record */
  struct ap_thread* next;   /* set before the record is linked; never changes */
} __attribute__((aligned(64))) ap_thread;

/* Every record ever made (they are reused, never freed). */
static _Atomic(ap_thread*) ap_threads;
/* initial-exec: one instruction per access, not a __tls_get_addr call (the
 * library already uses static TLS: Go's runtime does). */
static __thread ap_thread* ap_mine __attribute__((tls_model("initial-exec")));
static pthread_key_t ap_key;
static pthread_once_t ap_key_once = PTHREAD_ONCE_INIT;
static bool ap_key_ok;

static void ap_thread_exit(void* arg) {
  ap_thread* t = arg;
  ap_mine = NULL;
  atomic_store(&t->inside, 0);
  atomic_store_explicit(&t->taken, 0, memory_order_release);
}

static void ap_key_init(void) { ap_key_ok = pthread_key_create(&ap_key, ap_thread_exit) == 0; }

static ap_thread* ap_me_slow(void) {
  pthread_once(&ap_key_once, ap_key_init);
  if (!ap_key_ok) {
    return NULL;
  }
  ap_thread* t;
  for (t = atomic_load(&ap_threads); t != NULL; t = t->next) {
    int free_ = 0;
    if (atomic_load_explicit(&t->taken, memory_order_relaxed) == 0 &&
        atomic_compare_exchange_strong(&t->taken, &free_, 1)) {
      break;
    }
  }
  if (t == NULL) {
    t = aligned_alloc(64, sizeof *t);
    if (t == NULL) {
      return NULL;
    }
    memset(t, 0, sizeof *t);
    atomic_init(&t->taken, 1);
    ap_thread* head = atomic_load(&ap_threads);
    do {
      t->next = head;
    } while (!atomic_compare_exchange_weak(&ap_threads, &head, t));
  }
  if (pthread_setspecific(ap_key, t) != 0) {
    atomic_store(&t->taken, 0);
    return NULL;
  }
  ap_mine = t;
  return t;
}

static inline ap_thread* ap_me(void) {
  ap_thread* t = ap_mine;
  return t != NULL ? t : ap_me_slow();
}

/* Lets the calling thread into a call on r of generation gen: RMMGO_AP_OK
 * with *tp set (leave with ap_leave), or why not. */
static inline int ap_enter(ap_res* r, uint64_t gen, ap_thread** tp) {
  ap_thread* t = ap_me();
  if (t == NULL || atomic_load_explicit(&t->inside, memory_order_relaxed) != 0) {
    return RMMGO_AP_BUSY;
  }
  atomic_store_explicit(&t->inside, (uintptr_t)r, memory_order_seq_cst);
  if (atomic_load_explicit(&r->word, memory_order_seq_cst) != gen << 1) {
    atomic_store_explicit(&t->inside, 0, memory_order_release);
    return RMMGO_AP_STALE;
  }
  *tp = t;
  return RMMGO_AP_OK;
}

static inline void ap_leave(ap_thread* t) { atomic_store_explicit(&t->inside, 0, memory_order_release); }

int rmmgo_ap_close(uintptr_t state, uint64_t gen) {
  ap_res* r = (ap_res*)state;
  uint64_t open = gen << 1;
  if (!atomic_compare_exchange_strong(&r->word, &open, open | 1)) {
    return 0;
  }
  for (ap_thread* t = atomic_load(&ap_threads); t != NULL; t = t->next) {
    for (unsigned spins = 0; atomic_load_explicit(&t->inside, memory_order_seq_cst) == state; spins++) {
      ap_backoff(spins);
    }
  }
  return 1;
}

void rmmgo_ap_release(uintptr_t state, uint64_t gen) {
  ap_res* r = (ap_res*)state;
  uint64_t closed = gen << 1 | 1;
  if (!atomic_compare_exchange_strong(&r->word, &closed, ((gen + 1) << 1) | 1)) {
    return; /* not closed, or released already */
  }
  pthread_mutex_lock(&ap_free_mu);
  r->next_free = ap_free_states;
  ap_free_states = r;
  pthread_mutex_unlock(&ap_free_mu);
}

/* ---------------------------------------------------------------- runtime */

typedef int (*ap_get_device_fn)(int*);
typedef int (*ap_malloc_from_pool_fn)(void**, size_t, void*, void*);
typedef int (*ap_free_async_fn)(void*, void*);
typedef int (*ap_get_last_error_fn)(void);

enum { AP_CUDA_NOT_READY = 600 };

/* As every call through cudart: a failure leaves no error behind in the
 * thread's last-error state. */
static inline int ap_done(const ap_res* r, int err) {
  if (err != 0 && err != AP_CUDA_NOT_READY) {
    (void)((ap_get_last_error_fn)r->get_last_error)();
  }
  return err;
}

static inline int ap_get_device(const ap_res* r, int* dev) {
  if (r->get_device != 0) {
    return ap_done(r, ((ap_get_device_fn)r->get_device)(dev));
  }
  return rmmgo_ap_go_get_device(r->go_runtime, dev);
}

static inline int ap_malloc(const ap_res* r, uintptr_t* p, size_t bytes, uintptr_t stream) {
  if (r->malloc_from_pool != 0) {
    void* q = NULL;
    int err = ((ap_malloc_from_pool_fn)r->malloc_from_pool)(&q, bytes, (void*)r->pool, (void*)stream);
    *p = (uintptr_t)q;
    return ap_done(r, err);
  }
  return rmmgo_ap_go_malloc(r->go_runtime, bytes, r->pool, stream, p);
}

static inline int ap_free(const ap_res* r, uintptr_t p, uintptr_t stream) {
  if (r->free_async != 0) {
    return ap_done(r, ((ap_free_async_fn)r->free_async)((void*)p, (void*)stream));
  }
  return rmmgo_ap_go_free(r->go_runtime, p, stream);
}

/* ---------------------------------------------------------------- calls */

/* An allocation: the device check (the resource's device must be current;
 * one cudaGetDevice, none when the process sees one device),
 * cudaMallocFromPoolAsync, the record. */
static inline int ap_allocate(uintptr_t state, uint64_t gen, size_t bytes, uintptr_t stream, uintptr_t* out,
                              int64_t* detail) {
  ap_res* r = (ap_res*)state;
  ap_thread* t;
  int rc = ap_enter(r, gen, &t);
  if (rc != RMMGO_AP_OK) {
    return rc;
  }
  int dev = r->device;
  int err = r->check_device ? ap_get_device(r, &dev) : 0;
  uintptr_t p = 0;
  if (err != 0) {
    rc = RMMGO_AP_CUDA;
    *detail = err;
  } else if (dev != r->device) {
    rc = RMMGO_AP_WRONG_DEVICE;
    *detail = dev;
  } else if ((err = ap_malloc(r, &p, bytes, stream)) != 0) {
    rc = RMMGO_AP_CUDA;
    *detail = err;
  } else if (p == 0) {
    rc = RMMGO_AP_CUDA; /* no memory and no error: the Go path says so */
    *detail = 0;
  } else if (!ap_add(p, bytes, r->pool, r->owned)) {
    (void)ap_free(r, p, stream);
    rc = RMMGO_AP_NO_HOST_MEMORY;
  } else {
    *out = p;
  }
  ap_leave(t);
  return rc;
}

/* A free: the record taken out (only when it matches), cudaFreeAsync, the
 * record put back if that fails. */
static inline int ap_deallocate(uintptr_t state, uint64_t gen, uintptr_t stream, uintptr_t ptr, size_t bytes,
                                int64_t* detail) {
  ap_res* r = (ap_res*)state;
  ap_thread* t;
  int rc = ap_enter(r, gen, &t);
  if (rc != RMMGO_AP_OK) {
    return rc;
  }
  rmmgo_ap_entry e = ap_take(ptr, bytes, r->pool);
  rc = e.rc;
  if (rc == RMMGO_AP_OK) {
    int err = ap_free(r, ptr, stream);
    if (err != 0) {
      /* Back, as it was (should the shard have to grow and cannot, the
       * block stays allocated unrecorded: lost to its owner's Close, never
       * freed twice). */
      (void)ap_add(ptr, e.size, e.pool, e.owned);
      rc = RMMGO_AP_CUDA;
      *detail = err;
    }
  } else if (rc == RMMGO_AP_SIZE) {
    *detail = (int64_t)e.size;
  } else if (rc == RMMGO_AP_FOREIGN) {
    *detail = (int64_t)e.pool;
  }
  ap_leave(t);
  return rc;
}

rmmgo_ap_result rmmgo_ap_allocate(uintptr_t state, uint64_t gen, size_t bytes, uintptr_t stream) {
  rmmgo_ap_result res = {0, 0, 0};
  res.rc = ap_allocate(state, gen, bytes, stream, &res.ptr, &res.detail);
  return res;
}

rmmgo_ap_result rmmgo_ap_deallocate(uintptr_t state, uint64_t gen, uintptr_t stream, uintptr_t ptr, size_t bytes) {
  rmmgo_ap_result res = {0, 0, 0};
  res.rc = ap_deallocate(state, gen, stream, ptr, bytes, &res.detail);
  return res;
}

static int ap_c_allocate(uintptr_t state, uint64_t gen, size_t bytes, uintptr_t stream, uintptr_t* out) {
  int64_t detail = 0;
  return ap_allocate(state, gen, bytes, stream, out, &detail);
}

static int ap_c_deallocate(uintptr_t state, uint64_t gen, uintptr_t stream, uintptr_t ptr, size_t bytes) {
  int64_t detail = 0;
  return ap_deallocate(state, gen, stream, ptr, bytes, &detail);
}

uintptr_t rmmgo_ap_c_allocate_addr(void) { return (uintptr_t)(rmmgo_ap_c_allocate_fn)ap_c_allocate; }
uintptr_t rmmgo_ap_c_deallocate_addr(void) { return (uintptr_t)(rmmgo_ap_c_deallocate_fn)ap_c_deallocate; }
