package main

/*
#include "capi_internal.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unsafe"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/cudart"
)

// Statuses and messages: how a failure reaches the C caller. Every export
// recovers panics (recoverTo), maps core's errors to a status (statusOf) and
// sets the calling thread's message (fail, invalid); the message itself
// lives in C (errors.c).

// status is an rmm_status.
type status = C.rmm_status

// The statuses, in Go spelling.
const (
	statusSuccess            status = C.RMM_SUCCESS
	statusInvalidArgument    status = C.RMM_ERROR_INVALID_ARGUMENT
	statusInvalidHandle      status = C.RMM_ERROR_INVALID_HANDLE
	statusOutOfMemory        status = C.RMM_ERROR_OUT_OF_MEMORY
	statusBadAlloc           status = C.RMM_ERROR_BAD_ALLOC
	statusBadAlignment       status = C.RMM_ERROR_BAD_ALIGNMENT
	statusInvalidPointer     status = C.RMM_ERROR_INVALID_POINTER
	statusInvalidDevice      status = C.RMM_ERROR_INVALID_DEVICE
	statusWrongDevice        status = C.RMM_ERROR_WRONG_DEVICE
	statusNotSupported       status = C.RMM_ERROR_NOT_SUPPORTED
	statusCUDA               status = C.RMM_ERROR_CUDA
	statusBackendUnavailable status = C.RMM_ERROR_BACKEND_UNAVAILABLE
	statusOutOfRange         status = C.RMM_ERROR_OUT_OF_RANGE
	statusInternal           status = C.RMM_ERROR_INTERNAL
)

// Errors the C API raises itself, beside core's sentinels.
var (
	// errInvalidDevice: a device id that does not exist.
	errInvalidDevice = errors.New("no such device")
	// errInternal: a bug in rmmgo.
	errInternal = errors.New("internal error (a bug in rmmgo)")
)

// statusMap lists, in the order they are tried, the errors that decide a
// status. Order matters where an error wraps more than one: core wraps an
// invalid device as both ErrInvalidArgument and cudart.ErrInvalidDevice,
// and running out of device memory as both ErrOutOfMemory and ErrCUDA.
//
// A resource closed under a call is an invalid handle: its last handle was
// released while the call was in progress (or Go code closed it), and a
// call that began after the release would have found the handle gone.
var statusMap = []struct {
	err error
	st  status
}{
	{errInvalidHandle, statusInvalidHandle},
	{core.ErrClosed, statusInvalidHandle},
	{errInternal, statusInternal},
	{core.ErrOutOfMemory, statusOutOfMemory},
	{core.ErrBadAlignment, statusBadAlignment},
	{core.ErrInvalidPointer, statusInvalidPointer},
	{core.ErrWrongDevice, statusWrongDevice},
	{errInvalidDevice, statusInvalidDevice},
	{cudart.ErrInvalidDevice, statusInvalidDevice},
	{cudart.ErrNoDevice, statusBackendUnavailable},
	{cudart.ErrBackendUnavailable, statusBackendUnavailable},
	{core.ErrNotSupported, statusNotSupported},
	{core.ErrOutOfRange, statusOutOfRange},
	{core.ErrInvalidArgument, statusInvalidArgument},
	{core.ErrBadAlloc, statusBadAlloc},
	{core.ErrCUDA, statusCUDA},
}

// statusOf maps err to a status; fallback is the status of an error that
// names no sentinel (statusBadAlloc for allocations, statusInternal
// elsewhere). A bare CUDA error is statusCUDA.
func statusOf(err error, fallback status) status {
	for _, m := range statusMap {
		if errors.Is(err, m.err) {
			return m.st
		}
	}
	var ce *cudart.Error
	if errors.As(err, &ce) {
		return statusCUDA
	}
	return fallback
}

// setMessage makes msg the calling thread's last error message. A cgo call
// from an exported function runs on the C caller's own thread, so the C
// thread-local buffer is that thread's.
func setMessage(msg string) {
	if msg == "" {
		C.rmmgo_set_message(nil, 0)
		return
	}
	// Go memory passed for the duration of the call only: C copies it.
	C.rmmgo_set_message((*C.char)(unsafe.Pointer(unsafe.StringData(msg))), C.size_t(len(msg)))
}

// fail records "fn: err" as the thread's message and returns err's status.
func fail(fn string, err error, fallback status) status {
	setMessage(fn + ": " + err.Error())
	return statusOf(err, fallback)
}

// invalid records an invalid-argument message and returns its status.
func invalid(fn, format string, args ...any) status {
	setMessage(fn + ": " + fmt.Sprintf(format, args...))
	return statusInvalidArgument
}

// recoverTo is deferred by every export: a panic becomes statusInternal in
// *st with the panic's value and where it happened, and never reaches C.
func recoverTo(fn string, st *status) {
	if v := recover(); v != nil {
		setMessage(fmt.Sprintf("%s: %v: panic: %v (at %s)", fn, errInternal, v, panicSite()))
		*st = statusInternal
	}
}

// panicSite names the function, file and line where the recovered panic was
// raised: the first frame below runtime.gopanic outside the runtime.
func panicSite() string {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	seenPanic := false
	for {
		f, more := frames.Next()
		if f.Function == "runtime.gopanic" || strings.HasPrefix(f.Function, "runtime.panic") {
			seenPanic = true
		} else if seenPanic && !strings.HasPrefix(f.Function, "runtime.") {
			return fmt.Sprintf("%s %s:%d", f.Function, f.File, f.Line)
		}
		if !more {
			break
		}
	}
	return "unknown location"
}
