/*
 * errors.c -- the C half of the C ABI: the per-thread error message, status
 * names, the version, option defaults and kind names. Everything here is
 * plain C so that these calls never cross into Go.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "capi_internal.h"

/* ------------------------------------------------ the per-thread message */

/* Long enough for any message the library writes (they name what failed,
 * the CUDA error and, for a panic, where it happened); longer ones are cut
 * with "...". */
#define RMMGO_MESSAGE_CAPACITY 2048

/* The buffer is allocated on a thread's first failure, not reserved as
 * static TLS: a library loaded with dlopen (ctypes does) gets only a few
 * hundred bytes of static TLS from glibc, so the thread-local part is one
 * pointer. A pthread key frees the buffer when the thread exits. */
static __thread char* rmmgo_message;
static pthread_key_t rmmgo_message_key;
static pthread_once_t rmmgo_message_once = PTHREAD_ONCE_INIT;

static void rmmgo_message_key_init(void) { (void)pthread_key_create(&rmmgo_message_key, free); }

static char* rmmgo_message_buffer(void) {
  if (rmmgo_message == NULL) {
    char* buf = calloc(1, RMMGO_MESSAGE_CAPACITY);
    if (buf == NULL) {
      return NULL;
    }
    pthread_once(&rmmgo_message_once, rmmgo_message_key_init);
    (void)pthread_setspecific(rmmgo_message_key, buf);
    rmmgo_message = buf;
  }
  return rmmgo_message;
}

void rmmgo_set_message(const char* msg, size_t len) {
  char* buf = rmmgo_message_buffer();
  if (buf == NULL) {
    return; /* no memory for a message; the status still tells */
  }
  if (msg == NULL) {
    len = 0;
  }
  if (len >= RMMGO_MESSAGE_CAPACITY) {
    memcpy(buf, msg, RMMGO_MESSAGE_CAPACITY - 4);
    memcpy(buf + RMMGO_MESSAGE_CAPACITY - 4, "...", 4);
    return;
  }
  if (len > 0) {
    memcpy(buf, msg, len);
  }
  buf[len] = '\0';
}

const char* rmm_last_error_message(void) { return rmmgo_message != NULL ? rmmgo_message : ""; }

/* ---------------------------------------------------------------- status */

const char* rmm_status_string(rmm_status status) {
  switch (status) {
    case RMM_SUCCESS: return "RMM_SUCCESS";
    case RMM_ERROR_INVALID_ARGUMENT: return "RMM_ERROR_INVALID_ARGUMENT";
    case RMM_ERROR_INVALID_HANDLE: return "RMM_ERROR_INVALID_HANDLE";
    case RMM_ERROR_OUT_OF_MEMORY: return "RMM_ERROR_OUT_OF_MEMORY";
    case RMM_ERROR_BAD_ALLOC: return "RMM_ERROR_BAD_ALLOC";
    case RMM_ERROR_BAD_ALIGNMENT: return "RMM_ERROR_BAD_ALIGNMENT";
    case RMM_ERROR_INVALID_POINTER: return "RMM_ERROR_INVALID_POINTER";
    case RMM_ERROR_INVALID_DEVICE: return "RMM_ERROR_INVALID_DEVICE";
    case RMM_ERROR_WRONG_DEVICE: return "RMM_ERROR_WRONG_DEVICE";
    case RMM_ERROR_NOT_SUPPORTED: return "RMM_ERROR_NOT_SUPPORTED";
    case RMM_ERROR_CUDA: return "RMM_ERROR_CUDA";
    case RMM_ERROR_BACKEND_UNAVAILABLE: return "RMM_ERROR_BACKEND_UNAVAILABLE";
    case RMM_ERROR_OUT_OF_RANGE: return "RMM_ERROR_OUT_OF_RANGE";
    case RMM_ERROR_INTERNAL: return "RMM_ERROR_INTERNAL";
  }
  return "RMM_ERROR_UNKNOWN_STATUS";
}

/* --------------------------------------------------------------- version */

const char* rmm_version(void) { return RMMGO_VERSION_STRING; }

int rmm_version_number(void) { return RMMGO_VERSION_NUMBER; }

/* --------------------------------------------------------------- options */

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

rmm_status rmm_resource_options_init_sized(rmm_resource_options* options, size_t struct_size) {
  if (options == NULL) {
    static const char msg[] = "rmm_resource_options_init: options is NULL";
    rmmgo_set_message(msg, sizeof msg - 1);
    return RMM_ERROR_INVALID_ARGUMENT;
  }
  if (struct_size < sizeof(size_t) + sizeof(rmm_resource_t)) {
    static const char msg[] =
        "rmm_resource_options_init: struct_size is too small for an rmm_resource_options";
    rmmgo_set_message(msg, sizeof msg - 1);
    return RMM_ERROR_INVALID_ARGUMENT;
  }
  rmm_resource_options defaults;
  memset(&defaults, 0, sizeof defaults);
  rmmgo_options_defaults(&defaults);
  size_t n = struct_size < sizeof defaults ? struct_size : sizeof defaults;
  memset(options, 0, struct_size);
  memcpy(options, &defaults, n);
  options->struct_size = n;
  return RMM_SUCCESS;
}

/* ------------------------------------------------------------ kind names */

const char* rmmgo_kind_class_name(int kind) {
  switch ((rmm_resource_kind)kind) {
    case RMM_RESOURCE_CUDA: return "cuda_memory_resource";
    case RMM_RESOURCE_MANAGED: return "managed_memory_resource";
    case RMM_RESOURCE_PINNED_HOST: return "pinned_host_memory_resource";
    case RMM_RESOURCE_SYSTEM: return "system_memory_resource";
    case RMM_RESOURCE_SAM_HEADROOM: return "sam_headroom_memory_resource";
    case RMM_RESOURCE_CUDA_ASYNC: return "cuda_async_memory_resource";
    case RMM_RESOURCE_CUDA_ASYNC_VIEW: return "cuda_async_view_memory_resource";
    case RMM_RESOURCE_CUDA_ASYNC_MANAGED: return "cuda_async_managed_memory_resource";
    case RMM_RESOURCE_POOL: return "pool_memory_resource";
    case RMM_RESOURCE_ARENA: return "arena_memory_resource";
    case RMM_RESOURCE_FIXED_SIZE: return "fixed_size_memory_resource";
    case RMM_RESOURCE_BINNING: return "binning_memory_resource";
    case RMM_RESOURCE_ALIGNED: return "aligned_resource_adaptor";
    case RMM_RESOURCE_CALLBACK: return "callback_memory_resource";
    case RMM_RESOURCE_FAILURE_CALLBACK: return "failure_callback_resource_adaptor";
    case RMM_RESOURCE_LIMITING: return "limiting_resource_adaptor";
    case RMM_RESOURCE_LOGGING: return "logging_resource_adaptor";
    case RMM_RESOURCE_PREFETCH: return "prefetch_resource_adaptor";
    case RMM_RESOURCE_STATISTICS: return "statistics_resource_adaptor";
    case RMM_RESOURCE_THREAD_SAFE: return "thread_safe_resource_adaptor";
    case RMM_RESOURCE_TRACKING: return "tracking_resource_adaptor";
  }
  return NULL;
}

const char* rmmgo_backend_string(int simulated) { return simulated ? "simulated" : "cuda"; }
