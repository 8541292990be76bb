/*
 * fork.c -- the library in the child of a fork().
 *
 * The Go runtime of a c-shared library does not survive fork(): the child
 * has one thread, the runtime's state says it has the parent's (its own
 * background threads, the threads that were inside Go), and a lock one of
 * those held at the fork is never released. A child that entered Go hung
 * at its first call (any call; rmm_mem_get_info alone too), and CUDA does
 * not work in the child of a process that used it either. So a child is
 * refused honestly: a pthread_atfork child handler marks the process, and
 * every entry point that would enter Go returns RMM_ERROR_NOT_SUPPORTED
 * with a message saying why, without entering Go. What never needed Go
 * (rmm_version, rmm_status_string, rmm_last_error_message,
 * rmm_resource_options_init_sized, rmm_last_error_status) still works.
 * Python's multiprocessing: use the "spawn" or "forkserver" start method.
 *
 * The public functions implemented in Go are exported by Go as
 * rmmgo_api_<name> (local to the library, capi/librmmgo.map) and reach the
 * caller through the gated functions below; those implemented in C gate
 * their own calls into Go (thread_cache.c, bindings.c, framework.c), and
 * the child handler turns the per-thread cache and the C path of the
 * cuda_async kinds off, so that the cached hit path needs no check of its
 * own. A new Go export for the header must be named rmmgo_api_<name> and
 * get its gate here (TestEveryEntryPointIsGated checks it).
 */
#include <pthread.h>
#include <string.h>

#include "capi_internal.h"

int rmmgo_forked;

static const char rmmgo_fork_message[] =
    ": rmmgo cannot be used in a child process created by fork(): the library's Go runtime (and CUDA) do not "
    "survive fork; call it from the parent, or start the child with exec (Python multiprocessing: the 'spawn' "
    "or 'forkserver' start method)";

rmm_status rmmgo_fork_refuse(const char* fn) {
  char buf[512];
  size_t n = strlen(fn);
  if (n > 100) {
    n = 100;
  }
  memcpy(buf, fn, n);
  memcpy(buf + n, rmmgo_fork_message, sizeof rmmgo_fork_message); /* with its NUL */
  rmmgo_set_message(buf, n + sizeof rmmgo_fork_message - 1);
  return RMM_ERROR_NOT_SUPPORTED;
}

/* Runs in the child, on its one thread, before fork() returns there. */
static void rmmgo_fork_child(void) {
  __atomic_store_n(&rmmgo_forked, 1, __ATOMIC_SEQ_CST);
  rmmgo_tc_fork_child();
  rmmgo_ap_fork_child();
}

__attribute__((constructor)) static void rmmgo_fork_init(void) { (void)pthread_atfork(NULL, NULL, rmmgo_fork_child); }

/* The Go halves of the public functions (resources.go, backend.go,
 * per_device.go, per_kind.go). */
rmm_status rmmgo_api_backend_name(const char** name);
rmm_status rmmgo_api_runtime_version(int* version);
rmm_status rmmgo_api_driver_version(int* version);
rmm_status rmmgo_api_get_device_count(int* count);
rmm_status rmmgo_api_get_device(int* device);
rmm_status rmmgo_api_device_get_attribute(int* value, int attribute, int device);
rmm_status rmmgo_api_set_device(int device);
rmm_status rmmgo_api_mem_get_info(size_t* free_bytes, size_t* total_bytes);
rmm_status rmmgo_api_stream_create(rmm_stream_t* stream);
rmm_status rmmgo_api_stream_create_with_flags(rmm_stream_t* stream, unsigned int flags);
rmm_status rmmgo_api_stream_destroy(rmm_stream_t stream);
rmm_status rmmgo_api_stream_synchronize(rmm_stream_t stream);
rmm_status rmmgo_api_device_synchronize(void);
rmm_status rmmgo_api_memcpy(void* dst, const void* src, size_t bytes, rmm_stream_t stream);
rmm_status rmmgo_api_memset(void* ptr, int value, size_t bytes, rmm_stream_t stream);
rmm_status rmmgo_api_prefetch(const void* ptr, size_t bytes, int device, rmm_stream_t stream);
rmm_status rmmgo_api_get_current_device_resource(rmm_resource_t* out);
rmm_status rmmgo_api_set_current_device_resource(rmm_resource_t mr, rmm_resource_t* previous);
rmm_status rmmgo_api_reset_current_device_resource(rmm_resource_t* previous);
rmm_status rmmgo_api_get_per_device_resource(int device, rmm_resource_t* out);
rmm_status rmmgo_api_set_per_device_resource(int device, rmm_resource_t mr, rmm_resource_t* previous);
rmm_status rmmgo_api_reset_per_device_resource(int device, rmm_resource_t* previous);
rmm_status rmmgo_api_pool_size(rmm_resource_t mr, size_t* bytes);
rmm_status rmmgo_api_pool_used_bytes(rmm_resource_t mr, size_t* bytes);
rmm_status rmmgo_api_pool_release(rmm_resource_t mr);
rmm_status rmmgo_api_fixed_size_block_size(rmm_resource_t mr, size_t* bytes);
rmm_status rmmgo_api_binning_add_bin(rmm_resource_t mr, size_t allocation_size, rmm_resource_t bin);
rmm_status rmmgo_api_cuda_async_pool_handle(rmm_resource_t mr, rmm_mem_pool_t* pool);
rmm_status rmmgo_api_limiting_allocated_bytes(rmm_resource_t mr, size_t* bytes);
rmm_status rmmgo_api_limiting_allocation_limit(rmm_resource_t mr, size_t* bytes);
rmm_status rmmgo_api_logging_flush(rmm_resource_t mr);
rmm_status rmmgo_api_logging_file_name(rmm_resource_t mr, char* buf, size_t buf_size, size_t* needed);
rmm_status rmmgo_api_statistics_get(rmm_resource_t mr, rmm_statistics* stats);
rmm_status rmmgo_api_statistics_push(rmm_resource_t mr, rmm_statistics* top);
rmm_status rmmgo_api_statistics_pop(rmm_resource_t mr, rmm_statistics* popped);
rmm_status rmmgo_api_tracking_allocated_bytes(rmm_resource_t mr, size_t* bytes);
rmm_status rmmgo_api_tracking_outstanding_count(rmm_resource_t mr, size_t* count);
rmm_status rmmgo_api_tracking_report(rmm_resource_t mr, char* buf, size_t buf_size, size_t* needed);
rmm_status rmmgo_api_resource_create(rmm_resource_kind kind, const rmm_resource_options* options, rmm_resource_t* out);
rmm_status rmmgo_api_resource_retain(rmm_resource_t mr);
rmm_status rmmgo_api_resource_release(rmm_resource_t mr);
rmm_status rmmgo_api_allocate_sync(rmm_resource_t mr, size_t bytes, size_t alignment, void** ptr);
rmm_status rmmgo_api_resource_has_property(rmm_resource_t mr, rmm_property property, int* has);
rmm_status rmmgo_api_resource_is_equal(rmm_resource_t a, rmm_resource_t b, int* equal);
rmm_status rmmgo_api_resource_kind_of(rmm_resource_t mr, rmm_resource_kind* kind);
rmm_status rmmgo_api_resource_name(rmm_resource_t mr, const char** name);
rmm_status rmmgo_api_resource_device(rmm_resource_t mr, int* device);
rmm_status rmmgo_api_resource_upstream(rmm_resource_t mr, rmm_resource_t* upstream);

/* The public functions. */
rmm_status rmm_backend_name(const char** name) {
  RMMGO_FORK_GATE(rmm_backend_name);
  return rmmgo_api_backend_name(name);
}

rmm_status rmm_runtime_version(int* version) {
  RMMGO_FORK_GATE(rmm_runtime_version);
  return rmmgo_api_runtime_version(version);
}

rmm_status rmm_driver_version(int* version) {
  RMMGO_FORK_GATE(rmm_driver_version);
  return rmmgo_api_driver_version(version);
}

rmm_status rmm_get_device_count(int* count) {
  RMMGO_FORK_GATE(rmm_get_device_count);
  return rmmgo_api_get_device_count(count);
}

rmm_status rmm_get_device(int* device) {
  RMMGO_FORK_GATE(rmm_get_device);
  return rmmgo_api_get_device(device);
}

rmm_status rmm_device_get_attribute(int* value, int attribute, int device) {
  RMMGO_FORK_GATE(rmm_device_get_attribute);
  return rmmgo_api_device_get_attribute(value, attribute, device);
}

rmm_status rmm_set_device(int device) {
  RMMGO_FORK_GATE(rmm_set_device);
  return rmmgo_api_set_device(device);
}

rmm_status rmm_mem_get_info(size_t* free_bytes, size_t* total_bytes) {
  RMMGO_FORK_GATE(rmm_mem_get_info);
  return rmmgo_api_mem_get_info(free_bytes, total_bytes);
}

rmm_status rmm_stream_create(rmm_stream_t* stream) {
  RMMGO_FORK_GATE(rmm_stream_create);
  return rmmgo_api_stream_create(stream);
}

rmm_status rmm_stream_create_with_flags(rmm_stream_t* stream, unsigned int flags) {
  RMMGO_FORK_GATE(rmm_stream_create_with_flags);
  return rmmgo_api_stream_create_with_flags(stream, flags);
}

rmm_status rmm_stream_destroy(rmm_stream_t stream) {
  RMMGO_FORK_GATE(rmm_stream_destroy);
  return rmmgo_api_stream_destroy(stream);
}

rmm_status rmm_stream_synchronize(rmm_stream_t stream) {
  RMMGO_FORK_GATE(rmm_stream_synchronize);
  return rmmgo_api_stream_synchronize(stream);
}

rmm_status rmm_device_synchronize(void) {
  RMMGO_FORK_GATE(rmm_device_synchronize);
  return rmmgo_api_device_synchronize();
}

rmm_status rmm_memcpy(void* dst, const void* src, size_t bytes, rmm_stream_t stream) {
  RMMGO_FORK_GATE(rmm_memcpy);
  return rmmgo_api_memcpy(dst, src, bytes, stream);
}

rmm_status rmm_memset(void* ptr, int value, size_t bytes, rmm_stream_t stream) {
  RMMGO_FORK_GATE(rmm_memset);
  return rmmgo_api_memset(ptr, value, bytes, stream);
}

rmm_status rmm_prefetch(const void* ptr, size_t bytes, int device, rmm_stream_t stream) {
  RMMGO_FORK_GATE(rmm_prefetch);
  return rmmgo_api_prefetch(ptr, bytes, device, stream);
}

rmm_status rmm_get_current_device_resource(rmm_resource_t* out) {
  RMMGO_FORK_GATE(rmm_get_current_device_resource);
  return rmmgo_api_get_current_device_resource(out);
}

rmm_status rmm_set_current_device_resource(rmm_resource_t mr, rmm_resource_t* previous) {
  RMMGO_FORK_GATE(rmm_set_current_device_resource);
  return rmmgo_api_set_current_device_resource(mr, previous);
}

rmm_status rmm_reset_current_device_resource(rmm_resource_t* previous) {
  RMMGO_FORK_GATE(rmm_reset_current_device_resource);
  return rmmgo_api_reset_current_device_resource(previous);
}

rmm_status rmm_get_per_device_resource(int device, rmm_resource_t* out) {
  RMMGO_FORK_GATE(rmm_get_per_device_resource);
  return rmmgo_api_get_per_device_resource(device, out);
}

rmm_status rmm_set_per_device_resource(int device, rmm_resource_t mr, rmm_resource_t* previous) {
  RMMGO_FORK_GATE(rmm_set_per_device_resource);
  return rmmgo_api_set_per_device_resource(device, mr, previous);
}

rmm_status rmm_reset_per_device_resource(int device, rmm_resource_t* previous) {
  RMMGO_FORK_GATE(rmm_reset_per_device_resource);
  return rmmgo_api_reset_per_device_resource(device, previous);
}

rmm_status rmm_pool_size(rmm_resource_t mr, size_t* bytes) {
  RMMGO_FORK_GATE(rmm_pool_size);
  return rmmgo_api_pool_size(mr, bytes);
}

rmm_status rmm_pool_used_bytes(rmm_resource_t mr, size_t* bytes) {
  RMMGO_FORK_GATE(rmm_pool_used_bytes);
  return rmmgo_api_pool_used_bytes(mr, bytes);
}

rmm_status rmm_pool_release(rmm_resource_t mr) {
  RMMGO_FORK_GATE(rmm_pool_release);
  return rmmgo_api_pool_release(mr);
}

rmm_status rmm_fixed_size_block_size(rmm_resource_t mr, size_t* bytes) {
  RMMGO_FORK_GATE(rmm_fixed_size_block_size);
  return rmmgo_api_fixed_size_block_size(mr, bytes);
}

rmm_status rmm_binning_add_bin(rmm_resource_t mr, size_t allocation_size, rmm_resource_t bin) {
  RMMGO_FORK_GATE(rmm_binning_add_bin);
  return rmmgo_api_binning_add_bin(mr, allocation_size, bin);
}

rmm_status rmm_cuda_async_pool_handle(rmm_resource_t mr, rmm_mem_pool_t* pool) {
  RMMGO_FORK_GATE(rmm_cuda_async_pool_handle);
  return rmmgo_api_cuda_async_pool_handle(mr, pool);
}

rmm_status rmm_limiting_allocated_bytes(rmm_resource_t mr, size_t* bytes) {
  RMMGO_FORK_GATE(rmm_limiting_allocated_bytes);
  return rmmgo_api_limiting_allocated_bytes(mr, bytes);
}

rmm_status rmm_limiting_allocation_limit(rmm_resource_t mr, size_t* bytes) {
  RMMGO_FORK_GATE(rmm_limiting_allocation_limit);
  return rmmgo_api_limiting_allocation_limit(mr, bytes);
}

rmm_status rmm_logging_flush(rmm_resource_t mr) {
  RMMGO_FORK_GATE(rmm_logging_flush);
  return rmmgo_api_logging_flush(mr);
}

rmm_status rmm_logging_file_name(rmm_resource_t mr, char* buf, size_t buf_size, size_t* needed) {
  RMMGO_FORK_GATE(rmm_logging_file_name);
  return rmmgo_api_logging_file_name(mr, buf, buf_size, needed);
}

rmm_status rmm_statistics_get(rmm_resource_t mr, rmm_statistics* stats) {
  RMMGO_FORK_GATE(rmm_statistics_get);
  return rmmgo_api_statistics_get(mr, stats);
}

rmm_status rmm_statistics_push(rmm_resource_t mr, rmm_statistics* top) {
  RMMGO_FORK_GATE(rmm_statistics_push);
  return rmmgo_api_statistics_push(mr, top);
}

rmm_status rmm_statistics_pop(rmm_resource_t mr, rmm_statistics* popped) {
  RMMGO_FORK_GATE(rmm_statistics_pop);
  return rmmgo_api_statistics_pop(mr, popped);
}

rmm_status rmm_tracking_allocated_bytes(rmm_resource_t mr, size_t* bytes) {
  RMMGO_FORK_GATE(rmm_tracking_allocated_bytes);
  return rmmgo_api_tracking_allocated_bytes(mr, bytes);
}

rmm_status rmm_tracking_outstanding_count(rmm_resource_t mr, size_t* count) {
  RMMGO_FORK_GATE(rmm_tracking_outstanding_count);
  return rmmgo_api_tracking_outstanding_count(mr, count);
}

rmm_status rmm_tracking_report(rmm_resource_t mr, char* buf, size_t buf_size, size_t* needed) {
  RMMGO_FORK_GATE(rmm_tracking_report);
  return rmmgo_api_tracking_report(mr, buf, buf_size, needed);
}

rmm_status rmm_resource_create(rmm_resource_kind kind, const rmm_resource_options* options, rmm_resource_t* out) {
  RMMGO_FORK_GATE(rmm_resource_create);
  return rmmgo_api_resource_create(kind, options, out);
}

rmm_status rmm_resource_retain(rmm_resource_t mr) {
  RMMGO_FORK_GATE(rmm_resource_retain);
  return rmmgo_api_resource_retain(mr);
}

rmm_status rmm_resource_release(rmm_resource_t mr) {
  RMMGO_FORK_GATE(rmm_resource_release);
  return rmmgo_api_resource_release(mr);
}

rmm_status rmm_allocate_sync(rmm_resource_t mr, size_t bytes, size_t alignment, void** ptr) {
  RMMGO_FORK_GATE(rmm_allocate_sync);
  return rmmgo_api_allocate_sync(mr, bytes, alignment, ptr);
}

rmm_status rmm_resource_has_property(rmm_resource_t mr, rmm_property property, int* has) {
  RMMGO_FORK_GATE(rmm_resource_has_property);
  return rmmgo_api_resource_has_property(mr, property, has);
}

rmm_status rmm_resource_is_equal(rmm_resource_t a, rmm_resource_t b, int* equal) {
  RMMGO_FORK_GATE(rmm_resource_is_equal);
  return rmmgo_api_resource_is_equal(a, b, equal);
}

rmm_status rmm_resource_kind_of(rmm_resource_t mr, rmm_resource_kind* kind) {
  RMMGO_FORK_GATE(rmm_resource_kind_of);
  return rmmgo_api_resource_kind_of(mr, kind);
}

rmm_status rmm_resource_name(rmm_resource_t mr, const char** name) {
  RMMGO_FORK_GATE(rmm_resource_name);
  return rmmgo_api_resource_name(mr, name);
}

rmm_status rmm_resource_device(rmm_resource_t mr, int* device) {
  RMMGO_FORK_GATE(rmm_resource_device);
  return rmmgo_api_resource_device(mr, device);
}

rmm_status rmm_resource_upstream(rmm_resource_t mr, rmm_resource_t* upstream) {
  RMMGO_FORK_GATE(rmm_resource_upstream);
  return rmmgo_api_resource_upstream(mr, upstream);
}
