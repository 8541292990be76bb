package heap

import (
	"fmt"
	"sort"

	"github.com/rmmgo/rmmgo/core/internal/errs"
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
// only when settledOnly is set), splitting the block it finds: the request
// gets its head, the rest stays in l under a new node. When the rest stays
// in the block's size class (a block much larger than the request: the end
// of a chunk, typically), it takes the block's entry in the index in place,
// so that no entry leaves or joins the class. It returns the allocated
// node, or 0. l.Mu is held.
func (h *Heap) carve(l *freeList, size uintptr, settledOnly bool) int32 {
	h.spareNode(l)
	pg := h.nodes.load()
	var x *classIndex
	var c, i int
	var id int32
	if l.set == nil && !settledOnly {
		x = &l.classIndex // the common case: never settled
		c, i, id = x.find(pg, l.ID, size>>UnitShift)
	} else {
		x, c, i, id = l.find(pg, size>>UnitShift, settledOnly)
	}
	if id == 0 {
		return 0
	}
	n := pg.at(id)
	rest := n.size - size
	if rest == 0 {
		l.popAt(pg, x, c, i, id)
	} else {
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
		if classOf(rest>>UnitShift) == c {
			// The rest takes the block's place: same class, same part.
			x.stacks[c][i] = classEntry{rid, r.stamp}
			n.stamp++
			if x == l.set {
				l.Settled.Add(^(size - 1))
			}
		} else {
			x.popAt(pg, l.ID, c, i)
			if x == l.set {
				l.Settled.Add(^(rest + size - 1)) // the whole block left ...
			}
			l.insert(r, rid) // ... and its rest joins (same seq: the same part)
		}
	}
	n.owner.Store(0)
	l.Free.Add(^(size - 1))
	return id
}

// insertFree puts the allocated node id into l as a free block with
// sequence number seq, merging it with free neighbours of l. l.Mu is held.
//
// A free predecessor that stays in its size class and part once merged
// (a large block taking in a small one) keeps its place in the index: only
// the blocks that change class leave it or join it.
func (h *Heap) insertFree(l *freeList, id int32, seq uint64) {
	id = h.insertLocal(l, id, seq)
	if h.splitFrom(l, id) {
		h.joinHome(l, id)
	}
}

// splitFrom reports whether the free block id of l has a free neighbour
// in another list. l.Mu is held.
func (h *Heap) splitFrom(l *freeList, id int32) bool {
	pg := h.nodes.load()
	n := pg.at(id)
	if pid := n.prev.Load(); pid != 0 {
		pg = h.nodes.load() // the predecessor may be newer than pg
		if o := pg.at(pid).owner.Load(); o > 0 && o != l.ID {
			return true
		}
	}
	if nid := n.next; nid != 0 {
		if o := pg.at(nid).owner.Load(); o > 0 && o != l.ID {
			return true
		}
	}
	return false
}

// joinHome moves the free block id of l, whose neighbour is free in
// another list, into the home list of l's stream, and pulls the free
// neighbours that other lists of the stream hold into it too, so that the
// stream's free memory coalesces whichever shards freed it. It only tries
// locks (l.Mu is held: waiting for another list's lock could deadlock with
// LockAll), and moves a block only between lists of one stream with the
// same cut, so that nothing changes part (fresh or settled) or order. l.Mu
// is held.
func (h *Heap) joinHome(l *freeList, id int32) {
	if home := h.eng.Home(l); home != nil {
		if !home.Mu.TryLock() {
			return
		}
		defer home.Mu.Unlock()
		if home.Retired || home.Cut != l.Cut {
			return
		}
		n := h.nodes.load().at(id)
		l.remove(h.nodes.load(), n)
		l.Free.Add(^(n.size - 1))
		id = h.insertLocal(home, id, n.seq)
		l = home
	}
	// l is the home list now: take in the neighbours the stream's other
	// lists hold.
	for _, prev := range [2]bool{true, false} {
		pg := h.nodes.load()
		n := pg.at(id)
		nid := n.next
		if prev {
			nid = n.prev.Load()
			pg = h.nodes.load()
		}
		if nid == 0 {
			continue
		}
		nb := pg.at(nid)
		o := nb.owner.Load()
		if o <= 0 || o == l.ID {
			continue
		}
		m := h.eng.ListByID(o)
		if m == nil || m.St != l.St || !m.Mu.TryLock() {
			continue
		}
		if nb.owner.Load() == m.ID && !m.Retired && m.Cut == l.Cut {
			m.remove(pg, nb)
			m.Free.Add(^(nb.size - 1))
			nb.owner.Store(0)
			id = h.insertLocal(l, nid, nb.seq)
		}
		m.Mu.Unlock()
	}
}

// insertLocal is insertFree within l alone; it returns the node of the
// merged block. l.Mu is held.
func (h *Heap) insertLocal(l *freeList, id int32, seq uint64) int32 {
	pg := h.nodes.load()
	n := pg.at(id)
	// The predecessor may be a node another list made a moment ago, in a
	// node page newer than pg: read its id first, then the page table.
	pid := n.prev.Load()
	pg = h.nodes.load()
	l.Free.Add(n.size)
	n.seq = seq
	n.owner.Store(l.ID)
	filed := false // n is the predecessor, filed with fsize and fseq
	var fsize uintptr
	var fseq uint64
	if pid != 0 {
		if p := pg.at(pid); p.owner.Load() == l.ID {
			filed, fsize, fseq = true, p.size, p.seq
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
	if filed {
		if classOf(n.size>>UnitShift) == classOf(fsize>>UnitShift) && (n.seq < l.Cut) == (fseq < l.Cut) {
			if n.seq < l.Cut {
				l.Settled.Add(n.size - fsize)
			}
			return id
		}
		l.removeAs(pg, n, fsize, fseq)
	}
	l.insert(n, id) // a merged block takes the later seq: fresh if either part was
	return id
}

// publish records the allocated node id, handed out for a request of size
// bytes, in the address index and returns its address.
func (h *Heap) publish(id int32, size uintptr) (uintptr, error) {
	n := h.nodes.load().at(id)
	if !h.chunks.Load().dir.record(id, n.addr, n.size, size) {
		return 0, fmt.Errorf("%s: %w", h.kind, errs.Closed) // closed meanwhile
	}
	h.countRound(n.size, size)
	return n.addr, nil
}

// countRound counts the rounding of a block of blk bytes handed out for
// a request of size bytes (see RoundingBytes).
func (h *Heap) countRound(blk, size uintptr) {
	if blk != size {
		h.front.addRound(blk - size)
	}
}

// take serves size bytes from l for l's own stream: from its magazine, else
// from its index, else from its index after flushing the magazine into it.
// It returns the node and its address; id 0 when l cannot serve the
// request. l.Mu is held.
func (h *Heap) take(l *freeList, size uintptr) (id int32, addr uintptr) {
	if id, addr = h.takeCached(l, size); id != 0 || l.mag == nil || l.mag.count == 0 {
		return id, addr
	}
	h.magFlushAll(l)
	id = h.carve(l, size, false)
	if id == 0 {
		return 0, 0
	}
	return id, h.nodes.load().at(id).addr
}

// takeCached is take without the flush: from l's magazine or its index
// as they are. l.Mu is held.
func (h *Heap) takeCached(l *freeList, size uintptr) (id int32, addr uintptr) {
	if l.mag != nil {
		if id, addr = l.magTake(size); id != 0 {
			return id, addr
		}
	}
	if id = h.carve(l, size, false); id == 0 {
		return 0, 0
	}
	return id, h.nodes.load().at(id).addr
}

// publishAt is publish for a block of blk bytes whose address the caller
// knows (it need not read the node); the caller counted its rounding.
func (h *Heap) publishAt(id int32, addr, blk, size uintptr) (uintptr, error) {
	if !h.chunks.Load().dir.record(id, addr, blk, size) {
		return 0, fmt.Errorf("%s: %w", h.kind, errs.Closed) // closed meanwhile
	}
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
	h.nextChunk++
	nt := &chunkTable{
		sorted: append(append(make([]*chunk, 0, len(old.sorted)+1), old.sorted...), c),
		byID:   append(append(make([]*chunk, 0, len(old.byID)+1), old.byID...), c),
		dir:    old.dir.withChunk(base, size),
	}
	sort.Slice(nt.sorted, func(i, j int) bool { return nt.sorted[i].base < nt.sorted[j].base })
	nt.index()
	h.chunks.Store(nt)
	if n := h.size.Add(size); n > h.peak.Load() {
		h.peak.Store(n) // under chunkMu
	}
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
// (a block of blk bytes, h.blockSize(size)) and takes it out of the index,
// returning its node and its slot (to put it back if the free cannot go
// on). It reads the node only for a block whose slot does not hold the
// size it was allocated with; then the block's size must be blk.
func (h *Heap) claim(ptr, size, blk uintptr) (int32, slotRef, error) {
	d := h.chunks.Load().dir
	// Where the size says the block is; the other table too for a size
	// that does not match the block's (to report that, rather than an
	// invalid pointer).
	if ptr&(Unit-1) != 0 {
		// Offsets 1..Unit-1 share the block's slot: never a block's start.
		return 0, slotRef{}, fmt.Errorf("%s: %w: %#x is not %d-byte aligned, so no block starts there", h.kind, errs.InvalidPointer, ptr, Unit)
	}
	big := blk >= bigBlock
	r := d.lookup(ptr, big)
	if r.w == 0 {
		if h.chunks.Load().find(ptr) == nil {
			return 0, slotRef{}, fmt.Errorf("%s: %w: %#x", h.kind, errs.InvalidPointer, ptr)
		}
		r = d.lookup(ptr, !big)
	}
	if r.w == 0 || !r.clear() {
		return 0, slotRef{}, fmt.Errorf("%s: %w: %#x is not a live allocation (deallocated already?)", h.kind, errs.InvalidPointer, ptr)
	}
	id, got := r.decode()
	want := size
	if got == 0 {
		got, want = h.nodes.load().at(id).size, blk
	}
	if got != want {
		r.restore()
		return 0, slotRef{}, fmt.Errorf("%s: %w: deallocating %#x with size %d, but it was allocated with size %d (rounded to 256)",
			h.kind, errs.InvalidArgument, ptr, size, got)
	}
	return id, r, nil
}
