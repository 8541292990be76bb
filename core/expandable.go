package core

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/internal/fastpath"

	"github.com/rmmgo/rmmgo/core/internal/addr"
	"github.com/rmmgo/rmmgo/core/internal/cachepolicy"
	"github.com/rmmgo/rmmgo/core/internal/heap"
	"github.com/rmmgo/rmmgo/cudart"
)

// ExpandableOptions configures an Expandable.
type ExpandableOptions struct {
	// MaximumSize bounds the device memory the resource maps: 0 or
	// SizeDefault for none beyond the device's memory; otherwise a multiple
	// of 256 bytes no smaller than the device's granularity (2 MiB on
	// current GPUs). The resource maps whole granules, so at most
	// MaximumSize rounded down to a granule.
	MaximumSize uintptr
	// ReleaseThreshold: 0 (or SizeDefault) keeps what the resource maps
	// until Release, or until the maximum or the device's memory forces it
	// to give back free granules. Otherwise, when mapping more would take
	// it above ReleaseThreshold bytes while it holds free memory of at least
	// half what it is about to map (and a granule), it first gives back its
	// wholly free granules (one device synchronization), so that it holds
	// little more than the larger of the threshold and what is in use. The
	// threshold is looked at only when the resource grows: Deallocate never
	// synchronizes, and idle memory above the threshold goes back at the
	// next growth or at Release.
	ReleaseThreshold uintptr
	// ReservedSize is the address range reserved: 0 or SizeDefault for four
	// times the maximum size (the device's memory without a maximum).
	// Address space holds no memory, but it bounds how far apart live
	// blocks can lie: long-lived small blocks left in the space of blocks
	// freed since spread over the range, and a large request needs a
	// stretch free of them. At least the maximum size; rounded up to a
	// granule. The heap's index costs 16 bytes of host address space per
	// 64 KiB of range, resident only where blocks start.
	ReservedSize uintptr
	// PeerDevices are given read-write access to the memory too
	// (cuMemSetAccess), so that kernels on them can use it directly.
	PeerDevices []int
}

// Expandable is a stream-ordered sub-allocator over one range of device
// addresses that it reserves when made and backs with device memory, in
// granules, as it grows, through CUDA's virtual memory management
// (cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess). Because the
// range is one, free memory never splits across separately allocated
// chunks as a pool's does: when a request fits in no free block, the
// resource maps memory right after (or before) the free memory that comes
// closest, so that they form one block; and granules that are wholly free
// can be unmapped and given back to the device anywhere in the range
// without moving live data. This is what PyTorch's expandable_segments
// does for its caching allocator.
//
// Inside the range it is the pool's heap (best fit, magazines, coalescing)
// with the same stream ordering (see Pool): memory freed on a stream is
// reused by that stream at once, by others after an event or a device
// synchronization, never touching a stream handle after its caller's call.
//
// Growth: a request no free block can serve maps memory in the lowest
// place of the range where it fits: the fewest granules that make it fit
// next to the free memory already there (and a sixty-fourth of what is
// mapped ahead, where that fits, so that a run of small requests does not
// map granule by granule); at the limit (the maximum or the device
// refusing after a give-back), where it needs the fewest granules, nothing
// ahead. Past the maximum size or the device's memory, or the release
// threshold, or when its free memory could hold the request and a
// thirty-second of what is mapped besides (free in pieces that do not fit
// the request), the resource first gives back its wholly free granules,
// after a device synchronization (memory freed in stream order
// may still be in use), and tries again. Before any of that, when other
// streams hold free memory the requesting stream may not use yet of at
// least the request and a thirty-second of what is mapped, it synchronizes
// the device, which makes that memory usable by every stream, and tries
// again without giving anything back (a workload on one stream never
// does). Release gives them back on
// request; Close gives back everything.
//
// Sizes are rounded up to 256 bytes and blocks are 256-byte aligned;
// alignments above 256 are refused (ErrBadAlignment). It needs the driver's
// virtual memory management: CUDA runtime 12.5 or later
// (cudaGetDriverEntryPointByVersion) and a device that supports it;
// otherwise NewExpandable fails with ErrNotSupported.
//
// An Expandable is safe for concurrent use. Use it with the device that was
// current when it was made.
type Expandable struct {
	rt        cudart.Runtime
	vm        cudart.VirtualMemory
	dev       int
	prop      cudart.MemAllocationProp
	access    []cudart.MemAccessDesc
	gran      uintptr
	reserved  uintptr // the size of each range
	maxSize   uintptr // granules
	threshold uintptr // 0: none
	h         heap.Heap

	mu      sync.Mutex     // growth, release and close
	ranges  []*vaRange     // the address ranges reserved; guarded by mu
	nranges atomic.Int32   // len(ranges), for ReservedSize
	mapped  atomic.Uintptr // bytes mapped
	peak    atomic.Uintptr // most bytes mapped at once
	// growths, handles and releases count the mappings made, the physical
	// allocations (cuMemCreate) behind them and the times free granules
	// were given back (each a device synchronization); settles the device
	// synchronizations that settled other streams' free memory before a
	// growth (settle), for tests and the soak.
	growths, handles, releases, settles atomic.Uint64
	gen                                 atomic.Uint64 // counts changes to the holes
	closed                              atomic.Bool

	caches // caches in front of it (Cacheable): asked for their blocks before it maps more
}

// NewExpandable reserves an address range on the current device and
// returns an expandable resource over it, with no memory mapped yet.
//
// Errors: ErrNotSupported when the runtime or device has no virtual memory
// management; ErrInvalidArgument for sizes that are not multiples of 256,
// a maximum below the granularity, a reserved size below the maximum, or a
// peer device that does not exist or is the resource's own; the CUDA error
// when the range cannot be reserved.
func NewExpandable(opts ExpandableOptions) (*Expandable, error) {
	r, err := rt()
	if err != nil {
		return nil, err
	}
	return newExpandable(r, opts)
}

func newExpandable(r cudart.Runtime, opts ExpandableOptions) (*Expandable, error) {
	const kind = kindExpandable
	vm, err := cudart.VirtualMemoryOf(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	maxSize, threshold, reserved := opts.MaximumSize, opts.ReleaseThreshold, opts.ReservedSize
	if maxSize == SizeDefault {
		maxSize = 0
	}
	if threshold == SizeDefault {
		threshold = 0
	}
	if reserved == SizeDefault {
		reserved = 0
	}
	for _, v := range []struct {
		name string
		v    uintptr
	}{{"maximum size", maxSize}, {"release threshold", threshold}, {"reserved size", reserved}} {
		if !addr.IsAligned(v.v, DefaultAlignment) || v.v > maxAllocation {
			return nil, fmt.Errorf("%s: %w: the %s (%d bytes) must be a multiple of 256 bytes", kind, ErrInvalidArgument, v.name, v.v)
		}
	}
	dev, err := r.GetDevice()
	if err != nil {
		return nil, cudaError(kind, err)
	}
	e := &Expandable{rt: r, vm: vm, dev: dev, prop: cudart.DeviceMemoryProp(dev)}
	e.access = []cudart.MemAccessDesc{{Location: cudart.DeviceLocation(dev), Flags: cudart.MemAccessFlagsProtReadWrite}}
	if len(opts.PeerDevices) > 0 {
		n, err := r.GetDeviceCount()
		if err != nil {
			return nil, cudaError(kind, err)
		}
		for _, p := range opts.PeerDevices {
			if p < 0 || p >= n || p == dev {
				return nil, fmt.Errorf("%s: %w: peer device %d (the resource is on device %d of %d)", kind, ErrInvalidArgument, p, dev, n)
			}
			d := cudart.MemAccessDesc{Location: cudart.DeviceLocation(p), Flags: cudart.MemAccessFlagsProtReadWrite}
			if !slices.Contains(e.access, d) {
				e.access = append(e.access, d)
			}
		}
	}
	if e.gran, err = vm.MemGetAllocationGranularity(e.prop, cudart.MemGranularityMinimum); err != nil {
		return nil, vmmError(kind+": reading the allocation granularity", err)
	}
	if maxSize == 0 {
		_, total, err := r.MemGetInfo()
		if err != nil {
			return nil, cudaError(kind+": reading the device memory", err)
		}
		maxSize = uintptr(total)
	} else if maxSize < e.gran {
		return nil, fmt.Errorf("%s: %w: the maximum size (%s) is smaller than the device's granularity (%s)", kind, ErrInvalidArgument, formatBytes(maxSize), formatBytes(e.gran))
	}
	e.maxSize = maxSize / e.gran * e.gran
	e.threshold = threshold
	if reserved == 0 {
		reserved = defaultReservedFactor * e.maxSize
	} else if reserved < e.maxSize {
		return nil, fmt.Errorf("%s: %w: the reserved size (%s) is smaller than the maximum size (%s)", kind, ErrInvalidArgument, formatBytes(reserved), formatBytes(e.maxSize))
	}
	e.reserved = (reserved + e.gran - 1) / e.gran * e.gran
	e.h.Init(kind, r, nil, true)
	if err := e.addRange(); err != nil {
		_ = e.h.Close()
		return nil, err
	}
	return e, nil
}

// The growth policy. A growth maps at least a mapAhead-th of what is
// mapped (a sixteenth held 6 % more than needed at the peak of ResNet-50
// training). Before it maps, a resource whose free memory could hold the
// request plus a trimSlack-th of what is mapped gives its wholly free
// granules back: live blocks spread over the range leave that much free in
// pieces, and mapping more on top would hold it for good (GPT-2 training
// held 2x its live bytes). The slack keeps the device synchronizations of
// giving back to a few per workload where the free memory is only the
// rounding of what is live. Replays of real training (bench/traces) hold
// 1.01-1.04x their peak live bytes with these.
//
// The device's headroom: a headroomShare-th of its memory. The CUDA
// libraries take device memory behind the allocator's back (cublasCreate's
// workspace, kernels loaded lazily at their first launch): with the last
// gigabytes mapped and held free by the resource, cublasCreate failed on
// PyTorch's autograd thread, GPT-2 training at batch 93 on an H200 (Runs
// 33-34), where PyTorch's expandable segments train batch 100. So a growth
// that would leave the device less than its headroom free first gives the
// wholly free granules back (as at the device's limit), and it never maps
// ahead into the headroom: there it maps what the request needs.
const (
	mapAhead      = 64
	trimSlack     = 32
	headroomShare = 64
)

// maxGrowAttempts bounds the times one allocation looks in the heap again
// because others changed it, before it maps what it needs regardless.
const maxGrowAttempts = 8

// Allocate returns bytes (rounded up to 256) of memory usable in stream
// order on stream, mapping more device memory when no free block fits.
// Errors: ErrBadAlignment for an alignment that is not a power of two or
// exceeds 256; ErrOutOfMemory when neither the maximum size nor the device
// leaves room, even after giving back free granules; ErrClosed after
// Close; ErrInvalidArgument for a stream that is not alive.
func (e *Expandable) Allocate(stream Stream, bytes, alignment uintptr) (uintptr, error) {
	if !subRequestOK(bytes, alignment) {
		return 0, rejectRequest(kindExpandable, bytes, alignment)
	}
	if e.closed.Load() {
		return 0, errClosed(kindExpandable)
	}
	size := (bytes + DefaultAlignment - 1) &^ (DefaultAlignment - 1)
	if stream == cudart.PerThreadDefaultStream {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	var st growState
	asked, gave := false, false // the caches in front were asked for their blocks, and gave some
	for {
		gen := e.gen.Load()
		p, err := e.h.Allocate(stream, size)
		if err == nil {
			return p, nil
		}
		if !heap.IsNoRoom(err) {
			return p, explainOOM(e, stream, bytes, alignment, closedOr(&e.closed, kindExpandable, err))
		}
		// Blocks the caches hold are free memory the heap cannot see: take
		// them back before mapping more (once a call).
		if !asked {
			asked = true
			if e.caches.reclaim(size) {
				gave = true
				continue
			}
		}
		if p, err = e.grow(stream, size, gen, &st); p != 0 || err != nil {
			if err != nil && gave && errors.Is(err, ErrOutOfMemory) {
				e.caches.futile()
			}
			if err != nil {
				return 0, explainOOM(e, stream, bytes, alignment, closedOr(&e.closed, kindExpandable, err))
			}
			return p, nil
		}
		st.attempt++
	}
}

// growState is what the growths of one allocation have done so far.
type growState struct {
	attempt   int  // times the heap was looked at again
	reclaimed bool // free granules were given back
	// missed: memory mapped next to free memory did not merge with free
	// memory of the caller's list (another list's): map the whole request.
	missed  bool
	settled bool // every stream's free memory was settled (settle)
}

// grow maps memory for a request of size bytes on stream s that the heap
// could not serve when the holes were at generation gen, and allocates
// from it. It returns 0 and no error when the caller should look in the
// heap again: another allocation changed the holes meanwhile, free
// granules were given back, or the new memory did not merge with free
// memory of the caller's list.
func (e *Expandable) grow(s Stream, size uintptr, gen uint64, st *growState) (uintptr, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed.Load() {
		return 0, errClosed(kindExpandable)
	}
	if e.gen.Load() != gen && st.attempt < maxGrowAttempts {
		return 0, nil // look again; past the bound, map what this request needs
	}
	reclaim := func() (uintptr, error) {
		st.reclaimed = true
		return 0, e.release()
	}
	if size > e.maxSize {
		return 0, e.outOfRoom(size, size)
	}
	if !st.settled && !st.reclaimed && e.unsettled(s) >= size+e.mapped.Load()/trimSlack {
		return 0, e.settle(st)
	}
	// Map next to free memory, unless that did not merge with it (another
	// list's): then map the whole request, which Fill serves from the
	// caller's list.
	near := !st.missed
	pl, ok := e.plan(s, size, near, false)
	if !ok {
		if !st.reclaimed && e.h.FreeBytes() > 0 {
			return reclaim() // free granules may join a hole big enough
		}
		// Live blocks are spread over the ranges so that none has room
		// for the request in one piece: reserve another range.
		if e.mapped.Load()+size <= e.maxSize && len(e.ranges) < maxRanges {
			if err := e.addRange(); err != nil {
				return 0, err
			}
			pl, ok = e.plan(s, size, false, false)
		}
		if !ok {
			return 0, fmt.Errorf("%s: %w: no range of %s left in the %d address ranges of %s reserved (failed to allocate %s)",
				kindExpandable, ErrOutOfMemory, formatBytes(size), len(e.ranges), formatBytes(e.reserved), formatBytes(size))
		}
	}
	need := pl.need
	mapped := e.mapped.Load()
	if mapped+need > e.maxSize {
		if !st.reclaimed && e.h.FreeBytes() > 0 {
			return reclaim()
		}
		if lp, ok := e.plan(s, size, near, true); ok && lp.need < need {
			pl, need = lp, lp.need // at the limit: where the fewest granules do
		}
		if mapped+need > e.maxSize {
			return 0, e.outOfRoom(size, need)
		}
	}
	spare, known := e.deviceSpare()
	if known && need > spare && !st.reclaimed && e.h.FreeBytes() >= e.gran {
		return reclaim() // near the device's limit: keep its headroom
	}
	if e.threshold != 0 && mapped+need > e.threshold && !st.reclaimed && e.h.FreeBytes() >= max(need/2, e.gran) {
		return reclaim()
	}
	if !st.reclaimed && e.h.UsableBy(s) >= size+mapped/trimSlack {
		// Enough is free, in pieces the request does not fit in, and more
		// besides: give the wholly free granules back first (one device
		// synchronization), so that what is mapped for the request is
		// what is missing, not the request again.
		return reclaim()
	}
	// Map a little ahead where the room allows, so that many small
	// requests make few growths.
	limit := e.maxSize
	if e.threshold != 0 {
		limit = min(limit, max(e.threshold, mapped+need))
	}
	if more := (mapped/mapAhead + e.gran - 1) / e.gran * e.gran; more > need && more <= pl.hole.Size && mapped+more <= limit && known && more <= spare {
		need = more
	}
	at, err := e.mapAt(pl, need)
	if err != nil && errors.Is(err, ErrOutOfMemory) {
		if !st.reclaimed && e.h.FreeBytes() > 0 {
			return reclaim()
		}
		// The device is at its limit: map only what the request needs,
		// where it needs the fewest granules.
		if lp, ok := e.plan(s, size, near, true); ok && lp.need < need {
			need = lp.need
			at, err = e.mapAt(lp, need)
		}
	}
	if err != nil {
		return 0, err
	}
	e.gen.Add(1)
	p, err := e.h.Fill(s, at, need, size)
	if p == 0 && err == nil {
		st.missed = true
	}
	return p, err
}

// deviceSpare returns what the device can give beyond its headroom (the
// growth policy above): its free memory less a headroomShare-th of its
// total, read once per growth. It reads the calling thread's current
// device: known is false on a thread whose current device is another, or
// where the device cannot say. mu held.
func (e *Expandable) deviceSpare() (spare uintptr, known bool) {
	if d, err := e.rt.GetDevice(); err != nil || d != e.dev {
		return 0, false
	}
	free, total, err := e.rt.MemGetInfo()
	if err != nil {
		return 0, false
	}
	if keep := total / headroomShare; free > keep {
		return uintptr(free - keep), true
	}
	return 0, true
}

// unsettled returns the free bytes other streams hold that stream s may
// not use yet: freed in stream order on those streams and not ordered
// before s since (a device synchronization would make them usable). A
// workload on one stream has none. mu held.
func (e *Expandable) unsettled(s Stream) uintptr {
	free, usable := e.h.FreeBytes(), e.h.UsableBy(s)
	if usable >= free {
		return 0
	}
	return free - usable
}

// settle synchronizes the device and notes it in the stream-ordering
// engine, so that every block freed before is free for every stream, and
// has the allocation look in the heap again; it unmaps nothing. The growth
// rule: with many streams, most of the free memory lies fresh in other
// streams' lists at any time, and mapping more for a request that it could
// serve holds the memory twice (the 16-stream soak at the H200's scale on
// the simulated device held 3.00-3.17x its peak live bytes without this,
// 1.85-2.09x with it: docs/benchmarks.md). Only when those bytes reach the request and a
// trimSlack-th of what is mapped, as for giving back, so that a
// synchronization is worth a growth saved. mu held.
func (e *Expandable) settle(st *growState) error {
	st.settled = true
	e.settles.Add(1)
	marks := e.h.SyncMarks()
	if err := e.rt.DeviceSynchronize(); err != nil {
		return cudaError(kindExpandable+": synchronizing to settle free memory", err)
	}
	e.h.ApplySync(marks)
	return nil
}

// mapAt maps need bytes at the start of pl's hole, or at its end, and
// returns where. mu held.
func (e *Expandable) mapAt(pl growthPlan, need uintptr) (uintptr, error) {
	at := pl.hole.Base
	if pl.atEnd {
		at = pl.hole.Base + pl.hole.Size - need
	}
	return at, e.mapRange(at, need)
}

// growthPlan is where to map memory: need bytes at the start of hole, or
// at its end.
type growthPlan struct {
	hole  heap.Span
	atEnd bool
	need  uintptr
}

// plan chooses where to map memory for size bytes: in the lowest hole
// where it fits (with least set: in the hole where it needs the fewest),
// the fewest granules that hold size bytes together with the free memory
// already beside the hole (when near is set: that of s's home list, which
// the new memory merges with), at the start or the end of the hole, or the
// whole hole where that joins the free memory on both sides into a block
// large enough. First fit by address keeps what is
// mapped packed at the low end of the range, so that the high end stays
// one hole for large requests; least is for a resource at its limit, where
// a granule more or less decides whether the request is served. mu held.
func (e *Expandable) plan(s Stream, size uintptr, near, least bool) (pl growthPlan, ok bool) {
	roundUp := func(n uintptr) uintptr { return max(e.gran, (n+e.gran-1)/e.gran*e.gran) }
	holes := e.h.Holes
	if near {
		holes = func() []heap.HoleInfo { return e.h.HolesFor(s) }
	}
	for _, hi := range holes() {
		before, after := hi.FreeBefore, hi.FreeAfter
		if !near {
			before, after = 0, 0
		}
		consider := func(n uintptr, atEnd bool) {
			if n <= hi.Size && (!ok || n < pl.need) {
				pl, ok = growthPlan{hi.Span, atEnd, n}, true
			}
		}
		consider(roundUp(size-min(size, before)), false)
		consider(roundUp(size-min(size, after)), true)
		if before+hi.Size+after >= size {
			consider(hi.Size, false)
		}
		if ok && !least {
			return pl, true
		}
	}
	return pl, ok
}

// outOfRoom is the error of a request of size bytes that needs need more
// bytes mapped than the maximum allows.
func (e *Expandable) outOfRoom(size, need uintptr) error {
	return fmt.Errorf("%s: %w: Maximum pool size exceeded (failed to allocate %s): Not enough room to grow, current/max/try size = %s, %s, %s",
		kindExpandable, ErrOutOfMemory, formatBytes(size), formatBytes(e.mapped.Load()), formatBytes(e.maxSize), formatBytes(need))
}

// Deallocate returns memory to the resource, in stream order on stream
// (see Pool.Deallocate). A pointer the resource did not hand out, or one
// already deallocated, gives ErrInvalidPointer; a size that does not match
// the allocation's gives ErrInvalidArgument.
func (e *Expandable) Deallocate(stream Stream, ptr, bytes, alignment uintptr) error {
	if fc := e.caches.claimer(); fc != nil && ptr != 0 && bytes != 0 {
		return claimedFree(e, fc, ptr, bytes, func(n uintptr) error { return e.deallocateUnclaimed(stream, ptr, n, alignment) })
	}
	return e.deallocateUnclaimed(stream, ptr, bytes, alignment)
}

// deallocateUnclaimed is Deallocate without the claim of a cache in front
// (DeallocateBatch: the cache's own give-back).
func (e *Expandable) deallocateUnclaimed(stream Stream, ptr, bytes, alignment uintptr) error {
	if done, err := subFreeChecked(kindExpandable, e, ptr, bytes, alignment); done {
		return err
	}
	if e.closed.Load() {
		return errClosed(kindExpandable)
	}
	size := (bytes + DefaultAlignment - 1) &^ (DefaultAlignment - 1)
	if stream == cudart.PerThreadDefaultStream {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	return closedOr(&e.closed, kindExpandable, e.h.Deallocate(stream, ptr, size))
}

// AllocateSync allocates on the default stream and synchronizes it.
func (e *Expandable) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	return allocateSync(e, e.rt, bytes, alignment)
}

// DeallocateSync deallocates on the default stream: the caller vouches that
// no work uses the memory any more.
func (e *Expandable) DeallocateSync(ptr, bytes, alignment uintptr) error {
	return e.Deallocate(DefaultStream, ptr, bytes, alignment)
}

// Properties reports device memory.
func (e *Expandable) Properties() Properties { return DeviceAccessible }

// Equal reports whether other is this very resource.
func (e *Expandable) Equal(other Resource) bool {
	o, ok := other.(*Expandable)
	return ok && o == e
}

// Kind returns "expandable".
func (e *Expandable) Kind() string { return kindExpandable }

// Device returns the device that was current when the resource was made.
func (e *Expandable) Device() int { return e.dev }

// PoolSize returns the bytes of device memory mapped.
func (e *Expandable) PoolSize() uintptr { return e.mapped.Load() }

// UsedBytes returns the bytes handed out and not yet deallocated (rounded
// to 256 each), as their users count them: blocks a cache in front of the
// resource holds for its users are not in use (see Pool.UsedBytes). While
// other goroutines allocate it is a snapshot.
func (e *Expandable) UsedBytes() uintptr {
	size, idle := e.h.Size(), e.h.HoleBytes()+e.h.FreeBytes()+e.caches.held()
	if idle > size {
		return 0
	}
	return size - idle
}

// PeakPoolSize returns the most bytes of device memory mapped at once.
func (e *Expandable) PeakPoolSize() uintptr { return e.peak.Load() }

// MaximumSize returns the most device memory the resource maps.
func (e *Expandable) MaximumSize() uintptr { return e.maxSize }

// ReservedSize returns the bytes of address space it reserved: one range
// of ExpandableOptions.ReservedSize at first, more when live blocks left
// no room in one piece for a request (at most four ranges).
func (e *Expandable) ReservedSize() uintptr { return uintptr(e.nranges.Load()) * e.reserved }

// Granularity returns the device's allocation granularity: the resource
// maps and gives back memory in granules of this size.
func (e *Expandable) Granularity() uintptr { return e.gran }

// Release gives back to the device every granule that is wholly free,
// after synchronizing the device (memory freed in stream order may still be
// in use by queued work). Live allocations do not move.
func (e *Expandable) Release() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed.Load() {
		return errClosed(kindExpandable)
	}
	return e.release()
}

// Close synchronizes the device, unmaps and gives back all device memory
// (allocations still live included), frees the address range and releases
// the resource's events. Later calls fail with ErrClosed; closing again
// does nothing.
func (e *Expandable) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed.Swap(true) {
		return nil
	}
	var errs []error
	if err := e.rt.DeviceSynchronize(); err != nil {
		errs = append(errs, cudaError(kindExpandable+": synchronizing before giving memory back", err))
	}
	for _, r := range e.ranges {
		for j, h := range r.handles {
			if h == 0 {
				continue
			}
			a, sz, _ := e.mapping(r.base + uintptr(j)*e.gran)
			if err := e.vm.MemUnmap(a, sz); err != nil {
				errs = append(errs, vmmError(fmt.Sprintf("%s: unmapping %#x", kindExpandable, a), err))
			}
			if err := e.vm.MemRelease(h); err != nil {
				errs = append(errs, vmmError(kindExpandable+": releasing device memory", err))
			}
			e.setMapping(a, sz, 0)
		}
	}
	e.mapped.Store(0)
	e.h.ReleaseChunks(true) // allocations racing with Close fail with ErrClosed
	for _, r := range e.ranges {
		if err := e.vm.MemAddressFree(r.base, r.size); err != nil {
			errs = append(errs, vmmError(kindExpandable+": freeing the address range", err))
		}
	}
	return errors.Join(append(errs, e.h.Close())...)
}

// The expandable resource as a Cacheable one (cache.go).

// CacheLimits: requests up to cachepolicy.MaxBlock, the budget following
// the memory mapped.
func (e *Expandable) CacheLimits() fastpath.CacheLimits {
	return e.caches.limits(cachepolicy.MaxBlock, 0, e.mapped.Load(), e.h.FreeBytes())
}

// AllocateBatch allocates the first block as Allocate does, the others
// from the free memory of the stream's list in the caller's shard (never
// by mapping more).
func (e *Expandable) AllocateBatch(s Stream, size uintptr, out []uintptr) (int, error) {
	return heapAllocateBatch(e, &e.h, s, size, out)
}

// DeallocateBatch deallocates each block.
func (e *Expandable) DeallocateBatch(s Stream, size uintptr, ptrs []uintptr) error {
	return deallocateBatch(e.deallocateUnclaimed, s, size, ptrs)
}

// CheckFree: the resource takes a block back with the size it was
// allocated with, both rounded up to 256.
func (e *Expandable) CheckFree(ptr, bytes, allocated uintptr) error {
	return checkSameSize(kindExpandable, ptr, bytes, allocated)
}

// AttachCache attaches c (see Cacheable).
func (e *Expandable) AttachCache(c fastpath.BlockCache) func() { return e.caches.attach(c) }
