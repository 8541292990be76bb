package heap

import (
	"sort"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/core/internal/addr"
	"github.com/rmmgo/rmmgo/core/internal/relaxed"
)

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
type leaf [leafSlots]relaxed.Uint32

// Blocks of bigBlock bytes or more have their region's big slot (64 bits,
// one per 64 KiB): the id in bits 0-31, the size in bits 32-55 (0: too
// large, claim reads the node) and the block's unit within the region in
// bits 56-63. Two such blocks never start in the same 64 KiB region. The
// big slots (8 bytes per 64 KiB) stay in the cache where leaves holding
// one large block each, spread over the whole heap, do not.
const bigBlock = 1 << (UnitShift + leafBits)

const leafPacked = 1 << 31

// leafWord packs the allocated block id of size bytes (under bigBlock) for
// its leaf slot.
func leafWord(id int32, size uintptr) uint32 {
	if id >= 1<<23 {
		return uint32(id)
	}
	return leafPacked | uint32(size>>UnitShift)<<23 | uint32(id)
}

// bigWord packs the allocated block id of size bytes (at least bigBlock) at
// addr for its big slot.
func bigWord(id int32, size, addr uintptr) uint64 {
	u := uint64(size >> UnitShift)
	if u >= 1<<24 {
		u = 0
	}
	return uint64(uint32(id)) | u<<32 | uint64(addr>>UnitShift&(leafSlots-1))<<56
}

// slotRef is a slot of either kind and the word it held.
type slotRef struct {
	leaf *relaxed.Uint32
	big  *relaxed.Uint64
	w    uint64
}

// decode returns the id and the size (0: unknown) in r's word.
func (r slotRef) decode() (int32, uintptr) {
	if r.big != nil {
		return int32(uint32(r.w)), uintptr(r.w>>32&(1<<24-1)) << UnitShift
	}
	if r.w&leafPacked == 0 {
		return int32(r.w), 0
	}
	return int32(r.w & (1<<23 - 1)), uintptr(r.w>>23&(leafSlots-1)) << UnitShift
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
	big        []relaxed.Uint64 // per 64 KiB region: the block of at least bigBlock bytes starting there
}

// record fills the slot of the allocated block id of size bytes at addr.
func (c *chunk) record(id int32, addr, size uintptr) {
	if size >= bigBlock {
		c.big[(addr-c.base)>>(UnitShift+leafBits)].Store(bigWord(id, size, addr))
		return
	}
	c.slot(addr, true).Store(leafWord(id, size))
}

// lookup returns the slot of the block starting at ptr, in the big slots
// (big set) or the leaves; its word is 0 when there is none.
func (c *chunk) lookup(ptr uintptr, big bool) slotRef {
	if big {
		sp := &c.big[(ptr-c.base)>>(UnitShift+leafBits)]
		w := sp.Load()
		if w>>56 != uint64(ptr>>UnitShift&(leafSlots-1)) {
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
func (c *chunk) slot(ptr uintptr, create bool) *relaxed.Uint32 {
	off := ptr - c.base
	lp := &c.leaves[off>>(UnitShift+leafBits)]
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
	return &lf[(off>>UnitShift)&(leafSlots-1)]
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
	if i := addr.Search(t.bases, ptr); i >= 0 && ptr-t.sorted[i].base < t.sorted[i].size {
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

func basesOf[C any](cs []C, base func(C) uintptr) []uintptr {
	b := make([]uintptr, len(cs))
	for i, c := range cs {
		b[i] = base(c)
	}
	return b
}
