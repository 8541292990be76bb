/*
 * entry.c -- the public entry points that may enter Go or take one of the
 * library's locks, each a wrapper that refuses the call in the child of a
 * fork() and otherwise calls its implementation (rmmgo_impl_rmm_*;
 * entries.h lists them).
 *
 * Why refuse: Go cannot run in a forked child. fork() copies the calling
 * thread only; locks that the parent's other threads held -- the Go
 * runtime's (its scheduler, heap, the list of spare threads cgo callbacks
 * run on), the library's own -- stay held in the child, where nothing will
 * ever release them, so the child's first call hangs (issue 24). That is
 * so even when no thread of the parent was in the library: the Go runtime
 * has threads of its own (garbage collection, sysmon) that take those locks
 * at any time, and the child has none of them. So there is no safe case to
 * allow, and every child refuses, at once and clearly, with
 * RMM_ERROR_NOT_SUPPORTED. CUDA itself does not survive fork either.
 *
 * The calls that never enter Go nor take a lock keep working in the child:
 * rmm_last_error_message (so the refusal can be read), rmm_last_error_status,
 * rmm_status_string, rmm_version, rmm_version_number,
 * rmm_last_out_of_memory_report, rmm_string_free and
 * rmm_resource_options_init.
 */
#define RMMGO_ENTRY_C 1
#include <pthread.h>
#include <string.h>

#include "capi_internal.h"

int rmmgo_forked;

static void rmmgo_fork_child(void) { __atomic_store_n(&rmmgo_forked, 1, __ATOMIC_RELAXED); }

/* Runs when the library is loaded, before any call can be made (and so
 * before any fork that could matter). */
__attribute__((constructor)) static void rmmgo_fork_init(void) { (void)pthread_atfork(NULL, NULL, rmmgo_fork_child); }

static const char rmmgo_forked_message[] =
    ": rmmgo cannot be used in a child process created by fork(): the Go runtime it runs on, and CUDA, "
    "do not survive a fork (locks held by the parent's other threads stay held in the child). Use the "
    "library in the parent only, or start the child with exec: in Python, multiprocessing's \"spawn\" "
    "or \"forkserver\" start method (multiprocessing.get_context(\"spawn\"))";

rmm_status rmmgo_refuse_forked(const char* fn) {
  char buf[sizeof rmmgo_forked_message + 64];
  size_t n = strlen(fn);
  if (n > 63) {
    n = 63;
  }
  memcpy(buf, fn, n);
  memcpy(buf + n, rmmgo_forked_message, sizeof rmmgo_forked_message);
  rmmgo_set_message(buf, n + sizeof rmmgo_forked_message - 1);
  rmmgo_set_last_status(RMM_ERROR_NOT_SUPPORTED);
  return RMM_ERROR_NOT_SUPPORTED;
}

/* The implementations, as entries.h renames them. */
#define RMMGO_DECLARE(name, params, args) rmm_status rmmgo_impl_##name params;
RMMGO_STATUS_ENTRIES(RMMGO_DECLARE)
#undef RMMGO_DECLARE
void* rmmgo_impl_rmm_allocate_direct(rmm_resource_t mr, rmm_stream_t stream, size_t bytes);
uint64_t rmmgo_impl_rmm_current_resource_token(void);
void* rmmgo_impl_rmm_cupy_malloc(void* param, size_t bytes, int device);
void rmmgo_impl_rmm_cupy_free(void* param, void* ptr, int device);
void* rmmgo_impl_rmm_torch_allocate(size_t bytes, int device, void* stream);
void rmmgo_impl_rmm_torch_deallocate(void* ptr, size_t bytes, int device, void* stream);

/* The wrappers. */
#define RMMGO_WRAP(name, params, args)       \
  rmm_status name params {                   \
    if (RMMGO_FORKED()) {                    \
      return rmmgo_refuse_forked(#name);     \
    }                                        \
    return rmmgo_impl_##name args;           \
  }
RMMGO_STATUS_ENTRIES(RMMGO_WRAP)
#undef RMMGO_WRAP

void* rmm_allocate_direct(rmm_resource_t mr, rmm_stream_t stream, size_t bytes) {
  if (RMMGO_FORKED()) {
    (void)rmmgo_refuse_forked("rmm_allocate_direct");
    return NULL;
  }
  return rmmgo_impl_rmm_allocate_direct(mr, stream, bytes);
}

/* 0, as when the current device cannot be read: the caller then asks
 * rmm_get_current_device_resource, which says why. */
uint64_t rmm_current_resource_token(void) {
  if (RMMGO_FORKED()) {
    return 0;
  }
  return rmmgo_impl_rmm_current_resource_token();
}

void* rmm_cupy_malloc(void* param, size_t bytes, int device) {
  if (RMMGO_FORKED()) {
    (void)rmmgo_refuse_forked("rmm_cupy_malloc");
    return NULL;
  }
  return rmmgo_impl_rmm_cupy_malloc(param, bytes, device);
}

void rmm_cupy_free(void* param, void* ptr, int device) {
  if (RMMGO_FORKED()) {
    (void)rmmgo_refuse_forked("rmm_cupy_free");
    return;
  }
  rmmgo_impl_rmm_cupy_free(param, ptr, device);
}

void* rmm_torch_allocate(size_t bytes, int device, void* stream) {
  if (RMMGO_FORKED()) {
    (void)rmmgo_refuse_forked("rmm_torch_allocate");
    return NULL;
  }
  return rmmgo_impl_rmm_torch_allocate(bytes, device, stream);
}

void rmm_torch_deallocate(void* ptr, size_t bytes, int device, void* stream) {
  if (RMMGO_FORKED()) {
    (void)rmmgo_refuse_forked("rmm_torch_deallocate");
    return;
  }
  rmmgo_impl_rmm_torch_deallocate(ptr, bytes, device, stream);
}
