package core

import (
	"errors"
	"fmt"

	"github.com/rmmgo/rmmgo/core/internal/streamorder"
)

// The fixed-size resource gives chunks back: one at Close, and those whose
// every block lies free when its upstream needs memory (releaseFree, for a
// binning resource's bins over a pool).

// giveBack returns the chunk at base to the upstream.
func (f *FixedSize) giveBack(base uintptr) error {
	lendChunk(f.upstream, base, false)
	if err := f.upstream.Deallocate(DefaultStream, base, f.index.size, DefaultAlignment); err != nil {
		lendChunk(f.upstream, base, true)
		return fmt.Errorf("%s: returning %d bytes at %#x upstream: %w", kindFixedSize, f.index.size, base, err)
	}
	f.nheld.Add(-1)
	return nil
}

// releaseFree gives the upstream back the chunks whose every block lies
// free in a list, and reports whether it gave any. Blocks freed on a stream
// other than the legacy default one may still be in use by work queued on
// it: when a chunk holds one, the device is synchronized first. A chunk
// whose return fails stays held, and returns at Close. It does nothing
// while the resource grows (the upstream asks for memory while a bin
// grows, and the grower may be the caller), once closed, and for chunks of
// more than 128 blocks (whose index records are not reused).
func (f *FixedSize) releaseFree() (bool, error) {
	if f.perChunk > fixedInlineBlocks || f.closed.Load() || f.freeBytes() < f.index.size || !f.growMu.TryLock() {
		return false, nil
	}
	if f.closed.Load() {
		f.growMu.Unlock()
		return false, nil
	}
	ls := f.eng.LockAll()
	cs := *f.byID.Load()
	count := make([]int32, len(cs))
	for _, l := range ls {
		for _, b := range l.blocks {
			count[b.chunk]++
		}
		for _, b := range l.set {
			count[b.chunk]++
		}
	}
	gone := make([]bool, len(cs))
	var bases []uintptr
	for id, c := range cs {
		if c != nil && int(count[id]) == f.perChunk {
			gone[id] = true
			bases = append(bases, c.base)
		}
	}
	sync := false
	if len(bases) > 0 {
		for _, l := range ls {
			n := len(l.blocks) + len(l.set)
			l.blocks = dropGone(l.blocks, gone)
			settled := len(l.set)
			l.set = dropGone(l.set, gone)
			if k := n - len(l.blocks) - len(l.set); k > 0 {
				l.Free.Add(-uintptr(k) * f.blockSize)
				l.Settled.Add(-uintptr(settled-len(l.set)) * f.blockSize)
				sync = sync || !l.St.Durable()
			}
		}
		f.chunkMu.Lock()
		nb := append([]*fixedChunk(nil), cs...)
		for id, g := range gone {
			if g {
				f.index.remove(nb[id])
				nb[id] = nil
				f.freeIDs = append(f.freeIDs, int32(id))
			}
		}
		f.byID.Store(&nb)
		k := 0
		for _, c := range f.chunks {
			if !gone[c.id] {
				f.chunks[k] = c
				k++
			}
		}
		clear(f.chunks[k:])
		f.chunks = f.chunks[:k]
		f.chunkMu.Unlock()
	}
	streamorder.UnlockAll(ls)
	f.growMu.Unlock()
	if len(bases) == 0 {
		return false, nil
	}
	var errs []error
	if sync {
		if err := f.rt.DeviceSynchronize(); err != nil {
			f.chunkMu.Lock()
			f.stray = append(f.stray, bases...)
			f.chunkMu.Unlock()
			return false, cudaError(kindFixedSize+": synchronizing before returning memory upstream", err)
		}
	}
	gave := false
	for _, base := range bases {
		if err := f.giveBack(base); err != nil {
			f.chunkMu.Lock()
			f.stray = append(f.stray, base)
			f.chunkMu.Unlock()
			errs = append(errs, err)
			continue
		}
		gave = true
	}
	return gave, errors.Join(errs...)
}

// dropGone removes from bs the blocks of the chunks marked in gone.
func dropGone(bs []fixedBlock, gone []bool) []fixedBlock {
	k := 0
	for _, b := range bs {
		if !gone[b.chunk] {
			bs[k] = b
			k++
		}
	}
	clear(bs[k:])
	return bs[:k]
}
