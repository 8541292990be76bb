package heap

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/core/internal/errs"
	"github.com/rmmgo/rmmgo/core/internal/streamorder"
	"github.com/rmmgo/rmmgo/cudart"
)

// Holes: the expandable resource's heap. Its one chunk is a reserved range
// of device addresses, of which only some granules are mapped to memory.
// Address space that holds no memory is a hole: a node whose owner is
// holeOwner, in no list (so nothing allocates from it) and in no index
// slot (so no free can claim it), which no neighbour merges with. A hole
// lies between free or allocated blocks like any node, so memory mapped
// next to free memory merges with it into one block (Fill), and whole free
// granules anywhere can be taken out of the lists again without moving a
// live block (Dig).
//
// Holes change under holeSet.mu. Fill turns part of a hole into a freed
// block, which touches the nodes around it as a free does (insertFree);
// Dig and Holes also hold every list's lock.

// holeOwner is the owner of a hole's node.
const holeOwner = -2

// holeSet is the heap's holes, in address order.
type holeSet struct {
	mu    sync.Mutex
	ids   []int32 // hole nodes, by address
	bytes atomic.Uintptr
}

// index returns the position of the first hole at or after addr. pg must
// cover the holes' nodes. holes.mu held.
func (hs *holeSet) index(pg nodePages, addr uintptr) int {
	return sort.Search(len(hs.ids), func(i int) bool { return pg.at(hs.ids[i]).addr >= addr })
}

func (hs *holeSet) insert(pg nodePages, id int32) {
	i := hs.index(pg, pg.at(id).addr)
	hs.ids = append(hs.ids, 0)
	copy(hs.ids[i+1:], hs.ids[i:])
	hs.ids[i] = id
}

func (hs *holeSet) remove(pg nodePages, id int32) {
	i := hs.index(pg, pg.at(id).addr)
	if i < len(hs.ids) && hs.ids[i] == id {
		hs.ids = append(hs.ids[:i], hs.ids[i+1:]...)
	}
}

// AddReservedChunk adds the chunk [base, base+size) as one hole: address
// space that holds no memory until Fill maps some of it in.
func (h *Heap) AddReservedChunk(base, size uintptr) {
	h.holes.mu.Lock()
	defer h.holes.mu.Unlock()
	h.addChunk(nil, base, size) // a free block of the default stream's list in shard 0 ...
	l := h.eng.List(h.eng.Default(), 0)
	l.Mu.Lock()
	id := h.chunks.Load().find(base).first
	pg := h.nodes.load()
	n := pg.at(id)
	l.remove(pg, n) // ... made a hole at once
	l.Free.Add(^(n.size - 1))
	n.owner.Store(holeOwner)
	l.Mu.Unlock()
	h.holes.insert(pg, id)
	h.holes.bytes.Add(size)
}

// IsNoRoom reports whether err is the heap's answer to a request that no
// free block can serve, in a heap that does not grow: the caller may add
// memory (Fill) and ask again.
func IsNoRoom(err error) bool { return errors.Is(err, errNoRoom) }

// HoleBytes returns the bytes of the heap's holes.
func (h *Heap) HoleBytes() uintptr { return h.holes.bytes.Load() }

// HoleInfo is one hole and the free memory that touches it: FreeBefore
// bytes of free blocks (of any lists) end at its start, FreeAfter begin at
// its end.
type HoleInfo struct {
	Span
	FreeBefore, FreeAfter uintptr
}

// Holes describes every hole, in address order. It flushes the magazines
// first, so that the free memory it counts is what a request could merge.
func (h *Heap) Holes() []HoleInfo { return h.holesBeside(0) }

// HolesFor is Holes counting only the free memory that memory Fill makes
// free on stream s would merge with: that of s's home list. A stream the
// heap cannot look up counts none.
func (h *Heap) HolesFor(s cudart.Stream) []HoleInfo {
	sl, err := h.eng.Lookup(s)
	if err != nil {
		return h.holesBeside(-1)
	}
	return h.holesBeside(h.eng.HomeOf(sl).ID)
}

// holesBeside describes the holes, counting beside each the free blocks of
// the list owner (0: of any list; -1: of none) among the lists it locked.
func (h *Heap) holesBeside(owner int32) []HoleInfo {
	h.holes.mu.Lock()
	defer h.holes.mu.Unlock()
	ls := h.eng.LockAll()
	defer streamorder.UnlockAll(ls)
	for _, l := range ls {
		h.magFlushAll(l)
	}
	// Only the lists locked here: a list made since (a new shard's) may be
	// changing its nodes, and its free memory is left out.
	locked := make(map[int32]bool, len(ls))
	for _, l := range ls {
		locked[l.ID] = true
	}
	counts := func(o int32) bool { return o > 0 && (owner == 0 || o == owner) && locked[o] }
	pg := h.nodes.load()
	out := make([]HoleInfo, len(h.holes.ids))
	for i, id := range h.holes.ids {
		n := pg.at(id)
		hi := HoleInfo{Span: Span{n.addr, n.size}}
		for p := n.prev.Load(); p != 0 && counts(pg.at(p).owner.Load()); p = pg.at(p).prev.Load() {
			hi.FreeBefore += pg.at(p).size
		}
		for q := n.next; q != 0 && counts(pg.at(q).owner.Load()); q = pg.at(q).next {
			hi.FreeAfter += pg.at(q).size
		}
		out[i] = hi
	}
	return out
}

// splitAt splits node id at address a, inside it: the node keeps
// [addr, a), a new node with the same owner and seq takes the rest. It
// returns the new node; reload the page table after it. The locks that
// guard the node are held, and l's.
func (h *Heap) splitAt(l *freeList, id int32, a uintptr) int32 {
	h.spareNode(l)
	rid := l.spare[len(l.spare)-1]
	l.spare = l.spare[:len(l.spare)-1]
	pg := h.nodes.load()
	n, r := pg.at(id), pg.at(rid)
	r.addr, r.size, r.seq, r.chunk, r.next = a, n.addr+n.size-a, n.seq, n.chunk, n.next
	r.prev.Store(id)
	r.owner.Store(n.owner.Load())
	if n.next != 0 {
		pg.at(n.next).prev.Store(rid)
	}
	n.next, n.size = rid, a-n.addr
	return rid
}

// Fill makes [addr, addr+size), which lies inside one hole (memory the
// caller has just mapped there), free memory of stream s, as if freed on s
// now: it goes into s's home list and merges with the free memory beside
// it. With want > 0 it then allocates want
// bytes (a multiple of 256) from that list and returns the address, or 0
// when the list has no block that large (the memory stays free).
func (h *Heap) Fill(s cudart.Stream, addr, size, want uintptr) (uintptr, error) {
	h.holes.mu.Lock()
	defer h.holes.mu.Unlock()
	var sl *streamorder.Lists[freeList]
	var l *freeList
	for {
		var err error
		if sl, err = h.eng.Lookup(s); err != nil {
			return 0, err
		}
		l = h.eng.HomeOf(sl) // whole granules: large memory lives there
		l.Mu.Lock()
		if !l.Retired {
			break
		}
		l.Mu.Unlock() // the stream's lists were dropped meanwhile
	}
	pg := h.nodes.load()
	i := h.holes.index(pg, addr+1) - 1
	if i < 0 || size == 0 || addr%Unit != 0 || size%Unit != 0 {
		l.Mu.Unlock()
		return 0, fmt.Errorf("%s: %w: internal error: [%#x, %#x) is not in a hole", h.kind, errs.BadAlloc, addr, addr+size)
	}
	id := h.holes.ids[i]
	if n := pg.at(id); addr < n.addr || addr+size > n.addr+n.size {
		l.Mu.Unlock()
		return 0, fmt.Errorf("%s: %w: internal error: [%#x, %#x) is not in a hole", h.kind, errs.BadAlloc, addr, addr+size)
	}
	if pg.at(id).addr < addr {
		id = h.splitAt(l, id, addr) // the hole keeps what lies before
		pg = h.nodes.load()
	} else {
		h.holes.ids = append(h.holes.ids[:i], h.holes.ids[i+1:]...)
	}
	if n := pg.at(id); n.addr+n.size > addr+size {
		rest := h.splitAt(l, id, addr+size) // and what lies after
		pg = h.nodes.load()
		h.holes.insert(pg, rest)
	}
	pg.at(id).owner.Store(0) // an allocated block, now freed:
	h.insertFree(l, id, sl.St.Epoch.Load())
	h.holes.bytes.Add(^(size - 1))
	var got int32
	if want > 0 {
		got = h.carve(l, want, false)
	}
	l.Mu.Unlock()
	// The new memory is fresh in the list: settle it, so that other
	// streams need not map more, as a pool's growth does.
	h.eng.SettleNow(sl, s, true)
	if got == 0 {
		return 0, nil
	}
	return h.publish(got, want)
}

// Dig turns every range of whole granules (multiples of gran, at multiples
// of gran) that lies in free memory, of whatever lists, into holes, and
// returns those ranges in address order. Live blocks do not move; the free
// memory around the ranges stays in its lists. The caller synchronizes the
// device before it unmaps the ranges: memory freed in stream order may still
// be in use by queued work.
func (h *Heap) Dig(gran uintptr) []Span {
	h.holes.mu.Lock()
	defer h.holes.mu.Unlock()
	ls := h.eng.LockAll()
	defer streamorder.UnlockAll(ls)
	if len(ls) == 0 {
		return nil
	}
	byID := make(map[int32]*freeList, len(ls))
	var free []int32
	for _, l := range ls {
		byID[l.ID] = l
		h.magFlushAll(l) // a granule is wholly free only once its blocks merged
	}
	pg := h.nodes.load()
	for _, l := range ls {
		l.each(pg, func(id int32, _ *node) { free = append(free, id) })
	}
	sort.Slice(free, func(i, j int) bool { return pg.at(free[i]).addr < pg.at(free[j]).addr })
	var dug []Span
	for i := 0; i < len(free); {
		// A run of free blocks, one after the other in the chunk.
		j, end := i, pg.at(free[i]).addr+pg.at(free[i]).size
		for j+1 < len(free) && pg.at(free[j]).next == free[j+1] {
			j++
			end = pg.at(free[j]).addr + pg.at(free[j]).size
		}
		gs := (pg.at(free[i]).addr + gran - 1) / gran * gran
		ge := end / gran * gran
		if ge > gs {
			h.dig(ls[0], byID, free[i:j+1], gs, ge)
			pg = h.nodes.load()
			dug = append(dug, Span{gs, ge - gs})
			h.holes.bytes.Add(ge - gs)
		}
		i = j + 1
	}
	return dug
}

// dig makes [gs, ge), which the run of free blocks run covers, one hole,
// merged with the holes around it. spare gives node ids back. Every lock
// is held.
func (h *Heap) dig(spare *freeList, byID map[int32]*freeList, run []int32, gs, ge uintptr) {
	pg := h.nodes.load()
	first := int32(0)
	for _, id := range run {
		n := pg.at(id)
		if n.addr+n.size <= gs || n.addr >= ge {
			continue
		}
		l := byID[n.owner.Load()]
		l.remove(pg, n)
		l.Free.Add(^(n.size - 1))
		if n.addr < gs { // the part before stays free
			rid := h.splitAt(l, id, gs)
			pg = h.nodes.load()
			l.insert(pg.at(id), id)
			l.Free.Add(pg.at(id).size)
			id, n = rid, pg.at(rid)
		}
		if end := n.addr + n.size; end > ge { // and the part after
			rid := h.splitAt(l, id, ge)
			pg = h.nodes.load()
			n = pg.at(id)
			l.insert(pg.at(rid), rid)
			l.Free.Add(pg.at(rid).size)
		}
		n.owner.Store(holeOwner)
		if first == 0 {
			first = id
		}
	}
	// One hole for the range, and for the holes it touches.
	x := pg.at(first)
	if p := x.prev.Load(); p != 0 && pg.at(p).owner.Load() == holeOwner {
		h.holes.remove(pg, p) // re-inserted below, grown
		first, x = p, pg.at(p)
	}
	for x.next != 0 && pg.at(x.next).owner.Load() == holeOwner {
		mid := x.next
		m := pg.at(mid)
		h.holes.remove(pg, mid)
		x.size += m.size
		x.next = m.next
		if m.next != 0 {
			pg.at(m.next).prev.Store(first)
		}
		h.recycle(pg, spare, mid)
	}
	h.holes.insert(pg, first)
}
