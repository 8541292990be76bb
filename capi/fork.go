package main

/*
#include "capi_internal.h"
*/
import "C"

import "unsafe"

// The public functions implemented in Go are exported as rmmgo_api_<name>
// and reach C callers through the fork gate of fork.c. These are their
// public names for Go code (tests, testing_support.go), which is never in
// the child of a fork.

var _ unsafe.Pointer

func rmm_backend_name(name *C.rmmgo_cstr) status { return rmmgo_api_backend_name(name) }

func rmm_runtime_version(version *C.int) status { return rmmgo_api_runtime_version(version) }

func rmm_driver_version(version *C.int) status { return rmmgo_api_driver_version(version) }

func rmm_get_device_count(count *C.int) status { return rmmgo_api_get_device_count(count) }

func rmm_get_device(device *C.int) status { return rmmgo_api_get_device(device) }

func rmm_device_get_attribute(value *C.int, attribute C.int, device C.int) status {
	return rmmgo_api_device_get_attribute(value, attribute, device)
}

func rmm_set_device(device C.int) status { return rmmgo_api_set_device(device) }

func rmm_mem_get_info(freeBytes, totalBytes *C.size_t) status {
	return rmmgo_api_mem_get_info(freeBytes, totalBytes)
}

func rmm_stream_create(stream *C.rmm_stream_t) status { return rmmgo_api_stream_create(stream) }

func rmm_stream_create_with_flags(stream *C.rmm_stream_t, flags C.uint) status {
	return rmmgo_api_stream_create_with_flags(stream, flags)
}

func rmm_stream_destroy(stream C.rmm_stream_t) status { return rmmgo_api_stream_destroy(stream) }

func rmm_stream_synchronize(stream C.rmm_stream_t) status {
	return rmmgo_api_stream_synchronize(stream)
}

func rmm_device_synchronize() status { return rmmgo_api_device_synchronize() }

func rmm_memcpy(dst unsafe.Pointer, src C.rmmgo_const_voidp, bytes C.size_t, stream C.rmm_stream_t) status {
	return rmmgo_api_memcpy(dst, src, bytes, stream)
}

func rmm_memset(ptr unsafe.Pointer, value C.int, bytes C.size_t, stream C.rmm_stream_t) status {
	return rmmgo_api_memset(ptr, value, bytes, stream)
}

func rmm_prefetch(ptr C.rmmgo_const_voidp, bytes C.size_t, device C.int, stream C.rmm_stream_t) status {
	return rmmgo_api_prefetch(ptr, bytes, device, stream)
}

func rmm_get_current_device_resource(out *C.rmm_resource_t) status {
	return rmmgo_api_get_current_device_resource(out)
}

func rmm_set_current_device_resource(mr C.rmm_resource_t, previous *C.rmm_resource_t) status {
	return rmmgo_api_set_current_device_resource(mr, previous)
}

func rmm_reset_current_device_resource(previous *C.rmm_resource_t) status {
	return rmmgo_api_reset_current_device_resource(previous)
}

func rmm_get_per_device_resource(device C.int, out *C.rmm_resource_t) status {
	return rmmgo_api_get_per_device_resource(device, out)
}

func rmm_set_per_device_resource(device C.int, mr C.rmm_resource_t, previous *C.rmm_resource_t) status {
	return rmmgo_api_set_per_device_resource(device, mr, previous)
}

func rmm_reset_per_device_resource(device C.int, previous *C.rmm_resource_t) status {
	return rmmgo_api_reset_per_device_resource(device, previous)
}

func rmm_pool_size(mr C.rmm_resource_t, bytes *C.size_t) status {
	return rmmgo_api_pool_size(mr, bytes)
}

func rmm_pool_used_bytes(mr C.rmm_resource_t, bytes *C.size_t) status {
	return rmmgo_api_pool_used_bytes(mr, bytes)
}

func rmm_pool_release(mr C.rmm_resource_t) status { return rmmgo_api_pool_release(mr) }

func rmm_fixed_size_block_size(mr C.rmm_resource_t, bytes *C.size_t) status {
	return rmmgo_api_fixed_size_block_size(mr, bytes)
}

func rmm_binning_add_bin(mr C.rmm_resource_t, allocationSize C.size_t, bin C.rmm_resource_t) status {
	return rmmgo_api_binning_add_bin(mr, allocationSize, bin)
}

func rmm_cuda_async_pool_handle(mr C.rmm_resource_t, pool *C.rmm_mem_pool_t) status {
	return rmmgo_api_cuda_async_pool_handle(mr, pool)
}

func rmm_limiting_allocated_bytes(mr C.rmm_resource_t, bytes *C.size_t) status {
	return rmmgo_api_limiting_allocated_bytes(mr, bytes)
}

func rmm_limiting_allocation_limit(mr C.rmm_resource_t, bytes *C.size_t) status {
	return rmmgo_api_limiting_allocation_limit(mr, bytes)
}

func rmm_logging_flush(mr C.rmm_resource_t) status { return rmmgo_api_logging_flush(mr) }

func rmm_logging_file_name(mr C.rmm_resource_t, buf *C.char, bufSize C.size_t, needed *C.size_t) status {
	return rmmgo_api_logging_file_name(mr, buf, bufSize, needed)
}

func rmm_statistics_get(mr C.rmm_resource_t, stats *C.rmm_statistics) status {
	return rmmgo_api_statistics_get(mr, stats)
}

func rmm_statistics_push(mr C.rmm_resource_t, top *C.rmm_statistics) status {
	return rmmgo_api_statistics_push(mr, top)
}

func rmm_statistics_pop(mr C.rmm_resource_t, popped *C.rmm_statistics) status {
	return rmmgo_api_statistics_pop(mr, popped)
}

func rmm_tracking_allocated_bytes(mr C.rmm_resource_t, bytes *C.size_t) status {
	return rmmgo_api_tracking_allocated_bytes(mr, bytes)
}

func rmm_tracking_outstanding_count(mr C.rmm_resource_t, count *C.size_t) status {
	return rmmgo_api_tracking_outstanding_count(mr, count)
}

func rmm_tracking_report(mr C.rmm_resource_t, buf *C.char, bufSize C.size_t, needed *C.size_t) status {
	return rmmgo_api_tracking_report(mr, buf, bufSize, needed)
}

func rmm_resource_create(kind C.rmm_resource_kind, options *C.rmmgo_const_options, out *C.rmm_resource_t) status {
	return rmmgo_api_resource_create(kind, options, out)
}

func rmm_resource_retain(mr C.rmm_resource_t) status { return rmmgo_api_resource_retain(mr) }

func rmm_resource_release(mr C.rmm_resource_t) status { return rmmgo_api_resource_release(mr) }

func rmm_allocate_sync(mr C.rmm_resource_t, bytes, alignment C.size_t, ptr *unsafe.Pointer) status {
	return rmmgo_api_allocate_sync(mr, bytes, alignment, ptr)
}

func rmm_resource_has_property(mr C.rmm_resource_t, property C.rmm_property, has *C.int) status {
	return rmmgo_api_resource_has_property(mr, property, has)
}

func rmm_resource_is_equal(a, b C.rmm_resource_t, equal *C.int) status {
	return rmmgo_api_resource_is_equal(a, b, equal)
}

func rmm_resource_kind_of(mr C.rmm_resource_t, kind *C.rmm_resource_kind) status {
	return rmmgo_api_resource_kind_of(mr, kind)
}

func rmm_resource_name(mr C.rmm_resource_t, name *C.rmmgo_cstr) status {
	return rmmgo_api_resource_name(mr, name)
}

func rmm_resource_device(mr C.rmm_resource_t, device *C.int) status {
	return rmmgo_api_resource_device(mr, device)
}

func rmm_resource_upstream(mr C.rmm_resource_t, upstream *C.rmm_resource_t) status {
	return rmmgo_api_resource_upstream(mr, upstream)
}
