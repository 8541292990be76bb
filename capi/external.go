package main

/*
#include "capi_internal.h"

// external.c
RMMGO_INTERNAL rmm_status rmmgo_ext_allocate(rmm_external_allocate_fn fn, uintptr_t self, size_t bytes,
                              size_t alignment, uintptr_t stream, uintptr_t* ptr, char* msg, size_t msg_size);
RMMGO_INTERNAL rmm_status rmmgo_ext_deallocate(rmm_external_deallocate_fn fn, uintptr_t self, uintptr_t ptr,
                              size_t bytes, size_t alignment, uintptr_t stream, char* msg, size_t msg_size);
RMMGO_INTERNAL rmm_status rmmgo_ext_allocate_sync(rmm_external_allocate_sync_fn fn, uintptr_t self, size_t bytes,
                              size_t alignment, uintptr_t* ptr, char* msg, size_t msg_size);
RMMGO_INTERNAL rmm_status rmmgo_ext_deallocate_sync(rmm_external_deallocate_sync_fn fn, uintptr_t self,
                              uintptr_t ptr, size_t bytes, size_t alignment, char* msg, size_t msg_size);
RMMGO_INTERNAL int rmmgo_ext_is_equal(uintptr_t fn, uintptr_t self, uintptr_t other);
RMMGO_INTERNAL void rmmgo_ext_release(uintptr_t fn, uintptr_t self);
RMMGO_INTERNAL void rmmgo_ext_put(void** out, uintptr_t value);

typedef const rmm_external_resource rmmgo_const_external;
#define RMMGO_EXTERNAL_MIN_SIZE (offsetof(rmm_external_resource, device) + sizeof(int))
*/
import "C"

import (
	"bytes"
	"errors"
	"fmt"
	"unsafe"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/internal/cabi"
)

// External resources: the caller's functions as a registered resource
// (rmm_resource_create_external). The function pointers stay C values in
// Go closures, called through the trampolines of external.c.

func init() {
	k := &kindSpec{kind: C.RMM_RESOURCE_EXTERNAL, name: cabi.KindExternal, class: "external_memory_resource",
		make: func(*createArgs) (core.Resource, error) {
			return nil, fmt.Errorf("%w: make an external resource with rmm_resource_create_external", core.ErrInvalidArgument)
		}}
	kindsByEnum[k.kind] = k
	kindsByName[k.name] = k
	classNames[k.kind] = C.CString(k.class)
}

// extMessageSize is the size of the buffer a function may write its
// message into.
const extMessageSize = 512

// statusError turns a failure status and message from the caller's function
// into an error wrapping the matching sentinel.
func statusError(what string, st C.rmm_status, msg []byte) error {
	if i := bytes.IndexByte(msg, 0); i >= 0 {
		msg = msg[:i]
	}
	text := string(msg)
	if text == "" {
		text = "(no message)"
	}
	var sentinel error
	for _, m := range statusMap {
		if m.st == st {
			sentinel = m.err
			break
		}
	}
	if sentinel == nil || sentinel == errInvalidHandle || sentinel == errInternal {
		sentinel = core.ErrBadAlloc
	}
	return fmt.Errorf("external: %s: %w: %s (status %d)", what, sentinel, text, int(st))
}

//export rmm_resource_create_external
func rmm_resource_create_external(ops *C.rmmgo_const_external, out *C.rmm_resource_t) (st status) {
	const fn = "rmm_resource_create_external"
	defer recoverTo(fn, &st)
	if ops == nil || out == nil {
		return invalid(fn, "ops and out must not be NULL")
	}
	if !checkStructSize(fn, "ops->struct_size", uintptr(ops.struct_size), C.RMMGO_EXTERNAL_MIN_SIZE,
		"set it to sizeof(rmm_external_resource)") {
		return statusInvalidArgument
	}
	var o C.rmm_external_resource
	n := min(uintptr(ops.struct_size), unsafe.Sizeof(o))
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&o)), n), unsafe.Slice((*byte)(unsafe.Pointer(ops)), n))
	if o.allocate == nil || o.deallocate == nil {
		return invalid(fn, "ops->allocate and ops->deallocate must both be set")
	}
	if o.properties&^C.uint(C.RMM_PROPERTY_DEVICE_ACCESSIBLE|C.RMM_PROPERTY_HOST_ACCESSIBLE) != 0 {
		return invalid(fn, "ops->properties %#x has bits that are no rmm_property", uint(o.properties))
	}
	self := C.uintptr_t(uintptr(o.self))
	afn, dfn, asfn, dsfn := o.allocate, o.deallocate, o.allocate_sync, o.deallocate_sync
	funcs := core.ExternalFuncs{
		Allocate: func(s core.Stream, bytes, alignment uintptr) (uintptr, error) {
			var msg [extMessageSize]byte
			var p C.uintptr_t
			st := C.rmmgo_ext_allocate(afn, self, C.size_t(bytes), C.size_t(alignment), C.uintptr_t(s), &p,
				(*C.char)(unsafe.Pointer(&msg[0])), extMessageSize)
			if st != C.RMM_SUCCESS {
				return 0, statusError(fmt.Sprintf("allocating %d bytes", bytes), st, msg[:])
			}
			return uintptr(p), nil
		},
		Deallocate: func(s core.Stream, ptr, bytes, alignment uintptr) error {
			var msg [extMessageSize]byte
			st := C.rmmgo_ext_deallocate(dfn, self, C.uintptr_t(ptr), C.size_t(bytes), C.size_t(alignment), C.uintptr_t(s),
				(*C.char)(unsafe.Pointer(&msg[0])), extMessageSize)
			if st != C.RMM_SUCCESS {
				return statusError(fmt.Sprintf("deallocating %#x (%d bytes)", ptr, bytes), st, msg[:])
			}
			return nil
		},
	}
	if asfn != nil {
		funcs.AllocateSync = func(bytes, alignment uintptr) (uintptr, error) {
			var msg [extMessageSize]byte
			var p C.uintptr_t
			st := C.rmmgo_ext_allocate_sync(asfn, self, C.size_t(bytes), C.size_t(alignment), &p,
				(*C.char)(unsafe.Pointer(&msg[0])), extMessageSize)
			if st != C.RMM_SUCCESS {
				return 0, statusError(fmt.Sprintf("allocating %d bytes", bytes), st, msg[:])
			}
			return uintptr(p), nil
		}
	} else {
		// Allocate on the default stream, then wait for it.
		funcs.AllocateSync = func(bytes, alignment uintptr) (uintptr, error) {
			p, err := funcs.Allocate(core.DefaultStream, bytes, alignment)
			if err != nil {
				return 0, err
			}
			if st := C.rmm_stream_synchronize(nil); st != C.RMM_SUCCESS {
				_ = funcs.Deallocate(core.DefaultStream, p, bytes, alignment)
				return 0, errors.New("external: synchronizing the default stream after allocating failed")
			}
			return p, nil
		}
	}
	if dsfn != nil {
		funcs.DeallocateSync = func(ptr, bytes, alignment uintptr) error {
			var msg [extMessageSize]byte
			st := C.rmmgo_ext_deallocate_sync(dsfn, self, C.uintptr_t(ptr), C.size_t(bytes), C.size_t(alignment),
				(*C.char)(unsafe.Pointer(&msg[0])), extMessageSize)
			if st != C.RMM_SUCCESS {
				return statusError(fmt.Sprintf("deallocating %#x (%d bytes)", ptr, bytes), st, msg[:])
			}
			return nil
		}
	}
	if o.release != nil {
		rfn := C.uintptr_t(uintptr(unsafe.Pointer(o.release)))
		funcs.Release = func() { C.rmmgo_ext_release(rfn, self) }
	}
	var class any
	var equal func(*core.External) bool
	if o.is_equal != nil {
		efn := uintptr(unsafe.Pointer(o.is_equal))
		class = efn
		equal = func(other *core.External) bool {
			return C.rmmgo_ext_is_equal(C.uintptr_t(efn), self, C.uintptr_t(other.Self)) != 0
		}
	}
	var props core.Properties
	if o.properties&C.RMM_PROPERTY_DEVICE_ACCESSIBLE != 0 {
		props |= core.DeviceAccessible
	}
	if o.properties&C.RMM_PROPERTY_HOST_ACCESSIBLE != 0 {
		props |= core.HostAccessible
	}
	device := int(o.device)
	if device >= 0 {
		r, err := runtimeOrFail()
		if err != nil {
			return fail(fn, err, statusBackendUnavailable)
		}
		count, err := r.GetDeviceCount()
		if err != nil {
			return fail(fn, err, statusCUDA)
		}
		if device >= count {
			return fail(fn, fmt.Errorf("%w: ops->device %d (there are %d devices)", errInvalidDevice, device, count), statusInvalidDevice)
		}
	} else {
		device = -1
	}
	res, err := core.NewExternal(funcs, props, uintptr(self), class, equal, device)
	if err != nil {
		return fail(fn, err, statusInvalidArgument)
	}
	regDevice := device
	if regDevice < 0 {
		regDevice = 0
		if r, err := runtimeOrFail(); err == nil {
			if d, err := r.GetDevice(); err == nil {
				regDevice = d
			}
		}
	}
	e, err := reg.add(res, true, regDevice, nil)
	if err != nil {
		return fail(fn, err, statusInternal)
	}
	putHandle(out, e)
	return statusSuccess
}

//export rmm_resource_external_self
func rmm_resource_external_self(mr C.rmm_resource_t, self *unsafe.Pointer, isEqual *unsafe.Pointer) (st status) {
	const fn = "rmm_resource_external_self"
	defer recoverTo(fn, &st)
	e, st := lookupFor(fn, mr)
	if st != statusSuccess {
		return st
	}
	x, ok := core.AsExternal(e.res)
	if !ok {
		return invalid(fn, "the resource is a %s, not an external resource", e.res.Kind())
	}
	// Both are C pointers, written by C.
	C.rmmgo_ext_put(self, C.uintptr_t(x.Self))
	var class uintptr
	if c, ok := x.EqualClass().(uintptr); ok {
		class = c
	}
	C.rmmgo_ext_put(isEqual, C.uintptr_t(class))
	return statusSuccess
}
