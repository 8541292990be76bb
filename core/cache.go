package core

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmmgo/rmmgo/core/internal/cachepolicy"
	"github.com/rmmgo/rmmgo/core/internal/heap"
	"github.com/rmmgo/rmmgo/cudart"
	"github.com/rmmgo/rmmgo/internal/cacheclock"
	"github.com/rmmgo/rmmgo/internal/fastpath"
)

// Caches in front of the sub-allocators.
//
// The C ABI serves rmm_allocate and rmm_deallocate for Pool, Arena,
// FixedSize, Binning and Expandable handles from per-thread caches of free
// blocks, written in C (docs/thread-cache.md). What such a cache needs from
// a resource, and the resource from the cache, is internal/fastpath's
// contract (Cacheable, CacheLimits, BlockCache, FreeClaimer,
// SizedBlockCache): Go programs that use core directly never need it. This
// file is the resources' side of it: their limits, and the caches attached
// to them.

type (
	cacheable       = fastpath.Cacheable
	freeClaimer     = fastpath.FreeClaimer
	sizedBlockCache = fastpath.SizedBlockCache
)

// cacheLimits returns the limits of a resource holding held bytes whose
// caches may serve requests up to maxRequest (0: none), with blocks of
// block bytes each when block is not 0.
func cacheLimits(maxRequest, block, held uintptr) fastpath.CacheLimits {
	return cacheLimitsFree(maxRequest, block, held, 0, false, 0)
}

// limits is cacheLimits for a resource whose caches are cs and that has
// free bytes of what it holds idle (not counting what the caches hold):
// cachepolicy.CacheBudget decides what they may keep of it.
func (cs *caches) limits(maxRequest, block, held, free uintptr) fastpath.CacheLimits {
	t := cs.pressed.Load()
	return cacheLimitsFree(maxRequest, block, held, free, t != 0, time.Duration(cacheclock.Now()-t))
}

func cacheLimitsFree(maxRequest, block, held, free uintptr, pressed bool, sincePressed time.Duration) fastpath.CacheLimits {
	if maxRequest > cachepolicy.MaxBlock {
		maxRequest = cachepolicy.MaxBlock
	}
	budget, shared := cachepolicy.CacheBudget(held, free, pressed, sincePressed)
	return fastpath.CacheLimits{
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

// caches is the set of caches attached to a resource, and the rule for
// asking them for memory. Embedded by the Cacheable resources.
type caches struct {
	mu   sync.Mutex
	list atomic.Pointer[[]fastpath.BlockCache]
	// quietUntil: no reclaims for failing allocations until then (in
	// nanoseconds of cacheclock), after one that did not help.
	quietUntil atomic.Int64
	// pressed: when the resource last asked its caches for memory (in
	// nanoseconds of cacheclock, at least 1), 0 never.
	pressed atomic.Int64
}

// attach adds c and returns the function that removes it.
func (cs *caches) attach(c fastpath.BlockCache) func() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var l []fastpath.BlockCache
	if old := cs.list.Load(); old != nil {
		l = append(l, *old...)
	}
	l = append(l, c)
	cs.list.Store(&l)
	var once sync.Once
	return func() { once.Do(func() { cs.detach(c) }) }
}

func (cs *caches) detach(c fastpath.BlockCache) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	old := cs.list.Load()
	if old == nil {
		return
	}
	var l []fastpath.BlockCache
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
func (cs *caches) claimer() freeClaimer {
	l := cs.list.Load()
	if l == nil {
		return nil
	}
	for _, c := range *l {
		if fc, ok := c.(freeClaimer); ok {
			return fc
		}
	}
	return nil
}

// claimedFree is a user's free of ptr with bytes through r, whose caches
// include fc: fc forgets the block first if it handed it out (and r frees
// it with the size it allocated it with), and remembers it again if r
// refuses. free is r's own free, without the claim.
func claimedFree(r cacheable, fc freeClaimer, ptr, bytes uintptr, free func(bytes uintptr) error) error {
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
	_ cacheable = (*Pool)(nil)
	_ cacheable = (*Arena)(nil)
	_ cacheable = (*FixedSize)(nil)
	_ cacheable = (*Binning)(nil)
	_ cacheable = (*Expandable)(nil)
)
