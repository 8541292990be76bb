package main

/*
#include "capi_internal.h"
*/
import "C"

import (
	"fmt"
	"sync"

	"github.com/rmmgo/rmmgo/core"
)

// Per-device current resources. core holds the table every language shares;
// the C API adds the references: a device slot set from C holds one
// reference to its resource's handle (held[dev]) until the slot is set or
// reset again, so releasing the caller's own reference never leaves the
// slot dangling. Getters hand out new references, making a non-owning
// handle for resources the C side never saw (the initial cuda resource,
// or one Go code set).
//
// A getter reads the table and takes its reference under heldMu (shared),
// so that no setter can let go of the slot's reference in between: the
// resource it read is then still held by the slot, and the reference it
// hands out keeps it open. Without that, a reset could close the resource
// between the read and the reference, and the getter would make a new
// handle for a resource being closed.

var (
	heldMu sync.RWMutex // C setters hold it, getters share it; held matches the table under it
	held   = map[int]*entry{}
)

// getPerDevice writes a new reference to dev's current resource to out.
func getPerDevice(fn string, dev int, out *C.rmm_resource_t) status {
	if out == nil {
		return invalid(fn, "out is NULL")
	}
	if err := validDevice(dev); err != nil {
		return fail(fn, err, statusInternal)
	}
	heldMu.RLock()
	res, err := core.PerDeviceResource(dev)
	var e *entry
	if err == nil {
		e, err = reg.handleFor(res)
	}
	heldMu.RUnlock()
	if err != nil {
		return fail(fn, err, statusInternal)
	}
	putHandle(out, e)
	return statusSuccess
}

// setPerDevice makes mr's resource dev's current one (mr == nil: reset it
// to the initial resource) and writes the previous one to previous when it
// is not NULL.
func setPerDevice(fn string, dev int, mr C.rmm_resource_t, reset bool, previous *C.rmm_resource_t) status {
	if err := validDevice(dev); err != nil {
		return fail(fn, err, statusInternal)
	}
	var e *entry
	if !reset {
		var err error
		if e, err = reg.get(handleValue(mr)); err != nil {
			return fail(fn, err, statusInvalidHandle)
		}
		if !e.tryRetain() { // the slot's reference
			return fail(fn, fmt.Errorf("%w: released while being set", errInvalidHandle), statusInvalidHandle)
		}
	}

	heldMu.Lock()
	var prev core.Resource
	var err error
	if reset {
		prev, err = core.ResetPerDeviceResource(dev)
	} else {
		prev, err = core.SetPerDeviceResource(dev, e.res)
	}
	if err != nil {
		heldMu.Unlock()
		if e != nil {
			_ = reg.releaseEntry(e)
		}
		return fail(fn, err, statusInternal)
	}
	// Callers that keep the current resource (rmm_current_resource_token)
	// see a new token from now on.
	C.rmmgo_resource_generation_bump()
	old := held[dev]
	if e != nil {
		held[dev] = e
	} else {
		delete(held, dev)
	}
	// The previous resource's new reference is taken before the slot's old
	// reference goes, so that it cannot be closed in between.
	var pe *entry
	if previous != nil {
		pe, err = reg.handleFor(prev)
	}
	heldMu.Unlock()

	// The framework allocators' C side keeps the resource it served for
	// the device: let it go now rather than at its next allocation.
	C.rmmgo_framework_forget(C.int(dev))
	var relErr error
	if old != nil {
		relErr = reg.releaseEntry(old)
	}
	if err != nil {
		return fail(fn+": the previous resource", err, statusInternal)
	}
	if pe != nil {
		putHandle(previous, pe)
	}
	if relErr != nil {
		// The slot is set; only closing the resource it let go of failed.
		return fail(fn+": releasing the previous resource", relErr, statusInternal)
	}
	return statusSuccess
}

//export rmm_get_current_device_resource
func rmm_get_current_device_resource(out *C.rmm_resource_t) (st status) {
	const fn = "rmm_get_current_device_resource"
	defer recoverTo(fn, &st)
	dev, err := currentDevice()
	if err != nil {
		return fail(fn, err, statusCUDA)
	}
	return getPerDevice(fn, dev, out)
}

//export rmm_set_current_device_resource
func rmm_set_current_device_resource(mr C.rmm_resource_t, previous *C.rmm_resource_t) (st status) {
	const fn = "rmm_set_current_device_resource"
	defer recoverTo(fn, &st)
	dev, err := currentDevice()
	if err != nil {
		return fail(fn, err, statusCUDA)
	}
	return setPerDevice(fn, dev, mr, false, previous)
}

//export rmm_reset_current_device_resource
func rmm_reset_current_device_resource(previous *C.rmm_resource_t) (st status) {
	const fn = "rmm_reset_current_device_resource"
	defer recoverTo(fn, &st)
	dev, err := currentDevice()
	if err != nil {
		return fail(fn, err, statusCUDA)
	}
	return setPerDevice(fn, dev, nil, true, previous)
}

//export rmm_get_per_device_resource
func rmm_get_per_device_resource(device C.int, out *C.rmm_resource_t) (st status) {
	fn := fmt.Sprintf("rmm_get_per_device_resource(%d)", device)
	defer recoverTo(fn, &st)
	return getPerDevice(fn, int(device), out)
}

//export rmm_set_per_device_resource
func rmm_set_per_device_resource(device C.int, mr C.rmm_resource_t, previous *C.rmm_resource_t) (st status) {
	fn := fmt.Sprintf("rmm_set_per_device_resource(%d)", device)
	defer recoverTo(fn, &st)
	return setPerDevice(fn, int(device), mr, false, previous)
}

//export rmm_reset_per_device_resource
func rmm_reset_per_device_resource(device C.int, previous *C.rmm_resource_t) (st status) {
	fn := fmt.Sprintf("rmm_reset_per_device_resource(%d)", device)
	defer recoverTo(fn, &st)
	return setPerDevice(fn, int(device), nil, true, previous)
}
