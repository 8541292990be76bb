package core

import (
	"sync"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/core/internal/asyncpath"
)

// Chunks lent to resources that keep no base table (issue 24, beyond the
// base tables' lent mark, live_table.go).
//
// lendChunk marks a chunk a sub-allocator takes in the table of the base
// resource under its upstream's adaptors. Three kinds of upstream had no
// such table, and a block that filled its chunk, freed through them with
// the chunk's size, gave the chunk back while the sub-allocator held it
// (the upstream then handed the same address out again):
//
//   - another sub-allocator (a pool over a pool: the outer pool's chunk is
//     a block of the inner one), the aligned adaptor when it over-aligned
//     the chunk (its address is not the base allocation's), a callback
//     resource, any resource with no upstream to walk to: such a resource
//     refuses a free of a chunk lent to it (lentHere, one atomic load for
//     an address that starts no lent chunk);
//   - the pool-based kinds (cuda_async, cuda_async_managed, cuda_async_view),
//     whose records live in C, where the C ABI frees their blocks without
//     entering Go: a lent chunk's record leaves the C table while it is
//     lent (lentAsync), so that both paths refuse it as not recorded, and
//     comes back just before the chunk goes back.

var lent struct {
	mu sync.Mutex
	m  map[uintptr][]Resource // the resources a chunk starting there is lent to
	// filter counts the lent chunks per hash of their address: 0, and the
	// address starts none (no lock).
	filter [1024]atomic.Int32
	async  map[uintptr]asyncpath.Entry // records out of the C table while lent
}

func lentSlot(ptr uintptr) *atomic.Int32 {
	return &lent.filter[(uint64(ptr>>8)*0x9E3779B97F4A7C15)>>54]
}

// lendBlock records that ptr, a block of r, is a chunk a sub-allocator
// holds (lent true), or no longer (false).
func lendBlock(r Resource, ptr uintptr, on bool) {
	lent.mu.Lock()
	defer lent.mu.Unlock()
	rs := lent.m[ptr]
	if on {
		if lent.m == nil {
			lent.m = make(map[uintptr][]Resource)
		}
		lent.m[ptr] = append(rs, r)
		lentSlot(ptr).Add(1)
		return
	}
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i] == r {
			rs = append(rs[:i:i], rs[i+1:]...)
			lentSlot(ptr).Add(-1)
			break
		}
	}
	if len(rs) == 0 {
		delete(lent.m, ptr)
	} else {
		lent.m[ptr] = rs
	}
}

// lentHere is nil unless ptr starts a chunk lent to self: then a free of
// it through self is refused (its holder gives it back itself).
func lentHere(kind string, self Resource, ptr uintptr) error {
	if lentSlot(ptr).Load() == 0 {
		return nil
	}
	lent.mu.Lock()
	defer lent.mu.Unlock()
	for _, r := range lent.m[ptr] {
		if r == self {
			return errLent(kind, ptr)
		}
	}
	return nil
}

// asyncLend takes ptr's record out of the pool-based kinds' C table while
// a sub-allocator holds it as a chunk (on), and puts it back (off).
func asyncLend(ptr uintptr, on bool) {
	lent.mu.Lock()
	defer lent.mu.Unlock()
	if !on {
		if e, ok := lent.async[ptr]; ok {
			delete(lent.async, ptr)
			asyncpath.Restore(ptr, e)
		}
		return
	}
	// A take with pool 0 reports the record (Foreign) without taking it.
	e, r := asyncpath.Take(ptr, 0, 0)
	if r != asyncpath.Foreign && r != asyncpath.SizeMismatch {
		return
	}
	if e, r = asyncpath.Take(ptr, e.Size, e.Pool); r != asyncpath.OK {
		return
	}
	if lent.async == nil {
		lent.async = make(map[uintptr]asyncpath.Entry)
	}
	lent.async[ptr] = e
}

func (c *CudaAsync) lendChunk(ptr uintptr, on bool)        { asyncLend(ptr, on) }
func (v *CudaAsyncView) lendChunk(ptr uintptr, on bool)    { asyncLend(ptr, on) }
func (m *CudaAsyncManaged) lendChunk(ptr uintptr, on bool) { asyncLend(ptr, on) }

// asyncLent reports whether ptr's record is out of the C table, lent.
func asyncLent(ptr uintptr) bool {
	lent.mu.Lock()
	defer lent.mu.Unlock()
	_, ok := lent.async[ptr]
	return ok
}

// asyncLentTotals counts the records out of the C table (BaseAllocations
// still counts them).
func asyncLentTotals() (count int, bytes uint64) {
	lent.mu.Lock()
	defer lent.mu.Unlock()
	for _, e := range lent.async {
		count++
		bytes += uint64(e.Size)
	}
	return count, bytes
}
