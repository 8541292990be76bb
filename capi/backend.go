package main

/*
#include "capi_internal.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/cudart"
	_ "github.com/rmmgo/rmmgo/cudart/sim" // the simulated device, for RMMGO_BACKEND=simulated
)

// The backend, devices, streams, copies and fills.

//export rmm_backend_name
func rmm_backend_name(name *C.rmmgo_cstr) (st status) {
	const fn = "rmm_backend_name"
	defer recoverTo(fn, &st)
	if name == nil {
		return invalid(fn, "name is NULL")
	}
	r, err := runtimeOrFail()
	if err != nil {
		return fail(fn, err, statusBackendUnavailable)
	}
	sim := C.int(0)
	if r.Backend() == cudart.BackendSimulated {
		sim = 1
	}
	*name = C.rmmgo_backend_string(sim)
	return statusSuccess
}

// intQuery answers the functions that read one int from the runtime.
func intQuery(fn string, out *C.int, q func(cudart.Runtime) (int, error)) status {
	if out == nil {
		return invalid(fn, "the out-parameter is NULL")
	}
	r, err := runtimeOrFail()
	if err != nil {
		return fail(fn, err, statusBackendUnavailable)
	}
	v, err := q(r)
	if err != nil {
		return fail(fn, err, statusCUDA)
	}
	*out = C.int(v)
	return statusSuccess
}

//export rmm_runtime_version
func rmm_runtime_version(version *C.int) (st status) {
	const fn = "rmm_runtime_version"
	defer recoverTo(fn, &st)
	return intQuery(fn, version, cudart.Runtime.RuntimeVersion)
}

//export rmm_driver_version
func rmm_driver_version(version *C.int) (st status) {
	const fn = "rmm_driver_version"
	defer recoverTo(fn, &st)
	return intQuery(fn, version, cudart.Runtime.DriverVersion)
}

//export rmm_get_device_count
func rmm_get_device_count(count *C.int) (st status) {
	const fn = "rmm_get_device_count"
	defer recoverTo(fn, &st)
	return intQuery(fn, count, cudart.Runtime.GetDeviceCount)
}

//export rmm_get_device
func rmm_get_device(device *C.int) (st status) {
	const fn = "rmm_get_device"
	defer recoverTo(fn, &st)
	return intQuery(fn, device, cudart.Runtime.GetDevice)
}

//export rmm_device_get_attribute
func rmm_device_get_attribute(value *C.int, attribute C.int, device C.int) (st status) {
	const fn = "rmm_device_get_attribute"
	defer recoverTo(fn, &st)
	return intQuery(fn, value, func(r cudart.Runtime) (int, error) {
		if err := checkDevice(r, int(device)); err != nil {
			return 0, err
		}
		return r.DeviceGetAttribute(cudart.DeviceAttr(attribute), int(device))
	})
}

//export rmm_set_device
func rmm_set_device(device C.int) (st status) {
	const fn = "rmm_set_device"
	defer recoverTo(fn, &st)
	r, err := runtimeOrFail()
	if err != nil {
		return fail(fn, err, statusBackendUnavailable)
	}
	if err := checkDevice(r, int(device)); err != nil {
		return fail(fn, err, statusCUDA)
	}
	if err := r.SetDevice(int(device)); err != nil {
		return fail(fmt.Sprintf("%s(%d)", fn, device), err, statusCUDA)
	}
	return statusSuccess
}

//export rmm_mem_get_info
func rmm_mem_get_info(freeBytes, totalBytes *C.size_t) (st status) {
	const fn = "rmm_mem_get_info"
	defer recoverTo(fn, &st)
	if freeBytes == nil || totalBytes == nil {
		return invalid(fn, "free_bytes and total_bytes must not be NULL")
	}
	r, err := runtimeOrFail()
	if err != nil {
		return fail(fn, err, statusBackendUnavailable)
	}
	f, t, err := r.MemGetInfo()
	if err != nil {
		return fail(fn, err, statusCUDA)
	}
	*freeBytes, *totalBytes = C.size_t(f), C.size_t(t)
	return statusSuccess
}

//export rmm_stream_create
func rmm_stream_create(stream *C.rmm_stream_t) (st status) {
	defer recoverTo("rmm_stream_create", &st)
	return streamCreate("rmm_stream_create", stream, cudart.StreamFlagNonBlocking)
}

//export rmm_stream_create_with_flags
func rmm_stream_create_with_flags(stream *C.rmm_stream_t, flags C.uint) (st status) {
	const fn = "rmm_stream_create_with_flags"
	defer recoverTo(fn, &st)
	if flags&^C.uint(cudart.StreamFlagNonBlocking) != 0 {
		return invalid(fn, "flags %#x: only RMM_STREAM_SYNC_DEFAULT (0) and RMM_STREAM_NON_BLOCKING (1)", uint(flags))
	}
	return streamCreate(fn, stream, uint32(flags))
}

func streamCreate(fn string, stream *C.rmm_stream_t, flags uint32) status {
	if stream == nil {
		return invalid(fn, "stream is NULL")
	}
	r, err := runtimeOrFail()
	if err != nil {
		return fail(fn, err, statusBackendUnavailable)
	}
	s, err := streams.create(r, flags)
	if err != nil {
		return fail(fn, err, statusCUDA)
	}
	*(*C.uintptr_t)(unsafe.Pointer(stream)) = C.uintptr_t(s)
	return statusSuccess
}

//export rmm_stream_destroy
func rmm_stream_destroy(stream C.rmm_stream_t) (st status) {
	const fn = "rmm_stream_destroy"
	defer recoverTo(fn, &st)
	s := streamValue(stream)
	if s == cudart.DefaultStream || s == cudart.LegacyDefaultStream || s == cudart.PerThreadDefaultStream {
		return invalid(fn, "the default stream (%#x) cannot be destroyed", uintptr(s))
	}
	r, err := runtimeOrFail()
	if err != nil {
		return fail(fn, err, statusBackendUnavailable)
	}
	if err := streams.destroy(r, s); err != nil {
		return fail(fn, err, statusCUDA)
	}
	return statusSuccess
}

//export rmm_stream_synchronize
func rmm_stream_synchronize(stream C.rmm_stream_t) (st status) {
	const fn = "rmm_stream_synchronize"
	defer recoverTo(fn, &st)
	r, err := runtimeOrFail()
	if err != nil {
		return fail(fn, err, statusBackendUnavailable)
	}
	s := streamValue(stream)
	if err := streams.check(s); err != nil {
		return fail(fn, err, statusInvalidArgument)
	}
	if err := r.StreamSynchronize(s); err != nil {
		return fail(fn, err, statusCUDA)
	}
	return statusSuccess
}

//export rmm_device_synchronize
func rmm_device_synchronize() (st status) {
	const fn = "rmm_device_synchronize"
	defer recoverTo(fn, &st)
	r, err := runtimeOrFail()
	if err != nil {
		return fail(fn, err, statusBackendUnavailable)
	}
	if err := r.DeviceSynchronize(); err != nil {
		return fail(fn, err, statusCUDA)
	}
	return statusSuccess
}

//export rmm_memcpy
func rmm_memcpy(dst unsafe.Pointer, src C.rmmgo_const_voidp, bytes C.size_t, stream C.rmm_stream_t) (st status) {
	const fn = "rmm_memcpy"
	defer recoverTo(fn, &st)
	if bytes == 0 {
		return statusSuccess
	}
	if dst == nil || src == nil {
		return invalid(fn, "dst and src must not be NULL when bytes (%d) is not 0", bytes)
	}
	r, err := runtimeOrFail()
	if err != nil {
		return fail(fn, err, statusBackendUnavailable)
	}
	if err := streams.check(streamValue(stream)); err != nil {
		return fail(fn, err, statusInvalidArgument)
	}
	if err := r.MemcpyAsync(uintptr(dst), uintptr(src), uintptr(bytes), cudart.MemcpyDefault, streamValue(stream)); err != nil {
		return fail(fmt.Sprintf("%s(%#x <- %#x, %d bytes)", fn, uintptr(dst), uintptr(src), bytes), err, statusCUDA)
	}
	return statusSuccess
}

//export rmm_memset
func rmm_memset(ptr unsafe.Pointer, value C.int, bytes C.size_t, stream C.rmm_stream_t) (st status) {
	const fn = "rmm_memset"
	defer recoverTo(fn, &st)
	if bytes == 0 {
		return statusSuccess
	}
	if ptr == nil {
		return invalid(fn, "ptr must not be NULL when bytes (%d) is not 0", bytes)
	}
	r, err := runtimeOrFail()
	if err != nil {
		return fail(fn, err, statusBackendUnavailable)
	}
	if err := streams.check(streamValue(stream)); err != nil {
		return fail(fn, err, statusInvalidArgument)
	}
	if err := r.MemsetAsync(uintptr(ptr), int(value), uintptr(bytes), streamValue(stream)); err != nil {
		return fail(fmt.Sprintf("%s(%#x, %d bytes)", fn, uintptr(ptr), bytes), err, statusCUDA)
	}
	return statusSuccess
}

//export rmm_prefetch
func rmm_prefetch(ptr C.rmmgo_const_voidp, bytes C.size_t, device C.int, stream C.rmm_stream_t) (st status) {
	const fn = "rmm_prefetch"
	defer recoverTo(fn, &st)
	if ptr == nil && bytes != 0 {
		return invalid(fn, "ptr must not be NULL when bytes (%d) is not 0", bytes)
	}
	if _, err := runtimeOrFail(); err != nil {
		return fail(fn, err, statusBackendUnavailable)
	}
	if err := streams.check(streamValue(stream)); err != nil {
		return fail(fn, err, statusInvalidArgument)
	}
	if err := core.PrefetchMemory(uintptr(ptr), uintptr(bytes), int(device), streamValue(stream)); err != nil {
		return fail(fmt.Sprintf("%s(%#x, %d bytes, device %d)", fn, uintptr(ptr), bytes, device), err, statusInternal)
	}
	return statusSuccess
}
