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

// The framework allocators (rmm_cupy_malloc/free, rmm_torch_allocate/
// deallocate). They serve from device's current resource (CuPy: or from the
// resource its param names) with 256-byte alignment.
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

func framework(which C.int) string {
	if which == C.RMMGO_FRAMEWORK_CUPY {
		return "rmm_cupy_malloc"
	}
	return "rmm_torch_allocate"
}

// onDevice runs f with device current on the calling thread.
func onDevice(device int, f func() error) error {
	r, err := runtimeOrFail()
	if err != nil {
		return err
	}
	cur, err := r.GetDevice()
	if err != nil {
		return err
	}
	if cur != device {
		if err := checkDevice(r, device); err != nil {
			return err
		}
		if err := r.SetDevice(device); err != nil {
			return err
		}
		defer func() { _ = r.SetDevice(cur) }()
	}
	return f()
}

//export rmmgo_framework_allocate
func rmmgo_framework_allocate(which C.int, param C.uintptr_t, bytes C.size_t, device C.int, stream C.uintptr_t, out *C.uintptr_t) (st status) {
	fn := fmt.Sprintf("%s(%d bytes, device %d)", framework(which), bytes, device)
	defer recoverTo(fn, &st)
	if err := streams.check(core.Stream(stream)); err != nil {
		return fail(fn, err, statusInvalidArgument)
	}
	var e *entry
	if param != 0 {
		pe, err := reg.get(uintptr(param))
		if err != nil {
			return fail(fn+": param", err, statusInvalidHandle)
		}
		if !pe.tryRetain() {
			return fail(fn+": param", fmt.Errorf("%w: released while in use", errInvalidHandle), statusInvalidHandle)
		}
		e = pe
	}
	var p uintptr
	err := onDevice(int(device), func() error {
		if e == nil {
			res, err := core.PerDeviceResource(int(device))
			if err != nil {
				return err
			}
			if e, err = reg.handleFor(res); err != nil {
				return err
			}
		}
		var err error
		p, err = e.res.Allocate(core.Stream(stream), uintptr(bytes), core.DefaultAlignment)
		return err
	})
	if err != nil {
		if e != nil {
			_ = reg.releaseEntry(e)
		}
		return fail(fn, err, statusBadAlloc)
	}
	if p == 0 { // zero bytes: nothing to remember
		_ = reg.releaseEntry(e)
		*out = 0
		return statusSuccess
	}
	s := shardOf(p)
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[uintptr]liveAlloc)
	}
	s.m[p] = liveAlloc{bytes: uintptr(bytes), e: e}
	s.mu.Unlock()
	*out = C.uintptr_t(p)
	return statusSuccess
}

//export rmmgo_framework_deallocate
func rmmgo_framework_deallocate(which C.int, param C.uintptr_t, ptr C.uintptr_t, bytes C.size_t, device C.int, stream C.uintptr_t) (st status) {
	name := "rmm_cupy_free"
	if which != C.RMMGO_FRAMEWORK_CUPY {
		name = "rmm_torch_deallocate"
	}
	fn := fmt.Sprintf("%s(%#x, device %d)", name, uintptr(ptr), device)
	defer recoverTo(fn, &st)
	p := uintptr(ptr)
	if p == 0 {
		return statusSuccess
	}
	if err := streams.check(core.Stream(stream)); err != nil {
		return fail(fn, err, statusInvalidArgument)
	}
	s := shardOf(p)
	s.mu.Lock()
	a, ok := s.m[p]
	if ok {
		delete(s.m, p)
	}
	s.mu.Unlock()
	if !ok {
		return fail(fn, fmt.Errorf("%w: %#x was not allocated here, or was already freed", core.ErrInvalidPointer, p), statusInvalidPointer)
	}
	// PyTorch passes the size back too; the record is what was allocated.
	_ = bytes
	err := onDevice(int(device), func() error {
		return a.e.res.Deallocate(core.Stream(stream), p, a.bytes, core.DefaultAlignment)
	})
	relErr := reg.releaseEntry(a.e)
	if err != nil {
		return fail(fn, err, statusInternal)
	}
	if relErr != nil {
		return fail(fn, relErr, statusInternal)
	}
	return statusSuccess
}
