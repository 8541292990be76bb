package core

import (
	"errors"
	"fmt"
	"math/bits"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/cudart"
)

// The coalescing block heap behind the pool and the arena's global arena.
//
// Memory comes in chunks (one upstream allocation each). A chunk is tiled
// by blocks, free or allocated, each described by a node; nodes link to
// their neighbours in the chunk (boundary tags), so a free merges with free
// neighbours in constant time, and never across chunks. Free blocks sit in
// the free lists of the stream-ordered engine, each in two parts (fresh
// and settled, see heapList); each part is a two-level segregated fit
// index (TLSF): 64 exact size classes for blocks up to
// 16 KiB, then 32 classes per power of two, with a bitmap of the non-empty
// classes, so finding the smallest class that holds a fitting block is a
// few bit operations whatever the number of blocks. Allocated blocks are
// found from their address through per-chunk tables: one slot per 256-byte
// unit for blocks under 64 KiB, one per 64 KiB region for larger ones.
// Frees of blocks up to 1 MiB are coalesced late, through the lists'
// magazines (magazine.go), where the pool enables them.
//
// Nodes live in pages of a node store and are named by int32 ids, so the
// heap holds no Go pointers per block and costs the garbage collector
// nothing however many blocks it has.
//
// Concurrency: a free block's node changes only under its list's lock. A
// node's physical-predecessor link (prev) may be rewritten by the lock
// holder of the list that owns the node before it; owner and prev are
// relaxed shared words (free_list_norace.go). Under its own lock a list
// merges a block with a neighbour only when the neighbour's owner is that
// list, which nobody else can change, so a stale read of a neighbour owned
// by another list is harmless.

const (
	unitShift    = 8 // blocks are multiples of 256 bytes
	exactClasses = 64
	slBits       = 5
	numClasses   = exactClasses + (64-unitShift-6)<<slBits
	classWords   = numClasses / 64
)

// classOf returns the size class of a block of u units (256 bytes each).
func classOf(u uintptr) int {
	if u < exactClasses {
		return int(u)
	}
	fl := bits.Len64(uint64(u)) - 1
	sl := int(u>>(fl-slBits)) & (1<<slBits - 1)
	return exactClasses + (fl-6)<<slBits + sl
}

// classLow returns the smallest size, in units, of class c.
func classLow(c int) uintptr {
	if c < exactClasses {
		return uintptr(c)
	}
	fl := (c-exactClasses)>>slBits + 6
	sl := (c - exactClasses) & (1<<slBits - 1)
	return uintptr(1<<slBits+sl) << (fl - slBits)
}

// node describes one block.
type node struct {
	addr  uintptr
	size  uintptr
	seq   uint64       // free sequence number on the owner list's stream
	prev  relaxedInt32 // physical predecessor in the chunk; 0: none
	owner relaxedInt32 // id of the list holding the free block; 0: allocated; -1: unused
	next  int32        // physical successor in the chunk; 0: none
	stamp uint32       // bumped whenever the block leaves its size class
	chunk int32
}

const (
	nodePageBits = 12
	nodePageSize = 1 << nodePageBits
)

type nodePage [nodePageSize]node

// nodePages is a snapshot of the node store's page table. Pages never
// move, so an old snapshot stays valid for the nodes it covers.
type nodePages []*nodePage

func (p nodePages) at(id int32) *node { return &p[id>>nodePageBits][id&(nodePageSize-1)] }

// nodeStore hands out node ids. Lists keep a few spare ids each and come
// here in batches.
type nodeStore struct {
	pages atomic.Pointer[nodePages]
	mu    sync.Mutex
	next  int32
	free  []int32
}

func (s *nodeStore) init() {
	p := nodePages{new(nodePage)}
	s.pages.Store(&p)
	s.next = 1 // id 0 means none
}

func (s *nodeStore) load() nodePages { return *s.pages.Load() }

// get appends n unused ids to dst.
func (s *nodeStore) get(dst []int32, n int) []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ; n > 0 && len(s.free) > 0; n-- {
		dst = append(dst, s.free[len(s.free)-1])
		s.free = s.free[:len(s.free)-1]
	}
	for ; n > 0; n-- {
		p := *s.pages.Load()
		if int(s.next) >= len(p)*nodePageSize {
			np := append(append(make(nodePages, 0, len(p)+1), p...), new(nodePage))
			s.pages.Store(&np)
		}
		dst = append(dst, s.next)
		s.next++
	}
	return dst
}

// put returns ids to the store.
func (s *nodeStore) put(ids []int32) {
	s.mu.Lock()
	s.free = append(s.free, ids...)
	s.mu.Unlock()
}

// classIndex is a segregated-fit index of free blocks: each size class is
// a stack of (node, stamp) entries; taking a block out of its class (to
// merge it, or when the list is rebuilt) only bumps the node's stamp, which
// makes its entry stale, so neither inserting nor removing touches any other
// node. Stale entries are dropped when they reach the top of their stack,
// or all at once when a stack holds more stale entries than live ones.
type classIndex struct {
	top    uint32             // bit w: words[w] != 0
	words  [classWords]uint64 // bit c: live[c] != 0
	live   [numClasses]int32  // valid entries per class
	stacks [numClasses][]classEntry
}

// heapList is one stream's free list in one shard. Its blocks are indexed
// in two parts: fresh blocks (seq >= cut: freed since the stream's last
// settle, usable by the stream itself only) in the embedded classIndex, and
// settled ones (seq < cut: other streams may take them after waiting on the
// stream's event) in set. Which part holds a block follows from its seq, so
// nothing else records it.
type heapList struct {
	listBase
	classIndex             // fresh blocks
	set        *classIndex // settled blocks; nil until the stream first settles
	spare      []int32     // unused node ids
	mag        *magazine   // blocks freed and not coalesced yet (magazine.go); nil until used
}

type classEntry struct {
	id    int32
	stamp uint32
}

// entryValid reports whether entry e of a list with id owner still stands for
// node n. The owner is read first: only when it is the list is the node the
// list's (and its stamp stable).
func entryValid(owner int32, n *node, e classEntry) bool {
	return n.owner.Load() == owner && n.stamp == e.stamp
}

// counted counts one more valid entry in class c.
func (x *classIndex) counted(c int) {
	if x.live[c]++; x.live[c] == 1 {
		w := c >> 6
		x.words[w] |= 1 << (c & 63)
		x.top |= 1 << w
	}
}

// dropLive counts one valid entry of class c less.
func (x *classIndex) dropLive(pg nodePages, owner int32, c int) {
	if x.live[c]--; x.live[c] == 0 {
		w := c >> 6
		x.words[w] &^= 1 << (c & 63)
		if x.words[w] == 0 {
			x.top &^= 1 << w
		}
		clear(x.stacks[c])
		x.stacks[c] = x.stacks[c][:0]
		return
	}
	if s := x.stacks[c]; len(s) > 2*int(x.live[c])+64 {
		k := 0
		for _, e := range s {
			if entryValid(owner, pg.at(e.id), e) {
				s[k] = e
				k++
			}
		}
		clear(s[k:])
		x.stacks[c] = s[:k]
	}
}

// fit returns the smallest non-empty class from the class of u units up,
// or numClasses.
func (x *classIndex) fit(u uintptr) int {
	c := classOf(u)
	w := c >> 6
	m := x.words[w] & (^uint64(0) << (c & 63))
	if m == 0 {
		t := x.top & (^uint32(0) << (w + 1))
		if t == 0 {
			return numClasses
		}
		w = bits.TrailingZeros32(t)
		m = x.words[w]
	}
	return w<<6 + bits.TrailingZeros64(m)
}

// take removes and returns a free block of at least u units: the smallest
// for blocks up to 16 KiB, otherwise one from the smallest class all of
// whose blocks fit (the best of the first few in the request's own class
// first). It returns 0 when the index has none.
func (x *classIndex) take(pg nodePages, owner int32, u uintptr) int32 {
	c := classOf(u)
	if c >= exactClasses && classLow(c) != u {
		if x.live[c] > 0 {
			s := x.stacks[c]
			for !entryValid(owner, pg.at(s[len(s)-1].id), s[len(s)-1]) {
				s[len(s)-1] = classEntry{}
				s = s[:len(s)-1] // live[c] > 0: a valid entry stops this
			}
			x.stacks[c] = s
			// The best of the first few valid entries, looking at no more
			// than 16 (stale ones below the top stay for compaction).
			best, bestSize, seen := -1, ^uintptr(0), 0
			for i := len(s) - 1; i >= 0 && seen < 4 && i >= len(s)-16; i-- {
				n := pg.at(s[i].id)
				if !entryValid(owner, n, s[i]) {
					continue
				}
				seen++
				if sz := n.size >> unitShift; sz >= u && sz < bestSize {
					best, bestSize = i, sz
				}
			}
			if best >= 0 {
				id := s[best].id
				s[best] = s[len(s)-1]
				x.stacks[c] = s[:len(s)-1]
				pg.at(id).stamp++
				x.dropLive(pg, owner, c)
				return id
			}
		}
		if c++; c >= numClasses {
			return 0
		}
	}
	w := c >> 6
	m := x.words[w] & (^uint64(0) << (c & 63))
	if m == 0 {
		t := x.top & (^uint32(0) << (w + 1))
		if t == 0 {
			return 0
		}
		w = bits.TrailingZeros32(t)
		m = x.words[w]
	}
	c = w<<6 + bits.TrailingZeros64(m)
	s := x.stacks[c]
	for i := len(s) - 1; i >= 0; i-- {
		e := s[i]
		n := pg.at(e.id)
		if !entryValid(owner, n, e) {
			continue
		}
		s[i] = classEntry{}
		x.stacks[c] = s[:i]
		n.stamp++
		x.dropLive(pg, owner, c)
		return e.id
	}
	return 0 // not reached: live[c] > 0 means a valid entry
}

// each calls fn for every free block of the index.
func (x *classIndex) each(pg nodePages, owner int32, fn func(id int32, n *node)) {
	for w := 0; w < classWords; w++ {
		for m := x.words[w]; m != 0; m &= m - 1 {
			for _, e := range x.stacks[w<<6+bits.TrailingZeros64(m)] {
				if n := pg.at(e.id); entryValid(owner, n, e) {
					fn(e.id, n)
				}
			}
		}
	}
}

// reset empties the index (the nodes are the caller's business).
func (x *classIndex) reset() {
	x.top = 0
	x.words = [classWords]uint64{}
	x.live = [numClasses]int32{}
	for i := range x.stacks {
		x.stacks[i] = nil
	}
}

// insert files the free node id (owned by l) in its part of l.
func (l *heapList) insert(n *node, id int32) {
	x := &l.classIndex
	if n.seq < l.cut {
		x = l.set
		l.settled.Add(n.size)
	}
	c := classOf(n.size >> unitShift)
	x.stacks[c] = append(x.stacks[c], classEntry{id, n.stamp})
	x.counted(c)
}

// remove takes the free node n out of its size class (its entry goes
// stale). n.size and n.seq must be those it was filed with.
func (l *heapList) remove(pg nodePages, n *node) {
	c := classOf(n.size >> unitShift)
	n.stamp++
	if n.seq >= l.cut {
		l.classIndex.dropLive(pg, l.id, c)
		return
	}
	l.set.dropLive(pg, l.id, c)
	l.settled.Add(^(n.size - 1))
}

// take removes and returns a free block of at least u units from either
// part (the part whose smallest fitting class is smaller first), or from
// the settled part only; 0 when there is none.
func (l *heapList) take(pg nodePages, u uintptr, settledOnly bool) int32 {
	s := l.set
	if s == nil || s.top == 0 {
		if settledOnly {
			return 0
		}
		return l.classIndex.take(pg, l.id, u)
	}
	if !settledOnly && l.classIndex.top != 0 && l.classIndex.fit(u) <= s.fit(u) {
		if id := l.classIndex.take(pg, l.id, u); id != 0 {
			return id
		}
	}
	if id := s.take(pg, l.id, u); id != 0 {
		l.settled.Add(^(pg.at(id).size - 1))
		return id
	}
	if settledOnly {
		return 0
	}
	return l.classIndex.take(pg, l.id, u)
}

// each calls fn for every free block of the list.
func (l *heapList) each(pg nodePages, fn func(id int32, n *node)) {
	l.classIndex.each(pg, l.id, fn)
	if l.set != nil {
		l.set.each(pg, l.id, fn)
	}
}

// clear empties the list (the nodes are the caller's business).
func (l *heapList) clear() {
	l.magClear()
	l.classIndex.reset()
	if l.set != nil {
		l.set.reset()
	}
	l.free.Store(0)
	l.settled.Store(0)
}

// clearSettled empties the settled part (the nodes are the caller's
// business).
func (l *heapList) clearSettled() {
	if l.set == nil {
		return
	}
	l.set.reset()
	l.free.Add(^(l.settled.Load() - 1))
	l.settled.Store(0)
}

// settle moves the fresh blocks freed before cut to the settled part and
// sets l.cut to cut. l.mu is held; cut > l.cut.
func (l *heapList) settle(pg nodePages, cut uint64) {
	l.cut = cut
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
				case !entryValid(l.id, n, e):
					// stale: drop it
				case n.seq < cut:
					s.stacks[c] = append(s.stacks[c], e)
					s.counted(c)
					l.settled.Add(n.size)
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

const (
	leafBits  = 8 // 256 slots per leaf: a leaf (1 KiB) covers 64 KiB of a chunk
	leafSlots = 1 << leafBits
)

// An allocated block's slot holds its node id and, when they fit, its size
// in units, so that a free checks the size without reading the node, which
// a random free would miss in the cache. An empty slot is 0.
//
// Blocks under bigBlock have a leaf slot (32 bits, one per 256-byte unit):
// bit 31 set, the size in bits 23-30 and the id in bits 0-22; or, for an id
// of 2^23 or more, the id alone (claim reads the node).
type leaf [leafSlots]relaxedUint32

// Blocks of bigBlock bytes or more have their region's big slot (64 bits,
// one per 64 KiB): the id in bits 0-31, the size in bits 32-55 (0: too
// large, claim reads the node) and the block's unit within the region in
// bits 56-63. Two such blocks never start in the same 64 KiB region. The
// big slots (8 bytes per 64 KiB) stay in the cache where leaves holding
// one large block each, spread over the whole heap, do not.
const bigBlock = 1 << (unitShift + leafBits)

const leafPacked = 1 << 31

// leafWord packs the allocated block id of size bytes (under bigBlock) for
// its leaf slot.
func leafWord(id int32, size uintptr) uint32 {
	if id >= 1<<23 {
		return uint32(id)
	}
	return leafPacked | uint32(size>>unitShift)<<23 | uint32(id)
}

// bigWord packs the allocated block id of size bytes (at least bigBlock) at
// addr for its big slot.
func bigWord(id int32, size, addr uintptr) uint64 {
	u := uint64(size >> unitShift)
	if u >= 1<<24 {
		u = 0
	}
	return uint64(uint32(id)) | u<<32 | uint64(addr>>unitShift&(leafSlots-1))<<56
}

// slotRef is a slot of either kind and the word it held.
type slotRef struct {
	leaf *relaxedUint32
	big  *relaxedUint64
	w    uint64
}

// decode returns the id and the size (0: unknown) in r's word.
func (r slotRef) decode() (int32, uintptr) {
	if r.big != nil {
		return int32(uint32(r.w)), uintptr(r.w>>32&(1<<24-1)) << unitShift
	}
	if r.w&leafPacked == 0 {
		return int32(r.w), 0
	}
	return int32(r.w & (1<<23 - 1)), uintptr(r.w>>23&(leafSlots-1)) << unitShift
}

// clear empties the slot if it still holds r's word.
func (r slotRef) clear() bool {
	if r.big != nil {
		return r.big.CompareAndSwap(r.w, 0)
	}
	return r.leaf.CompareAndSwap(uint32(r.w), 0)
}

// restore puts r's word back.
func (r slotRef) restore() {
	if r.big != nil {
		r.big.Store(r.w)
	} else {
		r.leaf.Store(uint32(r.w))
	}
}

// chunk is one upstream allocation.
type chunk struct {
	base, size uintptr
	id         int32
	first      int32 // the node at base; it stays the first for the chunk's life
	leaves     []atomic.Pointer[leaf]
	big        []relaxedUint64 // per 64 KiB region: the block of at least bigBlock bytes starting there
}

// record fills the slot of the allocated block id of size bytes at addr.
func (c *chunk) record(id int32, addr, size uintptr) {
	if size >= bigBlock {
		c.big[(addr-c.base)>>(unitShift+leafBits)].Store(bigWord(id, size, addr))
		return
	}
	c.slot(addr, true).Store(leafWord(id, size))
}

// lookup returns the slot of the block starting at ptr, in the big slots
// (big set) or the leaves; its word is 0 when there is none.
func (c *chunk) lookup(ptr uintptr, big bool) slotRef {
	if big {
		sp := &c.big[(ptr-c.base)>>(unitShift+leafBits)]
		w := sp.Load()
		if w>>56 != uint64(ptr>>unitShift&(leafSlots-1)) {
			w = 0 // another block's, or none
		}
		return slotRef{big: sp, w: w}
	}
	sp := c.slot(ptr, false)
	if sp == nil {
		return slotRef{}
	}
	return slotRef{leaf: sp, w: uint64(sp.Load())}
}

// slot returns the leaf slot of the block starting at ptr, making its leaf
// when create is set; nil when there is none.
func (c *chunk) slot(ptr uintptr, create bool) *relaxedUint32 {
	off := ptr - c.base
	lp := &c.leaves[off>>(unitShift+leafBits)]
	lf := lp.Load()
	if lf == nil {
		if !create {
			return nil
		}
		lf = new(leaf)
		if !lp.CompareAndSwap(nil, lf) {
			lf = lp.Load()
		}
	}
	return &lf[(off>>unitShift)&(leafSlots-1)]
}

// chunkTable is the heap's chunks; never modified once published.
type chunkTable struct {
	bySize []*chunk  // the largest chunks, largest first: looked at first
	sorted []*chunk  // by base address
	bases  []uintptr // sorted[i].base, searched without touching the chunks
	byID   []*chunk  // by id; nil for released chunks
}

func (t *chunkTable) find(ptr uintptr) *chunk {
	// A pool grows by doubling, so the largest chunks hold most of its
	// memory: looking at them first finds most pointers in a step or two.
	for _, c := range t.bySize {
		if ptr-c.base < c.size {
			return c
		}
	}
	if i := searchBases(t.bases, ptr); i >= 0 && ptr-t.sorted[i].base < t.sorted[i].size {
		return t.sorted[i]
	}
	return nil
}

// index fills in bases and bySize from sorted.
func (t *chunkTable) index() {
	t.bases = basesOf(t.sorted, func(c *chunk) uintptr { return c.base })
	t.bySize = append([]*chunk(nil), t.sorted...)
	sort.SliceStable(t.bySize, func(i, j int) bool { return t.bySize[i].size > t.bySize[j].size })
	if len(t.bySize) > 4 {
		t.bySize = t.bySize[:4]
	}
}

// searchBases returns the index of the last of the sorted bases that is at
// most p, or -1.
func searchBases(bases []uintptr, p uintptr) int {
	lo, n := 0, len(bases)
	if n == 0 {
		return -1
	}
	for n > 1 {
		half := n >> 1
		if bases[lo+half] <= p {
			lo += half
		}
		n -= half
	}
	if bases[lo] > p {
		return -1
	}
	return lo
}

func basesOf[C any](cs []C, base func(C) uintptr) []uintptr {
	b := make([]uintptr, len(cs))
	for i, c := range cs {
		b[i] = base(c)
	}
	return b
}

// growFunc gets a new chunk of at least size bytes from the upstream, for
// an allocation on stream s. It returns the chunk's address and size.
type growFunc func(s Stream, size uintptr) (uintptr, uintptr, error)

// heap is a coalescing best-fit allocator over chunks, with stream-ordered
// free lists.
type heap struct {
	kind  string
	eng   engine[heapList, *heapList]
	nodes nodeStore
	grow  growFunc // nil: the heap never grows
	mags  bool     // frees go through the lists' magazines (magazine.go); set before use

	chunks    atomic.Pointer[chunkTable]
	chunkMu   sync.Mutex // serializes chunk table changes
	nextChunk int32
	size      atomic.Uintptr // bytes in chunks
	gen       atomic.Uint64  // counts growths

	growMu   sync.Mutex // one growth at a time
	defragMu sync.Mutex // one defragmentation at a time
}

func (h *heap) init(kind string, r cudart.Runtime, grow growFunc) {
	h.kind, h.grow = kind, grow
	h.nodes.init()
	h.eng.init(r, kind, func(*streamState) *heapList { return new(heapList) },
		func(l *heapList, cut uint64) {
			h.magFlushAll(l) // the magazine's blocks were freed before cut too
			l.settle(h.nodes.load(), cut)
		})
	h.chunks.Store(&chunkTable{byID: []*chunk{nil}})
	h.nextChunk = 1
}

// errRetry: the list the operation was about to use left the engine; look
// the stream up again.
var errRetry = errors.New("retry")

// spareNode makes sure l has a spare node id. l.mu is held.
func (h *heap) spareNode(l *heapList) {
	if len(l.spare) == 0 {
		l.spare = h.nodes.get(l.spare, 64)
	}
}

// recycle gives node id back to l's spares. l.mu is held.
func (h *heap) recycle(pg nodePages, l *heapList, id int32) {
	pg.at(id).owner.Store(-1)
	l.spare = append(l.spare, id)
	if len(l.spare) > 1024 {
		h.nodes.put(l.spare[512:])
		l.spare = l.spare[:512]
	}
}

// carve takes size bytes (a multiple of 256) from l (from its settled part
// only when settledOnly is set), splitting the block it finds; the rest
// stays in l. It returns the allocated node, or 0. l.mu is held.
func (h *heap) carve(l *heapList, size uintptr, settledOnly bool) int32 {
	h.spareNode(l)
	pg := h.nodes.load()
	var id int32
	if l.set == nil && !settledOnly {
		id = l.classIndex.take(pg, l.id, size>>unitShift) // the common case: never settled
	} else {
		id = l.take(pg, size>>unitShift, settledOnly)
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
		r.owner.Store(l.id)
		if n.next != 0 {
			pg.at(n.next).prev.Store(rid)
		}
		n.next, n.size = rid, size
		l.insert(r, rid) // same seq: the part n came from
	}
	n.owner.Store(0)
	l.free.Add(^(size - 1))
	return id
}

// insertFree puts the allocated node id into l as a free block with
// sequence number seq, merging it with free neighbours of l. l.mu is held.
func (h *heap) insertFree(l *heapList, id int32, seq uint64) {
	pg := h.nodes.load()
	n := pg.at(id)
	// The predecessor may be a node another list made a moment ago, in a
	// node page newer than pg: read its id first, then the page table.
	pid := n.prev.Load()
	pg = h.nodes.load()
	l.free.Add(n.size)
	n.seq = seq
	n.owner.Store(l.id)
	if pid != 0 {
		if p := pg.at(pid); p.owner.Load() == l.id {
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
		if m := pg.at(nid); m.owner.Load() == l.id {
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
func (h *heap) publish(id int32) (uintptr, error) {
	n := h.nodes.load().at(id)
	t := h.chunks.Load()
	if int(n.chunk) >= len(t.byID) || t.byID[n.chunk] == nil {
		return 0, fmt.Errorf("%s: %w", h.kind, ErrClosed) // closed meanwhile
	}
	t.byID[n.chunk].record(id, n.addr, n.size)
	return n.addr, nil
}

// take serves size bytes from l for l's own stream: from its magazine, else
// from its index, else from its index after flushing the magazine into it.
// It returns the node, its address and its chunk; id 0 when l cannot serve
// the request. l.mu is held.
func (h *heap) take(l *heapList, size uintptr) (id int32, addr uintptr, chunk int32) {
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
func (h *heap) publishAt(id int32, addr uintptr, chunk int32, size uintptr) (uintptr, error) {
	t := h.chunks.Load()
	if int(chunk) >= len(t.byID) || t.byID[chunk] == nil {
		return 0, fmt.Errorf("%s: %w", h.kind, ErrClosed) // closed meanwhile
	}
	t.byID[chunk].record(id, addr, size)
	return addr, nil
}

// allocate returns size bytes (a multiple of 256, not 0) usable on stream s.
func (h *heap) allocate(s Stream, size uintptr) (uintptr, error) {
	if s == DefaultStream {
		// The fast path: the default stream's list in this shard (never
		// retired), made already.
		if l := h.eng.def.shards[currentP()&h.eng.mask].Load(); l != nil {
			l.mu.Lock()
			id, addr, chunk := h.take(l, size)
			l.mu.Unlock()
			if id != 0 {
				return h.publishAt(id, addr, chunk, size)
			}
		}
	}
	for {
		sl, err := h.eng.lookup(s)
		if err != nil {
			return 0, err
		}
		h.eng.maybeSettle(sl, s)
		l := h.eng.list(sl, h.eng.shard())
		l.mu.Lock()
		id, addr, chunk := h.take(l, size)
		l.mu.Unlock()
		if id != 0 {
			return h.publishAt(id, addr, chunk, size)
		}
		p, err := h.allocateSlow(s, sl, l, size)
		if err != errRetry {
			return p, err
		}
	}
}

// allocateSlow serves a request its own list could not: from the stream's
// other shards; from memory other streams freed that can be ordered before
// this stream without touching their handles (the legacy default stream's,
// or settled blocks); by merging all of that and coalescing; by growing;
// and, when growth fails, after a device synchronization, which frees
// everything freed before it for every stream.
func (h *heap) allocateSlow(s Stream, sl *streamLists[heapList], own *heapList, size uintptr) (uintptr, error) {
	st := sl.st
	syncs := 0 // device synchronizations after growth failed
	for {
		gen := h.gen.Load()
		// Memory freed on this stream in other shards.
		for i := range sl.shards {
			l := sl.shards[i].Load()
			if l == nil || l == own || l.free.Load() < size {
				continue
			}
			l.mu.Lock()
			id, addr, chunk := h.take(l, size)
			l.mu.Unlock()
			if id != 0 {
				return h.publishAt(id, addr, chunk, size)
			}
		}
		// Memory freed on other streams, once this stream waits for it.
		ls := h.eng.allLists()
		h.eng.wantOthers(ls, st, true)
		for _, l := range ls {
			if l.st == st {
				continue
			}
			durable := l.st.durable()
			if avail := l.settled.Load(); durable {
				if l.free.Load() < size {
					continue
				}
			} else if avail < size {
				continue
			}
			l.mu.Lock()
			id := h.carve(l, size, !durable)
			if id == 0 && durable && l.mag != nil && l.mag.count != 0 {
				// Blocks in the magazine of a durable stream's list are
				// ordered like the others once in the index. (Those of
				// other streams are fresh: they settle first.)
				h.magFlushAll(l)
				id = h.carve(l, size, false)
			}
			var seq uint64
			if id != 0 {
				seq = h.nodes.load().at(id).seq
				l.st.inflight.Add(1)
			}
			l.mu.Unlock()
			if id == 0 {
				continue
			}
			err := h.eng.orderAfter(s, st, l.st, seq)
			if err != nil {
				h.giveBack(l, id, seq)
			}
			l.st.inflight.Add(-1) // after giveBack: l stays in the engine till then
			if err != nil {
				return 0, err
			}
			return h.publish(id)
		}
		h.eng.wantOthers(ls, st, false)
		// Enough ordered memory is free, but in pieces, some of them in
		// other lists: merge it into this stream's list and coalesce.
		if h.worthDefrag(own, size) {
			id, err := h.defrag(s, own, size)
			if err != nil || id != 0 {
				if id != 0 {
					// What was ordered for everyone is now fresh in own's
					// list: settle it, so that others may go on using it.
					h.eng.settleNow(sl, s, false)
					return h.publish(id)
				}
				return 0, err
			}
		}
		if h.grow == nil {
			return 0, errNoRoom
		}
		h.growMu.Lock()
		if h.gen.Load() != gen {
			h.growMu.Unlock()
			continue // another allocation grew the heap meanwhile: look again
		}
		base, n, err := h.grow(s, size)
		if err != nil {
			h.growMu.Unlock()
			if !errors.Is(err, ErrOutOfMemory) || h.quietFreeBytes() < size || syncs == maxSyncRetries {
				return 0, err
			}
			// Enough is free, but not ordered before this stream: after a
			// device synchronization all of it is. Another stream may
			// still take it first and leave it fresh in its own list (a
			// defragmentation does), hence more than one try.
			if serr := h.eng.synchronize(); serr != nil {
				return 0, errors.Join(err, serr)
			}
			syncs++
			continue
		}
		own.mu.Lock()
		if own.retired {
			own.mu.Unlock()
			h.addChunk(nil, base, n) // keep the memory; it lands in the default stream's list
			h.growMu.Unlock()
			return 0, errRetry
		}
		h.addChunk(own, base, n)
		id := h.carve(own, size, false)
		own.mu.Unlock()
		h.gen.Add(1)
		h.growMu.Unlock()
		if id == 0 {
			return 0, fmt.Errorf("%s: %w: internal error: a new chunk of %d bytes cannot hold %d", h.kind, ErrBadAlloc, n, size)
		}
		// The rest of the chunk is fresh in own's list: settle it, so that
		// other streams need not grow too.
		h.eng.settleNow(sl, s, true)
		return h.publish(id)
	}
}

// maxSyncRetries bounds the device synchronizations one allocation makes
// after growth failed while enough memory was free in the heap.
const maxSyncRetries = 4

// errNoRoom: the heap cannot serve a request and cannot grow.
var errNoRoom = fmt.Errorf("%w: no room", ErrOutOfMemory)

// giveBack returns a node carved from l but not handed out.
func (h *heap) giveBack(l *heapList, id int32, seq uint64) {
	l.mu.Lock()
	h.insertFree(l, id, seq)
	l.mu.Unlock()
}

// movable returns the bytes of l that defrag may move into a list of
// stream st: all of them for st's own lists and the legacy default
// stream's, the settled ones for other streams'.
func movable(l *heapList, st *streamState) uintptr {
	if l.st == st || l.st.durable() {
		return l.free.Load()
	}
	return l.settled.Load()
}

// worthDefrag reports whether merging the movable memory of every list
// into own could serve size bytes: the lists hold that much, and not all of
// it in own (which is coalesced already).
func (h *heap) worthDefrag(own *heapList, size uintptr) bool {
	var total, others uintptr
	for _, l := range h.eng.allLists() {
		n := movable(l, own.st)
		total += n
		if l != own {
			others += n
		}
	}
	return total >= size && others > 0
}

// quietFreeBytes is freeBytes once no defragmentation is under way (one
// empties every list before it refills its own, so a sum taken meanwhile
// can miss the whole heap).
func (h *heap) quietFreeBytes() uintptr {
	h.defragMu.Lock()
	defer h.defragMu.Unlock()
	return h.freeBytes()
}

// freeBytes sums the free bytes of every list (a hint while others work).
func (h *heap) freeBytes() uintptr {
	var n uintptr
	for _, l := range h.eng.allLists() {
		n += l.free.Load()
	}
	return n
}

// addChunk registers the chunk [base, base+size) and puts it whole into l
// (the default stream's list in shard 0 when l is nil). l.mu is held when
// l is not nil. The chunk counts as freed on l's stream now (the upstream
// handed it out in order on that stream).
func (h *heap) addChunk(l *heapList, base, size uintptr) {
	h.chunkMu.Lock()
	old := h.chunks.Load()
	c := &chunk{base: base, size: size, id: h.nextChunk}
	c.leaves = make([]atomic.Pointer[leaf], (size+(1<<(unitShift+leafBits))-1)>>(unitShift+leafBits))
	c.big = make([]relaxedUint64, len(c.leaves))
	h.nextChunk++
	nt := &chunkTable{
		sorted: append(append(make([]*chunk, 0, len(old.sorted)+1), old.sorted...), c),
		byID:   append(append(make([]*chunk, 0, len(old.byID)+1), old.byID...), c),
	}
	sort.Slice(nt.sorted, func(i, j int) bool { return nt.sorted[i].base < nt.sorted[j].base })
	nt.index()
	h.chunks.Store(nt)
	h.size.Add(size)
	h.chunkMu.Unlock()

	locked := l != nil
	if l == nil {
		l = h.eng.list(h.eng.def, 0)
		l.mu.Lock()
	}
	h.spareNode(l)
	id := l.spare[len(l.spare)-1]
	l.spare = l.spare[:len(l.spare)-1]
	pg := h.nodes.load()
	n := pg.at(id)
	n.addr, n.size, n.seq, n.chunk, n.next = base, size, l.st.epoch.Load(), c.id, 0
	n.prev.Store(0)
	n.owner.Store(l.id)
	c.first = id
	l.insert(n, id)
	l.free.Add(size)
	if !locked {
		l.mu.Unlock()
	}
}

// claim checks that ptr is the start of a live allocation of size bytes
// and takes it out of the index, returning its node, its slot (to put it
// back if the free cannot go on) and its chunk. It reads the node only for
// a block whose size its slot does not hold.
func (h *heap) claim(ptr, size uintptr) (int32, slotRef, *chunk, error) {
	c := h.chunks.Load().find(ptr)
	if c == nil || ptr&(DefaultAlignment-1) != 0 {
		return 0, slotRef{}, nil, fmt.Errorf("%s: %w: %#x", h.kind, ErrInvalidPointer, ptr)
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
		return 0, slotRef{}, nil, fmt.Errorf("%s: %w: %#x is not a live allocation (deallocated already?)", h.kind, ErrInvalidPointer, ptr)
	}
	id, got := r.decode()
	if got == 0 {
		got = h.nodes.load().at(id).size
	}
	if got != size {
		r.restore()
		return 0, slotRef{}, nil, fmt.Errorf("%s: %w: deallocating %#x with size %d, but it was allocated with size %d (rounded to 256)",
			h.kind, ErrInvalidArgument, ptr, size, got)
	}
	return id, r, c, nil
}

// deallocate returns size bytes at ptr, freed in stream order on s.
func (h *heap) deallocate(s Stream, ptr, size uintptr) error {
	sl, err := h.eng.lookup(s)
	if err != nil {
		return err
	}
	id, r, c, err := h.claim(ptr, size)
	if err != nil {
		return err
	}
	if sl == h.eng.def {
		// The fast path, as in allocate.
		if l := sl.shards[currentP()&h.eng.mask].Load(); l != nil {
			l.mu.Lock()
			h.magPut(l, id, ptr, c.id, size, sl.st.epoch.Load())
			l.mu.Unlock()
			return nil
		}
	}
	for {
		l := h.eng.list(sl, h.eng.shard())
		l.mu.Lock()
		if !l.retired {
			h.magPut(l, id, ptr, c.id, size, sl.st.epoch.Load())
			batch := l.noteFreed(size, h.size.Load) && h.eng.shared()
			l.mu.Unlock()
			if batch {
				h.eng.want(sl.st)
			}
			// A record made now covers this free too.
			h.eng.maybeSettle(sl, s)
			return nil
		}
		l.mu.Unlock()
		// The stream's lists were dropped meanwhile (they were empty):
		// look it up again.
		if sl, err = h.eng.lookup(s); err != nil {
			r.restore()
			return err
		}
	}
}

// defrag merges the movable free blocks of every list (see movable) into
// own, ordering own's stream (s, the caller's) after every stream whose
// memory it takes, coalesces them and carves size bytes. It returns 0 when
// that still does not fit.
func (h *heap) defrag(s Stream, own *heapList, size uintptr) (int32, error) {
	h.defragMu.Lock()
	defer h.defragMu.Unlock()
	ls := h.eng.lockAll()
	defer unlockAll(ls)
	if own.retired {
		return 0, errRetry
	}
	st := own.st
	for _, l := range ls {
		if l.st == st || l.st.durable() {
			h.magFlushAll(l) // all of it moves (the others' magazines are fresh)
		}
	}
	pg := h.nodes.load()
	// The blocks to move, and the latest free among them per stream.
	var ids []int32
	latest := map[*streamState]uint64{}
	for _, l := range ls {
		if movable(l, st) == 0 {
			continue
		}
		collect := func(id int32, n *node) {
			ids = append(ids, id)
			if n.seq >= latest[l.st] {
				latest[l.st] = n.seq
			}
		}
		if l.st == st || l.st.durable() {
			l.each(pg, collect)
		} else if l.set != nil {
			l.set.each(pg, l.id, collect)
		}
	}
	for o, seq := range latest {
		if err := h.eng.orderAfter(s, st, o, seq); err != nil {
			return 0, err // nothing moved yet
		}
	}
	var total uintptr
	for _, l := range ls {
		switch {
		case l.st == st || l.st.durable():
			total += l.free.Load()
			l.clear()
		case l.settled.Load() != 0:
			total += l.settled.Load()
			l.clearSettled()
		}
	}
	seq := st.epoch.Load() // fresh in own: others must order after own's stream
	for _, id := range ids {
		n := pg.at(id)
		n.owner.Store(own.id)
		n.seq = seq
	}
	for _, id := range ids {
		n := pg.at(id)
		if n.owner.Load() != own.id {
			continue // merged into its predecessor already
		}
		for n.next != 0 {
			m := pg.at(n.next)
			if m.owner.Load() != own.id {
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
		if n := pg.at(id); n.owner.Load() == own.id {
			own.insert(n, id)
		}
	}
	own.free.Store(total)
	h.eng.sweep(ls, own)
	return h.carve(own, size, false), nil
}

// releaseChunks takes out of the heap every chunk that is wholly free
// (every chunk when all is set, live allocations or not) and returns them.
func (h *heap) releaseChunks(all bool) []*chunk {
	h.growMu.Lock()
	defer h.growMu.Unlock()
	ls := h.eng.lockAll()
	defer unlockAll(ls)
	byID := make(map[int32]*heapList, len(ls))
	for _, l := range ls {
		byID[l.id] = l
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
		wholeFree := true
		for id := c.first; id != 0; id = pg.at(id).next {
			if pg.at(id).owner.Load() <= 0 {
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
					l.free.Add(^(n.size - 1))
					h.recycle(pg, l, id)
				}
				id = next
			}
		}
		out = append(out, c)
	}
	if all {
		for _, l := range ls {
			l.clear()
		}
	}
	if len(out) == 0 {
		return nil
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
	nt.index()
	h.chunks.Store(nt)
	h.chunkMu.Unlock()
	return out
}

// stats describes the heap's free memory, for dumps and tests.
type heapStats struct {
	chunks, freeBlocks int
	freeBytes, largest uintptr
}

func (h *heap) stats() heapStats {
	var s heapStats
	ls := h.eng.lockAll()
	defer unlockAll(ls)
	for _, l := range ls {
		h.magFlushAll(l)
	}
	pg := h.nodes.load()
	s.chunks = len(h.chunks.Load().sorted)
	for _, l := range ls {
		l.each(pg, func(id int32, n *node) {
			s.freeBlocks++
			s.freeBytes += n.size
			if n.size > s.largest {
				s.largest = n.size
			}
		})
	}
	return s
}
