package asyncpath

/*
#include <stdlib.h>
#include "asyncpath.h"
*/
import "C"

import (
	"errors"
	"runtime"
	"runtime/cgo"
	"sync/atomic"
	"unsafe"

	"github.com/rmmgo/rmmgo/cudart"
)

// Result says what a call on the C path did.
type Result int

// The results.
const (
	OK           Result = C.RMMGO_AP_OK
	Stale        Result = C.RMMGO_AP_STALE          // the state is closed
	Busy         Result = C.RMMGO_AP_BUSY           // not served here: take the slow path
	WrongDevice  Result = C.RMMGO_AP_WRONG_DEVICE   // detail: the current device
	CUDA         Result = C.RMMGO_AP_CUDA           // detail: the runtime's error code
	NoHostMemory Result = C.RMMGO_AP_NO_HOST_MEMORY // the table could not grow
	NotRecorded  Result = C.RMMGO_AP_NOT_RECORDED   // a free of a pointer no record has
	Foreign      Result = C.RMMGO_AP_FOREIGN        // detail: the pool the record names
	SizeMismatch Result = C.RMMGO_AP_SIZE           // detail: the size the record has
)

// ErrNoHostMemory: the C heap could not hold a resource's state.
var ErrNoHostMemory = errors.New("no host memory for the state of a pool-based resource")

// State is a resource's C state and its generation.
type State struct {
	addr     uintptr    // the C state
	gen      uint64     // its generation for this resource
	rt       cgo.Handle // the Go runtime the C side calls back, or 0
	direct   bool       // the C side calls the CUDA runtime's functions
	released atomic.Bool
}

// NewState makes the state of a resource allocating from pool on device
// with runtime r; owned says the resource owns the pool (its blocks are
// recorded as the owner's, for Close). The C side calls the CUDA runtime's
// own functions when r is the CUDA runtime, else r through Go callbacks. An
// allocation checks that device is current, unless r has one device only
// (which is then always current).
func NewState(r cudart.Runtime, pool cudart.MemPool, device int, owned bool) (*State, error) {
	getDevice, getLastError := cudart.GetDeviceFuncs(r)
	mallocFromPool, freeAsync := cudart.PoolAsyncFuncs(r)
	var h cgo.Handle
	if getDevice == 0 || getLastError == 0 || mallocFromPool == 0 || freeAsync == 0 {
		getDevice, getLastError, mallocFromPool, freeAsync = 0, 0, 0, 0
		h = cgo.NewHandle(r)
	}
	o := C.int(0)
	if owned {
		o = 1
	}
	// With one device, that device is always current: no need to ask.
	check := C.int(1)
	if n, err := r.GetDeviceCount(); err == nil && n == 1 {
		check = 0
	}
	var gen C.uint64_t
	addr := C.rmmgo_ap_new(C.uintptr_t(getDevice), C.uintptr_t(mallocFromPool), C.uintptr_t(freeAsync),
		C.uintptr_t(getLastError), C.uintptr_t(h), C.uintptr_t(pool), C.int(device), o, check, &gen)
	if addr == 0 {
		if h != 0 {
			h.Delete()
		}
		return nil, ErrNoHostMemory
	}
	s := &State{addr: uintptr(addr), gen: uint64(gen), rt: h, direct: h == 0}
	// A view has no Close, and an owner may never be closed: the state
	// goes back when its resource is garbage.
	runtime.SetFinalizer(s, (*State).Release)
	return s, nil
}

// Addr returns the C state and its generation, for C callers (the
// functions CFuncs returns take them).
func (s *State) Addr() (addr uintptr, gen uint64) { return s.addr, s.gen }

// Direct reports whether the C side calls the CUDA runtime's own functions
// (rather than a Go runtime through callbacks).
func (s *State) Direct() bool { return s.direct }

// Allocate allocates bytes (not 0) from the state's pool on stream and
// records the block. Anything but OK allocated nothing; detail is as the
// Result says.
func (s *State) Allocate(bytes uintptr, stream cudart.Stream) (p uintptr, r Result, detail int64) {
	res := C.rmmgo_ap_allocate(C.uintptr_t(s.addr), C.uint64_t(s.gen), C.size_t(bytes), C.uintptr_t(stream))
	return uintptr(res.ptr), Result(res.rc), int64(res.detail)
}

// Deallocate frees ptr (not 0), allocated with bytes from the state's
// pool, on stream, when its record says so. Anything but OK freed nothing
// and left the record as it was.
func (s *State) Deallocate(stream cudart.Stream, ptr, bytes uintptr) (r Result, detail int64) {
	res := C.rmmgo_ap_deallocate(C.uintptr_t(s.addr), C.uint64_t(s.gen), C.uintptr_t(stream), C.uintptr_t(ptr), C.size_t(bytes))
	return Result(res.rc), int64(res.detail)
}

// Close closes the state and waits until no thread is inside a call on it;
// later calls get Stale. It reports whether this call closed it.
func (s *State) Close() bool {
	return C.rmmgo_ap_close(C.uintptr_t(s.addr), C.uint64_t(s.gen)) != 0
}

// Release closes the state (as Close) and gives it back for reuse by
// another resource; calls with s's generation get Stale from then on. Later
// calls do nothing.
func (s *State) Release() {
	if s.released.Swap(true) {
		return
	}
	s.Close()
	C.rmmgo_ap_release(C.uintptr_t(s.addr), C.uint64_t(s.gen))
	if s.rt != 0 {
		s.rt.Delete()
		s.rt = 0
	}
}

// CFuncs returns the addresses of the C path's allocation and free for C
// callers: int allocate(uintptr_t state, uint64_t gen, size_t bytes,
// uintptr_t stream, uintptr_t* out) and int deallocate(uintptr_t state,
// uint64_t gen, uintptr_t stream, uintptr_t ptr, size_t bytes), both
// returning a Result (asyncpath.h declares them).
func CFuncs() (allocate, deallocate uintptr) {
	return uintptr(C.rmmgo_ap_c_allocate_addr()), uintptr(C.rmmgo_ap_c_deallocate_addr())
}

// --------------------------------------------------------------- the table

// Entry is what the table knows of a block.
type Entry struct {
	Size  uintptr
	Pool  cudart.MemPool
	Owned bool
}

// Record records ptr (not 0), allocated with size from pool (by the pool's
// owner when owned). An earlier record of ptr is replaced. False when the
// table could not grow.
func Record(ptr, size uintptr, pool cudart.MemPool, owned bool) bool {
	o := C.int(0)
	if owned {
		o = 1
	}
	return C.rmmgo_ap_record(C.uintptr_t(ptr), C.size_t(size), C.uintptr_t(pool), o) != 0
}

// Take removes ptr's record when it says ptr was allocated with size from
// pool, and returns it (OK). Otherwise the record stays and the Result says
// why: NotRecorded, Foreign or SizeMismatch, with the record found.
func Take(ptr, size uintptr, pool cudart.MemPool) (Entry, Result) {
	e := C.rmmgo_ap_take(C.uintptr_t(ptr), C.size_t(size), C.uintptr_t(pool))
	return Entry{Size: uintptr(e.size), Pool: cudart.MemPool(e.pool), Owned: e.owned != 0}, Result(e.rc)
}

// Restore puts back a record Take removed.
func Restore(ptr uintptr, e Entry) bool { return Record(ptr, e.Size, e.Pool, e.Owned) }

// TakeOwned removes and returns the records of pool that its owner made.
// complete is false when the C heap could not hold the list: the records
// not returned stay.
func TakeOwned(pool cudart.MemPool) (ptrs []uintptr, complete bool) {
	var n C.size_t
	var inc C.int
	p := C.rmmgo_ap_take_owned(C.uintptr_t(pool), &n, &inc)
	if p != nil {
		ptrs = append(ptrs, unsafe.Slice((*uintptr)(unsafe.Pointer(p)), int(n))...)
		C.free(unsafe.Pointer(p))
	}
	return ptrs, inc == 0
}

// Has reports whether ptr is recorded.
func Has(ptr uintptr) bool { return C.rmmgo_ap_has(C.uintptr_t(ptr)) != 0 }

// Count reports how many blocks are recorded.
func Count() int { return int(C.rmmgo_ap_count()) }

// Totals is the number of records and the bytes they were allocated with.
func Totals() (count int, bytes uint64) {
	var b C.uint64_t
	n := C.rmmgo_ap_totals(&b)
	return int(n), uint64(b)
}
