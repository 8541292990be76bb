/*
 * framework.c -- the framework allocator entry points (CuPy, PyTorch). Their
 * shapes return void* and no status, so they are thin C functions over Go
 * halves that return a status and the pointer as an integer; the status is
 * kept for rmm_last_error_status.
 */
#include "capi_internal.h"

void* rmm_cupy_malloc(void* param, size_t bytes, int device) {
  uintptr_t p = 0;
  rmm_status st = rmmgo_framework_allocate(RMMGO_FRAMEWORK_CUPY, (uintptr_t)param, bytes, device, 0, &p);
  rmmgo_set_last_status(st);
  return st == RMM_SUCCESS ? (void*)p : NULL;
}

void rmm_cupy_free(void* param, void* ptr, int device) {
  (void)rmmgo_framework_deallocate(RMMGO_FRAMEWORK_CUPY, (uintptr_t)param, (uintptr_t)ptr, 0, device, 0);
}

void* rmm_torch_allocate(size_t bytes, int device, void* stream) {
  uintptr_t p = 0;
  rmm_status st = rmmgo_framework_allocate(RMMGO_FRAMEWORK_TORCH, 0, bytes, device, (uintptr_t)stream, &p);
  rmmgo_set_last_status(st);
  return st == RMM_SUCCESS ? (void*)p : NULL;
}

void rmm_torch_deallocate(void* ptr, size_t bytes, int device, void* stream) {
  (void)rmmgo_framework_deallocate(RMMGO_FRAMEWORK_TORCH, 0, (uintptr_t)ptr, bytes, device, (uintptr_t)stream);
}

/* The framework allocators' Go halves allocate and free through these, so
 * that the C per-thread cache serves them as it serves rmm_allocate. */
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
