package core

import (
	"errors"
	"fmt"
	"github.com/rmmgo/rmmgo/internal/fastpath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/core/internal/addr"
	"github.com/rmmgo/rmmgo/core/internal/cachepolicy"
	"github.com/rmmgo/rmmgo/core/internal/heap"
	"github.com/rmmgo/rmmgo/cudart"
)

// PoolOptions configures a Pool.
type PoolOptions struct {
	// InitialSize is taken from the upstream when the pool is made: 0 grows
	// the pool on first use; SizeDefault takes half of the current device's
	// free memory (aligned down to 256 bytes), as RMM's Python package does.
	// Otherwise a multiple of 256.
	InitialSize uintptr
	// MaximumSize bounds the bytes the pool takes from the upstream: 0 or
	// SizeDefault for no bound, otherwise a multiple of 256 no smaller than
	// InitialSize.
	MaximumSize uintptr
}

// Pool is a coalescing best-fit sub-allocator, like RMM's
// pool_memory_resource: it takes large chunks from its upstream and serves
// allocations from them in nanoseconds, in stream order.
//
// Every block is 256-byte aligned; alignments above 256 are refused (wrap
// the pool in an Aligned adaptor for more). Requests up to 1 MiB get a
// block of their size class (256-byte steps up to 4 KiB, then four classes
// per power of two: 5, 6, 7, 8 KiB, 10, 12, 14, 16 KiB, ...; the classes of
// the C ABI's thread caches), larger ones are rounded up to 256 bytes; a
// block keeps the size its user asked for, which the free must give, and
// its rounding does not count as in use (UsedBytes). Blocks freed on the
// legacy default stream wait, as they are, in a per-P cache of their class
// (the heap's front) for the next request of that class on that stream;
// the cache shares the magazines' budget below and empties before the pool
// grows, before it fails, on Release and Close. A request the free memory cannot hold first takes back the blocks
// that caches in front of the pool hold (the C ABI's thread caches, see
// Cacheable), then grows the pool, no further than the maximum, halving
// the attempt while the upstream refuses. Requests up to 1 MiB and larger
// ones live in two heaps with chunks of their own, so that small blocks
// left live by many streams pin no chunk that large requests need: the
// small heap grows by 2 MiB or the request, the large one by the request,
// a thirty-second of its size or 2 MiB, whichever is largest; a large
// request looks for a free block in both before the large heap grows. (RMM grows by
// the pool's size, or by half the room left below the maximum: a pool that
// starts empty then holds up to twice, or with a maximum many times, the
// memory in use. Growing by a thirty-second keeps it within a thirty-second of the
// peak in use, fragmentation aside, for a few more upstream calls.) Freed
// blocks merge with free neighbours of the same upstream
// chunk, never across chunks; blocks up to 1 MiB first wait unmerged in a
// magazine of their list, for allocations of exactly their size, and merge
// when anything else needs them (before the pool grows, in particular).
// When the pool must grow for a request that its free memory could hold
// (free in pieces, none large enough), it first gives its wholly free
// chunks back to the upstream (one device synchronization), so that it
// holds the new chunk instead of the new chunk and the unusable ones; on
// real training this keeps it within a few percent of the peak in use,
// where keeping every chunk held 1.4-2.5 times it. Otherwise chunks return
// to the upstream on Release and Close. The magazines
// together hold at most a thirty-second of the pool (at least 512 KiB;
// see package cachepolicy).
//
// Memory freed on a stream is reused at once by that stream, and by other
// streams once they can wait for it without touching the freeing stream's
// handle (which the caller may destroy right after the free, as RMM
// allows): memory freed on the default stream after one event record and
// wait; memory freed on another stream after that stream's next call, made
// once others want its memory, records its event. When growth fails, a
// device synchronization frees everything freed before it for every stream.
// See docs/sub-allocators.md. Blocks freed on different streams, or by
// goroutines running at the same time, sit in different lists with their
// own locks; when no list holds a fitting block but the ordered ones
// together could, they are merged and coalesced before the pool grows (and
// all of them after a synchronization, with a maximum size), so two streams
// cannot fragment it into running out of memory. When the pool gives wholly
// free chunks back before growing, their device synchronization orders
// everything freed before it, which the request then looks through before
// the pool grows (with 16 streams most free memory waits in other streams'
// lists at any time).
//
// A Pool is safe for concurrent use. Use it with the device current that was
// current when it was made.
type Pool struct {
	upstream Resource
	rt       cudart.Runtime
	dev      int
	maxSize  uintptr // 0: no maximum
	// h holds the blocks up to 1 MiB (and the initial chunk), with the
	// front and the magazines; big the larger ones, in chunks of their
	// own (see Pool: small and large blocks).
	h   heap.Heap
	big heap.Heap
	// growMu serializes the two heaps' growths, so that together they stay
	// under the maximum; reserved counts the bytes both hold from the
	// upstream, peak the most at once.
	growMu         sync.Mutex
	reserved, peak atomic.Uintptr
	caches         caches // caches in front of the pool (cache.go)

	closed  atomic.Bool
	closeMu sync.Mutex
}

// NewPool returns a pool over upstream.
//
// Errors: ErrInvalidArgument when upstream is nil, a size is not a multiple
// of 256, or InitialSize exceeds MaximumSize; the upstream's error
// (ErrOutOfMemory, ...) when the initial allocation fails.
func NewPool(upstream Resource, opts PoolOptions) (*Pool, error) {
	r, err := rt()
	if err != nil {
		return nil, err
	}
	return newPool(r, upstream, opts)
}

func newPool(r cudart.Runtime, upstream Resource, opts PoolOptions) (*Pool, error) {
	if upstream == nil {
		return nil, fmt.Errorf("%s: %w: nil upstream resource", kindPool, ErrInvalidArgument)
	}
	initial, maxSize := opts.InitialSize, opts.MaximumSize
	if maxSize == SizeDefault {
		maxSize = 0
	}
	if initial == SizeDefault {
		free, _, err := r.MemGetInfo()
		if err != nil {
			return nil, cudaError(kindPool+": reading the free device memory", err)
		}
		initial = addr.AlignDown(uintptr(free/2), DefaultAlignment)
		if maxSize != 0 && initial > maxSize {
			initial = maxSize
		}
	}
	if !addr.IsAligned(initial, DefaultAlignment) {
		return nil, fmt.Errorf("%s: %w: the initial pool size (%d bytes) must be a multiple of 256 bytes", kindPool, ErrInvalidArgument, initial)
	}
	if !addr.IsAligned(maxSize, DefaultAlignment) {
		return nil, fmt.Errorf("%s: %w: the maximum pool size (%d bytes) must be a multiple of 256 bytes", kindPool, ErrInvalidArgument, maxSize)
	}
	if maxSize != 0 && initial > maxSize {
		return nil, fmt.Errorf("%s: %w: the initial pool size (%d bytes) exceeds the maximum pool size (%d bytes)", kindPool, ErrInvalidArgument, initial, maxSize)
	}
	dev, err := r.GetDevice()
	if err != nil {
		return nil, cudaError(kindPool, err)
	}
	p := &Pool{upstream: upstream, rt: r, dev: dev, maxSize: maxSize}
	p.h.Init(kindPool, r, p.growFor(&p.h, &p.big), true)
	p.h.EnableFront()
	p.h.SetReclaim(p.caches.reclaim, p.caches.futile)
	p.h.SetTrim(p.giveBack)
	p.h.SetTrimSettles(true)
	p.big.Init(kindPool, r, p.growFor(&p.big, &p.h), false)
	p.big.SetTrim(p.giveBack)
	p.big.SetTrimSettles(true)
	if initial > 0 {
		ptr, err := takeChunk(kindPool, upstream, DefaultStream, initial)
		if err != nil {
			return nil, fmt.Errorf("%s: allocating the initial %d bytes from the upstream: %w", kindPool, initial, err)
		}
		p.held(int(initial))
		p.h.AddChunk(ptr, initial)
	}
	return p, nil
}

// smallBlock: requests up to this size are the small heap's (p.h), the
// sizes of the front, the magazines and the C ABI's thread caches.
const smallBlock = heap.FrontMaxBlock

// held counts d bytes more (or fewer) held from the upstream.
func (p *Pool) held(d int) {
	v := p.reserved.Add(uintptr(d))
	for o := p.peak.Load(); v > o && !p.peak.CompareAndSwap(o, v); o = p.peak.Load() {
	}
}

// growFor is the growth function of heap h, whose sibling is other: a
// growth the upstream or the maximum refuses first gives back the
// sibling's wholly free chunks (one device synchronization), which may be
// what stands in the way, and tries again.
func (p *Pool) growFor(h, other *heap.Heap) heap.GrowFunc {
	return func(s Stream, size uintptr) (uintptr, uintptr, error) {
		p.growMu.Lock()
		defer p.growMu.Unlock()
		// The small heap grows by growMin (or the request): its blocks,
		// left live by many streams, pin whatever chunk they are in, so
		// small chunks keep less free memory out of use (a thirty-second of
		// it held the 16-stream soak at 2.2x, 2 MiB at 1.6x).
		hs := h.Size()
		if h == &p.h {
			hs = 0
		}
		ptr, n, err := p.grow(s, size, hs)
		if err != nil && errors.Is(err, ErrOutOfMemory) {
			// The sibling may be growing and waiting for growMu: only try.
			if spans, ok := other.TryReleaseChunks(); ok && len(spans) != 0 {
				if gerr := p.giveBack(spans); gerr != nil {
					return 0, 0, errors.Join(err, gerr)
				}
				ptr, n, err = p.grow(s, size, h.Size())
			}
		}
		return ptr, n, err
	}
}

// grow takes a new chunk for a request of size bytes on stream s from the
// upstream for a heap of hsize bytes. It first asks for the pool's own
// growth (sizeToGrow: at least growMin bytes); when the upstream cannot
// give that, it follows RMM's policy exactly (rmmSizeToGrow, then halving
// down to the request), so that over a constrained upstream (a limiting
// adaptor, a nearly full device) the pool takes what RMM's would and fits
// what RMM's fits (RMM's ForceGrowth). p.growMu is held.
func (p *Pool) grow(s Stream, size, hsize uintptr) (uintptr, uintptr, error) {
	cur := p.reserved.Load()
	try := p.sizeToGrow(size, cur, hsize)
	if try > size {
		if ptr, err := takeChunk(kindPool, p.upstream, s, try); err == nil {
			p.held(int(try))
			return ptr, try, nil
		}
		try = p.rmmSizeToGrow(size, cur)
	}
	for try >= size {
		ptr, err := takeChunk(kindPool, p.upstream, s, try)
		if err == nil {
			p.held(int(try))
			return ptr, try, nil
		}
		if try == size {
			return 0, 0, fmt.Errorf("%s: %w: Maximum pool size exceeded (failed to allocate %s): %w", kindPool, ErrOutOfMemory, formatBytes(size), err)
		}
		try = max(size, addr.AlignDown(try/2, DefaultAlignment))
	}
	maxText := formatBytes(p.maxSize)
	if p.maxSize == 0 {
		maxText = formatBytes(^uintptr(0))
	}
	return 0, 0, fmt.Errorf("%s: %w: Maximum pool size exceeded (failed to allocate %s): Not enough room to grow, current/max/try size = %s, %s, %s",
		kindPool, ErrOutOfMemory, formatBytes(size), formatBytes(cur), maxText, formatBytes(size))
}

// rmmSizeToGrow is RMM's growth policy (pool_memory_resource's
// size_to_grow): with a maximum, the request or half of the room left,
// whichever is larger; without, the request or the pool's size. 0 means no
// room. Sizes stay multiples of 256 bytes.
func (p *Pool) rmmSizeToGrow(size, cur uintptr) uintptr {
	if p.maxSize != 0 {
		if cur >= p.maxSize || size > p.maxSize-cur {
			return 0
		}
		return max(size, addr.AlignDown((p.maxSize-cur)/2, DefaultAlignment))
	}
	return max(size, cur)
}

// The pool's growth: by the request, 1/growFraction of the growing heap's
// size or growMin bytes, whichever is largest (see Pool).
const (
	growMin      = 2 << 20
	growFraction = 32
)

// sizeToGrow is the pool's growth policy for a heap of hsize bytes in a
// pool of cur bytes; 0 means no room. Sizes stay multiples of 256 bytes.
func (p *Pool) sizeToGrow(size, cur, hsize uintptr) uintptr {
	try := max(size, growMin, addr.AlignDown(hsize/growFraction, DefaultAlignment))
	if p.maxSize != 0 {
		if cur >= p.maxSize {
			return 0
		}
		rem := p.maxSize - cur // both multiples of 256
		if size > rem {
			return 0
		}
		try = min(try, rem)
	}
	return try
}

// formatBytes writes a byte count as RMM's error messages do, e.g.
// "1.500000 MiB".
func formatBytes(v uintptr) string {
	units := [...]string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	f, i := float64(v), 0
	for f > 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return fmt.Sprintf("%f %s", f, units[i])
}

// subRequestOK is the fast check of a sub-allocator's Allocate: bytes not 0
// and not absurd, alignment a power of two no larger than 256.
func subRequestOK(bytes, alignment uintptr) bool {
	return bytes-1 < maxAllocation && alignment-1 < DefaultAlignment && alignment&(alignment-1) == 0
}

// Allocate returns bytes (rounded up to 256) of memory usable in stream
// order on stream. Errors: ErrBadAlignment for an alignment that is not a
// power of two or exceeds 256; ErrOutOfMemory when the pool cannot grow
// enough; ErrClosed after Close; ErrInvalidArgument for a stream that is
// not alive.
func (p *Pool) Allocate(stream Stream, bytes, alignment uintptr) (uintptr, error) {
	if !subRequestOK(bytes, alignment) {
		return 0, rejectRequest(kindPool, bytes, alignment)
	}
	if p.closed.Load() {
		return 0, errClosed(kindPool)
	}
	size := (bytes + DefaultAlignment - 1) &^ (DefaultAlignment - 1)
	if stream == cudart.PerThreadDefaultStream {
		return p.allocatePinned(stream, bytes, alignment, size)
	}
	ptr, err := p.allocate(stream, size)
	if err != nil {
		return 0, p.failed(stream, bytes, alignment, err)
	}
	return ptr, nil
}

// allocate serves size bytes (a multiple of 256) on stream s. Small
// requests come from the small heap, which grows for them. A large one
// takes a free block of the large heap, else of the small heap (its
// initial chunk, typically), and only then grows the large heap. When the
// heap that should grow cannot, the other one's free memory is tried after
// a device synchronization (as a heap whose growth failed does), so that
// the pool fails only when neither could serve.
func (p *Pool) allocate(s Stream, size uintptr) (uintptr, error) {
	if size <= smallBlock {
		ptr, err := p.h.Allocate(s, size)
		if err == nil || !errors.Is(err, ErrOutOfMemory) {
			return ptr, err
		}
		if q, err2 := p.big.AllocateMode(s, size, heap.SyncNoGrow); err2 == nil {
			return q, nil
		}
		return 0, err
	}
	if p.h.FreeBytes() >= size {
		// The small heap's own free memory first (the initial chunk,
		// typically), where the stream's own lists hold it: a cheap look.
		if ptr, err := p.h.AllocateMode(s, size, heap.Local); err == nil || !errors.Is(err, ErrOutOfMemory) {
			return ptr, err
		}
	}
	ptr, err := p.big.AllocateMode(s, size, heap.NoGrow)
	if err == nil || !errors.Is(err, ErrOutOfMemory) {
		return ptr, err
	}
	if ptr, err = p.h.AllocateMode(s, size, heap.NoGrow); err == nil || !errors.Is(err, ErrOutOfMemory) {
		return ptr, err
	}
	ptr, err = p.big.Allocate(s, size)
	if err == nil || !errors.Is(err, ErrOutOfMemory) {
		return ptr, err
	}
	if q, err2 := p.h.AllocateMode(s, size, heap.SyncNoGrow); err2 == nil {
		return q, nil
	}
	// The small heap asked the caches for their blocks (NoGrow, above),
	// and it did not help: quiet them, as a heap whose growth failed does.
	p.caches.futile()
	return 0, err
}

// deallocate returns size bytes at ptr to the heap that holds them: the
// one its size says, else the other (a block one heap served for the
// other: see allocate). A pointer neither holds is ErrInvalidPointer.
func (p *Pool) deallocate(s Stream, ptr, size uintptr) error {
	first, second := &p.h, &p.big
	if size > smallBlock {
		first, second = second, first
	}
	err := first.Deallocate(s, ptr, size)
	if err != nil && errors.Is(err, ErrInvalidPointer) {
		if err2 := second.Deallocate(s, ptr, size); err2 == nil || !errors.Is(err2, ErrInvalidPointer) {
			return err2
		}
	}
	return err
}

// failed is the error of an allocation that failed with err: ErrClosed
// once closed, else err with its out-of-memory report (oom.go). Out of
// line, so that Allocate stays as small as it was.
//
//go:noinline
func (p *Pool) failed(stream Stream, bytes, alignment uintptr, err error) error {
	return explainOOM(p, stream, bytes, alignment, closedOr(&p.closed, kindPool, err))
}

// allocatePinned is Allocate on the per-thread default stream, which names
// the calling thread's stream: the goroutine stays on its thread for the
// call. (A function of its own, so that Allocate has no defer.)
func (p *Pool) allocatePinned(stream Stream, bytes, alignment, size uintptr) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ptr, err := p.allocate(stream, size)
	if err != nil {
		return 0, p.failed(stream, bytes, alignment, err)
	}
	return ptr, nil
}

// Deallocate returns memory to the pool, in stream order on stream: work
// enqueued on stream before the call may still use it, later work on
// stream may reuse it at once, other streams after waiting for stream.
// bytes must be what was passed to Allocate. A pointer the pool did not
// hand out, or one already deallocated, gives ErrInvalidPointer; a size
// that does not match the allocation's gives ErrInvalidArgument.
func (p *Pool) Deallocate(stream Stream, ptr, bytes, alignment uintptr) error {
	if fc := p.caches.claimer(); fc != nil && ptr != 0 && bytes != 0 {
		return claimedFree(p, fc, ptr, bytes, func(n uintptr) error { return p.deallocateUnclaimed(stream, ptr, n, alignment) })
	}
	return p.deallocateUnclaimed(stream, ptr, bytes, alignment)
}

// deallocateUnclaimed is Deallocate without the claim of a cache in front
// (DeallocateBatch: the cache's own give-back).
func (p *Pool) deallocateUnclaimed(stream Stream, ptr, bytes, alignment uintptr) error {
	if done, err := subFreeChecked(kindPool, p, ptr, bytes, alignment); done {
		return err
	}
	if p.closed.Load() {
		return errClosed(kindPool)
	}
	size := (bytes + DefaultAlignment - 1) &^ (DefaultAlignment - 1)
	if stream == cudart.PerThreadDefaultStream {
		return p.deallocatePinned(stream, ptr, size)
	}
	if err := p.deallocate(stream, ptr, size); err != nil {
		return closedOr(&p.closed, kindPool, err)
	}
	return nil
}

// deallocatePinned is Deallocate on the per-thread default stream (see
// allocatePinned).
func (p *Pool) deallocatePinned(stream Stream, ptr, size uintptr) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return closedOr(&p.closed, kindPool, p.deallocate(stream, ptr, size))
}

// AllocateSync allocates on the default stream and synchronizes it, so the
// memory is ready for any use, as RMM's pool does.
func (p *Pool) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	return allocateSync(p, p.rt, bytes, alignment)
}

// DeallocateSync deallocates on the default stream: the caller vouches that
// no work uses the memory any more.
func (p *Pool) DeallocateSync(ptr, bytes, alignment uintptr) error {
	return p.Deallocate(DefaultStream, ptr, bytes, alignment)
}

// allocateSync is AllocateSync for the stream-ordered sub-allocators.
func allocateSync(r Resource, rt cudart.Runtime, bytes, alignment uintptr) (uintptr, error) {
	ptr, err := r.Allocate(DefaultStream, bytes, alignment)
	if err != nil || ptr == 0 {
		return ptr, err
	}
	if err := rt.StreamSynchronize(DefaultStream); err != nil {
		_ = r.Deallocate(DefaultStream, ptr, bytes, alignment)
		return 0, cudaError(r.Kind()+": synchronizing the default stream", err)
	}
	return ptr, nil
}

// Properties reports the upstream's properties.
func (p *Pool) Properties() Properties { return p.upstream.Properties() }

// Equal reports whether other is this very pool.
func (p *Pool) Equal(other Resource) bool {
	o, ok := other.(*Pool)
	return ok && o == p
}

// Kind returns "pool".
func (p *Pool) Kind() string { return kindPool }

// Upstream returns the resource the pool takes its chunks from.
func (p *Pool) Upstream() Resource { return p.upstream }

// Device returns the device that was current when the pool was made.
func (p *Pool) Device() int { return p.dev }

// PoolSize returns the bytes the pool holds from its upstream.
func (p *Pool) PoolSize() uintptr { return p.h.Size() + p.big.Size() }

// PeakPoolSize returns the most bytes the pool held from its upstream at
// once: what it cost at its peak, which PoolSize no longer shows once the
// pool gave chunks back.
func (p *Pool) PeakPoolSize() uintptr { return p.peak.Load() }

// UsedBytes returns the bytes handed out and not yet deallocated (each
// rounded up to 256), as the users of the pool count them: blocks a cache
// in front of the pool holds for its users (the C ABI's thread caches) are
// not in use, and a block it handed out counts with the size its user
// asked for. The C ABI's rmm_pool_used_bytes and Python's used_bytes report
// this number. While other goroutines allocate it is a snapshot.
func (p *Pool) UsedBytes() uintptr {
	size, free := p.PoolSize(), p.h.FreeBytes()+p.big.FreeBytes()
	held := p.caches.held() + p.h.RoundingBytes()
	if free+held > size {
		return 0
	}
	return size - free - held
}

// Release returns to the upstream every chunk that is wholly free. It
// synchronizes the device first (memory freed in stream order may still be
// in use by queued work).
func (p *Pool) Release() error {
	if p.closed.Load() {
		return errClosed(kindPool)
	}
	return p.giveBack(append(p.h.ReleaseChunks(false), p.big.ReleaseChunks(false)...))
}

// giveBack synchronizes the device and returns chunks to the upstream.
func (p *Pool) giveBack(cs []heap.Span) error {
	if len(cs) == 0 {
		return nil
	}
	var errs []error
	if err := p.rt.DeviceSynchronize(); err != nil {
		errs = append(errs, cudaError(kindPool+": synchronizing before returning memory upstream", err))
	}
	for _, c := range cs {
		lendChunk(p.upstream, c.Base, false)
		if err := p.upstream.Deallocate(DefaultStream, c.Base, c.Size, DefaultAlignment); err != nil {
			lendChunk(p.upstream, c.Base, true)
			errs = append(errs, fmt.Errorf("%s: returning %d bytes at %#x upstream: %w", kindPool, c.Size, c.Base, err))
			continue
		}
		p.held(-int(c.Size))
	}
	return errors.Join(errs...)
}

// Close returns every chunk to the upstream (allocations still live
// included) and releases the pool's events. Later calls fail with
// ErrClosed; closing again does nothing. Calls racing Close finish, or fail
// with ErrClosed; the pool never grows once closed, so nothing they do
// keeps memory from the upstream.
func (p *Pool) Close() error {
	p.closeMu.Lock()
	defer p.closeMu.Unlock()
	if p.closed.Swap(true) {
		return nil
	}
	err := p.giveBack(append(p.h.ReleaseChunks(true), p.big.ReleaseChunks(true)...))
	return errors.Join(err, p.h.Close(), p.big.Close())
}

func errClosed(kind string) error { return fmt.Errorf("%s: %w", kind, ErrClosed) }

// closedOr is the error of a sub-allocator's call that failed with err:
// once the resource is closed, ErrClosed whatever err was. A call racing
// Close finds the memory given back and the lists emptied under it, and
// fails for that reason only (its caller sees the close, not an invalid
// pointer or an out-of-memory). Memory it took before failing went back
// with the rest: Close gives back every chunk, and the heaps never grow
// once closed.
func closedOr(closed *atomic.Bool, kind string, err error) error {
	if err != nil && closed.Load() {
		return errClosed(kind)
	}
	return err
}

// The pool as a Cacheable resource (cache.go).

// CacheLimits: requests up to cachepolicy.MaxBlock, the budget following
// the pool's size, and its free memory.
func (p *Pool) CacheLimits() fastpath.CacheLimits {
	return p.caches.limits(cachepolicy.MaxBlock, 0, p.PoolSize(), p.h.FreeBytes())
}

// AllocateBatch allocates the first block as Allocate does, the others
// from the free memory of the stream's list in the caller's shard.
func (p *Pool) AllocateBatch(s Stream, size uintptr, out []uintptr) (int, error) {
	return heapAllocateBatch(p, &p.h, s, size, out)
}

// DeallocateBatch deallocates each block.
func (p *Pool) DeallocateBatch(s Stream, size uintptr, ptrs []uintptr) error {
	return deallocateBatch(p.deallocateUnclaimed, s, size, ptrs)
}

// CheckFree: the pool takes a block back with the size it was allocated
// with, both rounded up to 256.
func (p *Pool) CheckFree(ptr, bytes, allocated uintptr) error {
	return checkSameSize(kindPool, ptr, bytes, allocated)
}

// AttachCache attaches c (see Cacheable).
func (p *Pool) AttachCache(c fastpath.BlockCache) func() { return p.caches.attach(c) }
