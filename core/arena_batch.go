package core

import (
	"runtime"

	"github.com/rmmgo/rmmgo/core/internal/cachepolicy"
	"github.com/rmmgo/rmmgo/cudart"
	"github.com/rmmgo/rmmgo/internal/fastpath"
)

// The arena as a fastpath.Cacheable resource (cache.go).

// CacheLimits: requests up to cachepolicy.MaxBlock, the budget following
// the arena's size, and the memory its global arena has free.
func (a *Arena) CacheLimits() fastpath.CacheLimits {
	return a.caches.limits(cachepolicy.MaxBlock, 0, a.size, a.global.FreeBytes())
}

// AllocateBatch allocates the first block as Allocate does, the others
// from the room the stream's arena in the caller's shard has (its
// superblocks; the global arena for blocks above 256 KiB).
func (a *Arena) AllocateBatch(s Stream, size uintptr, out []uintptr) (int, error) {
	if len(out) == 0 {
		return 0, nil
	}
	first, err := a.Allocate(s, size, DefaultAlignment)
	if err != nil {
		return 0, err
	}
	out[0] = first
	if len(out) == 1 || a.closed.Load() {
		return 1, nil
	}
	size = (size + DefaultAlignment - 1) &^ (DefaultAlignment - 1)
	if s == cudart.PerThreadDefaultStream {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	if size > smallLimit {
		return 1 + a.global.AllocateMore(s, size, out[1:]), nil
	}
	sl, err := a.eng.Lookup(s)
	if err != nil {
		return 1, nil
	}
	l := a.eng.List(sl, a.eng.Shard())
	u := int(size >> unitShift)
	n := 1
	l.Mu.Lock()
	for n < len(out) && !l.Retired {
		p := l.allocLocal(u)
		if p == 0 {
			break
		}
		out[n] = p
		n++
	}
	l.Mu.Unlock()
	return n, nil
}

// DeallocateBatch deallocates each block.
func (a *Arena) DeallocateBatch(s Stream, size uintptr, ptrs []uintptr) error {
	return deallocateBatch(a.deallocateUnclaimed, s, size, ptrs)
}

// CheckFree: the arena takes a block back with the size it was allocated
// with, both rounded up to 256.
func (a *Arena) CheckFree(ptr, bytes, allocated uintptr) error {
	b := (bytes + DefaultAlignment - 1) &^ (DefaultAlignment - 1)
	if b != (allocated+DefaultAlignment-1)&^(DefaultAlignment-1) {
		return a.badFree(ptr, b)
	}
	return nil
}

// AttachCache attaches c (see fastpath.Cacheable).
func (a *Arena) AttachCache(c fastpath.BlockCache) func() { return a.caches.attach(c) }
