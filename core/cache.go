package core

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmmgo/rmmgo/core/internal/cachepolicy"
	"github.com/rmmgo/rmmgo/core/internal/heap"
	"github.com/rmmgo/rmmgo/core/internal/streamorder"
	"github.com/rmmgo/rmmgo/cudart"
	"github.com/rmmgo/rmmgo/internal/cacheclock"
)

// Caches in front of the sub-allocators.
//
// The C ABI serves rmm_allocate and rmm_deallocate for Pool, Arena,
// FixedSize, Binning and Expandable handles from per-thread caches of free blocks,
// written in C (docs/thread-cache.md). This file is what such a cache needs
// from a resource, and what the resource needs from the cache. Go programs
// that use core directly never need any of it.

// Cacheable is a resource whose blocks a cache in front of it may keep:
// Pool, Arena, FixedSize, Binning and Expandable implement it. The cache takes blocks
// of its size classes with AllocateBatch, hands them to its users and takes
// them back without telling the resource, and returns them with
// DeallocateBatch. While it holds blocks it stays attached (AttachCache),
// so that the resource can ask for them back and count them as not in use.
type Cacheable interface {
	Resource
	// CacheLimits says which requests a cache may serve from the
	// resource's blocks and how much it may hold now (it follows the
	// resource's size).
	CacheLimits() CacheLimits
	// AllocateBatch allocates blocks of size bytes on s into out: the first
	// as Allocate would (growing the resource, or failing, as needed), the
	// others only from memory the resource has at hand for s. It returns
	// how many it allocated (at least one, or an error).
	AllocateBatch(s Stream, size uintptr, out []uintptr) (int, error)
	// DeallocateBatch frees blocks of size bytes that AllocateBatch
	// allocated, on s.
	DeallocateBatch(s Stream, size uintptr, ptrs []uintptr) error
	// CheckFree returns the error Deallocate would give for a free of ptr
	// with bytes, had the user allocated it with allocated bytes (a cache
	// allocated it with its class's size, so the resource cannot check
	// that itself); nil when Deallocate would accept it.
	CheckFree(ptr, bytes, allocated uintptr) error
	// AttachCache attaches c to the resource until the returned function
	// is called: the resource asks c for its blocks before it grows and
	// before it fails for want of memory, and does not count the bytes c
	// holds as in use (Pool.UsedBytes).
	AttachCache(c BlockCache) (detach func())
}

// CacheLimits is what a cache in front of a Cacheable resource may do.
// MaxRequest == 0: nothing.
type CacheLimits struct {
	// MaxRequest is the largest request the cache may serve from the
	// resource's blocks, whose size it rounds up to its size class.
	MaxRequest uintptr
	// BlockSize, when not 0, is the size of every block: each request up
	// to MaxRequest gets one (a fixed-size resource).
	BlockSize uintptr
	// BlockSizes, ascending, are the sizes of the blocks the resource hands
	// out for requests up to the last (a binning resource's bins): a cache
	// may keep every request a size serves as blocks of that size.
	BlockSizes []uintptr
	// Budget is the most bytes the caches in front of the resource may
	// hold together (blocks allocated from it and held by no user), in
	// all threads: cachepolicy.ThreadCachesLone of the bytes it holds.
	// Caches hold more than Shared together only while one holds part of
	// the budget alone (a thread's cache for one stream), when no other
	// has for LoneAfter (or ever): one thread working alone keeps more
	// than many threads.
	Budget uintptr
	// Shared is what all caches together keep when several hold part of
	// the budget: cachepolicy.ThreadCaches of the bytes the resource holds.
	Shared    uintptr
	LoneAfter time.Duration
	// Quantum is the unit in which one thread's cache reserves part of
	// the budget and gives it back.
	Quantum uintptr
	// A refill takes at most BatchBlocks blocks and BatchBytes bytes, or
	// BatchMinBlocks blocks of a class too large for that.
	BatchBlocks    int
	BatchBytes     uintptr
	BatchMinBlocks int
	// ExitedWait is how long the blocks a thread left when it exited
	// wait for another thread to take them over before they go back.
	ExitedWait time.Duration
}

// cacheLimits returns the limits of a resource holding held bytes whose
// caches may serve requests up to maxRequest (0: none), with blocks of
// block bytes each when block is not 0.
func cacheLimits(maxRequest, block, held uintptr) CacheLimits {
	return cacheLimitsFree(maxRequest, block, held, 0, false, 0)
}

// limits is cacheLimits for a resource whose caches are cs and that has
// free bytes of what it holds idle (not counting what the caches hold):
// cachepolicy.CacheBudget decides what they may keep of it.
func (cs *caches) limits(maxRequest, block, held, free uintptr) CacheLimits {
	t := cs.pressed.Load()
	return cacheLimitsFree(maxRequest, block, held, free, t != 0, time.Duration(cacheclock.Now()-t))
}

func cacheLimitsFree(maxRequest, block, held, free uintptr, pressed bool, sincePressed time.Duration) CacheLimits {
	if maxRequest > cachepolicy.MaxBlock {
		maxRequest = cachepolicy.MaxBlock
	}
	budget, shared := cachepolicy.CacheBudget(held, free, pressed, sincePressed)
	return CacheLimits{
		MaxRequest:     maxRequest,
		BlockSize:      block,
		Budget:         budget,
		Shared:         shared,
		Quantum:        cachepolicy.Quantum,
		BatchBlocks:    cachepolicy.BatchBlocks,
		BatchBytes:     cachepolicy.BatchBytes,
		BatchMinBlocks: cachepolicy.BatchMinBlocks,
		ExitedWait:     cachepolicy.ExitedWait,
		LoneAfter:      cachepolicy.LoneAfter,
	}
}

// BlockCache is a cache attached to a Cacheable resource.
type BlockCache interface {
	// Reclaim gives back to the resource (DeallocateBatch) every block the
	// cache holds for it, need being the size of the request that lacks
	// memory; it reports whether it gave anything back. The resource calls
	// it without holding any lock.
	Reclaim(need uintptr) bool
	// HeldBytes returns the bytes of the resource's blocks that the cache
	// holds and no user does: blocks it keeps, and the part of the blocks
	// it handed out that the users did not ask for (the rounding of a
	// request up to its size class).
	HeldBytes() uintptr
}

// FreeClaimer is a BlockCache that hands the resource's blocks to users
// itself (the C ABI's per-thread cache): a user may free such a block
// through a path that reaches the resource's Deallocate instead (an
// adaptor over the resource, Go code), and the cache must then forget it,
// or it would take a second free of the block and hand it out twice.
type FreeClaimer interface {
	// ClaimFree is asked by r's Deallocate before it frees ptr for a user
	// who gives bytes. ok is false when the cache did not hand ptr out
	// (r frees it, or refuses it, as usual). Otherwise the cache has
	// forgotten ptr and returns the size r allocated the block with (its
	// class: r frees that), and undo, which remembers ptr again when r then
	// refuses the free; or err when the free must be refused (the cache
	// holds the block: a second free; a size r does not take for it).
	ClaimFree(r Cacheable, ptr, bytes uintptr) (size uintptr, undo func(), ok bool, err error)
}

// SizedBlockCache is a BlockCache that can also give back only the blocks
// of some sizes: ReclaimSizes gives back those of a size in (lo, hi] (as
// the cache keeps them, rounded up to its size classes) and reports
// whether it gave anything back. A binning resource's bin asks only for
// the sizes it serves.
type SizedBlockCache interface {
	BlockCache
	ReclaimSizes(lo, hi uintptr) bool
}

// StreamKey returns the key by which core's stream-ordered resources know
// stream s: 0 for the legacy default stream (0 and cudaStreamLegacy), else
// StreamKeyOfID of its CUDA stream id, never its handle, which CUDA may
// give to a new stream once s is destroyed. A cache in front of core's
// resources keys its blocks the same way.
func StreamKey(s Stream) (uint64, error) {
	if s == DefaultStream || s == cudart.LegacyDefaultStream {
		return 0, nil
	}
	r, err := rt()
	if err != nil {
		return 0, err
	}
	id, err := r.StreamGetID(s)
	if err != nil {
		return 0, cudaError("reading the stream's id", err)
	}
	return StreamKeyOfID(id), nil
}

// StreamKeyOfID returns the key of the stream whose CUDA stream id is id
// (any stream but the legacy default stream).
func StreamKeyOfID(id uint64) uint64 { return streamorder.KeyOfID(id) }

// caches is the set of caches attached to a resource, and the rule for
// asking them for memory. Embedded by the Cacheable resources.
type caches struct {
	mu   sync.Mutex
	list atomic.Pointer[[]BlockCache]
	// quietUntil: no reclaims for failing allocations until then (in
	// nanoseconds of cacheclock), after one that did not help.
	quietUntil atomic.Int64
	// pressed: when the resource last asked its caches for memory (in
	// nanoseconds of cacheclock, at least 1), 0 never.
	pressed atomic.Int64
}

// attach adds c and returns the function that removes it.
func (cs *caches) attach(c BlockCache) func() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var l []BlockCache
	if old := cs.list.Load(); old != nil {
		l = append(l, *old...)
	}
	l = append(l, c)
	cs.list.Store(&l)
	var once sync.Once
	return func() { once.Do(func() { cs.detach(c) }) }
}

func (cs *caches) detach(c BlockCache) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	old := cs.list.Load()
	if old == nil {
		return
	}
	var l []BlockCache
	for _, x := range *old {
		if x != c {
			l = append(l, x)
		}
	}
	cs.list.Store(&l)
}

// reclaim asks every attached cache for its blocks, for a request of need
// bytes the resource cannot serve; true when one gave something back.
// Within cachepolicy.ReclaimQuiet of a reclaim that did not save an
// allocation (see futile) it does nothing.
func (cs *caches) reclaim(need uintptr) bool {
	cs.pressed.Store(max(1, cacheclock.Now()))
	l := cs.list.Load()
	if l == nil || len(*l) == 0 || cacheclock.Now() < cs.quietUntil.Load() {
		return false
	}
	gave := false
	for _, c := range *l {
		if c.Reclaim(need) {
			gave = true
		}
	}
	return gave
}

// claimer returns the first attached cache that hands blocks out itself,
// or nil (no cache attached: one atomic load).
func (cs *caches) claimer() FreeClaimer {
	l := cs.list.Load()
	if l == nil {
		return nil
	}
	for _, c := range *l {
		if fc, ok := c.(FreeClaimer); ok {
			return fc
		}
	}
	return nil
}

// claimedFree is a user's free of ptr with bytes through r, whose caches
// include fc: fc forgets the block first if it handed it out (and r frees
// it with the size it allocated it with), and remembers it again if r
// refuses. free is r's own free, without the claim.
func claimedFree(r Cacheable, fc FreeClaimer, ptr, bytes uintptr, free func(bytes uintptr) error) error {
	size, undo, ok, err := fc.ClaimFree(r, ptr, bytes)
	if err != nil {
		return err
	}
	if !ok {
		return free(bytes)
	}
	if err := free(size); err != nil {
		undo()
		return err
	}
	return nil
}

// futile notes that an allocation failed for want of memory although the
// caches were asked for theirs during it.
func (cs *caches) futile() {
	cs.quietUntil.Store(cacheclock.Now() + int64(cachepolicy.ReclaimQuiet))
}

// held sums what the attached caches hold.
func (cs *caches) held() uintptr {
	var n uintptr
	if l := cs.list.Load(); l != nil {
		for _, c := range *l {
			n += c.HeldBytes()
		}
	}
	return n
}

// deallocateBatch is DeallocateBatch for a resource whose free (without
// the claim of a user's free, claimedFree: the cache gives back blocks it
// already forgot) is free: every block freed, the first error returned.
func deallocateBatch(free func(s Stream, ptr, bytes, alignment uintptr) error, s Stream, size uintptr, ptrs []uintptr) error {
	var first error
	for _, p := range ptrs {
		if err := free(s, p, size, DefaultAlignment); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// heapAllocateBatch is AllocateBatch for a resource over a heap (the pool,
// the expandable resource): the first block as r.Allocate gives it, the
// others from the free memory of the stream's list in the caller's shard
// (never by growing).
func heapAllocateBatch(r Resource, h *heap.Heap, s Stream, size uintptr, out []uintptr) (int, error) {
	if len(out) == 0 {
		return 0, nil
	}
	first, err := r.Allocate(s, size, DefaultAlignment)
	if err != nil {
		return 0, err
	}
	out[0] = first
	if len(out) == 1 {
		return 1, nil
	}
	size = (size + DefaultAlignment - 1) &^ (DefaultAlignment - 1)
	if s == cudart.PerThreadDefaultStream {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	return 1 + h.AllocateMore(s, size, out[1:]), nil
}

// checkSameSize is CheckFree for a resource that takes a block back with
// the size it was allocated with, both rounded up to 256.
func checkSameSize(kind string, ptr, bytes, allocated uintptr) error {
	b, a := (bytes+DefaultAlignment-1)&^(DefaultAlignment-1), (allocated+DefaultAlignment-1)&^(DefaultAlignment-1)
	if b != a {
		return fmt.Errorf("%s: %w: deallocating %#x with size %d, but it was allocated with size %d (rounded to 256)",
			kind, ErrInvalidArgument, ptr, b, a)
	}
	return nil
}

var (
	_ Cacheable = (*Pool)(nil)
	_ Cacheable = (*Arena)(nil)
	_ Cacheable = (*FixedSize)(nil)
	_ Cacheable = (*Binning)(nil)
	_ Cacheable = (*Expandable)(nil)
)
