/*
 * capi_internal.h -- declarations shared by the Go and C halves of the C ABI.
 * Not installed; include/rmmgo.h is the public header.
 *
 * Only declarations live here: cgo copies the preamble of every Go file with
 * //export functions into its generated header, which must not define
 * anything.
 */
#ifndef RMMGO_CAPI_INTERNAL_H
#define RMMGO_CAPI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "rmmgo.h"

/* Internal C functions stay out of librmmgo.so's dynamic symbol table. */
#define RMMGO_INTERNAL __attribute__((visibility("hidden")))

/* Const-qualified spellings of the public parameter types. cgo writes the
 * prototypes of exported Go functions from the C type names a Go signature
 * uses, so the Go side names these to produce exactly the prototypes that
 * rmmgo.h declares (const included). */
typedef const rmm_resource_options rmmgo_const_options;
typedef const char* rmmgo_cstr;
typedef const void* rmmgo_const_voidp;

/* The calling thread's last error message (errors.c). */
RMMGO_INTERNAL void rmmgo_set_message(const char* msg, size_t len);

/* RMM's class name for a kind ("pool_memory_resource"), a static string;
 * NULL for a kind that has none (errors.c). */
RMMGO_INTERNAL const char* rmmgo_kind_class_name(int kind);

/* The option defaults rmm_resource_options_init sets (errors.c). */
RMMGO_INTERNAL void rmmgo_options_defaults(rmm_resource_options* options);

/* Static strings for the backend names: "cuda", or "simulated" when
 * simulated is nonzero (errors.c). */
RMMGO_INTERNAL const char* rmmgo_backend_string(int simulated);

/* Trampolines that call user callbacks (callbacks.c). Pointers cross as
 * uintptr_t so that Go never holds them in pointer-typed values. */
RMMGO_INTERNAL uintptr_t rmmgo_call_allocate(rmm_allocate_callback fn, size_t bytes, uintptr_t stream, uintptr_t arg);
RMMGO_INTERNAL void rmmgo_call_deallocate(rmm_deallocate_callback fn, uintptr_t ptr, size_t bytes, uintptr_t stream,
                           uintptr_t arg);
RMMGO_INTERNAL int rmmgo_call_failure(rmm_failure_callback fn, size_t bytes, uintptr_t arg);

/* The framework allocators' Go halves (framework.go); the C entry points in
 * framework.c turn their uintptr_t results into void*. They return an
 * rmm_status and set the thread's message on failure. */
rmm_status rmmgo_framework_allocate(int which, uintptr_t param, size_t bytes, int device,
                                    uintptr_t stream, uintptr_t* out);
rmm_status rmmgo_framework_deallocate(int which, uintptr_t param, uintptr_t ptr, size_t bytes, int device,
                                      uintptr_t stream);

/* Framework ids for the two functions above. */
#define RMMGO_FRAMEWORK_CUPY 1
#define RMMGO_FRAMEWORK_TORCH 2

#endif /* RMMGO_CAPI_INTERNAL_H */
