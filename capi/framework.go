package main

/*
#include "capi_internal.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/rmmgo/rmmgo/core"
)

// The Go halves of the framework allocators (rmm_cupy_malloc/free,
// rmm_torch_allocate/deallocate). They serve from device's current resource
// (CuPy: or from the resource its param names) with 256-byte alignment.
// framework.c serves the common call (the current resource of the current
// device) in C with a record of its own; these serve the rest: a param
// resource, another device current, the first call after the device's
// resource changed, and frees of what they handed out.
//
// The device: CuPy and PyTorch call them on a thread whose current device
// is normally `device` already. When it is not, the call makes `device`
// current for its duration and restores the thread's device afterwards, as
// RMM's PyTorch allocator does, since resources must be used with their own
// device current.
//
// Every allocation is remembered with its size and the handle of the
// resource that made it, which it holds a reference to. So a free needs no
// size (CuPy), goes back to the resource that made the memory even if the
// device's current resource was replaced in between, and the resource stays
// alive while memory it handed out is live. The record lives in a map split
// into shards by pointer, each with its own lock, so that threads rarely
// meet.

const liveShards = 64

type liveAlloc struct {
	bytes uintptr
	e     *entry
}

// liveShardData is what a shard holds: the lock and the map threads touch.
type liveShardData struct {
	mu sync.Mutex
	m  map[uintptr]liveAlloc
}

// cacheLine is the cache line size of the CPUs rmmgo runs on (x86-64 and
// the arm64 cores of Grace).
const cacheLine = 64

// liveShardPad rounds a shard up to whole cache lines and adds one line:
// Go aligns the array of shards to 8 bytes only, so whatever address it
// starts at, the data of two shards are at least a line apart and never
// share one (TestLiveShardsDoNotShareCacheLines).
const liveShardPad = (cacheLine-unsafe.Sizeof(liveShardData{})%cacheLine)%cacheLine + cacheLine

type liveShard struct {
	liveShardData
	_ [liveShardPad]byte
}

var live [liveShards]liveShard

func shardOf(p uintptr) *liveShard {
	// Pointers are 256-byte aligned: hash the bits above.
	h := uint64(p>>8) * 0x9e3779b97f4a7c15
	return &live[h>>(64-6)]
}

// frameworkName is the entry point's name, for messages.
func frameworkName(which C.int, free bool) string {
	switch {
	case which == C.RMMGO_FRAMEWORK_CUPY && free:
		return "rmm_cupy_free"
	case which == C.RMMGO_FRAMEWORK_CUPY:
		return "rmm_cupy_malloc"
	case free:
		return "rmm_torch_deallocate"
	}
	return "rmm_torch_allocate"
}

// The messages' function names with their arguments, built only when a
// call fails.
func allocateName(which C.int, bytes C.size_t, device C.int) string {
	return fmt.Sprintf("%s(%d bytes, device %d)", frameworkName(which, false), bytes, device)
}

func deallocateName(which C.int, ptr C.uintptr_t, device C.int) string {
	return fmt.Sprintf("%s(%#x, device %d)", frameworkName(which, true), uintptr(ptr), device)
}

// enterDevice makes device current on the calling thread when it is not:
// CuPy and PyTorch normally call with it current already, and then this is
// one cudaGetDevice. It returns the device to restore with leaveDevice (-1:
// nothing to restore).
func enterDevice(device int) (prev int, err error) {
	r, err := runtimeOrFail()
	if err != nil {
		return -1, err
	}
	cur, err := r.GetDevice()
	if err != nil {
		return -1, err
	}
	if cur == device {
		return -1, nil
	}
	if err := checkDevice(r, device); err != nil {
		return -1, err
	}
	if err := r.SetDevice(device); err != nil {
		return -1, err
	}
	return cur, nil
}

func leaveDevice(prev int) {
	if prev < 0 {
		return
	}
	if r, err := runtimeOrFail(); err == nil {
		_ = r.SetDevice(prev)
	}
}

// The allocation itself goes through rmm_allocate and rmm_deallocate (the C
// per-thread cache for the resources it serves, which also flushes the
// caches and retries when a pool runs out): their failures leave the C
// status and message, which the framework call names itself in.
func frameworkFailed(fn string, cst C.rmm_status) status {
	setMessage(fn + ": " + C.GoString(C.rmm_last_error_message()))
	return status(cst)
}

//export rmmgo_framework_allocate
func rmmgo_framework_allocate(which C.int, param C.uintptr_t, bytes C.size_t, device C.int, stream C.uintptr_t, out *C.uintptr_t) (st status) {
	defer recoverTo(frameworkName(which, false), &st)
	if err := streams.check(core.Stream(stream)); err != nil {
		return fail(allocateName(which, bytes, device), err, statusInvalidArgument)
	}
	var e *entry
	if param != 0 {
		pe, err := reg.get(uintptr(param))
		if err != nil {
			return fail(allocateName(which, bytes, device)+": param", err, statusInvalidHandle)
		}
		if !pe.tryRetain() {
			return fail(allocateName(which, bytes, device)+": param", fmt.Errorf("%w: released while in use", errInvalidHandle), statusInvalidHandle)
		}
		e = pe
	}
	prev, err := enterDevice(int(device))
	if err == nil && e == nil {
		var res core.Resource
		if res, err = core.PerDeviceResource(int(device)); err == nil {
			e, err = reg.handleFor(res)
		}
	}
	if err != nil {
		leaveDevice(prev)
		if e != nil {
			_ = reg.releaseEntry(e)
		}
		return fail(allocateName(which, bytes, device), err, statusBadAlloc)
	}
	var p C.uintptr_t
	cst := C.rmmgo_allocate_at(C.uint64_t(e.handle), stream, bytes, &p)
	leaveDevice(prev)
	if cst != C.RMM_SUCCESS {
		_ = reg.releaseEntry(e)
		return frameworkFailed(allocateName(which, bytes, device), cst)
	}
	if p == 0 { // zero bytes: nothing to remember
		_ = reg.releaseEntry(e)
		*out = 0
		return statusSuccess
	}
	s := shardOf(uintptr(p))
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[uintptr]liveAlloc)
	}
	s.m[uintptr(p)] = liveAlloc{bytes: uintptr(bytes), e: e}
	s.mu.Unlock()
	*out = p
	return statusSuccess
}

//export rmmgo_framework_deallocate
func rmmgo_framework_deallocate(which C.int, param C.uintptr_t, ptr C.uintptr_t, bytes C.size_t, device C.int, stream C.uintptr_t) (st status) {
	defer recoverTo(frameworkName(which, true), &st)
	p := uintptr(ptr)
	if p == 0 {
		return statusSuccess
	}
	if err := streams.check(core.Stream(stream)); err != nil {
		return fail(deallocateName(which, ptr, device), err, statusInvalidArgument)
	}
	s := shardOf(p)
	s.mu.Lock()
	a, ok := s.m[p]
	if ok {
		delete(s.m, p)
	}
	s.mu.Unlock()
	if !ok {
		return fail(deallocateName(which, ptr, device), fmt.Errorf("%w: %#x was not allocated here, or was already freed", core.ErrInvalidPointer, p), statusInvalidPointer)
	}
	// PyTorch passes the size back too; the record is what was allocated.
	_ = bytes
	prev, err := enterDevice(int(device))
	var cst C.rmm_status = C.RMM_SUCCESS
	if err == nil {
		cst = C.rmmgo_deallocate_at(C.uint64_t(a.e.handle), stream, ptr, C.size_t(a.bytes))
		leaveDevice(prev)
	}
	relErr := reg.releaseEntry(a.e)
	if err != nil {
		return fail(deallocateName(which, ptr, device), err, statusInternal)
	}
	if cst != C.RMM_SUCCESS {
		return frameworkFailed(deallocateName(which, ptr, device), cst)
	}
	if relErr != nil {
		return fail(deallocateName(which, ptr, device), relErr, statusInternal)
	}
	return statusSuccess
}

//export rmmgo_framework_deallocate_on
func rmmgo_framework_deallocate_on(which, device C.int, handle C.uint64_t, stream, ptr C.uintptr_t, bytes C.size_t) (st status) {
	defer recoverTo(frameworkName(which, true), &st)
	prev, err := enterDevice(int(device))
	if err != nil {
		return fail(deallocateName(which, ptr, device), err, statusInternal)
	}
	cst := C.rmmgo_deallocate_at(handle, stream, ptr, bytes)
	leaveDevice(prev)
	if cst != C.RMM_SUCCESS {
		return frameworkFailed(deallocateName(which, ptr, device), cst)
	}
	return statusSuccess
}
