// Package fastpath is the contract between core's resources and the C
// ABI's fast paths (capi): what a per-thread cache in front of a resource
// needs from it (Cacheable, CacheLimits) and the resource from the cache
// (BlockCache, FreeClaimer, SizedBlockCache), and the C state with which C
// serves the pool-based kinds without entering Go (CPath). Go programs that
// use core directly need none of it, so it is not core's API: core and
// capi both import it from here.
package fastpath

import (
	"time"

	"github.com/rmmgo/rmmgo/cudart"
)

// Cacheable is a resource whose blocks a cache in front of it may keep:
// core's Pool, Arena, FixedSize, Binning and Expandable implement it. The cache takes blocks
// of its size classes with AllocateBatch, hands them to its users and takes
// them back without telling the resource, and returns them with
// DeallocateBatch. While it holds blocks it stays attached (AttachCache),
// so that the resource can ask for them back and count them as not in use.
type Cacheable interface {
	// Kind is the resource's kind name (core.Resource's Kind), for
	// messages.
	Kind() string
	// CacheLimits says which requests a cache may serve from the
	// resource's blocks and how much it may hold now (it follows the
	// resource's size).
	CacheLimits() CacheLimits
	// AllocateBatch allocates blocks of size bytes on s into out: the first
	// as Allocate would (growing the resource, or failing, as needed), the
	// others only from memory the resource has at hand for s. It returns
	// how many it allocated (at least one, or an error).
	AllocateBatch(s cudart.Stream, size uintptr, out []uintptr) (int, error)
	// DeallocateBatch frees blocks of size bytes that AllocateBatch
	// allocated, on s.
	DeallocateBatch(s cudart.Stream, size uintptr, ptrs []uintptr) error
	// CheckFree returns the error Deallocate would give for a free of ptr
	// with bytes, had the user allocated it with allocated bytes (a cache
	// allocated it with its class's size, so the resource cannot check
	// that itself); nil when Deallocate would accept it.
	CheckFree(ptr, bytes, allocated uintptr) error
	// AttachCache attaches c to the resource until the returned function
	// is called: the resource asks c for its blocks before it grows and
	// before it fails for want of memory, and does not count the bytes c
	// holds as in use (core.Pool.UsedBytes).
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
	// all threads (core/internal/cachepolicy.CacheBudget decides it).
	// Caches hold more than Shared together only while one holds part of
	// the budget alone (a thread's cache for one stream), when no other
	// has for LoneAfter (or ever): one thread working alone keeps more
	// than many threads.
	Budget uintptr
	// Shared is what all caches together keep when several hold part of
	// the budget (CacheBudget's shared part: a thirty-second of what the
	// resource holds, or more of its idle memory while it has some to
	// spare).
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

// CPath is a resource's C state, for C code that serves its Allocate and
// Deallocate without entering Go: the C ABI calls Allocate and Deallocate
// with State and Gen. A call with a Gen that is no longer the state's (the
// resource was closed, or collected) is refused, and the caller takes the
// Go path.
//
// Allocate and Deallocate are the addresses of C functions: int
// allocate(uintptr_t state, uint64_t gen, size_t bytes, uintptr_t stream,
// uintptr_t* out) and int deallocate(uintptr_t state, uint64_t gen,
// uintptr_t stream, uintptr_t ptr, size_t bytes). They return 0 when they
// succeeded; any other value means the call did nothing and must be made
// through the resource's Go methods, which report why. The caller checks
// the request first (bytes not 0 and at most 2^57, alignment a power of
// two up to 256) and the stream (not one it retired).
type CPath struct {
	State                uintptr // the C state (core/internal/asyncpath's rmmgo_ap_res)
	Gen                  uint64  // its generation for this resource
	Allocate, Deallocate uintptr
}

// CPathResource is implemented by the resources that have a CPath: core's
// pool-based kinds (cuda_async, cuda_async_managed, cuda_async_view).
type CPathResource interface {
	CPath() CPath
}
