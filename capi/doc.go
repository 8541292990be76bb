// Command capi is the C ABI of rmmgo: built with
//
//	go build -buildmode=c-shared -o build/librmmgo.so ./capi
//
// it is librmmgo.so, whose interface include/rmmgo.h declares. Every function
// of that header is here, either as an exported Go function over package
// core or, where no Go is needed (status names, the version, the thread's
// last error message, option defaults), in plain C (errors.c).
//
// Handles are numbers looked up in one process-wide registry (registry.go):
// slot index, generation and a per-process tag, checked on every lookup with
// atomic loads only, so forged, stale and released handles are refused
// without being followed and the allocation path takes no lock. Handles are
// reference counted; adaptors and sub-allocators hold their upstream's
// handle and per-device slots set from C hold their resource's.
//
// Every exported function validates its arguments, recovers panics (they
// become RMM_ERROR_INTERNAL with the place they happened), maps core's
// errors to statuses with errors.Is, and on failure writes a message to a
// C thread-local buffer that rmm_last_error_message returns. Success leaves
// the message alone.
package main
