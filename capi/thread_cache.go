package main

/*
#include <stdlib.h>
#include "capi_internal.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/cudart"
)

// The Go half of the per-thread cache (thread_cache.c; docs/thread-cache.md):
// the uncached calls, the batch refills and drains the C side makes on a
// miss or a full class, the registry's mirror, and the flushes. A flush
// that gives back blocks another thread cached, or blocks whose stream may
// be gone, synchronizes the device first and then deallocates on the legacy
// default stream: all work queued before the synchronization is done, and
// nobody may queue new work on memory they freed.

// tcEnabled reports whether the cache is on (RMMGO_THREAD_CACHE, read once).
func tcEnabled() bool { return C.rmmgo_tc_enabled() != 0 }

// tcKind is the mirror's kind of a resource the cache may serve (0 for
// others), its limit (a fixed_size resource's block size, a binning
// resource's largest bin) and its capacity (the bytes it holds, which the
// thread caches may park an eighth of (an arena: its size); 0: unknown).
func tcKind(res core.Resource) (kind C.int, limit, capacity uintptr) {
	switch r := res.(type) {
	case *core.Pool:
		return C.RMMGO_TC_POOL, 0, r.PoolSize()
	case *core.Arena:
		return C.RMMGO_TC_ARENA, 0, r.ArenaSize()
	case *core.FixedSize:
		return C.RMMGO_TC_FIXED_SIZE, r.BlockSize(), r.HeldBytes()
	case *core.Binning:
		if sizes := r.BinSizes(); len(sizes) > 0 {
			limit = sizes[len(sizes)-1]
		}
		// The bins take their chunks from the upstream: what it holds is
		// what the binning resource holds.
		if p, ok := r.Upstream().(*core.Pool); ok {
			capacity = p.PoolSize()
		}
		return C.RMMGO_TC_BINNING, limit, capacity
	}
	return 0, 0, 0
}

// tcRefreshCapacity tells the C side what e's resource holds now (a pool
// grows), on every refill.
func tcRefreshCapacity(e *entry) {
	if _, _, capacity := tcKind(e.res); capacity != 0 {
		C.rmmgo_tc_set_capacity(C.uint64_t(e.handle), C.size_t(capacity))
	}
}

// tcPublishKind writes e's kind, limit and capacity to the mirror.
func tcPublishKind(e *entry) {
	kind, limit, capacity := tcKind(e.res)
	C.rmmgo_tc_publish(C.uint64_t(e.handle), kind, C.size_t(limit), C.size_t(capacity))
}

var tcStreamFuncsOnce sync.Once

// tcPublish makes e servable from C when its resource is one the cache
// serves and the cache is on. Called once per entry, as it is made.
func tcPublish(e *entry) {
	if kind, _, _ := tcKind(e.res); kind == 0 || !tcEnabled() {
		return
	}
	tcStreamFuncsOnce.Do(func() {
		if r, err := cudart.Default(); err == nil {
			getID, getLastError := cudart.StreamGetIDFuncs(r)
			C.rmmgo_tc_set_stream_funcs(C.uintptr_t(getID), C.uintptr_t(getLastError))
		}
	})
	e.cached = true
	tcPublishKind(e)
}

// tcRetire runs when e's last reference went, before its resource is
// closed: it takes e out of the mirror first (no thread caches for it any
// more), then takes its blocks out of every thread's cache and the table,
// and gives the cached ones back.
func tcRetire(e *entry) {
	if !e.cached {
		return
	}
	C.rmmgo_tc_unpublish(C.uint64_t(e.handle))
	blocks := tcCollect(e.handle, false, 0, true)
	_ = tcGiveBack(blocks, func(uintptr) *entry { return e }, core.DefaultStream, true)
}

// tcCollect takes blocks out of the caches (rmmgo_tc_collect).
func tcCollect(handle uintptr, byKey bool, key uint64, dropLive bool) []C.rmmgo_tc_block {
	var n C.size_t
	bk, dl := C.int(0), C.int(0)
	if byKey {
		bk = 1
	}
	if dropLive {
		dl = 1
	}
	p := C.rmmgo_tc_collect(C.uint64_t(handle), bk, C.uint64_t(key), dl, &n)
	if p == nil {
		return nil
	}
	defer C.free(unsafe.Pointer(p))
	return append([]C.rmmgo_tc_block(nil), unsafe.Slice(p, int(n))...)
}

// tcLive resolves a cached block's handle to its live entry (nil when the
// handle is gone, which a flush of it has already handled).
func tcLive(h uintptr) *entry {
	e, _ := reg.lookup(h)
	return e
}

// tcGiveBack deallocates blocks, each with the size it was allocated with,
// on stream; with sync, after synchronizing the devices of their resources
// (and then stream must be the legacy default stream).
func tcGiveBack(blocks []C.rmmgo_tc_block, resolve func(uintptr) *entry, stream core.Stream, sync bool) error {
	if len(blocks) == 0 {
		return nil
	}
	entries := make([]*entry, len(blocks))
	for i, b := range blocks {
		entries[i] = resolve(uintptr(b.handle))
	}
	var first error
	if sync {
		devs := map[int]bool{}
		for _, e := range entries {
			if e == nil {
				continue
			}
			if d, ok := deviceOf(e.res); ok {
				devs[d] = true
			} else if e.device >= 0 {
				devs[e.device] = true
			}
		}
		if err := syncDevices(devs); err != nil {
			// Without the synchronization the blocks cannot be given back
			// safely: they stay allocated (a leak, never a use-after-free).
			return err
		}
	}
	for i, b := range blocks {
		e := entries[i]
		if e == nil {
			continue
		}
		if err := e.res.Deallocate(stream, uintptr(b.ptr), uintptr(b.size), core.DefaultAlignment); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// syncDevices synchronizes each device in devs (the current one when devs
// is empty), leaving the thread's current device as it was.
func syncDevices(devs map[int]bool) error {
	r, err := runtimeOrFail()
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cur, err := r.GetDevice()
	if err != nil {
		return err
	}
	if len(devs) == 0 {
		return r.DeviceSynchronize()
	}
	var first error
	for d := range devs {
		if d != cur {
			if err := r.SetDevice(d); err != nil {
				if first == nil {
					first = err
				}
				continue
			}
		}
		if err := r.DeviceSynchronize(); err != nil && first == nil {
			first = err
		}
	}
	if err := r.SetDevice(cur); err != nil && first == nil {
		first = err
	}
	return first
}

// tcFlush gives back every cached block of handle (0: of every handle), by
// synchronization and the legacy default stream; it returns how many.
func tcFlush(handle uintptr) int {
	if !tcEnabled() {
		return 0
	}
	blocks := tcCollect(handle, false, 0, false)
	_ = tcGiveBack(blocks, tcLive, core.DefaultStream, true)
	return len(blocks)
}

// A flush on out-of-memory synchronizes the device and empties every
// thread's cache, so a program that keeps running into a full resource
// (a fixed-size bin whose upstream is exhausted, say) would pay that on every
// failed allocation and lose its caches each time. After a flush that did
// not make the retry succeed, failed allocations fail at once for
// tcFutileQuiet; the first failure after that flushes again.
const tcFutileQuiet = 10 * time.Millisecond

// entry.futileUntil is when the quiet time after the handle's last futile
// flush ends, in nanoseconds of tcClock.

var tcClockStart = time.Now()

func tcClock() int64 { return int64(time.Since(tcClockStart)) }

// tcFlushForRetry flushes every cache before a failed allocation is tried
// again; false when there was nothing to flush, or a flush failed to help
// a moment ago.
func tcFlushForRetry(e *entry) bool {
	if tcClock() < e.futileUntil.Load() {
		return false
	}
	return tcFlush(0) > 0
}

// tcFlushFutile notes that a flush did not make the retry succeed.
func tcFlushFutile(e *entry) { e.futileUntil.Store(tcClock() + int64(tcFutileQuiet)) }

// tcFlushStream gives back every block cached under stream s's key, on s
// itself (it is alive: called before s is destroyed).
func tcFlushStream(r cudart.Runtime, s core.Stream) {
	if !tcEnabled() || s == core.DefaultStream || s == cudart.LegacyDefaultStream {
		return
	}
	id, err := r.StreamGetID(s)
	if err != nil {
		return // not a live stream: the destroy reports it
	}
	blocks := tcCollect(0, true, id|1<<63, false)
	_ = tcGiveBack(blocks, tcLive, s, false)
}

// tcUnusedBytes is what a pool's UsedBytes counts of handle's blocks that
// the user does not hold: cached blocks, and live ones' rounding to their
// class.
func tcUnusedBytes(e *entry) uintptr {
	if !e.cached {
		return 0
	}
	var cached, rounding C.size_t
	C.rmmgo_tc_handle_bytes(C.uint64_t(e.handle), &cached, &rounding)
	return uintptr(cached) + uintptr(rounding)
}

// tcExitMine hands the calling thread's cache to the orphan list, as the
// thread's exit would (for tests; the goroutine must be locked to its
// thread).
func tcExitMine() { C.rmmgo_tc_exit_mine() }

// tcCounts reports what the table and caches hold (for tests).
func tcCounts() (live, cached, orphans, caches int) {
	var l, c, o, k C.size_t
	C.rmmgo_tc_counts(&l, &c, &o, &k)
	return int(l), int(c), int(o), int(k)
}

//export rmmgo_go_drain_orphans
func rmmgo_go_drain_orphans() {
	defer func() { _ = recover() }() // never into C; the blocks stay allocated
	blocks := tcCollectOrphans()
	_ = tcGiveBack(blocks, tcLive, core.DefaultStream, true)
}

// tcCollectOrphans takes the orphan list: the blocks of threads that
// exited, of every handle.
func tcCollectOrphans() []C.rmmgo_tc_block {
	var n C.size_t
	p := C.rmmgo_tc_take_orphans(&n)
	if p == nil {
		return nil
	}
	defer C.free(unsafe.Pointer(p))
	return append([]C.rmmgo_tc_block(nil), unsafe.Slice(p, int(n))...)
}

//export rmmgo_go_stream_key
func rmmgo_go_stream_key(stream C.uintptr_t, key *C.uint64_t) (rc C.int) {
	defer func() {
		if recover() != nil {
			rc = 1
		}
	}()
	r, err := runtimeOrFail()
	if err != nil {
		return 1
	}
	id, err := r.StreamGetID(cudart.Stream(stream))
	if err != nil {
		return 1
	}
	*key = C.uint64_t(id | 1<<63)
	return 0
}

//export rmmgo_go_refill
func rmmgo_go_refill(handle, stream C.uintptr_t, size, bytes, alignment C.size_t, n C.int, out *C.uintptr_t, got *C.int) (st status) {
	defer recoverTo("rmm_allocate", &st)
	*got = 0
	e, ok := reg.lookup(uintptr(handle))
	if !ok {
		return badHandle("rmm_allocate", toHandle(uintptr(handle)))
	}
	dst := unsafe.Slice(out, int(n))
	s := core.Stream(stream)
	k := 0
	retried := false
	for k < int(n) {
		p, err := e.res.Allocate(s, uintptr(size), core.DefaultAlignment)
		if err == nil && p == 0 {
			err = fmt.Errorf("%w: the %s resource returned no memory and no error", errInternal, e.res.Kind())
		}
		if err != nil {
			if k > 0 {
				break // a shorter batch
			}
			// Memory parked in thread caches may be what is missing.
			if !retried && errors.Is(err, core.ErrOutOfMemory) && tcFlushForRetry(e) {
				retried = true
				continue
			}
			if retried {
				tcFlushFutile(e)
			}
			return allocFailed("rmm_allocate", e, bytes, alignment, err)
		}
		dst[k] = C.uintptr_t(p)
		k++
	}
	*got = C.int(k)
	tcRefreshCapacity(e)
	return statusSuccess
}

//export rmmgo_go_drain
func rmmgo_go_drain(handle, stream C.uintptr_t, size C.size_t, ptrs *C.uintptr_t, n C.int) (st status) {
	defer recoverTo("rmm_deallocate", &st)
	e, ok := reg.lookup(uintptr(handle))
	if !ok {
		return badHandle("rmm_deallocate", toHandle(uintptr(handle)))
	}
	var first error
	for _, p := range unsafe.Slice(ptrs, int(n)) {
		if err := e.res.Deallocate(core.Stream(stream), uintptr(p), uintptr(size), core.DefaultAlignment); err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return fail(fmt.Sprintf("rmm_deallocate: giving back %d cached blocks of %d bytes", n, size), first, statusInternal)
	}
	return statusSuccess
}

// The uncached calls. On a resource that cannot grow, an allocation that
// fails for want of memory first takes back what the thread caches hold.

//export rmmgo_go_allocate
func rmmgo_go_allocate(mr C.rmm_resource_t, stream C.rmm_stream_t, bytes, alignment C.size_t, ptr *unsafe.Pointer) (st status) {
	defer recoverTo("rmm_allocate", &st)
	if ptr == nil {
		return invalid("rmm_allocate", "ptr is NULL")
	}
	e, ok := reg.lookup(handleValue(mr))
	if !ok {
		return badHandle("rmm_allocate", mr)
	}
	p, err := e.res.Allocate(streamValue(stream), uintptr(bytes), uintptr(alignment))
	if err != nil && errors.Is(err, core.ErrOutOfMemory) && tcFlushForRetry(e) {
		if p, err = e.res.Allocate(streamValue(stream), uintptr(bytes), uintptr(alignment)); err != nil {
			tcFlushFutile(e)
		}
	}
	if err != nil || (p == 0 && bytes != 0) {
		return allocFailed("rmm_allocate", e, bytes, alignment, err)
	}
	putPointer(ptr, p)
	return statusSuccess
}

//export rmmgo_go_deallocate
func rmmgo_go_deallocate(mr C.rmm_resource_t, stream C.rmm_stream_t, ptr unsafe.Pointer, bytes, alignment C.size_t) (st status) {
	defer recoverTo("rmm_deallocate", &st)
	e, ok := reg.lookup(handleValue(mr))
	if !ok {
		return badHandle("rmm_deallocate", mr)
	}
	if ptr == nil {
		return statusSuccess
	}
	if err := e.res.Deallocate(streamValue(stream), uintptr(ptr), uintptr(bytes), uintptr(alignment)); err != nil {
		return fail(fmt.Sprintf("rmm_deallocate(%#x, %d bytes)", uintptr(ptr), bytes), err, statusInternal)
	}
	return statusSuccess
}

//export rmmgo_go_deallocate_sync
func rmmgo_go_deallocate_sync(mr C.rmm_resource_t, ptr unsafe.Pointer, bytes, alignment C.size_t) (st status) {
	defer recoverTo("rmm_deallocate_sync", &st)
	e, ok := reg.lookup(handleValue(mr))
	if !ok {
		return badHandle("rmm_deallocate_sync", mr)
	}
	if ptr == nil {
		return statusSuccess
	}
	if err := e.res.DeallocateSync(uintptr(ptr), uintptr(bytes), uintptr(alignment)); err != nil {
		return fail(fmt.Sprintf("rmm_deallocate_sync(%#x, %d bytes)", uintptr(ptr), bytes), err, statusInternal)
	}
	return statusSuccess
}

// The public entry points as Go functions, through C (for Go tests, which
// cannot call C themselves).

func rmm_allocate(mr C.rmm_resource_t, stream C.rmm_stream_t, bytes, alignment C.size_t, ptr *unsafe.Pointer) status {
	return C.rmm_allocate(mr, stream, bytes, alignment, ptr)
}

func rmm_deallocate(mr C.rmm_resource_t, stream C.rmm_stream_t, ptr unsafe.Pointer, bytes, alignment C.size_t) status {
	return C.rmm_deallocate(mr, stream, ptr, bytes, alignment)
}

func rmm_deallocate_sync(mr C.rmm_resource_t, ptr unsafe.Pointer, bytes, alignment C.size_t) status {
	return C.rmm_deallocate_sync(mr, ptr, bytes, alignment)
}

// toStream is the rmm_stream_t of stream number s (for tests).
func toStream(s uintptr) C.rmm_stream_t { return *(*C.rmm_stream_t)(unsafe.Pointer(&s)) }

// cSizeT is size_t (for tests, which cannot name C types).
type cSizeT = C.size_t

// deallocateAt is rmm_deallocate on the default stream with the pointer as
// a uintptr (for tests).
func deallocateAt(mr C.rmm_resource_t, p uintptr, bytes uint64) status {
	return C.rmmgo_tc_deallocate_at(mr, 0, C.uintptr_t(p), C.size_t(bytes), 256)
}
