/*
 * framework.c -- the framework allocator entry points (CuPy, PyTorch). Their
 * shapes return void* and no status (the status is kept for
 * rmm_last_error_status).
 *
 * The common call -- the device's current resource, with that device
 * current -- is served here in C, as rmm_allocate is: one entry per device
 * names the resource it last served (its handle, with one reference of
 * its own, and the rmm_current_resource_token it was found under), and a
 * table remembers each pointer handed out with its entry and size, so that
 * a free needs no size (CuPy), goes back to the resource that made the
 * memory even after the device's resource was replaced, and the resource
 * lives while memory it handed out does (an entry counts its live
 * allocations and lets its reference go when it is both replaced and
 * empty). Everything else -- a param resource (CuPy), another device
 * current, a changed token, a failure -- goes to the Go halves in
 * framework.go, which keep their own record; a free the table does not know
 * is theirs.
 *
 * Locks: a device's entry lock, then nothing; a table shard's lock, then
 * nothing. No lock is held across a call into the library or Go.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "capi_internal.h"

/* ------------------------------------------------------------- entries */

typedef struct fw_entry {
  uint64_t token;  /* rmm_current_resource_token when it was found */
  uint64_t handle; /* one reference of the entry's own */
  int device;
  size_t live;  /* allocations handed out and not yet freed, + 1 while installed */
} fw_entry;

enum { FW_DEVICES = 64, FW_SHARDS = 64 };

static fw_entry* fw_slot[FW_DEVICES];
static pthread_mutex_t fw_slot_mu[FW_DEVICES] = {[0 ... FW_DEVICES - 1] = PTHREAD_MUTEX_INITIALIZER};

/* Drops one count of e (taken by an allocation or by installing it); the
 * last one gives back its reference and frees it. */
static void fw_entry_put(fw_entry* e) {
  pthread_mutex_lock(&fw_slot_mu[e->device]);
  bool last = --e->live == 0;
  pthread_mutex_unlock(&fw_slot_mu[e->device]);
  if (last) {
    (void)rmm_resource_release((rmm_resource_t)(uintptr_t)e->handle);
    free(e);
  }
}

/* The entry for device dev under token tok with one count taken, or NULL. */
static fw_entry* fw_entry_get(int dev, uint64_t tok) {
  pthread_mutex_lock(&fw_slot_mu[dev]);
  fw_entry* e = fw_slot[dev];
  if (e != NULL && e->token == tok) {
    e->live++;
  } else {
    e = NULL;
  }
  pthread_mutex_unlock(&fw_slot_mu[dev]);
  return e;
}

/* Installs a new entry for dev: the device's resource now, under token tok
 * (read before the resource was asked for, so that a change in between
 * makes the next call look again). Returns it with one count taken, or
 * NULL (the Go halves then serve the call and report any failure). */
static fw_entry* fw_entry_install(int dev, uint64_t tok) {
  rmm_resource_t h = NULL;
  if (rmm_get_per_device_resource(dev, &h) != RMM_SUCCESS) {
    return NULL;
  }
  fw_entry* e = malloc(sizeof *e);
  if (e == NULL) {
    (void)rmm_resource_release(h);
    return NULL;
  }
  e->token = tok;
  e->handle = (uint64_t)(uintptr_t)h;
  e->device = dev;
  e->live = 2; /* installed, and the caller's */
  pthread_mutex_lock(&fw_slot_mu[dev]);
  fw_entry* old = fw_slot[dev];
  fw_slot[dev] = e;
  pthread_mutex_unlock(&fw_slot_mu[dev]);
  if (old != NULL) {
    fw_entry_put(old); /* no longer installed */
  }
  return e;
}

void rmmgo_framework_forget(int dev) {
  if (dev < 0 || dev >= FW_DEVICES) {
    return;
  }
  pthread_mutex_lock(&fw_slot_mu[dev]);
  fw_entry* old = fw_slot[dev];
  fw_slot[dev] = NULL;
  pthread_mutex_unlock(&fw_slot_mu[dev]);
  if (old != NULL) {
    fw_entry_put(old);
  }
}

/* --------------------------------------------------------------- table */

typedef struct {
  uintptr_t ptr; /* 0: empty */
  fw_entry* e;
  size_t bytes;
} fw_rec;

typedef struct {
  pthread_mutex_t mu;
  fw_rec* v;
  size_t cap; /* a power of two, or 0 */
  size_t n;
  char pad[64];
} fw_shard;

static fw_shard fw_shards[FW_SHARDS] = {[0 ... FW_SHARDS - 1] = {.mu = PTHREAD_MUTEX_INITIALIZER}};

static inline uint64_t fw_hash(uintptr_t p) { return (uint64_t)(p >> 8) * 0x9e3779b97f4a7c15ull; }

static fw_shard* fw_shard_of(uintptr_t p) { return &fw_shards[fw_hash(p) >> 58]; }

static size_t fw_home(const fw_shard* s, uintptr_t p) { return (size_t)(fw_hash(p) >> 20) & (s->cap - 1); }

static void fw_put_locked(fw_shard* s, fw_rec r) {
  size_t i = fw_home(s, r.ptr);
  while (s->v[i].ptr != 0) {
    i = (i + 1) & (s->cap - 1);
  }
  s->v[i] = r;
  s->n++;
}

/* Records r; false when there is no memory for it. */
static bool fw_record(fw_rec r) {
  fw_shard* s = fw_shard_of(r.ptr);
  pthread_mutex_lock(&s->mu);
  if ((s->n + 1) * 4 > s->cap * 3) { /* keep the load under 3/4 */
    size_t ncap = s->cap ? s->cap * 2 : 64;
    fw_rec* nv = calloc(ncap, sizeof *nv);
    if (nv == NULL) {
      pthread_mutex_unlock(&s->mu);
      return false;
    }
    fw_rec* old = s->v;
    size_t ocap = s->cap;
    s->v = nv;
    s->cap = ncap;
    s->n = 0;
    for (size_t i = 0; i < ocap; i++) {
      if (old[i].ptr != 0) {
        fw_put_locked(s, old[i]);
      }
    }
    free(old);
  }
  fw_put_locked(s, r);
  pthread_mutex_unlock(&s->mu);
  return true;
}

/* Takes p's record out of the table into *r; false when p is not there. */
static bool fw_take(uintptr_t p, fw_rec* r) {
  fw_shard* s = fw_shard_of(p);
  pthread_mutex_lock(&s->mu);
  if (s->cap == 0) {
    pthread_mutex_unlock(&s->mu);
    return false;
  }
  size_t mask = s->cap - 1, i = fw_home(s, p);
  while (s->v[i].ptr != p) {
    if (s->v[i].ptr == 0) {
      pthread_mutex_unlock(&s->mu);
      return false;
    }
    i = (i + 1) & mask;
  }
  *r = s->v[i];
  /* Backward-shift deletion: move later members of the run into the hole
   * when their home does not lie between the hole and them. */
  size_t hole = i;
  for (size_t j = (i + 1) & mask; s->v[j].ptr != 0; j = (j + 1) & mask) {
    size_t h = fw_home(s, s->v[j].ptr);
    if (((j - h) & mask) >= ((j - hole) & mask)) {
      s->v[hole] = s->v[j];
      hole = j;
    }
  }
  s->v[hole].ptr = 0;
  s->n--;
  pthread_mutex_unlock(&s->mu);
  return true;
}

/* ------------------------------------------------------ the fast paths */

/* Names the entry point in the thread's message, as the Go halves do:
 * "fn(N bytes, device D): " before what rmm_allocate said. */
static void fw_name_message(const char* fn, size_t bytes, int device) {
  char buf[2048];
  int n = snprintf(buf, sizeof buf, "%s(%zu bytes, device %d): %s", fn, bytes, device, rmm_last_error_message());
  if (n > 0) {
    rmmgo_set_message(buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
  }
}

/* Allocates bytes (> 0) on stream from device's current resource when that
 * device is current: 1 with *out and *st set, 0 when the Go halves must
 * serve the call (nothing was allocated then). */
static int fw_allocate(const char* fn, size_t bytes, int device, uintptr_t stream, void** out, rmm_status* st) {
  if (bytes == 0 || device < 0 || device >= FW_DEVICES) {
    return 0;
  }
  uint64_t tok = rmm_current_resource_token();
  if (tok == 0 || (int)(tok & RMMGO_TOKEN_DEVICE_MASK) != device) {
    return 0;
  }
  fw_entry* e = fw_entry_get(device, tok);
  if (e == NULL && (e = fw_entry_install(device, tok)) == NULL) {
    return 0;
  }
  void* p = NULL;
  *st = rmm_allocate((rmm_resource_t)(uintptr_t)e->handle, (rmm_stream_t)stream, bytes, RMM_DEFAULT_ALIGNMENT, &p);
  if (*st != RMM_SUCCESS) {
    fw_entry_put(e);
    fw_name_message(fn, bytes, device);
    *out = NULL;
    return 1;
  }
  if (!fw_record((fw_rec){(uintptr_t)p, e, bytes})) {
    (void)rmm_deallocate((rmm_resource_t)(uintptr_t)e->handle, (rmm_stream_t)stream, p, bytes, RMM_DEFAULT_ALIGNMENT);
    fw_entry_put(e);
    return 0;
  }
  *out = p;
  return 1;
}

/* Frees p when the table knows it: 1 when done, 0 when it is the Go
 * halves' to free (or to report). */
static int fw_deallocate(int which, void* p, uintptr_t stream) {
  fw_rec r;
  if (p == NULL || !fw_take((uintptr_t)p, &r)) {
    return 0;
  }
  uint64_t tok = rmm_current_resource_token();
  if (tok != 0 && (int)(tok & RMMGO_TOKEN_DEVICE_MASK) == r.e->device) {
    (void)rmm_deallocate((rmm_resource_t)(uintptr_t)r.e->handle, (rmm_stream_t)stream, p, r.bytes,
                         RMM_DEFAULT_ALIGNMENT);
  } else { /* with its device current, as every free */
    (void)rmmgo_framework_deallocate_on(which, r.e->device, r.e->handle, stream, (uintptr_t)p, r.bytes);
  }
  fw_entry_put(r.e);
  return 1;
}

/* --------------------------------------------------------- entry points */

void* rmm_cupy_malloc(void* param, size_t bytes, int device) {
  void* p = NULL;
  rmm_status st;
  if (param == NULL && fw_allocate("rmm_cupy_malloc", bytes, device, 0, &p, &st)) {
    rmmgo_set_last_status(st);
    return p;
  }
  uintptr_t q = 0;
  st = rmmgo_framework_allocate(RMMGO_FRAMEWORK_CUPY, (uintptr_t)param, bytes, device, 0, &q);
  rmmgo_set_last_status(st);
  return st == RMM_SUCCESS ? (void*)q : NULL;
}

void rmm_cupy_free(void* param, void* ptr, int device) {
  if (fw_deallocate(RMMGO_FRAMEWORK_CUPY, ptr, 0)) {
    return;
  }
  (void)rmmgo_framework_deallocate(RMMGO_FRAMEWORK_CUPY, (uintptr_t)param, (uintptr_t)ptr, 0, device, 0);
}

void* rmm_torch_allocate(size_t bytes, int device, void* stream) {
  void* p = NULL;
  rmm_status st;
  if (fw_allocate("rmm_torch_allocate", bytes, device, (uintptr_t)stream, &p, &st)) {
    rmmgo_set_last_status(st);
    return p;
  }
  uintptr_t q = 0;
  st = rmmgo_framework_allocate(RMMGO_FRAMEWORK_TORCH, 0, bytes, device, (uintptr_t)stream, &q);
  rmmgo_set_last_status(st);
  return st == RMM_SUCCESS ? (void*)q : NULL;
}

void rmm_torch_deallocate(void* ptr, size_t bytes, int device, void* stream) {
  if (fw_deallocate(RMMGO_FRAMEWORK_TORCH, ptr, (uintptr_t)stream)) {
    return;
  }
  (void)rmmgo_framework_deallocate(RMMGO_FRAMEWORK_TORCH, 0, (uintptr_t)ptr, bytes, device, (uintptr_t)stream);
}

/* The Go halves allocate and free through these, so that the C per-thread
 * cache serves them as it serves rmm_allocate. */
rmm_status rmmgo_allocate_at(uint64_t handle, uintptr_t stream, size_t bytes, uintptr_t* out) {
  void* p = NULL;
  rmm_status st = rmm_allocate((rmm_resource_t)(uintptr_t)handle, (rmm_stream_t)stream, bytes, RMM_DEFAULT_ALIGNMENT, &p);
  *out = (uintptr_t)p;
  return st;
}

rmm_status rmmgo_deallocate_at(uint64_t handle, uintptr_t stream, uintptr_t ptr, size_t bytes) {
  return rmm_deallocate((rmm_resource_t)(uintptr_t)handle, (rmm_stream_t)stream, (void*)ptr, bytes,
                        RMM_DEFAULT_ALIGNMENT);
}
