package core

// FixedSize as a Cacheable resource (cache.go): the limits of a cache in
// front of it, and blocks in batches.

import (
	"fmt"
	"github.com/rmmgo/rmmgo/internal/fastpath"
	"runtime"

	"github.com/rmmgo/rmmgo/core/internal/cachepolicy"
	"github.com/rmmgo/rmmgo/core/internal/streamorder"
	"github.com/rmmgo/rmmgo/cudart"
)

// CacheLimits: every request up to the block size gets a block (none when
// blocks are larger than cachepolicy.MaxBlock); the budget follows the
// chunks the resource holds.
func (f *FixedSize) CacheLimits() fastpath.CacheLimits {
	if f.blockSize > cachepolicy.MaxBlock {
		return fastpath.CacheLimits{}
	}
	return cacheLimits(f.blockSize, f.blockSize, f.chunkBytes())
}

// AllocateBatch allocates the first block as Allocate does, the others
// from the blocks free in the stream's list in the caller's shard.
func (f *FixedSize) AllocateBatch(s Stream, size uintptr, out []uintptr) (int, error) {
	if len(out) == 0 {
		return 0, nil
	}
	first, err := f.Allocate(s, size, DefaultAlignment)
	if err != nil {
		return 0, err
	}
	out[0] = first
	return 1 + f.allocateMore(s, out[1:]), nil
}

// allocateMore fills out with blocks free in the stream's own lists (the
// caller's shard first), without growing or waiting; it returns how many.
func (f *FixedSize) allocateMore(s Stream, out []uintptr) int {
	if len(out) == 0 || f.closed.Load() {
		return 0
	}
	sl := f.eng.Default()
	if s != DefaultStream && s != cudart.LegacyDefaultStream {
		if s == cudart.PerThreadDefaultStream {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
		}
		var err error
		if sl, err = f.eng.Lookup(s); err != nil {
			return 0
		}
	}
	n := 0
	mine := f.eng.Shard()
	for i := range sl.Shards {
		l := sl.Shards[(uint32(i)+mine)%uint32(len(sl.Shards))].Load()
		if l == nil || l.Free.Load() == 0 {
			continue
		}
		var buf [64]fixedBlock
		k := 0
		l.Mu.Lock()
		for n+k < len(out) && k < len(buf) && !l.Retired && len(l.blocks)+len(l.set) > 0 {
			buf[k], _ = f.pop(l)
			k++
		}
		l.Mu.Unlock()
		m := f.publishInto(out[n:], buf[:k])
		n += m
		if m < k {
			return n // closed meanwhile
		}
		if n == len(out) {
			break
		}
	}
	if n < len(out) {
		n += f.allocateOthers(s, sl.St, out[n:])
	}
	return n
}

// allocateOthers fills out with blocks other streams' lists hold that s
// may use after one wait per list (settled blocks of a stream, or any
// block of the legacy default stream, where flushed and reclaimed blocks
// go), as allocateSlow takes one at a time: a refill on a stream whose own
// lists are empty then takes a batch in one crossing, not one block a
// crossing (two threads on their own streams: each takes the other's
// drained blocks). It returns how many.
func (f *FixedSize) allocateOthers(s Stream, st *streamorder.State, out []uintptr) int {
	n := 0
	for _, l := range f.eng.AllLists() {
		if n == len(out) {
			break
		}
		if l.St == st {
			continue
		}
		if !forOthers(l) {
			continue
		}
		var buf [64]fixedBlock
		k := 0
		var seq uint64
		l.Mu.Lock()
		for n+k < len(out) && k < len(buf) && !l.Retired {
			b, ok := f.popForOthers(l)
			if !ok {
				break
			}
			buf[k] = b
			seq = max(seq, b.seq)
			k++
		}
		if k > 0 {
			l.St.Inflight.Add(1)
		}
		l.Mu.Unlock()
		if k == 0 {
			continue
		}
		err := f.eng.OrderAfter(s, st, l.St, seq)
		if err != nil {
			l.Mu.Lock()
			for _, b := range buf[:k] {
				f.put(l, b)
			}
			l.Mu.Unlock()
		}
		l.St.Inflight.Add(-1) // after the blocks went back: l stays in the engine till then
		if err != nil {
			return n
		}
		m := f.publishInto(out[n:], buf[:k])
		n += m
		if m < k {
			return n // closed meanwhile
		}
	}
	return n
}

// DeallocateBatch deallocates each block.
func (f *FixedSize) DeallocateBatch(s Stream, size uintptr, ptrs []uintptr) error {
	return deallocateBatch(f.deallocateUnclaimed, s, size, ptrs)
}

// CheckFree: a block is taken back with any size up to the block size.
func (f *FixedSize) CheckFree(ptr, bytes, allocated uintptr) error {
	if bytes > f.blockSize {
		return fmt.Errorf("%s: %w: deallocating %d bytes at %#x, more than a block (%d bytes)", kindFixedSize, ErrInvalidArgument, bytes, ptr, f.blockSize)
	}
	return nil
}

// AttachCache attaches c (see Cacheable).
func (f *FixedSize) AttachCache(c fastpath.BlockCache) func() { return f.caches.attach(c) }
