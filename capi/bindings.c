/*
 * bindings.c -- the calls shaped for language bindings (rmmgo.h, "calls for
 * bindings"): rmm_allocate_direct and rmm_deallocate_direct over
 * rmm_allocate and rmm_deallocate (and so over the per-thread cache),
 * rmm_last_error_status, and rmm_current_resource_token. All in C: none of
 * them crosses into Go on its common path (the token does on the simulated
 * device, whose current device Go keeps).
 */
#include <stdatomic.h>

#include "capi_internal.h"

/* ------------------------------------------------------ the last status */

/* One int per thread, set by every call that returns no status. */
static __thread int rmmgo_last_status;

void rmmgo_set_last_status(rmm_status st) { rmmgo_last_status = (int)st; }

rmm_status rmm_last_error_status(void) { return (rmm_status)rmmgo_last_status; }

/* ------------------------------------------------- allocate, deallocate */

void* rmm_allocate_direct(rmm_resource_t mr, rmm_stream_t stream, size_t bytes) {
  void* p = NULL;
  rmm_status st = rmm_allocate(mr, stream, bytes, RMM_DEFAULT_ALIGNMENT, &p);
  rmmgo_last_status = (int)st;
  return st == RMM_SUCCESS ? p : NULL;
}

rmm_status rmm_deallocate_direct(rmm_resource_t mr, rmm_stream_t stream, void* ptr, size_t bytes) {
  return rmm_deallocate(mr, stream, ptr, bytes, RMM_DEFAULT_ALIGNMENT);
}

/* ------------------------------------------ the current resource's token */

/* Advanced after every set and reset of any device's resource (per_device.go
 * calls rmmgo_resource_generation_bump once the table holds the new
 * resource). Starts at 1, so that no token is 0. */
static _Atomic uint64_t rmmgo_generation = 1;

void rmmgo_resource_generation_bump(void) { atomic_fetch_add_explicit(&rmmgo_generation, 1, memory_order_seq_cst); }

typedef int (*rmmgo_get_device_fn)(int* device);
typedef int (*rmmgo_get_last_error_fn)(void);

/* How the token reads the current device, once Go has said
 * (rmmgo_go_device_funcs): the CUDA runtime's cudaGetDevice (and
 * cudaGetLastError, to clear a failure); RMMGO_DEVICE_ONLY_ZERO when the
 * process sees one device, which then is always current (the device count
 * is fixed for the life of a process); RMMGO_DEVICE_ASK_GO when the backend
 * has no function to call from C (the simulated device): then Go answers. */
#define RMMGO_DEVICE_ASK_GO ((uintptr_t)1)
#define RMMGO_DEVICE_ONLY_ZERO ((uintptr_t)2)
static _Atomic uintptr_t rmmgo_get_device;
static _Atomic uintptr_t rmmgo_get_last_error;

/* The calling thread's current device, or -1 when it cannot be read. */
static int rmmgo_token_device(void) {
  uintptr_t fn = atomic_load_explicit(&rmmgo_get_device, memory_order_acquire);
  if (fn == 0) {
    uintptr_t gd = 0, gle = 0;
    int count = 0;
    if (rmmgo_go_device_funcs(&gd, &gle, &count) != RMM_SUCCESS) {
      return -1; /* no backend yet: ask again next time */
    }
    atomic_store_explicit(&rmmgo_get_last_error, gle, memory_order_relaxed);
    fn = count == 1 ? RMMGO_DEVICE_ONLY_ZERO : gd != 0 ? gd : RMMGO_DEVICE_ASK_GO;
    atomic_store_explicit(&rmmgo_get_device, fn, memory_order_release);
  }
  if (fn == RMMGO_DEVICE_ONLY_ZERO) {
    return 0;
  }
  int dev = -1;
  if (fn == RMMGO_DEVICE_ASK_GO) {
    return rmmgo_go_current_device(&dev) == RMM_SUCCESS ? dev : -1;
  }
  if (((rmmgo_get_device_fn)fn)(&dev) != 0) {
    uintptr_t le = atomic_load_explicit(&rmmgo_get_last_error, memory_order_relaxed);
    if (le != 0) {
      (void)((rmmgo_get_last_error_fn)le)(); /* leave no CUDA error behind */
    }
    return -1;
  }
  return dev;
}

uint64_t rmm_current_resource_token(void) {
  /* The generation is read before the device and before the caller looks
   * its resource up: a set that lands in between advances it after the
   * table changed, so the caller's next token differs. */
  uint64_t g = atomic_load_explicit(&rmmgo_generation, memory_order_seq_cst);
  int dev = rmmgo_token_device();
  if (dev < 0 || dev > RMMGO_TOKEN_DEVICE_MASK) {
    return 0;
  }
  return (g << RMMGO_TOKEN_DEVICE_BITS) | (uint64_t)dev;
}
