package main

/*
#include "capi_internal.h"

// oom.c
RMMGO_INTERNAL void rmmgo_set_oom_report(const char* s, size_t len);
RMMGO_INTERNAL char* rmmgo_strndup(const char* s, size_t len);
RMMGO_INTERNAL void rmmgo_call_pressure(rmm_pressure_callback fn, size_t threshold, size_t live, int up, uintptr_t arg);
RMMGO_INTERNAL int rmmgo_call_pressure_failure(rmm_pressure_failure_callback fn, size_t bytes, int retry, uintptr_t arg);

typedef const size_t rmmgo_const_size;
typedef const char rmmgo_const_char;
*/
import "C"

import (
	"encoding/json"
	"errors"
	"fmt"
	"unsafe"

	"github.com/rmmgo/rmmgo/core"
)

// Out of memory in the C ABI: the report of the thread's last failed
// allocation as JSON, memory snapshots, pressure resources
// (docs/out-of-memory.md).

// noteOutOfMemory keeps err's report as the thread's JSON report (or
// clears it). Called on allocation failures only.
func noteOutOfMemory(err error) {
	var e *core.OutOfMemoryError
	if err == nil || !errors.As(err, &e) {
		C.rmmgo_set_oom_report(nil, 0)
		return
	}
	data, jerr := json.Marshal(e.Map())
	if jerr != nil || len(data) == 0 {
		C.rmmgo_set_oom_report(nil, 0)
		return
	}
	C.rmmgo_set_oom_report((*C.char)(unsafe.Pointer(&data[0])), C.size_t(len(data)))
}

//export rmm_memory_snapshot
func rmm_memory_snapshot(mr C.rmm_resource_t, path *C.rmmgo_const_char) (st status) {
	const fn = "rmm_memory_snapshot"
	defer recoverTo(fn, &st)
	if path == nil {
		return invalid(fn, "path is NULL")
	}
	e, st := lookupFor(fn, mr)
	if st != statusSuccess {
		return st
	}
	if err := core.WriteMemorySnapshot(e.res, C.GoString((*C.char)(unsafe.Pointer(path)))); err != nil {
		return fail(fn, fmt.Errorf("%w: %w", core.ErrInvalidArgument, err), statusInvalidArgument)
	}
	return statusSuccess
}

//export rmm_memory_snapshot_json
func rmm_memory_snapshot_json(mr C.rmm_resource_t, out **C.char) (st status) {
	const fn = "rmm_memory_snapshot_json"
	defer recoverTo(fn, &st)
	if out == nil {
		return invalid(fn, "json is NULL")
	}
	e, st := lookupFor(fn, mr)
	if st != statusSuccess {
		return st
	}
	data, err := core.TakeMemorySnapshot(e.res).JSON()
	if err != nil {
		return fail(fn, fmt.Errorf("%w: %w", errInternal, err), statusInternal)
	}
	s := C.rmmgo_strndup((*C.char)(unsafe.Pointer(unsafe.SliceData(data))), C.size_t(len(data)))
	if s == nil {
		return fail(fn, fmt.Errorf("%w: no host memory for the snapshot", core.ErrOutOfMemory), statusOutOfMemory)
	}
	*out = s
	return statusSuccess
}

//export rmm_pressure_resource_create
func rmm_pressure_resource_create(upstream C.rmm_resource_t, thresholds *C.rmmgo_const_size, count C.size_t,
	onCross C.rmm_pressure_callback, onFailure C.rmm_pressure_failure_callback, arg unsafe.Pointer,
	history C.size_t, out *C.rmm_resource_t) (st status) {
	const fn = "rmm_pressure_resource_create"
	defer recoverTo(fn, &st)
	if out == nil {
		return invalid(fn, "out is NULL")
	}
	if count > 0 && thresholds == nil {
		return invalid(fn, "thresholds is NULL with count %d", count)
	}
	if count > 0 && onCross == nil {
		return invalid(fn, "thresholds need an on_cross callback")
	}
	if history > 1<<24 {
		return invalid(fn, "history %d exceeds 16777216 events", history)
	}
	up, err := reg.get(handleValue(upstream))
	if err != nil {
		return fail(fn, fmt.Errorf("upstream: %w", err), statusInvalidHandle)
	}
	if !up.tryRetain() {
		return fail(fn, fmt.Errorf("upstream: %w: released while in use", errInvalidHandle), statusInvalidHandle)
	}
	opts := core.PressureOptions{History: int(history)}
	if count > 0 {
		for _, t := range unsafe.Slice(thresholds, int(count)) {
			opts.Thresholds = append(opts.Thresholds, uintptr(t))
		}
	}
	a := C.uintptr_t(uintptr(arg))
	if onCross != nil {
		opts.OnCross = func(ev core.PressureEvent) {
			upFlag := C.int(0)
			if ev.Up {
				upFlag = 1
			}
			C.rmmgo_call_pressure(onCross, C.size_t(ev.Threshold), C.size_t(ev.Live), upFlag, a)
		}
	}
	if onFailure != nil {
		opts.OnFailure = func(bytes uintptr, retry int, err error) bool {
			noteOutOfMemory(err) // the callback may read rmm_last_out_of_memory_report
			return C.rmmgo_call_pressure_failure(onFailure, C.size_t(bytes), C.int(retry), a) != 0
		}
	}
	res, err := core.NewPressure(up.res, opts)
	if err != nil {
		_ = reg.releaseEntry(up)
		return fail(fn, err, statusInvalidArgument)
	}
	e, err := reg.add(res, true, up.device, []*entry{up})
	if err != nil {
		_ = reg.releaseEntry(up)
		return fail(fn, err, statusBadAlloc)
	}
	putHandle(out, e)
	return statusSuccess
}

//export rmm_pressure_live_bytes
func rmm_pressure_live_bytes(mr C.rmm_resource_t, bytes *C.size_t) (st status) {
	const fn = "rmm_pressure_live_bytes"
	defer recoverTo(fn, &st)
	if bytes == nil {
		return invalid(fn, "bytes is NULL")
	}
	e, st := lookupFor(fn, mr)
	if st != statusSuccess {
		return st
	}
	p, ok := e.res.(*core.Pressure)
	if !ok {
		return invalid(fn, "a %s resource is not a pressure resource", e.res.Kind())
	}
	*bytes = C.size_t(p.LiveBytes())
	return statusSuccess
}
