package heap

import (
	"math/bits"

	"github.com/rmmgo/rmmgo/core/internal/streamorder"
)

// freeList is one stream's free list in one shard. Its blocks are indexed
// in two parts: fresh blocks (seq >= cut: freed since the stream's last
// settle, usable by the stream itself only) in the embedded classIndex, and
// settled ones (seq < cut: other streams may take them after waiting on the
// stream's event) in set. Which part holds a block follows from its seq, so
// nothing else records it.
type freeList struct {
	streamorder.List
	classIndex             // fresh blocks
	set        *classIndex // settled blocks; nil until the stream first settles
	spare      []int32     // unused node ids
	mag        *magazine   // blocks freed and not coalesced yet (magazine.go); nil until used
	sink       int32       // keeps insertBatch's cache warm-up loads alive
}

// insert files the free node id (owned by l) in its part of l.
func (l *freeList) insert(n *node, id int32) {
	x := &l.classIndex
	if n.seq < l.Cut {
		x = l.set
		l.Settled.Add(n.size)
	}
	c := classOf(n.size >> UnitShift)
	x.stacks[c] = append(x.stacks[c], classEntry{id, n.stamp})
	x.counted(c)
}

// remove takes the free node n out of its size class (its entry goes
// stale). n.size and n.seq must be those it was filed with.
func (l *freeList) remove(pg nodePages, n *node) { l.removeAs(pg, n, n.size, n.seq) }

// removeAs is remove for a node filed with size and seq (it may have
// changed since).
func (l *freeList) removeAs(pg nodePages, n *node, size uintptr, seq uint64) {
	c := classOf(size >> UnitShift)
	n.stamp++
	if seq >= l.Cut {
		l.classIndex.dropLive(pg, l.ID, c)
		return
	}
	l.set.dropLive(pg, l.ID, c)
	l.Settled.Add(^(size - 1))
}

// find picks the block take would take, without taking it, from either
// part (the part whose smallest fitting class is smaller first), or from
// the settled part only: the part, the block's class, its position there
// and its node; id 0 when there is none.
func (l *freeList) find(pg nodePages, u uintptr, settledOnly bool) (*classIndex, int, int, int32) {
	s := l.set
	if s == nil || s.top == 0 {
		if settledOnly {
			return nil, 0, 0, 0
		}
		c, i, id := l.classIndex.find(pg, l.ID, u)
		return &l.classIndex, c, i, id
	}
	if !settledOnly && l.classIndex.top != 0 && l.classIndex.fit(u) <= s.fit(u) {
		if c, i, id := l.classIndex.find(pg, l.ID, u); id != 0 {
			return &l.classIndex, c, i, id
		}
	}
	if c, i, id := s.find(pg, l.ID, u); id != 0 {
		return s, c, i, id
	}
	if settledOnly {
		return nil, 0, 0, 0
	}
	c, i, id := l.classIndex.find(pg, l.ID, u)
	return &l.classIndex, c, i, id
}

// popAt takes the block find returned out of part x.
func (l *freeList) popAt(pg nodePages, x *classIndex, c, i int, id int32) {
	x.popAt(pg, l.ID, c, i)
	if x == l.set {
		l.Settled.Add(^(pg.at(id).size - 1))
	}
}

// take removes and returns a free block of at least u units from either
// part, or from the settled part only; 0 when there is none.
func (l *freeList) take(pg nodePages, u uintptr, settledOnly bool) int32 {
	x, c, i, id := l.find(pg, u, settledOnly)
	if id != 0 {
		l.popAt(pg, x, c, i, id)
	}
	return id
}

// each calls fn for every free block of the list.
func (l *freeList) each(pg nodePages, fn func(id int32, n *node)) {
	l.classIndex.each(pg, l.ID, fn)
	if l.set != nil {
		l.set.each(pg, l.ID, fn)
	}
}

// clear empties the list's index (the nodes are the caller's business; its
// magazine is emptied first, or forgotten with magClear).
func (l *freeList) clear() {
	l.classIndex.reset()
	if l.set != nil {
		l.set.reset()
	}
	l.Free.Store(0)
	l.Settled.Store(0)
}

// clearSettled empties the settled part (the nodes are the caller's
// business).
func (l *freeList) clearSettled() {
	if l.set == nil {
		return
	}
	l.set.reset()
	l.Free.Add(^(l.Settled.Load() - 1))
	l.Settled.Store(0)
}

// settle moves the fresh blocks freed before cut to the settled part and
// sets l.Cut to cut. l.Mu is held; cut > l.Cut.
func (l *freeList) settle(pg nodePages, cut uint64) {
	l.Cut = cut
	if l.set == nil {
		l.set = new(classIndex) // blocks with seq < cut go there from now on
	}
	if l.classIndex.top == 0 {
		return
	}
	x, s := &l.classIndex, l.set
	for w := 0; w < classWords; w++ {
		for m := x.words[w]; m != 0; m &= m - 1 {
			c := w<<6 + bits.TrailingZeros64(m)
			st := x.stacks[c]
			k := 0
			for _, e := range st {
				n := pg.at(e.id)
				switch {
				case !entryValid(l.ID, n, e):
					// stale: drop it
				case n.seq < cut:
					s.stacks[c] = append(s.stacks[c], e)
					s.counted(c)
					l.Settled.Add(n.size)
					x.live[c]--
				default:
					st[k] = e
					k++
				}
			}
			clear(st[k:])
			x.stacks[c] = st[:k]
			if x.live[c] == 0 {
				x.words[w] &^= 1 << (c & 63)
				x.stacks[c] = x.stacks[c][:0]
			}
		}
		if x.words[w] == 0 {
			x.top &^= 1 << w
		}
	}
}
