package main

/*
#include <stdlib.h>
#include "capi_internal.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/cudart"
	"github.com/rmmgo/rmmgo/internal/cabi"
	"github.com/rmmgo/rmmgo/internal/cacheclock"
	"github.com/rmmgo/rmmgo/internal/fastpath"
)

// The Go half of the per-thread cache (thread_cache.c; docs/thread-cache.md):
// each cached handle's front (its state on the Go side, attached to its
// resource as a fastpath.BlockCache), the crossings the C side makes on a miss
// or a full class, the uncached calls, and the flushes. A flush that gives
// back blocks cached under another stream than the legacy default stream
// (blocks whose stream may be gone) synchronizes the device first and then
// deallocates on the legacy default stream: all work queued before the
// synchronization is done, and nobody may queue new work on memory they
// freed. Blocks cached under the legacy default stream need no
// synchronization: that stream is the same for every thread.

// tcEnabled reports whether the cache is on (RMMGO_THREAD_CACHE, read once).
func tcEnabled() bool { return C.rmmgo_tc_enabled() != 0 }

// tcFront is the cache of one handle, on the Go side: the resource its
// blocks come from (the handle's, or the one at the end of its adaptors,
// thread_cache_adaptors.go), and the attachment that lets the resource ask
// for the cached blocks before it grows or fails, and count them as not in
// use.
type tcFront struct {
	handle uintptr
	res    fastpath.Cacheable
	steps  []C.rmmgo_tc_step // the handle's adaptors, run in C
	device int               // the resource's device, for the synchronizations of flushes
	detach func()
}

// tcFronts maps a handle to its front while the handle is published.
var tcFronts sync.Map // uintptr -> *tcFront

var tcStreamFuncsOnce sync.Once

// tcPublish makes e servable from C when its resource is one a cache may
// serve (or adaptors C can run over one) and the cache is on: false when
// it is not. Called once per entry, as it is made (mirrorPublish).
func tcPublish(e *entry) bool {
	if !tcEnabled() {
		return false
	}
	c, steps := cacheChain(e.res)
	if c == nil {
		return false
	}
	tcStreamFuncsOnce.Do(func() {
		var getID, getLastError uintptr
		if r, err := cudart.Default(); err == nil {
			getID, getLastError = cudart.StreamGetIDFuncs(r)
		}
		C.rmmgo_set_stream_funcs(C.uintptr_t(getID), C.uintptr_t(getLastError))
	})
	f := &tcFront{handle: e.handle, res: c, steps: steps, device: -1}
	if d, ok := c.(interface{ Device() int }); ok {
		f.device = d.Device()
	}
	f.detach = c.AttachCache(f)
	tcFronts.Store(e.handle, f)
	f.publish()
	return true
}

// publish writes the resource's limits to the mirror with the cache's tag
// (nothing when the resource has none now).
func (f *tcFront) publish() {
	l := f.res.CacheLimits()
	var pub C.rmmgo_publication
	pub.tag = C.RMMGO_MIRROR_CACHE
	lim := &pub.limits
	*lim = C.rmmgo_tc_limits{
		max_request:      C.size_t(l.MaxRequest),
		block:            C.size_t(l.BlockSize),
		budget:           C.size_t(l.Budget),
		shared:           C.size_t(l.Shared),
		quantum:          C.size_t(l.Quantum),
		batch_bytes:      C.size_t(l.BatchBytes),
		batch_blocks:     C.int(l.BatchBlocks),
		batch_min_blocks: C.int(l.BatchMinBlocks),
		exited_wait_ns:   C.int64_t(l.ExitedWait.Nanoseconds()),
		lone_after_ns:    C.int64_t(l.LoneAfter.Nanoseconds()),
		nsteps:           C.int(len(f.steps)),
	}
	copy(lim.steps[:], f.steps)
	// A binning resource's bins: a request takes its bin's size as class,
	// so that the blocks of a bin share one stack (2fa2c61 made the C side
	// and CacheLimits.BlockSizes, but never handed them over).
	for i, sz := range l.BlockSizes {
		if i == len(lim.sizes) {
			break // the first ones: a request above them takes its own class
		}
		lim.sizes[i] = C.size_t(sz)
		lim.nsizes = C.int(i + 1)
	}
	C.rmmgo_mirror_publish(C.uint64_t(f.handle), &pub)
}

// tcFrontOf returns handle's front, or nil.
func tcFrontOf(handle uintptr) *tcFront {
	if v, ok := tcFronts.Load(handle); ok {
		return v.(*tcFront)
	}
	return nil
}

// tcRetire runs when e's last reference went, before its resource is
// closed, after mirrorRetire took e out of the mirror (no thread caches
// for it any more): it takes its blocks out of every thread's cache, the
// depot and the table, gives the cached ones back and detaches the cache.
func tcRetire(e *entry) {
	v, ok := tcFronts.LoadAndDelete(e.handle)
	if !ok {
		return
	}
	f := v.(*tcFront)
	_ = f.giveBack(tcCollect(e.handle, false, 0, true, 0, 0), core.DefaultStream)
	f.detach()
}

// tcWithout runs fn with handle's cache emptied and unpublished (a binning
// resource's bins change which resource serves a size class), then
// publishes it again with the resource's limits then.
func tcWithout(handle uintptr, fn func()) {
	f := tcFrontOf(handle)
	if f == nil {
		fn()
		return
	}
	C.rmmgo_mirror_unpublish(C.uint64_t(handle))
	_ = f.giveBack(tcCollect(handle, false, 0, false, 0, 0), core.DefaultStream)
	defer func() {
		if _, ok := reg.lookup(handle); ok && tcFrontOf(handle) == f {
			f.publish()
		}
	}()
	fn()
}

// tcFlush gives back every cached block of handle (rmm_pool_release).
func tcFlush(handle uintptr) {
	if f := tcFrontOf(handle); f != nil {
		f.Reclaim(0)
	}
}

// tcCrossed counts the crossings of the C cache into Go (refills and
// drains) and the reclaims, for the tests: a regression that leaves the
// caches crossing for each block shows in these counts, not only in time.
var tcCrossed struct{ refills, refilled, drains, reclaims atomic.Int64 }

// Reclaim gives every block cached for the handle back to its resource
// (fastpath.BlockCache): the resource needs memory.
func (f *tcFront) Reclaim(need uintptr) bool {
	tcCrossed.reclaims.Add(1)
	blocks := tcCollect(f.handle, false, 0, false, 0, 0)
	_ = f.giveBack(blocks, core.DefaultStream)
	return len(blocks) > 0
}

// ReclaimSizes gives back the blocks cached for the handle whose size is
// in (lo, hi] (fastpath.SizedBlockCache): a bin of a binning resource needs
// only blocks of its own sizes.
func (f *tcFront) ReclaimSizes(lo, hi uintptr) bool {
	tcCrossed.reclaims.Add(1)
	blocks := tcCollect(f.handle, false, 0, false, lo, hi)
	_ = f.giveBack(blocks, core.DefaultStream)
	return len(blocks) > 0
}

// ClaimFree forgets ptr when a cache of a handle over res handed it out
// and a user frees it through a path that reaches res directly (an adaptor
// C does not run, Go code): fastpath.FreeClaimer. Without it the block's
// entry stayed LIVE, and a second free through the handle was accepted and
// cached a block res had handed out again (issue 24). A block the caches
// hold is refused as not live, a size res does not take for it as res
// says (CheckFree); the fronts of every handle over res answer alike.
func (f *tcFront) ClaimFree(res fastpath.Cacheable, ptr, bytes uintptr) (uintptr, func(), bool, error) {
	for {
		var h, m C.uint64_t
		var live C.int
		var had C.size_t
		if C.rmmgo_tc_peek(C.uintptr_t(ptr), &h, &m, &live, &had) == 0 {
			return 0, nil, false, nil
		}
		if g := tcFrontOf(uintptr(h)); g == nil || g.res != res {
			return 0, nil, false, nil // not a block of res's caches: res decides
		}
		if live == 0 {
			return 0, nil, false, fmt.Errorf("%s: %w: %#x is not a live allocation (deallocated already?)", res.Kind(), core.ErrInvalidPointer, ptr)
		}
		if (bytes+core.DefaultAlignment-1)&^(core.DefaultAlignment-1) != uintptr(had) {
			if err := res.CheckFree(ptr, bytes, uintptr(had)); err != nil {
				return 0, nil, false, err
			}
		}
		var size C.size_t
		if C.rmmgo_tc_claim(C.uintptr_t(ptr), h, m, &size) == 0 {
			continue // freed or handed out meanwhile: look again
		}
		return uintptr(size), func() { C.rmmgo_tc_unclaim(C.uintptr_t(ptr), h, m) }, true, nil
	}
}

// HeldBytes is what the caches hold for the handle and no user does
// (fastpath.BlockCache).
func (f *tcFront) HeldBytes() uintptr { return uintptr(C.rmmgo_tc_holding(C.uint64_t(f.handle))) }

// tcCollect takes blocks out of the caches (rmmgo_tc_collect).
func tcCollect(handle uintptr, byKey bool, key uint64, dropLive bool, lo, hi uintptr) []C.rmmgo_tc_block {
	var n C.size_t
	bk, dl := C.int(0), C.int(0)
	if byKey {
		bk = 1
	}
	if dropLive {
		dl = 1
	}
	p := C.rmmgo_tc_collect(C.uint64_t(handle), bk, C.uint64_t(key), dl, C.size_t(lo), C.size_t(hi), &n)
	if p == nil {
		return nil
	}
	defer C.free(unsafe.Pointer(p))
	return append([]C.rmmgo_tc_block(nil), unsafe.Slice(p, int(n))...)
}

// giveBack deallocates blocks of f's handle, each with the size it was
// allocated with, on stream (the legacy default stream, or the stream the
// blocks were cached under when it is alive); blocks cached under another
// stream than the legacy default stream, when stream is that stream, after
// synchronizing the resource's device.
func (f *tcFront) giveBack(blocks []C.rmmgo_tc_block, stream core.Stream) error {
	if len(blocks) == 0 {
		return nil
	}
	if stream == core.DefaultStream {
		for _, b := range blocks {
			if b.key != 0 {
				devs := map[int]bool{}
				if f.device >= 0 {
					devs[f.device] = true
				}
				if err := syncDevices(devs); err != nil {
					// Without the synchronization the blocks cannot be given
					// back safely: they stay allocated (a leak, never a
					// use-after-free).
					return err
				}
				break
			}
		}
	}
	var first error
	for _, b := range blocks {
		if err := f.res.DeallocateBatch(stream, uintptr(b.size), []uintptr{uintptr(b.ptr)}); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// tcGiveBackAny gives back blocks of any handles (exited threads'), by
// their fronts; blocks of a handle that is gone went with its resource.
func tcGiveBackAny(blocks []C.rmmgo_tc_block) {
	for len(blocks) > 0 {
		h := blocks[0].handle
		n := 1
		for n < len(blocks) && blocks[n].handle == h {
			n++
		}
		if f := tcFrontOf(uintptr(h)); f != nil {
			_ = f.giveBack(blocks[:n], core.DefaultStream)
		}
		blocks = blocks[n:]
	}
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

// streamKey returns the key by which core's resources and the caches know
// stream s: 0 for the legacy default stream (0 and cudaStreamLegacy), else
// its CUDA stream id | cabi.StreamKeyFlag.
func streamKey(s core.Stream) (uint64, error) {
	if s == core.DefaultStream || s == cudart.LegacyDefaultStream {
		return 0, nil
	}
	r, err := cudart.Default()
	if err != nil {
		return 0, err
	}
	id, err := r.StreamGetID(s)
	if err != nil {
		return 0, err
	}
	return id | cabi.StreamKeyFlag, nil
}

// tcFlushStream gives back every block cached under stream s's key, on s
// itself (it is alive: called before s is retired).
func tcFlushStream(s core.Stream) {
	if !tcEnabled() || s == core.DefaultStream || s == cudart.LegacyDefaultStream {
		return
	}
	key, err := streamKey(s)
	if err != nil {
		return // not a live stream: the destroy reports it
	}
	blocks := tcCollect(0, true, key, false, 0, 0)
	for len(blocks) > 0 {
		h := blocks[0].handle
		n := 1
		for n < len(blocks) && blocks[n].handle == h {
			n++
		}
		if f := tcFrontOf(uintptr(h)); f != nil {
			_ = f.giveBack(blocks[:n], s)
		}
		blocks = blocks[n:]
	}
}

// tcExitMine hands the calling thread's cache to the depot, as the thread's
// exit would (for tests; the goroutine must be locked to its thread).
func tcExitMine() { C.rmmgo_tc_exit_mine() }

// tcTestExitDelay makes threads' exits wait d once their cache left the
// list (for tests; 0: none).
func tcTestExitDelay(d time.Duration) { C.rmmgo_tc_test_exit_delay(C.int64_t(d.Nanoseconds())) }

// tcTestExitWaiting reports whether a thread's exit is waiting the delay
// tcTestExitDelay set: its cache is off the list, its pairs not yet moved.
func tcTestExitWaiting() bool { return C.rmmgo_tc_test_exit_waiting() != 0 }

// The C cache's clock moves with internal/cacheclock's: a test that
// advances one advances both.
func init() {
	cacheclock.OnAdvance(func(d time.Duration) { C.rmmgo_tc_clock_advance(C.int64_t(d)) })
}

// tcCounts reports what the table and caches hold (for tests).
func tcCounts() (live, cached, depot, caches int) {
	var l, c, o, k C.size_t
	C.rmmgo_tc_counts(&l, &c, &o, &k)
	return int(l), int(c), int(o), int(k)
}

// tcBudget reports handle's budget, the part of it no thread reserved, and
// the bytes cached for it (for tests).
func tcBudget(handle uintptr) (budget uintptr, unreserved int64, cached uintptr) {
	var b, c C.size_t
	var u C.int64_t
	C.rmmgo_tc_budget(C.uint64_t(handle), &b, &u, &c)
	return uintptr(b), int64(u), uintptr(c)
}

// ------------------------------------------------------------ crossings

// tcCall reads a crossing's arguments; the blocks to give back first are
// given back on the way in. The resource is the one the handle's blocks
// come from.
func tcCall(call *C.rmmgo_tc_call) (*entry, fastpath.Cacheable, bool) {
	if call.ngive > 0 {
		tcGiveBackAny(unsafe.Slice(call.give, int(call.ngive)))
	}
	e, ok := reg.lookup(uintptr(call.handle))
	if !ok {
		return nil, nil, false
	}
	f := tcFrontOf(e.handle)
	if f == nil {
		return nil, nil, false
	}
	return e, f.res, true
}

//export rmmgo_go_refill
func rmmgo_go_refill(call *C.rmmgo_tc_call) (st status) {
	defer recoverTo("rmm_allocate", &st)
	call.got = 0
	e, c, ok := tcCall(call)
	if !ok {
		return badHandle("rmm_allocate", toHandle(uintptr(call.handle)))
	}
	out := unsafe.Slice((*uintptr)(unsafe.Pointer(call.ptrs)), int(call.n))
	n, err := c.AllocateBatch(core.Stream(call.stream), uintptr(call.size), out)
	if err == nil && (n < 1 || out[0] == 0) {
		err = fmt.Errorf("%w: the %s resource returned no memory and no error", errInternal, e.res.Kind())
	}
	if err != nil {
		return allocFailed("rmm_allocate", e, call.bytes, call.alignment, err)
	}
	call.got = C.int(n)
	tcCrossed.refills.Add(1)
	tcCrossed.refilled.Add(int64(n))
	l := c.CacheLimits()
	call.budget, call.shared = C.size_t(l.Budget), C.size_t(l.Shared)
	return statusSuccess
}

//export rmmgo_go_drain
func rmmgo_go_drain(call *C.rmmgo_tc_call) (st status) {
	defer recoverTo("rmm_deallocate", &st)
	_, c, ok := tcCall(call)
	if !ok {
		return badHandle("rmm_deallocate", toHandle(uintptr(call.handle)))
	}
	ptrs := unsafe.Slice((*uintptr)(unsafe.Pointer(call.ptrs)), int(call.n))
	tcCrossed.drains.Add(1)
	if err := c.DeallocateBatch(core.Stream(call.stream), uintptr(call.size), ptrs); err != nil {
		return fail(fmt.Sprintf("rmm_deallocate: giving back %d cached blocks of %d bytes", call.n, call.size), err, statusInternal)
	}
	l := c.CacheLimits()
	call.budget, call.shared = C.size_t(l.Budget), C.size_t(l.Shared)
	return statusSuccess
}

//export rmmgo_go_free_check
func rmmgo_go_free_check(handle C.uint64_t, which C.int, ptr C.uintptr_t, bytes, allocated C.size_t, why C.int) (st status) {
	fn := "rmm_deallocate"
	if which == C.RMMGO_TC_FREE_SYNC {
		fn = "rmm_deallocate_sync"
	}
	defer recoverTo(fn, &st)
	e, ok := reg.lookup(uintptr(handle))
	if !ok {
		return badHandle(fn, toHandle(uintptr(handle)))
	}
	fn = fmt.Sprintf("%s(%#x, %d bytes)", fn, uintptr(ptr), bytes)
	// The resource the blocks come from says it, as it would behind the
	// handle's adaptors.
	var c fastpath.Cacheable
	if f := tcFrontOf(e.handle); f != nil {
		c = f.res
	} else if c, ok = e.res.(fastpath.Cacheable); !ok {
		return badHandle(fn, toHandle(uintptr(handle)))
	}
	kind := c.Kind()
	var err error
	switch why {
	case C.RMMGO_TC_SIZE:
		if err = c.CheckFree(uintptr(ptr), uintptr(bytes), uintptr(allocated)); err == nil {
			return statusSuccess
		}
	case C.RMMGO_TC_INTERIOR:
		err = fmt.Errorf("%s: %w: %#x is not 256-byte aligned, so no block starts there (an interior pointer?)", kind, core.ErrInvalidPointer, uintptr(ptr))
	case C.RMMGO_TC_NOT_LIVE:
		err = fmt.Errorf("%s: %w: %#x is not a live allocation (deallocated already?)", kind, core.ErrInvalidPointer, uintptr(ptr))
	default:
		err = fmt.Errorf("%s: %w: %#x belongs to another resource", kind, core.ErrInvalidPointer, uintptr(ptr))
	}
	return fail(fn, err, statusInternal)
}

//export rmmgo_go_stream_live
func rmmgo_go_stream_live(stream C.uintptr_t) (live C.int) {
	defer func() {
		if recover() != nil {
			live = 0
		}
	}()
	if streams.retired(core.Stream(stream)) {
		return 0
	}
	return 1
}

//export rmmgo_go_stream_key
func rmmgo_go_stream_key(stream C.uintptr_t, key *C.uint64_t) (rc C.int) {
	defer func() {
		if recover() != nil {
			rc = 1
		}
	}()
	k, err := streamKey(core.Stream(stream))
	if err != nil {
		return 1
	}
	*key = C.uint64_t(k)
	return 0
}

// The uncached calls. Resources that caches serve ask the caches for their
// blocks themselves before they grow or fail (fastpath.Cacheable).

//export rmmgo_go_allocate
func rmmgo_go_allocate(mr C.rmm_resource_t, stream C.rmm_stream_t, bytes, alignment C.size_t, ptr *unsafe.Pointer) (st status) {
	const fn = "rmm_allocate"
	defer recoverTo(fn, &st)
	if ptr == nil {
		return invalid(fn, "ptr is NULL")
	}
	e, ok := reg.lookup(handleValue(mr))
	if !ok {
		return badHandle(fn, mr)
	}
	s := streamValue(stream)
	if err := streams.check(s); err != nil {
		return fail(fmt.Sprintf("%s(%d bytes, alignment %d)", fn, bytes, alignment), err, statusInvalidArgument)
	}
	p, err := e.res.Allocate(s, uintptr(bytes), uintptr(alignment))
	if err != nil || (p == 0 && bytes != 0) {
		return allocFailed(fn, e, bytes, alignment, err)
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
	s := streamValue(stream)
	if err := streams.check(s); err != nil {
		return fail(fmt.Sprintf("rmm_deallocate(%#x, %d bytes)", uintptr(ptr), bytes), err, statusInvalidArgument)
	}
	if ptr == nil && bytes != 0 {
		return statusSuccess
	}
	// (NULL, 0) reaches the resource: a statistics adaptor uncounts a
	// zero-byte allocation, as RMM's does; every other resource does nothing.
	if err := e.res.Deallocate(s, uintptr(ptr), uintptr(bytes), uintptr(alignment)); err != nil {
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
	if ptr == nil && bytes != 0 {
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

// cSizeT is size_t, cStream rmm_stream_t (for tests, which cannot name C
// types).
type (
	cSizeT  = C.size_t
	cStream = C.rmm_stream_t
)

// deallocateAt is rmm_deallocate on the default stream with the pointer as
// a uintptr (for tests).
func deallocateAt(mr C.rmm_resource_t, p uintptr, bytes uint64) status {
	return C.rmmgo_tc_deallocate_at(mr, 0, C.uintptr_t(p), C.size_t(bytes), 256)
}
