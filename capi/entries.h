/*
 * entries.h -- the library's entry points that may enter Go or take the
 * library's locks, and the names their implementations go by.
 *
 * Every such rmm_* function is a wrapper in entry.c that first checks
 * whether the process is the child of a fork() (one relaxed load) and
 * refuses the call there without entering Go (entry.c says why); the
 * implementation -- a Go export or a C function -- is compiled under the
 * name rmmgo_impl_rmm_*: capi_internal.h includes this file before rmmgo.h,
 * so the defines below rename the header's declarations, the Go exports'
 * C stubs (cgo's _cgo_export.c takes the preambles, and so these defines)
 * and the C definitions alike. Go code is not renamed: Go calls its exports
 * by their Go names. entry.c alone is compiled without the defines
 * (RMMGO_ENTRY_C), so that rmm_* there are the public wrappers.
 *
 * A function added to rmmgo.h that can enter Go or take a lock goes in both
 * lists (the link fails when only one has it: two rmm_* definitions, or a
 * wrapper of nothing); capi's TestEveryEntryIsGuarded checks that every Go
 * export is here.
 */
#ifndef RMMGO_CAPI_ENTRIES_H
#define RMMGO_CAPI_ENTRIES_H

/* X(name, (parameters), (arguments)) for the functions that return an
 * rmm_status. */
#define RMMGO_STATUS_ENTRIES(X) \
  X(rmm_backend_name, (const char** name), (name)) \
  X(rmm_runtime_version, (int* version), (version)) \
  X(rmm_driver_version, (int* version), (version)) \
  X(rmm_get_device_count, (int* count), (count)) \
  X(rmm_get_device, (int* device), (device)) \
  X(rmm_set_device, (int device), (device)) \
  X(rmm_device_get_attribute, (int* value, int attribute, int device), (value, attribute, device)) \
  X(rmm_mem_get_info, (size_t* free_bytes, size_t* total_bytes), (free_bytes, total_bytes)) \
  X(rmm_stream_create, (rmm_stream_t* stream), (stream)) \
  X(rmm_stream_create_with_flags, (rmm_stream_t* stream, unsigned int flags), (stream, flags)) \
  X(rmm_stream_destroy, (rmm_stream_t stream), (stream)) \
  X(rmm_stream_synchronize, (rmm_stream_t stream), (stream)) \
  X(rmm_device_synchronize, (void), ()) \
  X(rmm_memcpy, (void* dst, const void* src, size_t bytes, rmm_stream_t stream), (dst, src, bytes, stream)) \
  X(rmm_memset, (void* ptr, int value, size_t bytes, rmm_stream_t stream), (ptr, value, bytes, stream)) \
  X(rmm_prefetch, (const void* ptr, size_t bytes, int device, rmm_stream_t stream), (ptr, bytes, device, stream)) \
  X(rmm_resource_create, (rmm_resource_kind kind, const rmm_resource_options* options, rmm_resource_t* out), (kind, options, out)) \
  X(rmm_resource_retain, (rmm_resource_t mr), (mr)) \
  X(rmm_resource_release, (rmm_resource_t mr), (mr)) \
  X(rmm_allocate, (rmm_resource_t mr, rmm_stream_t stream, size_t bytes, size_t alignment, void** ptr), (mr, stream, bytes, alignment, ptr)) \
  X(rmm_deallocate, (rmm_resource_t mr, rmm_stream_t stream, void* ptr, size_t bytes, size_t alignment), (mr, stream, ptr, bytes, alignment)) \
  X(rmm_allocate_sync, (rmm_resource_t mr, size_t bytes, size_t alignment, void** ptr), (mr, bytes, alignment, ptr)) \
  X(rmm_deallocate_sync, (rmm_resource_t mr, void* ptr, size_t bytes, size_t alignment), (mr, ptr, bytes, alignment)) \
  X(rmm_resource_has_property, (rmm_resource_t mr, rmm_property property, int* has), (mr, property, has)) \
  X(rmm_resource_is_equal, (rmm_resource_t a, rmm_resource_t b, int* equal), (a, b, equal)) \
  X(rmm_resource_kind_of, (rmm_resource_t mr, rmm_resource_kind* kind), (mr, kind)) \
  X(rmm_resource_name, (rmm_resource_t mr, const char** name), (mr, name)) \
  X(rmm_resource_device, (rmm_resource_t mr, int* device), (mr, device)) \
  X(rmm_resource_upstream, (rmm_resource_t mr, rmm_resource_t* upstream), (mr, upstream)) \
  X(rmm_get_current_device_resource, (rmm_resource_t* out), (out)) \
  X(rmm_set_current_device_resource, (rmm_resource_t mr, rmm_resource_t* previous), (mr, previous)) \
  X(rmm_reset_current_device_resource, (rmm_resource_t* previous), (previous)) \
  X(rmm_get_per_device_resource, (int device, rmm_resource_t* out), (device, out)) \
  X(rmm_set_per_device_resource, (int device, rmm_resource_t mr, rmm_resource_t* previous), (device, mr, previous)) \
  X(rmm_reset_per_device_resource, (int device, rmm_resource_t* previous), (device, previous)) \
  X(rmm_deallocate_direct, (rmm_resource_t mr, rmm_stream_t stream, void* ptr, size_t bytes), (mr, stream, ptr, bytes)) \
  X(rmm_pool_size, (rmm_resource_t mr, size_t* bytes), (mr, bytes)) \
  X(rmm_pool_used_bytes, (rmm_resource_t mr, size_t* bytes), (mr, bytes)) \
  X(rmm_pool_peak_size, (rmm_resource_t mr, size_t* bytes), (mr, bytes)) \
  X(rmm_pool_release, (rmm_resource_t mr), (mr)) \
  X(rmm_fixed_size_block_size, (rmm_resource_t mr, size_t* bytes), (mr, bytes)) \
  X(rmm_binning_add_bin, (rmm_resource_t mr, size_t allocation_size, rmm_resource_t bin), (mr, allocation_size, bin)) \
  X(rmm_cuda_async_pool_handle, (rmm_resource_t mr, rmm_mem_pool_t* pool), (mr, pool)) \
  X(rmm_limiting_allocated_bytes, (rmm_resource_t mr, size_t* bytes), (mr, bytes)) \
  X(rmm_limiting_allocation_limit, (rmm_resource_t mr, size_t* bytes), (mr, bytes)) \
  X(rmm_logging_flush, (rmm_resource_t mr), (mr)) \
  X(rmm_logging_file_name, (rmm_resource_t mr, char* buf, size_t buf_size, size_t* needed), (mr, buf, buf_size, needed)) \
  X(rmm_statistics_get, (rmm_resource_t mr, rmm_statistics* stats), (mr, stats)) \
  X(rmm_statistics_push, (rmm_resource_t mr, rmm_statistics* top), (mr, top)) \
  X(rmm_statistics_pop, (rmm_resource_t mr, rmm_statistics* popped), (mr, popped)) \
  X(rmm_tracking_allocated_bytes, (rmm_resource_t mr, size_t* bytes), (mr, bytes)) \
  X(rmm_tracking_outstanding_count, (rmm_resource_t mr, size_t* count), (mr, count)) \
  X(rmm_tracking_outstanding, (rmm_resource_t mr, void** ptrs, size_t* sizes, size_t capacity, size_t* count), (mr, ptrs, sizes, capacity, count)) \
  X(rmm_tracking_report, (rmm_resource_t mr, char* buf, size_t buf_size, size_t* needed), (mr, buf, buf_size, needed)) \
  X(rmm_resource_create_external, (const rmm_external_resource* ops, rmm_resource_t* out), (ops, out)) \
  X(rmm_resource_external_self, (rmm_resource_t mr, void** self, void** is_equal_fn), (mr, self, is_equal_fn)) \
  X(rmm_memory_snapshot, (rmm_resource_t mr, const char* path), (mr, path)) \
  X(rmm_memory_snapshot_json, (rmm_resource_t mr, char** json), (mr, json)) \
  X(rmm_pressure_resource_create, (rmm_resource_t upstream, const size_t* thresholds, size_t count, rmm_pressure_callback on_cross, rmm_pressure_failure_callback on_failure, void* arg, size_t history, rmm_resource_t* out), (upstream, thresholds, count, on_cross, on_failure, arg, history, out)) \
  X(rmm_pressure_live_bytes, (rmm_resource_t mr, size_t* bytes), (mr, bytes))

/* The renames: these and rmm_allocate_direct, rmm_current_resource_token and
 * the framework allocators, which return no status (entry.c writes their
 * wrappers out). */
#ifndef RMMGO_ENTRY_C
#define rmm_backend_name rmmgo_impl_rmm_backend_name
#define rmm_runtime_version rmmgo_impl_rmm_runtime_version
#define rmm_driver_version rmmgo_impl_rmm_driver_version
#define rmm_get_device_count rmmgo_impl_rmm_get_device_count
#define rmm_get_device rmmgo_impl_rmm_get_device
#define rmm_set_device rmmgo_impl_rmm_set_device
#define rmm_device_get_attribute rmmgo_impl_rmm_device_get_attribute
#define rmm_mem_get_info rmmgo_impl_rmm_mem_get_info
#define rmm_stream_create rmmgo_impl_rmm_stream_create
#define rmm_stream_create_with_flags rmmgo_impl_rmm_stream_create_with_flags
#define rmm_stream_destroy rmmgo_impl_rmm_stream_destroy
#define rmm_stream_synchronize rmmgo_impl_rmm_stream_synchronize
#define rmm_device_synchronize rmmgo_impl_rmm_device_synchronize
#define rmm_memcpy rmmgo_impl_rmm_memcpy
#define rmm_memset rmmgo_impl_rmm_memset
#define rmm_prefetch rmmgo_impl_rmm_prefetch
#define rmm_resource_create rmmgo_impl_rmm_resource_create
#define rmm_resource_retain rmmgo_impl_rmm_resource_retain
#define rmm_resource_release rmmgo_impl_rmm_resource_release
#define rmm_allocate rmmgo_impl_rmm_allocate
#define rmm_deallocate rmmgo_impl_rmm_deallocate
#define rmm_allocate_sync rmmgo_impl_rmm_allocate_sync
#define rmm_deallocate_sync rmmgo_impl_rmm_deallocate_sync
#define rmm_resource_has_property rmmgo_impl_rmm_resource_has_property
#define rmm_resource_is_equal rmmgo_impl_rmm_resource_is_equal
#define rmm_resource_kind_of rmmgo_impl_rmm_resource_kind_of
#define rmm_resource_name rmmgo_impl_rmm_resource_name
#define rmm_resource_device rmmgo_impl_rmm_resource_device
#define rmm_resource_upstream rmmgo_impl_rmm_resource_upstream
#define rmm_get_current_device_resource rmmgo_impl_rmm_get_current_device_resource
#define rmm_set_current_device_resource rmmgo_impl_rmm_set_current_device_resource
#define rmm_reset_current_device_resource rmmgo_impl_rmm_reset_current_device_resource
#define rmm_get_per_device_resource rmmgo_impl_rmm_get_per_device_resource
#define rmm_set_per_device_resource rmmgo_impl_rmm_set_per_device_resource
#define rmm_reset_per_device_resource rmmgo_impl_rmm_reset_per_device_resource
#define rmm_deallocate_direct rmmgo_impl_rmm_deallocate_direct
#define rmm_pool_size rmmgo_impl_rmm_pool_size
#define rmm_pool_used_bytes rmmgo_impl_rmm_pool_used_bytes
#define rmm_pool_peak_size rmmgo_impl_rmm_pool_peak_size
#define rmm_pool_release rmmgo_impl_rmm_pool_release
#define rmm_fixed_size_block_size rmmgo_impl_rmm_fixed_size_block_size
#define rmm_binning_add_bin rmmgo_impl_rmm_binning_add_bin
#define rmm_cuda_async_pool_handle rmmgo_impl_rmm_cuda_async_pool_handle
#define rmm_limiting_allocated_bytes rmmgo_impl_rmm_limiting_allocated_bytes
#define rmm_limiting_allocation_limit rmmgo_impl_rmm_limiting_allocation_limit
#define rmm_logging_flush rmmgo_impl_rmm_logging_flush
#define rmm_logging_file_name rmmgo_impl_rmm_logging_file_name
#define rmm_statistics_get rmmgo_impl_rmm_statistics_get
#define rmm_statistics_push rmmgo_impl_rmm_statistics_push
#define rmm_statistics_pop rmmgo_impl_rmm_statistics_pop
#define rmm_tracking_allocated_bytes rmmgo_impl_rmm_tracking_allocated_bytes
#define rmm_tracking_outstanding_count rmmgo_impl_rmm_tracking_outstanding_count
#define rmm_tracking_outstanding rmmgo_impl_rmm_tracking_outstanding
#define rmm_tracking_report rmmgo_impl_rmm_tracking_report
#define rmm_resource_create_external rmmgo_impl_rmm_resource_create_external
#define rmm_resource_external_self rmmgo_impl_rmm_resource_external_self
#define rmm_memory_snapshot rmmgo_impl_rmm_memory_snapshot
#define rmm_memory_snapshot_json rmmgo_impl_rmm_memory_snapshot_json
#define rmm_pressure_resource_create rmmgo_impl_rmm_pressure_resource_create
#define rmm_pressure_live_bytes rmmgo_impl_rmm_pressure_live_bytes
#define rmm_allocate_direct rmmgo_impl_rmm_allocate_direct
#define rmm_current_resource_token rmmgo_impl_rmm_current_resource_token
#define rmm_cupy_malloc rmmgo_impl_rmm_cupy_malloc
#define rmm_cupy_free rmmgo_impl_rmm_cupy_free
#define rmm_torch_allocate rmmgo_impl_rmm_torch_allocate
#define rmm_torch_deallocate rmmgo_impl_rmm_torch_deallocate
#endif

#endif /* RMMGO_CAPI_ENTRIES_H */
