package main

/*
#include "capi_internal.h"
*/
import "C"

import "github.com/rmmgo/rmmgo/cudart"

// The Go halves of rmm_current_resource_token (bindings.c): how C reads the
// current device (the runtime's function, or nothing to read when the
// process sees one device), and the current device itself for backends that
// have no such function (the simulated device).

//export rmmgo_go_device_funcs
func rmmgo_go_device_funcs(getDevice, getLastError *C.uintptr_t, count *C.int) (st status) {
	const fn = "rmm_current_resource_token"
	defer recoverTo(fn, &st)
	r, err := runtimeOrFail()
	if err != nil {
		return fail(fn, err, statusBackendUnavailable)
	}
	n, err := r.GetDeviceCount()
	if err != nil {
		return fail(fn, err, statusCUDA)
	}
	gd, gle := cudart.GetDeviceFuncs(r)
	*getDevice, *getLastError, *count = C.uintptr_t(gd), C.uintptr_t(gle), C.int(n)
	return statusSuccess
}

//export rmmgo_go_current_device
func rmmgo_go_current_device(device *C.int) (st status) {
	const fn = "rmm_current_resource_token"
	defer recoverTo(fn, &st)
	dev, err := currentDevice()
	if err != nil {
		return fail(fn, err, statusCUDA)
	}
	*device = C.int(dev)
	return statusSuccess
}
