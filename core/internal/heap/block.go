package heap

import (
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/core/internal/errs"
	"github.com/rmmgo/rmmgo/core/internal/relaxed"
)

// Block operations: node ids, carving a block out of a free one, inserting
// a freed block with its free neighbours merged, publishing an allocated
// block in its chunk's index and claiming it back, and adding chunks.

// spareNode makes sure l has a spare node id. l.Mu is held.
func (h *Heap) spareNode(l *freeList) {
	if len(l.spare) == 0 {
		l.spare = h.nodes.get(l.spare, 64)
	}
}

// recycle gives node id back to l's spares. l.Mu is held.
func (h *Heap) recycle(pg nodePages, l *freeList, id int32) {
	pg.at(id).owner.Store(-1)
	l.spare = append(l.spare, id)
	if len(l.spare) > 1024 {
		h.nodes.put(l.spare[512:])
		l.spare = l.spare[:512]
	}
}

// carve takes size bytes (a multiple of 256) from l (from its settled part
// only when settledOnly is set), splitting the block it finds; the rest
// stays in l. It returns the allocated node, or 0. l.Mu is held.
func (h *Heap) carve(l *freeList, size uintptr, settledOnly bool) int32 {
	h.spareNode(l)
	pg := h.nodes.load()
	var id int32
	if l.set == nil && !settledOnly {
		id = l.classIndex.take(pg, l.ID, size>>UnitShift) // the common case: never settled
	} else {
		id = l.take(pg, size>>UnitShift, settledOnly)
	}
	if id == 0 {
		return 0
	}
	n := pg.at(id)
	if rest := n.size - size; rest != 0 {
		rid := l.spare[len(l.spare)-1]
		l.spare = l.spare[:len(l.spare)-1]
		r := pg.at(rid)
		r.addr, r.size, r.seq, r.chunk, r.next = n.addr+size, rest, n.seq, n.chunk, n.next
		r.prev.Store(id)
		r.owner.Store(l.ID)
		if n.next != 0 {
			pg.at(n.next).prev.Store(rid)
		}
		n.next, n.size = rid, size
		l.insert(r, rid) // same seq: the part n came from
	}
	n.owner.Store(0)
	l.Free.Add(^(size - 1))
	return id
}

// insertFree puts the allocated node id into l as a free block with
// sequence number seq, merging it with free neighbours of l. l.Mu is held.
func (h *Heap) insertFree(l *freeList, id int32, seq uint64) {
	pg := h.nodes.load()
	n := pg.at(id)
	// The predecessor may be a node another list made a moment ago, in a
	// node page newer than pg: read its id first, then the page table.
	pid := n.prev.Load()
	pg = h.nodes.load()
	l.Free.Add(n.size)
	n.seq = seq
	n.owner.Store(l.ID)
	if pid != 0 {
		if p := pg.at(pid); p.owner.Load() == l.ID {
			l.remove(pg, p)
			p.size += n.size
			p.next = n.next
			if p.seq < n.seq {
				p.seq = n.seq
			}
			if n.next != 0 {
				pg.at(n.next).prev.Store(pid)
			}
			h.recycle(pg, l, id)
			id, n = pid, p
		}
	}
	if nid := n.next; nid != 0 {
		if m := pg.at(nid); m.owner.Load() == l.ID {
			l.remove(pg, m)
			n.size += m.size
			n.next = m.next
			if n.seq < m.seq {
				n.seq = m.seq
			}
			if m.next != 0 {
				pg.at(m.next).prev.Store(id)
			}
			h.recycle(pg, l, nid)
		}
	}
	l.insert(n, id) // a merged block takes the later seq: fresh if either part was
}

// publish records the allocated node id in its chunk's index and returns
// its address.
func (h *Heap) publish(id int32) (uintptr, error) {
	n := h.nodes.load().at(id)
	t := h.chunks.Load()
	if int(n.chunk) >= len(t.byID) || t.byID[n.chunk] == nil {
		return 0, fmt.Errorf("%s: %w", h.kind, errs.Closed) // closed meanwhile
	}
	t.byID[n.chunk].record(id, n.addr, n.size)
	return n.addr, nil
}

// take serves size bytes from l for l's own stream: from its magazine, else
// from its index, else from its index after flushing the magazine into it.
// It returns the node, its address and its chunk; id 0 when l cannot serve
// the request. l.Mu is held.
func (h *Heap) take(l *freeList, size uintptr) (id int32, addr uintptr, chunk int32) {
	if l.mag != nil {
		if id, addr, chunk = l.magTake(size); id != 0 {
			return id, addr, chunk
		}
	}
	id = h.carve(l, size, false)
	if id == 0 && l.mag != nil && l.mag.count != 0 {
		h.magFlushAll(l)
		id = h.carve(l, size, false)
	}
	if id == 0 {
		return 0, 0, 0
	}
	n := h.nodes.load().at(id)
	return id, n.addr, n.chunk
}

// publishAt is publish for a block whose address and chunk the caller
// knows (it need not read the node).
func (h *Heap) publishAt(id int32, addr uintptr, chunk int32, size uintptr) (uintptr, error) {
	t := h.chunks.Load()
	if int(chunk) >= len(t.byID) || t.byID[chunk] == nil {
		return 0, fmt.Errorf("%s: %w", h.kind, errs.Closed) // closed meanwhile
	}
	t.byID[chunk].record(id, addr, size)
	return addr, nil
}

// addChunk registers the chunk [base, base+size) and puts it whole into l
// (the default stream's list in shard 0 when l is nil). l.Mu is held when
// l is not nil. The chunk counts as freed on l's stream now (the upstream
// handed it out in order on that stream).
func (h *Heap) addChunk(l *freeList, base, size uintptr) {
	h.chunkMu.Lock()
	old := h.chunks.Load()
	c := &chunk{base: base, size: size, id: h.nextChunk}
	c.leaves = make([]atomic.Pointer[leaf], (size+(1<<(UnitShift+leafBits))-1)>>(UnitShift+leafBits))
	c.big = make([]relaxed.Uint64, len(c.leaves))
	h.nextChunk++
	nt := &chunkTable{
		sorted: append(append(make([]*chunk, 0, len(old.sorted)+1), old.sorted...), c),
		byID:   append(append(make([]*chunk, 0, len(old.byID)+1), old.byID...), c),
	}
	sort.Slice(nt.sorted, func(i, j int) bool { return nt.sorted[i].base < nt.sorted[j].base })
	nt.index()
	h.chunks.Store(nt)
	h.size.Add(size)
	h.setMagBudget(h.size.Load())
	h.chunkMu.Unlock()

	locked := l != nil
	if l == nil {
		l = h.eng.List(h.eng.Default(), 0)
		l.Mu.Lock()
	}
	h.spareNode(l)
	id := l.spare[len(l.spare)-1]
	l.spare = l.spare[:len(l.spare)-1]
	pg := h.nodes.load()
	n := pg.at(id)
	n.addr, n.size, n.seq, n.chunk, n.next = base, size, l.St.Epoch.Load(), c.id, 0
	n.prev.Store(0)
	n.owner.Store(l.ID)
	c.first = id
	l.insert(n, id)
	l.Free.Add(size)
	if !locked {
		l.Mu.Unlock()
	}
}

// claim checks that ptr is the start of a live allocation of size bytes
// and takes it out of the index, returning its node, its slot (to put it
// back if the free cannot go on) and its chunk. It reads the node only for
// a block whose size its slot does not hold.
func (h *Heap) claim(ptr, size uintptr) (int32, slotRef, *chunk, error) {
	c := h.chunks.Load().find(ptr)
	if c == nil || ptr&(Unit-1) != 0 {
		return 0, slotRef{}, nil, fmt.Errorf("%s: %w: %#x", h.kind, errs.InvalidPointer, ptr)
	}
	// Where the size says the block is; the other table too for a size
	// that does not match the block's (to report that, rather than an
	// invalid pointer).
	big := size >= bigBlock
	r := c.lookup(ptr, big)
	if r.w == 0 {
		r = c.lookup(ptr, !big)
	}
	if r.w == 0 || !r.clear() {
		return 0, slotRef{}, nil, fmt.Errorf("%s: %w: %#x is not a live allocation (deallocated already?)", h.kind, errs.InvalidPointer, ptr)
	}
	id, got := r.decode()
	if got == 0 {
		got = h.nodes.load().at(id).size
	}
	if got != size {
		r.restore()
		return 0, slotRef{}, nil, fmt.Errorf("%s: %w: deallocating %#x with size %d, but it was allocated with size %d (rounded to 256)",
			h.kind, errs.InvalidArgument, ptr, size, got)
	}
	return id, r, c, nil
}
