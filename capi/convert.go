package main

/*
#include "capi_internal.h"
*/
import "C"

import (
	"unsafe"

	"github.com/rmmgo/rmmgo/core"
)

// Conversions between the C ABI's values and Go's: handles and streams are
// numbers, never Go pointers, and device pointers are written to C
// out-parameters without ever being held in a Go pointer.

// handleValue is a handle's number.
func handleValue(h C.rmm_resource_t) uintptr { return uintptr(unsafe.Pointer(h)) }

// putHandle writes handle e into the out-parameter out.
func putHandle(out *C.rmm_resource_t, e *entry) {
	*(*C.uintptr_t)(unsafe.Pointer(out)) = C.uintptr_t(e.handle)
}

// putPointer writes a device pointer into a void** out-parameter without
// ever holding it in a Go pointer.
func putPointer(out *unsafe.Pointer, p uintptr) {
	*(*C.uintptr_t)(unsafe.Pointer(out)) = C.uintptr_t(p)
}

// streamValue is a stream's number.
func streamValue(s C.rmm_stream_t) core.Stream { return core.Stream(uintptr(unsafe.Pointer(s))) }

// toHandle is the rmm_resource_t of handle number h (for tests, which
// cannot name C types).
func toHandle(h uintptr) C.rmm_resource_t { return *(*C.rmm_resource_t)(unsafe.Pointer(&h)) }

// cSize is n as a size_t, and goString a C string as a Go string (for
// tests).
func cSize(n uint64) C.size_t   { return C.size_t(n) }
func goString(p *C.char) string { return C.GoString(p) }

// lastMessage is the calling thread's last error message (for tests).
func lastMessage() string { return C.GoString(C.rmm_last_error_message()) }

// checkStructSize applies the rule of options.c to the struct_size of a
// caller's structure (min: C.RMMGO_OPTIONS_MIN_SIZE or ..._STATISTICS_...):
// false, with the thread's message "fn: field is N, ...: how" set, when it
// does not hold.
func checkStructSize(fn, field string, size uintptr, min C.size_t, how string) bool {
	f, h := field+"\x00", how+"\x00"
	// Go memory passed for the duration of the call only, as in setMessage.
	return C.rmmgo_check_struct_size((*C.char)(unsafe.Pointer(unsafe.StringData(fn))), C.size_t(len(fn)),
		(*C.char)(unsafe.Pointer(unsafe.StringData(f))), C.size_t(size), min,
		(*C.char)(unsafe.Pointer(unsafe.StringData(h)))) != 0
}

// cIntOut is p as an int* out-parameter (for tests, which cannot name C types).
func cIntOut(p *int32) *C.int { return (*C.int)(unsafe.Pointer(p)) }
