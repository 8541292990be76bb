package heap

import (
	"github.com/rmmgo/rmmgo/core/internal/streamorder"
)

// Span is a chunk taken out of the heap, to return to the upstream.
type Span struct{ Base, Size uintptr }

// ReleaseChunks takes out of the heap every chunk that is wholly free
// (every chunk when all is set, live allocations or not) and returns them.
// The caller synchronizes the device before it hands them back: memory
// freed in stream order may still be in use by queued work.
//
// With all set the heap is closed for good: calls racing it, or made
// later, fail with errs.Closed where they would need memory, and it never
// grows again.
func (h *Heap) ReleaseChunks(all bool) []Span {
	spans, _ := h.releaseChunks(all, false)
	return spans
}

// TryReleaseChunks is ReleaseChunks(false) when no growth of the heap is
// under way, for a caller that holds a lock a growing allocation may wait
// for (another heap of its resource growing); it reports whether it ran.
func (h *Heap) TryReleaseChunks() ([]Span, bool) { return h.releaseChunks(false, true) }

func (h *Heap) releaseChunks(all, try bool) ([]Span, bool) {
	if all {
		h.clearFront()
	} else {
		h.DrainFront() // a chunk is wholly free only once the front's blocks merged
	}
	if try {
		if !h.growMu.TryLock() {
			return nil, false
		}
	} else {
		h.growMu.Lock()
	}
	defer h.growMu.Unlock()
	if all {
		h.closed.Store(true)
	}
	ls := h.eng.LockAll()
	defer streamorder.UnlockAll(ls)
	byID := make(map[int32]*freeList, len(ls))
	for _, l := range ls {
		byID[l.ID] = l
		if !all {
			h.magFlushAll(l) // a chunk is wholly free only once its blocks merged
		}
	}
	pg := h.nodes.load()
	t := h.chunks.Load()
	var out []*chunk
	keep := make(map[*chunk]bool)
	for _, c := range t.sorted {
		// A chunk is wholly free when every block of it is free, in
		// whatever lists: blocks freed on different streams or shards never
		// merge with each other, so one free block spanning the chunk is not
		// the only case (with many Ps even one stream's frees spread over
		// several shards' lists).
		//
		// Only blocks of the lists locked here count as free: a list made
		// after LockAll (a stream's new shard or home list) is not locked,
		// and a block freed into it meanwhile would stay in its index while
		// the chunk went back upstream, to be handed out again from there
		// (a pool giving back before growing, under 16 streams, handed the
		// same bytes out twice that way).
		wholeFree := true
		for id := c.first; id != 0; id = pg.at(id).next {
			if byID[pg.at(id).owner.Load()] == nil {
				wholeFree = false
				break
			}
		}
		if !all && !wholeFree {
			keep[c] = true
			continue
		}
		if wholeFree {
			for id := c.first; id != 0; {
				n := pg.at(id)
				next := n.next
				if l := byID[n.owner.Load()]; l != nil {
					l.remove(pg, n)
					l.Free.Add(^(n.size - 1))
					h.recycle(pg, l, id)
				}
				id = next
			}
		}
		out = append(out, c)
	}
	if all {
		for _, l := range ls {
			h.magClear(l)
			l.clear()
		}
	}
	if len(out) == 0 {
		return nil, true
	}
	h.chunkMu.Lock()
	nt := &chunkTable{byID: append([]*chunk(nil), t.byID...)}
	for _, c := range t.sorted {
		if keep[c] {
			nt.sorted = append(nt.sorted, c)
		} else {
			nt.byID[c.id] = nil
			h.size.Add(^(c.size - 1))
		}
	}
	h.setMagBudget(h.size.Load())
	nt.index()
	nt.dir = t.dir.release(out, nt.sorted)
	h.chunks.Store(nt)
	h.chunkMu.Unlock()
	spans := make([]Span, len(out))
	for i, c := range out {
		spans[i] = Span{c.base, c.size}
	}
	return spans, true
}

// Stats describes the heap's free memory, for dumps and tests.
type Stats struct {
	Chunks, FreeBlocks int     // chunks, and free blocks in them
	FreeBytes, Largest uintptr // free bytes, and the largest free block
}

// Stats describes the heap's free memory. It drains the front and flushes
// every magazine first, so that the free blocks it counts are coalesced.
func (h *Heap) Stats() Stats {
	h.DrainFront()
	var s Stats
	ls := h.eng.LockAll()
	defer streamorder.UnlockAll(ls)
	for _, l := range ls {
		h.magFlushAll(l)
	}
	pg := h.nodes.load()
	s.Chunks = len(h.chunks.Load().sorted)
	for _, l := range ls {
		l.each(pg, func(id int32, n *node) {
			s.FreeBlocks++
			s.FreeBytes += n.size
			if n.size > s.Largest {
				s.Largest = n.size
			}
		})
	}
	return s
}

// MagazineBudget returns the most bytes the heap's magazines may hold
// together now (cachepolicy.Magazines of its size), and the part of it no
// magazine has reserved.
func (h *Heap) MagazineBudget() (budget uintptr, unreserved int64) {
	return h.magBudget.Load(), h.magAvail.Load()
}

// MagazineHeld returns the blocks and bytes waiting in the lists'
// magazines and in the front.
func (h *Heap) MagazineHeld() (blocks int, bytes uintptr) {
	blocks, bytes = h.frontHeld()
	for _, l := range h.eng.AllLists() {
		l.Mu.Lock()
		if l.mag != nil {
			blocks += l.mag.count
			bytes += l.mag.bytes
		}
		l.Mu.Unlock()
	}
	return blocks, bytes
}

// LargestChunk returns the size of the heap's largest chunk.
func (h *Heap) LargestChunk() uintptr {
	var n uintptr
	for _, c := range h.chunks.Load().sorted {
		n = max(n, c.size)
	}
	return n
}
