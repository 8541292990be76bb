package core

import (
	"fmt"
	"sync"

	"github.com/rmmgo/rmmgo/core/internal/addr"
	"github.com/rmmgo/rmmgo/core/internal/asyncpath"
	"github.com/rmmgo/rmmgo/cudart"
)

// Checked frees for the base resources.
//
// A base resource's allocation costs a CUDA call (or a C heap call), which
// takes microseconds; recording the allocation beside it costs a hash, an
// uncontended lock and a map update, a few tens of nanoseconds. So every
// base resource records what it hands out, with the size asked for, and its
// Deallocate gives the memory back only when the record matches:
//
//   - a pointer it never handed out (memory of another kind of resource, a
//     block of a pool built over it, an interior pointer, a pointer already
//     freed) is an error wrapping ErrInvalidPointer and reaches no CUDA or C
//     free;
//   - a pointer it handed out, freed with another size than was allocated, is
//     an error wrapping ErrInvalidArgument, and the memory stays allocated
//     (free it again with the right size).
//
// Which instances share a record follows Resource.Equal: memory allocated by
// one resource may be freed by every resource equal to it. Stateless kinds
// (cuda, managed, pinned_host, system) equal every instance of their type,
// so each kind has one table for the process and any instance of the kind
// frees memory any other handed out (on any device, as cudaFree does).
// sam_headroom instances equal one another when they keep the same headroom:
// the record carries the headroom. The pool-based kinds (cuda_async,
// cuda_async_managed, cuda_async_view) equal one another when they allocate
// from the same CUDA memory pool: they share one table whose records carry
// the pool handle, so a view frees what its pool's owner handed out (and the
// owner what the view handed out), and nothing from another pool. That
// table lives in C (core/internal/asyncpath), where the C ABI's allocation
// and free of those kinds reach it without entering Go; asyncLive is its Go
// face, and both paths keep the one record of every block.
//
// Memory that bypassed the resources (cudaMalloc called directly, memory
// another library took from a pool a view wraps) is not recorded and is
// refused: free it the way it was allocated.

// liveShards is the number of independently locked parts of a table: enough
// that goroutines freeing different pointers rarely meet on one lock.
const liveShards = 64

// liveTable records the allocations of one kind of base resource: pointer to
// size and owner.
type liveTable struct {
	shards [liveShards]liveShard
}

// liveShard is one locked part of a table, padded so that two shards never
// share a cache line.
type liveShard struct {
	mu sync.Mutex
	m  map[uintptr]liveEntry
	_  [64 - 16]byte
}

// liveEntry is what a table knows of one allocation.
type liveEntry struct {
	size  uintptr // the bytes asked for
	owner uintptr // which equal instances may free it; see the kinds' tables
	// lent: a sub-allocator (pool, arena, fixed_size) holds it as a chunk
	// (lendChunk): only the sub-allocator's own give-back frees it.
	lent bool
}

// The tables, one per group of equal resources. owner is 0 in the stateless
// kinds' tables and the headroom in samLive. The pool-based kinds' table is
// asyncLive, below.
var (
	cudaLive, managedLive, pinnedHostLive, systemLive, samLive liveTable
)

// shard returns the shard that holds ptr. Base allocations are 256-byte
// aligned, so the low bits carry nothing; a multiplicative hash spreads the
// rest.
func (t *liveTable) shard(ptr uintptr) *liveShard {
	h := uint64(ptr>>8) * 0x9E3779B97F4A7C15
	return &t.shards[h>>(64-6)]
}

// add records that ptr (not 0) was handed out with size bytes for owner. An
// earlier record of ptr is replaced: the memory was just handed out, so that
// record is stale (its memory was freed some way that bypassed the table,
// e.g. by a runtime that was torn down).
func (t *liveTable) add(ptr, size, owner uintptr) {
	t.addEntry(ptr, liveEntry{size: size, owner: owner})
}

// addEntry records e for ptr (not 0), as add does.
func (t *liveTable) addEntry(ptr uintptr, e liveEntry) {
	s := t.shard(ptr)
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[uintptr]liveEntry)
	}
	s.m[ptr] = e
	s.mu.Unlock()
}

// take removes the record of ptr when it says ptr was handed out with size
// bytes for owner, and returns it; the caller frees the memory and, if that
// fails, puts the record back with restore. Removing first means two
// goroutines freeing the same pointer cannot both reach the free. A pointer
// that is not recorded, or recorded for another owner, is an error wrapping
// ErrInvalidPointer; a size that does not match is an error wrapping
// ErrInvalidArgument, and the record stays.
func (t *liveTable) take(kind string, ptr, size, owner uintptr) (liveEntry, error) {
	s := t.shard(ptr)
	s.mu.Lock()
	e, ok := s.m[ptr]
	if ok && e.lent {
		s.mu.Unlock()
		return liveEntry{}, errLent(kind, ptr)
	}
	if ok && e.owner == owner && e.size == size {
		delete(s.m, ptr)
		s.mu.Unlock()
		return e, nil
	}
	s.mu.Unlock()
	switch {
	case !ok:
		return liveEntry{}, errNotRecorded(kind, ptr)
	case e.owner != owner:
		return liveEntry{}, errOtherOwner(kind, ptr, t.ownerWord(e.owner, owner))
	default:
		return liveEntry{}, errOtherSize(kind, ptr, size, e.size)
	}
}

// lend marks ptr's record lent to a sub-allocator, or no longer (lent
// false); nothing when ptr is not recorded.
func (t *liveTable) lend(ptr uintptr, lent bool) {
	s := t.shard(ptr)
	s.mu.Lock()
	if e, ok := s.m[ptr]; ok {
		e.lent = lent
		s.m[ptr] = e
	}
	s.mu.Unlock()
}

// chunkLender is a base resource that records its allocations in a
// liveTable: lendChunk marks one as a chunk a sub-allocator holds (or no
// longer), so that a user's free of it is refused (errLent).
type chunkLender interface {
	lendChunk(ptr uintptr, lent bool)
}

func (c *Cuda) lendChunk(ptr uintptr, lent bool)        { cudaLive.lend(ptr, lent) }
func (m *Managed) lendChunk(ptr uintptr, lent bool)     { managedLive.lend(ptr, lent) }
func (p *PinnedHost) lendChunk(ptr uintptr, lent bool)  { pinnedHostLive.lend(ptr, lent) }
func (s *System) lendChunk(ptr uintptr, lent bool)      { systemLive.lend(ptr, lent) }
func (s *SAMHeadroom) lendChunk(ptr uintptr, lent bool) { samLive.lend(ptr, lent) }

// lendChunk marks ptr, a chunk a sub-allocator took from up (lent true) or
// is about to give back to it (false), in the table of the base resource
// under up's adaptors. A sub-allocator's first block starts where its
// chunk does, and may fill it: without the mark, a free of that block
// through the base resource (or an adaptor over it) with the chunk's size
// freed the chunk while the sub-allocator still held it, and the base
// resource handed the same memory out again. When the chain reaches
// another sub-allocator first (its blocks are not base allocations), an
// aligned adaptor that over-aligned the chunk, or a resource with no
// upstream and no table (a callback resource), that resource refuses the
// chunk instead (lendBlock, lent_blocks.go).
// takeChunk is how a sub-allocator (pool, arena, fixed_size) takes a chunk
// of size bytes from its upstream on stream s: 256-byte aligned, as its
// heap's grid needs (a user's external resource may return any address, and
// adaptors pass it on as RMM's do; a chunk is checked here), then marked lent
// in the base resource's table.
func takeChunk(kind string, up Resource, s Stream, size uintptr) (uintptr, error) {
	ptr, err := up.Allocate(s, size, DefaultAlignment)
	if err != nil {
		return 0, err
	}
	if ptr == 0 || !addr.IsAligned(ptr, DefaultAlignment) {
		err := fmt.Errorf("%s: %w: the upstream (%s) returned %#x for a chunk of %d bytes, not %d-byte aligned (it was given back)",
			kind, ErrBadAlloc, up.Kind(), ptr, size, DefaultAlignment)
		if ptr != 0 {
			if derr := up.Deallocate(s, ptr, size, DefaultAlignment); derr != nil {
				err = fmt.Errorf("%w; giving it back failed: %v", err, derr)
			}
		}
		return 0, err
	}
	lendChunk(up, ptr, true)
	return ptr, nil
}

func lendChunk(up Resource, ptr uintptr, lent bool) {
	for r := up; r != nil && !isNil(r); {
		if l, ok := r.(chunkLender); ok {
			l.lendChunk(ptr, lent)
			return
		}
		if _, ok := r.(cacheable); ok {
			lendBlock(r, ptr, lent)
			return
		}
		if al, ok := r.(*Aligned); ok && al.overAligned(ptr) {
			lendBlock(r, ptr, lent)
			return
		}
		a, ok := r.(interface{ Upstream() Resource })
		if !ok {
			lendBlock(r, ptr, lent)
			return
		}
		r = a.Upstream()
	}
}

// The refusals of a free, for every table.
func errNotRecorded(kind string, ptr uintptr) error {
	return fmt.Errorf("%s: %w: %#x was not allocated by a %s resource, or was already deallocated",
		kind, ErrInvalidPointer, ptr, kind)
}

func errLent(kind string, ptr uintptr) error {
	return fmt.Errorf("%s: %w: %#x is a chunk that a live pool, arena or fixed_size resource took from this resource (or through it), and that resource holds it: free its blocks through it (nothing was freed)",
		kind, ErrInvalidPointer, ptr)
}

func errOtherOwner(kind string, ptr uintptr, how string) error {
	return fmt.Errorf("%s: %w: %#x was allocated by a %s resource that is not equal to this one (%s)",
		kind, ErrInvalidPointer, ptr, kind, how)
}

func errOtherSize(kind string, ptr, size, had uintptr) error {
	return fmt.Errorf("%s: %w: deallocating %#x with size %d, but it was allocated with size %d (nothing was freed)",
		kind, ErrInvalidArgument, ptr, size, had)
}

// ownerWord says how two owners differ, in the table's terms.
func (t *liveTable) ownerWord(had, want uintptr) string {
	if t == &samLive {
		return fmt.Sprintf("it keeps a headroom of %d bytes, this one %d", had, want)
	}
	return fmt.Sprintf("owner %#x, this one %#x", had, want)
}

// restore puts back a record take removed, when the memory could not be
// freed after all.
func (t *liveTable) restore(ptr uintptr, e liveEntry) {
	t.addEntry(ptr, e)
}

// has reports whether ptr is recorded (for tests).
func (t *liveTable) has(ptr uintptr) bool {
	s := t.shard(ptr)
	s.mu.Lock()
	_, ok := s.m[ptr]
	s.mu.Unlock()
	return ok
}

// asyncLive is the table of the pool-based kinds (cuda_async,
// cuda_async_managed, cuda_async_view): pointer to size, pool, and whether
// the pool's owner handed the block out (its Close gives back what is still
// recorded then). The records live in C (asyncpath), shared with the C path
// of the C ABI; the Go path reaches them through these methods.
var asyncLive asyncTable

type asyncTable struct{}

// add records that ptr was handed out with size bytes from pool (by the
// pool's owner when owned); false when the C heap could not hold it.
func (asyncTable) add(ptr, size uintptr, pool cudart.MemPool, owned bool) bool {
	return asyncpath.Record(ptr, size, pool, owned)
}

// take removes ptr's record when it says ptr was handed out with size bytes
// from pool, and returns it, as liveTable.take does.
func (asyncTable) take(kind string, ptr, size uintptr, pool cudart.MemPool) (asyncpath.Entry, error) {
	e, r := asyncpath.Take(ptr, size, pool)
	switch r {
	case asyncpath.OK:
		return e, nil
	case asyncpath.Foreign:
		return e, errOtherOwner(kind, ptr, fmt.Sprintf("it allocates from memory pool %#x, this one from %#x", uintptr(e.Pool), uintptr(pool)))
	case asyncpath.SizeMismatch:
		return e, errOtherSize(kind, ptr, size, e.Size)
	default:
		if asyncLent(ptr) {
			return e, errLent(kind, ptr)
		}
		return e, errNotRecorded(kind, ptr)
	}
}

// restore puts back a record take removed.
func (asyncTable) restore(ptr uintptr, e asyncpath.Entry) { asyncpath.Restore(ptr, e) }

// takeOwned removes and returns every record of pool its owner made: the
// blocks a CUDA pool's owning resource handed out that nobody freed, which
// its Close gives back before it destroys the pool. Records of the same
// pool that views made stay: those blocks stay valid, as CUDA keeps them.
// complete is false when not every record could be taken (no host memory).
func (asyncTable) takeOwned(pool cudart.MemPool) (ptrs []uintptr, complete bool) {
	return asyncpath.TakeOwned(pool)
}

// has reports whether ptr is recorded (for tests).
func (asyncTable) has(ptr uintptr) bool { return asyncpath.Has(ptr) }
