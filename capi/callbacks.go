package main

/*
#include "capi_internal.h"
*/
import "C"

import (
	"github.com/rmmgo/rmmgo/core"
)

// Resources over the caller's C functions: callback and failure_callback.
// The function pointers and their arguments stay C values inside Go
// closures, called through the trampolines of callbacks.c (Go cannot call a
// C function pointer); nothing of Go's travels to C.

// makeCallback makes a callback resource over the caller's functions.
func makeCallback(a *createArgs) (core.Resource, error) {
	o := a.o
	if o.allocate_callback == nil || o.deallocate_callback == nil {
		return nil, optionError("allocate_callback", "and options.deallocate_callback must both be set for a callback resource")
	}
	afn, dfn := o.allocate_callback, o.deallocate_callback
	aarg := C.uintptr_t(uintptr(o.allocate_arg))
	darg := C.uintptr_t(uintptr(o.deallocate_arg))
	alloc := func(bytes uintptr, s core.Stream) (uintptr, error) {
		// 0 means "no memory": core reports it as out of memory.
		return uintptr(C.rmmgo_call_allocate(afn, C.size_t(bytes), C.uintptr_t(s), aarg)), nil
	}
	dealloc := func(ptr, bytes uintptr, s core.Stream) error {
		C.rmmgo_call_deallocate(dfn, C.uintptr_t(ptr), C.size_t(bytes), C.uintptr_t(s), darg)
		return nil
	}
	return core.NewCallback(alloc, dealloc)
}

// makeFailureCallback makes a failure_callback adaptor calling the caller's
// function.
func makeFailureCallback(a *createArgs) (core.Resource, error) {
	if a.o.failure_callback == nil {
		return nil, optionError("failure_callback", "is NULL: a failure_callback adaptor needs its function")
	}
	fn := a.o.failure_callback
	arg := C.uintptr_t(uintptr(a.o.failure_arg))
	return core.NewFailureCallback(a.upstream, func(bytes uintptr) bool {
		return C.rmmgo_call_failure(fn, C.size_t(bytes), arg) != 0
	})
}
