/*
 * tc_caches.c -- the per-thread caches (tc.h, "the caches"): each thread's
 * cache and its pairs, made on the thread's first call; what a thread's
 * exit does with them (a pthread key destructor: it must not enter Go);
 * the depot of exited threads' pairs; and whether the cache is on at all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "tc.h"

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

pthread_mutex_t tc_depot_mu = PTHREAD_MUTEX_INITIALIZER;
tc_pair** tc_depot;
size_t tc_ndepot, tc_depot_cap;
atomic_size_t tc_depot_n;

__thread tc_cache* tc_mine __attribute__((tls_model("initial-exec")));
static pthread_key_t tc_key;
static pthread_once_t tc_key_once = PTHREAD_ONCE_INIT;
static bool tc_key_ok;

static void tc_thread_exit(void* arg);

static void tc_key_init(void) { tc_key_ok = pthread_key_create(&tc_key, tc_thread_exit) == 0; }

tc_cache* tc_cache_new(void) {
  tc_cache* c;
  tc_sections_init();
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

void tc_pair_free(tc_pair* p) {
  for (int k = 0; k < TC_CLASSES; k++) {
    free(p->cls[k].v);
  }
  free(p);
}

tc_pair* tc_pair_find(tc_cache* c, uint64_t h, uint64_t key, size_t fixed) {
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

bool tc_stack_grow(tc_stack* st) {
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

bool tc_pair_take_sizes(tc_pair* p, rmmgo_tc_block** out, size_t* n, size_t* cap, size_t lo, size_t hi) {
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
/* For tests: set while an exit waits so (0 before and after). */
static _Atomic int tc_test_exit_waiting;

void rmmgo_tc_test_exit_delay(int64_t ns) { atomic_store(&tc_test_exit_delay_ns, ns); }

int rmmgo_tc_test_exit_waiting(void) { return atomic_load(&tc_test_exit_waiting); }

_Atomic int64_t tc_clock_offset;

void rmmgo_tc_clock_advance(int64_t ns) { atomic_fetch_add(&tc_clock_offset, ns); }

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
    atomic_store(&tc_test_exit_waiting, 1);
    nanosleep(&ts, NULL);
    atomic_store(&tc_test_exit_waiting, 0);
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
void tc_depot_expire(rmmgo_tc_block** out, size_t* n, size_t* cap) {
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

bool tc_adopt(tc_cache* c, tc_mslot* ms, uint64_t h, uint64_t key, size_t fixed) {
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
  tc_pair* mine = rmmgo_mirror_alive(ms, h) ? tc_pair_for(c, h, key, fixed) : NULL;
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
