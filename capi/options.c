/*
 * options.c -- rmm_resource_options: the defaults rmm_resource_options_init
 * sets (their one definition: rmm_resource_create reads a caller's options
 * over the same defaults, kinds.go), and the rule for the struct_size of
 * every structure that carries its size (options here, rmm_statistics in
 * per_kind.go). Plain C, so that initialising options never crosses into Go.
 */
#include <stdio.h>
#include <string.h>

#include "capi_internal.h"

void rmmgo_options_defaults(rmm_resource_options* o) {
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->upstream = NULL;
  o->initial_pool_size = RMM_SIZE_DEFAULT;
  o->maximum_pool_size = RMM_SIZE_DEFAULT;
  o->release_threshold = RMM_SIZE_DEFAULT;
  o->export_handle_types = RMM_MEM_HANDLE_NONE;
  o->pool_handle = NULL;
  o->headroom = 0;
  o->arena_size = RMM_SIZE_DEFAULT;
  o->dump_log_on_failure = 0;
  o->block_size = RMM_SIZE_DEFAULT;
  o->blocks_to_preallocate = RMM_SIZE_DEFAULT;
  o->min_size_exponent = -1;
  o->max_size_exponent = -1;
  o->alignment = RMM_DEFAULT_ALIGNMENT;
  o->alignment_threshold = 0;
  /* No default limit: a limiting adaptor must be told its limit. */
  o->allocation_limit = RMM_SIZE_DEFAULT;
  o->log_file = NULL;
  o->auto_flush = 0;
  o->capture_stacks = 0;
  o->allocate_callback = NULL;
  o->deallocate_callback = NULL;
  o->allocate_arg = NULL;
  o->deallocate_arg = NULL;
  o->failure_callback = NULL;
  o->failure_arg = NULL;
}

int rmmgo_check_struct_size(const char* fn, size_t fn_len, const char* field, size_t size, size_t min,
                            const char* how) {
  char msg[512];
  int n;
  if (size >= min && size <= RMMGO_STRUCT_SIZE_MAX) {
    return 1;
  }
  if (size < min) {
    n = snprintf(msg, sizeof msg, "%.*s: %s is %zu, smaller than any version of the structure (%zu bytes): %s",
                 (int)fn_len, fn, field, size, min, how);
  } else {
    n = snprintf(msg, sizeof msg,
                 "%.*s: %s is %zu, more than %d bytes: not the size of a structure (never set?): %s", (int)fn_len,
                 fn, field, size, RMMGO_STRUCT_SIZE_MAX, how);
  }
  rmmgo_set_message(msg, n < 0 ? 0 : (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
  return 0;
}

rmm_status rmm_resource_options_init_sized(rmm_resource_options* options, size_t struct_size) {
  static const char fn[] = "rmm_resource_options_init";
  rmm_resource_options defaults;
  size_t n;
  if (options == NULL) {
    static const char msg[] = "rmm_resource_options_init: options is NULL";
    rmmgo_set_message(msg, sizeof msg - 1);
    return RMM_ERROR_INVALID_ARGUMENT;
  }
  /* Checked before anything is written: the caller's structure is
   * struct_size bytes, and a wrong size would have us write past it. */
  if (!rmmgo_check_struct_size(fn, sizeof fn - 1, "struct_size", struct_size, RMMGO_OPTIONS_MIN_SIZE,
                               "pass sizeof(rmm_resource_options), as the rmm_resource_options_init macro does")) {
    return RMM_ERROR_INVALID_ARGUMENT;
  }
  rmmgo_options_defaults(&defaults);
  n = struct_size < sizeof defaults ? struct_size : sizeof defaults;
  memset(options, 0, struct_size);
  memcpy(options, &defaults, n);
  options->struct_size = n;
  return RMM_SUCCESS;
}
