package heap

import "github.com/rmmgo/rmmgo/core/internal/cachepolicy"

// Deferred coalescing: the magazine of a free list.
//
// A random free in a large heap misses the cache on the freed block's node
// and on both of its physical neighbours' nodes (to merge with them), and
// the allocation that reuses the memory misses on them again. Most freed
// blocks of a workload are reused soon by an allocation of the same size,
// for which the merge and the split that follows are wasted work. So a
// free of a block up to magMaxUnits puts the block, as it is, into its
// list's magazine: a stack per exact size (in 256-byte units), kept in
// a ring in free order. An allocation on the list takes a block of exactly
// its rounded size from the magazine before it looks at the coalesced
// index. Neither touches the block's node: the magazine entry holds what
// the allocation needs (address, chunk, size), and the index slot holds the
// size (see leafWord and bigWord).
//
// A block in a magazine is allocated as far as the rest of the heap can
// tell: its node's owner stays 0, so no neighbour merges with it, and its
// index slot is empty, so a second free of it fails at once. Its bytes
// count in its list's free bytes (UsedBytes, the hints, the stream sweep
// see them). The magazine is flushed, oldest blocks first, into the
// coalescing index (insertFree with the seq of the free) whenever
// something other than the list's own allocations needs its real free
// memory:
//
//   - the list cannot serve an allocation from its index (before another
//     list, a defragmentation or a growth is tried: the heap never grows
//     while a magazine could serve the request once merged);
//   - the list settles (its blocks become usable by other streams);
//   - a defragmentation moves the list's memory, ReleaseChunks takes
//     chunks back, Stats describes the heap;
//   - another stream takes memory from the list (the legacy default
//     stream's lists, whose blocks any stream may take after a wait);
//   - the magazine would hold more than its quota, its share of the
//     heap's magazine budget, and the budget has no room left for it (then
//     down to half of the quota), or its ring is full (then down to half
//     of that).
//
// Best fit therefore holds among coalesced blocks: a block in a magazine
// serves only a request of exactly its size, and joins the best-fit search
// when a request finds no fitting block in the index (the flush comes
// first).
//
// Stream order: a list belongs to one stream, and its magazine holds only
// blocks freed on that stream, which the stream may reuse at once. Other
// streams see them only after a flush, through the settle/record/wait
// machinery, exactly as blocks freed into the index. A magazine is only
// touched under its list's lock.

// MagazineMaxBlock is the largest block a magazine takes: 1 MiB.
const MagazineMaxBlock = magMaxUnits << UnitShift

const (
	magMaxUnits = 4096 // blocks up to 1 MiB go through the magazine
	magMinRing  = 64   // ring entries at first; doubled as needed
	magMaxRing  = 4096 // ring entries at most
	magBatch    = 32   // blocks inserted together by a flush
)

// The budget. All the magazines of a heap together hold at most
// cachepolicy.Magazines(heap size) bytes. Each magazine holds a quota of
// that budget, reserved from the heap's account (magAvail) a
// cachepolicy.Quantum at a time when a free would take it past its quota,
// and given back when the magazine empties; so the shared account is
// touched about once per quantum of frees, not on every free. A magazine
// that cannot reserve more flushes its oldest blocks instead.

// magEntry is one block in a magazine.
type magEntry struct {
	addr  uintptr
	seq   uint64 // the free's sequence number on the list's stream
	older uint64 // ring position+1 of the next older entry of the same size; 0: none
	id    int32  // the block's node; 0: taken by an allocation
	chunk int32
	units uint32
}

// magazine is a list's blocks freed and not coalesced yet. Entries sit in a
// ring at increasing positions (free order); positions below head were
// flushed. Each size's entries form a stack (top, older), newest first: an
// allocation only ever takes the top of a stack, so no live entry refers to
// a taken one, and a reference below head means the stack is empty.
type magazine struct {
	ring       []magEntry // len is a power of two
	head, tail uint64
	bytes      uintptr // bytes of the live entries
	quota      uintptr // bytes of the heap's magazine budget this magazine holds (>= bytes)
	count      int     // live entries
	top        [magMaxUnits + 1]uint64
}

// magPut puts the block id (size bytes at addr), freed on l's stream with
// sequence number seq, into l's magazine; or into l's index when the heap
// has no magazines or the block is too large. l.Mu is held.
func (h *Heap) magPut(l *freeList, id int32, addr uintptr, size uintptr, seq uint64) {
	u := size >> UnitShift
	if !h.mags || u > magMaxUnits {
		h.insertFree(l, id, seq)
		return
	}
	m := l.mag
	if m == nil {
		m = &magazine{ring: make([]magEntry, magMinRing)}
		l.mag = m
	}
	if m.tail-m.head == uint64(len(m.ring)) {
		if len(m.ring) < magMaxRing {
			m.grow()
		} else {
			h.magFlush(l, ^uintptr(0), len(m.ring)/2)
		}
	}
	if m.bytes+size > m.quota && !h.magReserve(m, size) {
		// The heap's magazines hold their whole budget: make room in this
		// one by coalescing its oldest blocks.
		keep := m.quota / 2
		if keep+size > m.quota {
			keep = m.quota - min(m.quota, size)
		}
		h.magFlush(l, keep, len(m.ring))
		if m.bytes+size > m.quota {
			h.insertFree(l, id, seq)
			return
		}
	}
	pos := m.tail
	m.tail++
	m.ring[pos&uint64(len(m.ring)-1)] = magEntry{addr: addr, seq: seq, older: m.top[u], id: id, units: uint32(u)}
	m.top[u] = pos + 1
	m.bytes += size
	m.count++
	l.Free.Add(size)
}

// magReserve raises m's quota so that it can take size more bytes: by a
// quantum, or by what is missing when the budget has less left. false when
// the budget has no room. l.Mu is held.
func (h *Heap) magReserve(m *magazine, size uintptr) bool {
	need := m.bytes + size - m.quota
	for _, want := range [2]uintptr{max(need, cachepolicy.Quantum), need} {
		for {
			avail := h.magAvail.Load()
			if avail < int64(want) {
				break
			}
			if h.magAvail.CompareAndSwap(avail, avail-int64(want)) {
				m.quota += want
				return true
			}
		}
	}
	return false
}

// magRelease gives the part of m's quota above keep back to the heap's
// budget. l.Mu is held.
func (h *Heap) magRelease(m *magazine, keep uintptr) {
	keep = max(keep, m.bytes)
	if m.quota > keep {
		h.magAvail.Add(int64(m.quota - keep))
		m.quota = keep
	}
}

// setMagBudget sets the magazines' budget for a heap of size bytes.
// h.chunkMu is held (sizes change under it, so budgets are set in order).
func (h *Heap) setMagBudget(size uintptr) {
	b := cachepolicy.Magazines(size)
	old := h.magBudget.Swap(b)
	h.magAvail.Add(int64(b) - int64(old))
}

// grow doubles the ring; positions stay.
func (m *magazine) grow() {
	nr := make([]magEntry, 2*len(m.ring))
	for p := m.head; p < m.tail; p++ {
		nr[p&uint64(len(nr)-1)] = m.ring[p&uint64(len(m.ring)-1)]
	}
	m.ring = nr
}

// magTake takes a block of exactly size bytes from l's magazine and
// returns its node and address; id 0 when there is none. l.Mu is held.
func (l *freeList) magTake(size uintptr) (id int32, addr uintptr) {
	m, u := l.mag, size>>UnitShift
	if m == nil || u > magMaxUnits {
		return 0, 0
	}
	t := m.top[u]
	if t == 0 {
		return 0, 0
	}
	if t-1 < m.head {
		m.top[u] = 0 // flushed
		return 0, 0
	}
	e := &m.ring[(t-1)&uint64(len(m.ring)-1)]
	id, addr = e.id, e.addr
	m.top[u] = e.older
	e.id = 0
	// The newest entries taken leave the ring at once, so that a free and
	// an allocation in turn reuse one entry rather than fill the ring.
	for m.tail > m.head && m.ring[(m.tail-1)&uint64(len(m.ring)-1)].id == 0 {
		m.tail--
	}
	m.bytes -= size
	m.count--
	l.Free.Add(^(size - 1))
	return id, addr
}

// magFlush inserts the oldest blocks of l's magazine into l's index until
// it holds at most keepBytes bytes in at most keepSlots ring entries. l.Mu
// is held.
func (h *Heap) magFlush(l *freeList, keepBytes uintptr, keepSlots int) {
	m := l.mag
	if m == nil {
		return
	}
	var batch [magBatch]magEntry
	for m.head < m.tail && (m.bytes > keepBytes || m.tail-m.head > uint64(keepSlots)) {
		n := 0
		for n < magBatch && m.head < m.tail && (m.bytes > keepBytes || m.tail-m.head > uint64(keepSlots)) {
			e := &m.ring[m.head&uint64(len(m.ring)-1)]
			m.head++
			if e.id == 0 {
				continue // taken
			}
			batch[n] = *e
			n++
			m.bytes -= uintptr(e.units) << UnitShift
			m.count--
		}
		h.insertBatch(l, batch[:n], true)
	}
	if m.head == m.tail {
		// Empty: start over at the ring's beginning (positions only grow,
		// so the stale tops stay below head).
		m.bytes, m.count = 0, 0
	}
}

// insertBatch inserts the allocated blocks of batch (from l's magazine,
// whose bytes l.Free counts already, when counted is set; else from a
// front) into l's index. The blocks' nodes and their neighbours' are read
// first, all of them, before any is used: the loads do not depend on one
// another, so the processor overlaps their cache misses, where inserting
// the blocks one after the other would wait for each miss in turn. l.Mu
// is held.
func (h *Heap) insertBatch(l *freeList, batch []magEntry, counted bool) {
	pg := h.nodes.load()
	var nb [2 * magBatch]int32
	for i, e := range batch {
		n := pg.at(e.id)
		nb[2*i], nb[2*i+1] = n.prev.Load(), n.next
	}
	var sink int32
	for _, id := range nb[:2*len(batch)] {
		// A predecessor may be newer than pg (insertFree reads the page
		// table again); skip it here.
		if id != 0 && int(id>>nodePageBits) < len(pg) {
			sink += pg.at(id).owner.Load()
		}
	}
	l.sink += sink
	for _, e := range batch {
		if counted {
			l.Free.Add(^(uintptr(e.units)<<UnitShift - 1)) // insertFree counts it again
		}
		h.insertFree(l, e.id, e.seq)
	}
}

// magFlushAll empties l's magazine into its index, and gives its quota
// back but one quantum, for the next frees. l.Mu is held.
func (h *Heap) magFlushAll(l *freeList) {
	if l.mag != nil && l.mag.head != l.mag.tail {
		h.magFlush(l, 0, 0)
	}
	if l.mag != nil {
		h.magRelease(l.mag, cachepolicy.Quantum)
	}
}

// magClear forgets l's magazine blocks (the caller disposes of their
// memory: Close, ReleaseChunks of every chunk) and gives its quota back.
// l.Mu is held.
func (h *Heap) magClear(l *freeList) {
	if m := l.mag; m != nil {
		m.head, m.bytes, m.count = m.tail, 0, 0
		h.magRelease(m, 0)
	}
}
