package main

/*
#include "capi_internal.h"
*/
import "C"

import "github.com/rmmgo/rmmgo/cudart"

// The Go halves of rmm_current_resource_token (bindings.c): which function
// C calls for the current device, and the current device itself for
// backends that have no such function (the simulated device).

//export rmmgo_go_device_funcs
func rmmgo_go_device_funcs(getDevice, getLastError *C.uintptr_t) (st status) {
	const fn = "rmm_current_resource_token"
	defer recoverTo(fn, &st)
	r, err := runtimeOrFail()
	if err != nil {
		return fail(fn, err, statusBackendUnavailable)
	}
	gd, gle := cudart.GetDeviceFuncs(r)
	*getDevice, *getLastError = C.uintptr_t(gd), C.uintptr_t(gle)
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
