/*
 * external.c -- trampolines through which Go calls the functions of an
 * external resource (rmm_resource_create_external). Go cannot call a C
 * function pointer itself.
 */
#include "capi_internal.h"

rmm_status rmmgo_ext_allocate(rmm_external_allocate_fn fn, uintptr_t self, size_t bytes, size_t alignment,
                              uintptr_t stream, uintptr_t* ptr, char* msg, size_t msg_size) {
  void* p = NULL;
  rmm_status st = fn((void*)self, bytes, alignment, (rmm_stream_t)stream, &p, msg, msg_size);
  *ptr = (uintptr_t)p;
  return st;
}

rmm_status rmmgo_ext_deallocate(rmm_external_deallocate_fn fn, uintptr_t self, uintptr_t ptr, size_t bytes,
                                size_t alignment, uintptr_t stream, char* msg, size_t msg_size) {
  return fn((void*)self, (void*)ptr, bytes, alignment, (rmm_stream_t)stream, msg, msg_size);
}

rmm_status rmmgo_ext_allocate_sync(rmm_external_allocate_sync_fn fn, uintptr_t self, size_t bytes, size_t alignment,
                                   uintptr_t* ptr, char* msg, size_t msg_size) {
  void* p = NULL;
  rmm_status st = fn((void*)self, bytes, alignment, &p, msg, msg_size);
  *ptr = (uintptr_t)p;
  return st;
}

rmm_status rmmgo_ext_deallocate_sync(rmm_external_deallocate_sync_fn fn, uintptr_t self, uintptr_t ptr, size_t bytes,
                                     size_t alignment, char* msg, size_t msg_size) {
  return fn((void*)self, (void*)ptr, bytes, alignment, msg, msg_size);
}

int rmmgo_ext_is_equal(uintptr_t fn, uintptr_t self, uintptr_t other) {
  return ((int (*)(void*, void*))fn)((void*)self, (void*)other);
}

void rmmgo_ext_release(uintptr_t fn, uintptr_t self) { ((void (*)(void*))fn)((void*)self); }

void rmmgo_ext_put(void** out, uintptr_t value) {
  if (out != NULL) { *out = (void*)value; }
}
