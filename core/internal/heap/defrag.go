package heap

import (
	"github.com/rmmgo/rmmgo/core/internal/streamorder"
	"github.com/rmmgo/rmmgo/cudart"
)

// movable returns the bytes of l that defrag may move into a list of
// stream st: all of them for st's own lists and the legacy default
// stream's, the settled ones for other streams'.
func movable(l *freeList, st *streamorder.State) uintptr {
	if l.St == st || l.St.Durable() {
		return l.Free.Load()
	}
	return l.Settled.Load()
}

// worthDefrag reports whether merging the movable memory of every list
// into own could serve size bytes: the lists hold that much, and not all of
// it in own (which is coalesced already).
func (h *Heap) worthDefrag(own *freeList, size uintptr) bool {
	var total, others uintptr
	for _, l := range h.eng.AllLists() {
		n := movable(l, own.St)
		total += n
		if l != own {
			others += n
		}
	}
	return total >= size && others > 0
}

// usableBy returns the free bytes a request of stream st could use once
// ordered after the streams that freed them (what defrag may move), the
// blocks waiting in the front included.
func (h *Heap) usableBy(st *streamorder.State) uintptr {
	_, n := h.frontHeld()
	for _, l := range h.eng.AllLists() {
		n += movable(l, st)
	}
	return n
}

// UsableBy is usableBy for stream s (0 when s is not alive).
func (h *Heap) UsableBy(s cudart.Stream) uintptr {
	sl, err := h.eng.Lookup(s)
	if err != nil {
		return 0
	}
	return h.usableBy(sl.St)
}

// quietFreeBytes is freeBytes once no defragmentation is under way (one
// empties every list before it refills its own, so a sum taken meanwhile
// can miss the whole heap).
func (h *Heap) quietFreeBytes() uintptr {
	h.defragMu.Lock()
	defer h.defragMu.Unlock()
	return h.FreeBytes()
}

// own, ordering own's stream (s, the caller's) after every stream whose
// memory it takes, coalesces them and carves size bytes. It returns 0 when
// that still does not fit.
func (h *Heap) defrag(s cudart.Stream, own *freeList, size uintptr) (int32, error) {
	h.defragMu.Lock()
	defer h.defragMu.Unlock()
	ls := h.eng.LockAll()
	defer streamorder.UnlockAll(ls)
	if own.Retired {
		return 0, streamorder.ErrRetry
	}
	st := own.St
	for _, l := range ls {
		if l.St == st || l.St.Durable() {
			h.magFlushAll(l) // all of it moves (the others' magazines are fresh)
		}
	}
	pg := h.nodes.load()
	// The blocks to move, and the latest free among them per stream.
	var ids []int32
	latest := map[*streamorder.State]uint64{}
	for _, l := range ls {
		if movable(l, st) == 0 {
			continue
		}
		collect := func(id int32, n *node) {
			ids = append(ids, id)
			if n.seq >= latest[l.St] {
				latest[l.St] = n.seq
			}
		}
		if l.St == st || l.St.Durable() {
			l.each(pg, collect)
		} else if l.set != nil {
			l.set.each(pg, l.ID, collect)
		}
	}
	for o, seq := range latest {
		if err := h.eng.OrderAfter(s, st, o, seq); err != nil {
			return 0, err // nothing moved yet
		}
	}
	var total uintptr
	for _, l := range ls {
		switch {
		case l.St == st || l.St.Durable():
			total += l.Free.Load()
			l.clear()
		case l.Settled.Load() != 0:
			total += l.Settled.Load()
			l.clearSettled()
		}
	}
	seq := st.Epoch.Load() // fresh in own: others must order after own's stream
	for _, id := range ids {
		n := pg.at(id)
		n.owner.Store(own.ID)
		n.seq = seq
	}
	for _, id := range ids {
		n := pg.at(id)
		if n.owner.Load() != own.ID {
			continue // merged into its predecessor already
		}
		for n.next != 0 {
			m := pg.at(n.next)
			if m.owner.Load() != own.ID {
				break
			}
			mid := n.next
			n.size += m.size
			n.next = m.next
			if m.next != 0 {
				pg.at(m.next).prev.Store(id)
			}
			h.recycle(pg, own, mid)
		}
	}
	for _, id := range ids {
		if n := pg.at(id); n.owner.Load() == own.ID {
			own.insert(n, id)
		}
	}
	own.Free.Store(total)
	h.eng.Sweep(ls, own)
	return h.carve(own, size, false), nil
}
