package main

/*
#include "capi_internal.h"
#include "tc.h"

// The C cache's size classes, for the test that they are internal/cabi's.
static int rmmgo_test_class_of(size_t bytes) { return tc_class_of(bytes); }
static size_t rmmgo_test_class_size(int c) { return tc_class_size(c); }
static const size_t rmmgo_test_class_sizes[] = {RMMGO_CLASS_SIZES};
static size_t rmmgo_test_class_sizes_at(int c) { return rmmgo_test_class_sizes[c]; }
// The budget's per-call rules, for their table test.
static size_t rmmgo_test_fair_share(size_t shared, int64_t holders, size_t quantum) {
  return tc_fair_share(shared, holders, quantum);
}
static int rmmgo_test_lone(int64_t others, int64_t crowd, int64_t now, int64_t after) {
  return tc_lone(others, crowd, now, after);
}
*/
import "C"

import "unsafe"

// Conversions for the Go tests, which cannot name C types: they call the
// exported functions exactly as C does, with values built here.

// testOptions are the rmm_resource_options fields the Go tests set.
type testOptions struct {
	upstream            uintptr // a handle value
	initialPoolSize     uint64
	maximumPoolSize     uint64
	arenaSize           uint64
	blockSize           uint64
	blocksToPreallocate uint64
	minSizeExponent     int
	maxSizeExponent     int
	alignment           uint64
	alignmentThreshold  uint64
	allocationLimit     uint64
	logFile             string
	captureStacks       bool
}

// defaultTestOptions returns what rmm_resource_options_init sets.
func defaultTestOptions() testOptions {
	var o C.rmm_resource_options
	C.rmmgo_options_defaults(&o)
	return testOptions{
		initialPoolSize:     uint64(o.initial_pool_size),
		maximumPoolSize:     uint64(o.maximum_pool_size),
		arenaSize:           uint64(o.arena_size),
		blockSize:           uint64(o.block_size),
		blocksToPreallocate: uint64(o.blocks_to_preallocate),
		minSizeExponent:     int(o.min_size_exponent),
		maxSizeExponent:     int(o.max_size_exponent),
		alignment:           uint64(o.alignment),
		alignmentThreshold:  uint64(o.alignment_threshold),
		allocationLimit:     uint64(o.allocation_limit),
	}
}

// createWithOptions is rmm_resource_create(kind, &options, &out) with the
// defaults overwritten by t. It returns the new handle's value.
func createWithOptions(kind int, t testOptions) (uintptr, status) {
	var o C.rmm_resource_options
	C.rmmgo_options_defaults(&o)
	o.upstream = toHandle(t.upstream)
	o.initial_pool_size = C.size_t(t.initialPoolSize)
	o.maximum_pool_size = C.size_t(t.maximumPoolSize)
	o.arena_size = C.size_t(t.arenaSize)
	o.block_size = C.size_t(t.blockSize)
	o.blocks_to_preallocate = C.size_t(t.blocksToPreallocate)
	o.min_size_exponent = C.int(t.minSizeExponent)
	o.max_size_exponent = C.int(t.maxSizeExponent)
	o.alignment = C.size_t(t.alignment)
	o.alignment_threshold = C.size_t(t.alignmentThreshold)
	o.allocation_limit = C.size_t(t.allocationLimit)
	if t.captureStacks {
		o.capture_stacks = 1
	}
	if t.logFile != "" {
		o.log_file = C.CString(t.logFile)
		defer C.free(unsafe.Pointer(o.log_file))
	}
	var out C.rmm_resource_t
	st := rmm_resource_create(C.rmm_resource_kind(kind), (*C.rmmgo_const_options)(&o), &out)
	return handleValue(out), st
}

// createPlain is rmm_resource_create(kind, NULL, &out).
func createPlain(kind int) (uintptr, status) {
	var out C.rmm_resource_t
	st := rmm_resource_create(C.rmm_resource_kind(kind), nil, &out)
	return handleValue(out), st
}

// newStreamValue is rmm_stream_create, returning the stream's value.
func newStreamValue() (uintptr, status) {
	var s C.rmm_stream_t
	st := rmm_stream_create(&s)
	return uintptr(unsafe.Pointer(s)), st
}

// outHandle calls fn with an rmm_resource_t out-parameter and returns the
// handle value it received.
func outHandle(fn func(*C.rmm_resource_t) status) (uintptr, status) {
	var out C.rmm_resource_t
	st := fn(&out)
	return handleValue(out), st
}

// statisticsValues is rmm_statistics_get: the current bytes and count.
func statisticsValues(h uintptr) (bytes, count int64, st status) {
	var s C.rmm_statistics
	s.struct_size = C.size_t(unsafe.Sizeof(s))
	st = rmm_statistics_get(toHandle(h), &s)
	return int64(s.bytes.value), int64(s.count.value), st
}

// sizeOut calls fn with a size_t out-parameter and returns what it got.
func sizeOut(fn func(*C.size_t) status) (uint64, status) {
	var v C.size_t
	st := fn(&v)
	return uint64(v), st
}

// memFree is the free bytes rmm_mem_get_info reports for the current
// device.
func memFree() (uint64, status) {
	var free, total C.size_t
	st := rmm_mem_get_info(&free, &total)
	return uint64(free), st
}

// isEqual is rmm_resource_is_equal.
func isEqual(a, b uintptr) (bool, status) {
	var eq C.int
	st := rmm_resource_is_equal(toHandle(a), toHandle(b), &eq)
	return eq != 0, st
}

// The statuses the tests compare with.
const (
	testStatusSuccess        = statusSuccess
	testStatusInvalidHandle  = C.RMM_ERROR_INVALID_HANDLE
	testStatusOutOfMemory    = C.RMM_ERROR_OUT_OF_MEMORY
	testStatusInvalidPointer = C.RMM_ERROR_INVALID_POINTER
	testStatusInvalidArg     = C.RMM_ERROR_INVALID_ARGUMENT
	testStatusBadAlignment   = C.RMM_ERROR_BAD_ALIGNMENT
	testStatusInternal       = C.RMM_ERROR_INTERNAL
)

// copyOut is rmm_memcpy(dst, src, len(dst), stream) into Go memory.
func copyOut(dst []byte, src unsafe.Pointer, stream uintptr) status {
	return rmm_memcpy(unsafe.Pointer(&dst[0]), C.rmmgo_const_voidp(src), C.size_t(len(dst)), toStream(stream))
}

// cResourceT is rmm_resource_t, for out-parameters.
type cResourceT = C.rmm_resource_t

// cInt is v as a C int.
func cInt(v int) C.int { return C.int(v) }

// cClassOf and cClassSize are the C cache's tc_class_of and tc_class_size;
// cClassTable is RMMGO_CLASS_SIZES (cabi_generated.h) at c.
func cClassOf(n uintptr) int    { return int(C.rmmgo_test_class_of(C.size_t(n))) }
func cClassSize(c int) uintptr  { return uintptr(C.rmmgo_test_class_size(C.int(c))) }
func cClassTable(c int) uintptr { return uintptr(C.rmmgo_test_class_sizes_at(C.int(c))) }
func cClasses() int             { return int(C.RMMGO_CLASSES) }
func cFairShare(shared uintptr, holders int64, quantum uintptr) uintptr {
	return uintptr(C.rmmgo_test_fair_share(C.size_t(shared), C.int64_t(holders), C.size_t(quantum)))
}
func cLone(others, crowdNs, nowNs, loneAfterNs int64) bool {
	return C.rmmgo_test_lone(C.int64_t(others), C.int64_t(crowdNs), C.int64_t(nowNs), C.int64_t(loneAfterNs)) != 0
}
func cStatusString(v int) string { return C.GoString(C.rmm_status_string(C.rmm_status(v))) }
