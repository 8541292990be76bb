package core

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/core/internal/asyncpath"
)

// Chunks that sub-allocators hold.
//
// A sub-allocator (pool, arena, fixed_size) takes chunks from its upstream
// like any caller, so the upstream sees a chunk as one of its allocations:
// a block that fills its chunk starts where the chunk does, and freeing it
// through the upstream with the chunk's size gave the chunk back while the
// sub-allocator still held it (the upstream then handed the same memory
// out again). Every chunk a sub-allocator holds is registered here from
// the moment it is taken until just before it is given back
// (takeChunk/giveChunk), and a free of its address is refused by every
// resource but its holder:
//
//   - base resources: the chunk's record leaves the base tables while it is
//     held (live_table.go), so their free refuses it as not recorded (the
//     C path of the cuda_async kinds included, without a check of its
//     own); the message names the holder;
//   - sub-allocators (a pool over a pool: the outer pool's chunk is a block
//     of the inner one), the aligned and callback resources: heldByOther,
//     a filter of one atomic load for addresses that start no chunk. A
//     free through a resource is refused when a holder took the chunk from
//     that resource, or from one above it (an adaptor over it); a chunk
//     held below it (the pool under an adaptor, whose first block starts
//     its chunk) is no reason.
//
// An address can start chunks of several holders at once (a pool over a
// pool: the inner pool's chunk, and the outer pool's chunk carved from its
// first block).

type heldChunk struct {
	holder Resource
	up     Resource // where the holder took it from
	size   uintptr
	// The base record the chunk's address had when it was taken, taken
	// out of its table while the chunk is held (at most one).
	table  *liveTable
	live   liveEntry
	async  bool
	aentry asyncpath.Entry
}

var held struct {
	mu sync.Mutex
	m  map[uintptr][]heldChunk // by address; the last is the innermost holder
	// filter counts the chunks held per hash of their address: 0, and the
	// address starts no chunk (one load, no lock).
	filter [1024]atomic.Int32
	// hidden counts the base records taken out (for BaseAllocations).
	hiddenN     int
	hiddenBytes uint64
}

func heldSlot(ptr uintptr) *atomic.Int32 {
	return &held.filter[(uint64(ptr>>8)*0x9E3779B97F4A7C15)>>54]
}

// takeChunk allocates a chunk of size bytes for holder from up on s and
// registers it.
func takeChunk(holder, up Resource, s Stream, size uintptr) (uintptr, error) {
	p, err := up.Allocate(s, size, DefaultAlignment)
	if err != nil {
		return 0, err
	}
	holdChunk(holder, up, p, size)
	return p, nil
}

// giveChunk unregisters holder's chunk and gives it back to up.
func giveChunk(holder, up Resource, ptr, size uintptr) error {
	letChunkGo(holder, ptr)
	return up.Deallocate(DefaultStream, ptr, size, DefaultAlignment)
}

// holdChunk registers [ptr, ptr+size) as a chunk holder holds, and takes
// its record out of the base table that has one.
func holdChunk(holder, up Resource, ptr, size uintptr) {
	c := heldChunk{holder: holder, up: up, size: size}
	for _, t := range []*liveTable{&cudaLive, &managedLive, &pinnedHostLive, &systemLive, &samLive} {
		if e, ok := t.takeAny(ptr); ok {
			c.table, c.live = t, e
			break
		}
	}
	if c.table == nil {
		// The pool-based kinds' records live in C: a take with a pool of 0
		// reports the record's pool (Foreign) without taking it.
		if e, r := asyncpath.Take(ptr, 0, 0); r == asyncpath.Foreign || r == asyncpath.SizeMismatch {
			if e2, r2 := asyncpath.Take(ptr, e.Size, e.Pool); r2 == asyncpath.OK {
				c.async, c.aentry = true, e2
			}
		}
	}
	held.mu.Lock()
	if held.m == nil {
		held.m = make(map[uintptr][]heldChunk)
	}
	held.m[ptr] = append(held.m[ptr], c)
	if c.table != nil || c.async {
		held.hiddenN++
		held.hiddenBytes += uint64(c.recordSize())
	}
	held.mu.Unlock()
	heldSlot(ptr).Add(1)
}

func (c *heldChunk) recordSize() uintptr {
	if c.async {
		return c.aentry.Size
	}
	return c.live.size
}

// letChunkGo unregisters holder's chunk at ptr (before it goes back to the
// upstream) and puts its base record back.
func letChunkGo(holder Resource, ptr uintptr) {
	held.mu.Lock()
	cs := held.m[ptr]
	var c heldChunk
	found := false
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].holder == holder {
			c, found = cs[i], true
			cs = append(cs[:i:i], cs[i+1:]...)
			break
		}
	}
	if !found {
		held.mu.Unlock()
		return
	}
	if len(cs) == 0 {
		delete(held.m, ptr)
	} else {
		held.m[ptr] = cs
	}
	if c.table != nil || c.async {
		held.hiddenN--
		held.hiddenBytes -= uint64(c.recordSize())
	}
	held.mu.Unlock()
	heldSlot(ptr).Add(-1)
	switch {
	case c.table != nil:
		c.table.restore(ptr, c.live)
	case c.async:
		asyncpath.Restore(ptr, c.aentry)
	}
}

// chunkHolder returns the innermost holder of a chunk starting at ptr, or
// nil.
func chunkHolder(ptr uintptr) Resource {
	if heldSlot(ptr).Load() == 0 {
		return nil
	}
	held.mu.Lock()
	defer held.mu.Unlock()
	if cs := held.m[ptr]; len(cs) > 0 {
		return cs[len(cs)-1].holder
	}
	return nil
}

// heldByOther returns an error wrapping ErrInvalidPointer when ptr starts
// a chunk that another resource took from self, or from a resource above
// self: a free of it through self would give that resource's memory away.
// One atomic load when ptr starts no chunk.
func heldByOther(kind string, self Resource, ptr uintptr) error {
	if heldSlot(ptr).Load() == 0 {
		return nil
	}
	held.mu.Lock()
	defer held.mu.Unlock()
	for _, c := range held.m[ptr] {
		if c.holder != self && allocatesFrom(c.up, self, 0) {
			return errHeldChunk(kind, ptr, c.holder)
		}
	}
	return nil
}

// allocatesFrom reports whether r is from, or one of the resources from
// allocates from (its upstreams, a binning resource's bins).
func allocatesFrom(from, r Resource, depth int) bool {
	if from == nil || depth > 64 {
		return false
	}
	if from == r {
		return true
	}
	if b, ok := from.(*Binning); ok {
		if t := b.bins.Load(); t != nil {
			for _, bn := range t.bins {
				if allocatesFrom(bn.r, r, depth+1) {
					return true
				}
			}
		}
	}
	if u, ok := from.(interface{ Upstream() Resource }); ok {
		return allocatesFrom(u.Upstream(), r, depth+1)
	}
	return false
}

func errHeldChunk(kind string, ptr uintptr, holder Resource) error {
	return fmt.Errorf("%s: %w: %#x starts a chunk that a live %s resource holds (free its blocks through it; the chunk goes back when it releases or closes)",
		kind, ErrInvalidPointer, ptr, holder.Kind())
}

// heldHidden counts the base records held chunks took out of their tables.
func heldHidden() (count int, bytes uint64) {
	held.mu.Lock()
	defer held.mu.Unlock()
	return held.hiddenN, held.hiddenBytes
}
