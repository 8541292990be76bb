/*
 * callbacks.c -- trampolines through which Go calls the C function pointers
 * of callback and failure_callback resources. Go cannot call a C function
 * pointer itself.
 */
#include "capi_internal.h"

uintptr_t rmmgo_call_allocate(rmm_allocate_callback fn, size_t bytes, uintptr_t stream, uintptr_t arg) {
  return (uintptr_t)fn(bytes, (rmm_stream_t)stream, (void*)arg);
}

void rmmgo_call_deallocate(rmm_deallocate_callback fn, uintptr_t ptr, size_t bytes, uintptr_t stream,
                           uintptr_t arg) {
  fn((void*)ptr, bytes, (rmm_stream_t)stream, (void*)arg);
}

int rmmgo_call_failure(rmm_failure_callback fn, size_t bytes, uintptr_t arg) {
  return fn(bytes, (void*)arg);
}
