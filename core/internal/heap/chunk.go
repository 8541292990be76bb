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
}

// The address index: the slots of every allocated block, by address. The
// address space is cut into 64 KiB regions (a leaf's span); a region that a
// chunk touches has an entry with its leaf (made when a block under
// bigBlock first starts in it) and its big slot. Entries sit in pages of
// regionPageSize (1 GiB of address space), made as chunks arrive, found
// through a directory indexed by address: finding a block's slot is a few
// dependent loads of which only the last (the slot) is likely to miss,
// whatever the number of chunks.
const (
	regionShift     = UnitShift + leafBits // 64 KiB
	regionPageShift = 14                   // 16384 regions: 1 GiB
	regionPageSize  = 1 << regionPageShift
	pageSpan        = regionShift + regionPageShift
	// dirFlatMax bounds the directory's flat table (pointers to pages by
	// address): 1 TiB of address space, 8 KiB of table. Pages outside it
	// are found by binary search.
	dirFlatMax = 1 << 10
)

// region is the index of one 64 KiB region.
type region struct {
	leaf atomic.Pointer[leaf]
	big  relaxed.Uint64 // the block of at least bigBlock bytes starting in the region
}

type regionPage [regionPageSize]region

// regionDir finds the page of an address. Never modified once published
// (pages are shared and their entries change in place).
type regionDir struct {
	flat  []*regionPage // by (addr >> pageSpan) - first; nil where none
	first uintptr
	keys  []uintptr // addr >> pageSpan of every page, sorted
	pages []*regionPage
}

// region returns the entry of the region holding ptr, or nil.
func (d *regionDir) region(ptr uintptr) *region {
	if r := d.flatRegion(ptr); r != nil {
		return r
	}
	return d.search(ptr)
}

// flatRegion is region through the flat table only (nil for an address
// outside it): the common case, small enough to inline.
func (d *regionDir) flatRegion(ptr uintptr) *region {
	if i := ptr>>pageSpan - d.first; i < uintptr(len(d.flat)) {
		if pg := d.flat[i]; pg != nil {
			return &pg[(ptr>>regionShift)&(regionPageSize-1)]
		}
	}
	return nil
}

// search is region for an address outside the flat table, or with no
// page.
func (d *regionDir) search(ptr uintptr) *region {
	k := ptr >> pageSpan
	if i := addr.Search(d.keys, k); i >= 0 && d.keys[i] == k {
		return &d.pages[i][(ptr>>regionShift)&(regionPageSize-1)]
	}
	return nil
}

// withChunk returns a directory that also has pages for [base, base+size).
func (d *regionDir) withChunk(base, size uintptr) *regionDir {
	nd := &regionDir{keys: append([]uintptr(nil), d.keys...), pages: append([]*regionPage(nil), d.pages...)}
	for k := base >> pageSpan; k <= (base+size-1)>>pageSpan; k++ {
		i := sort.Search(len(nd.keys), func(i int) bool { return nd.keys[i] >= k })
		if i < len(nd.keys) && nd.keys[i] == k {
			continue
		}
		nd.keys = append(nd.keys[:i], append([]uintptr{k}, nd.keys[i:]...)...)
		nd.pages = append(nd.pages[:i], append([]*regionPage{new(regionPage)}, nd.pages[i:]...)...)
	}
	nd.index()
	return nd
}

// without returns a directory without the pages whose keys drop says.
func (d *regionDir) without(drop map[uintptr]bool) *regionDir {
	nd := &regionDir{}
	for i, k := range d.keys {
		if !drop[k] {
			nd.keys = append(nd.keys, k)
			nd.pages = append(nd.pages, d.pages[i])
		}
	}
	nd.index()
	return nd
}

// release returns the directory without what only the chunks out covered
// (kept: the chunks that stay, by address): the entries of regions no kept
// chunk touches are emptied (no slot of a wholly free chunk is set; with
// the whole heap going, none is looked at again), and pages no kept chunk
// touches dropped. The caller holds chunkMu.
func (d *regionDir) release(out, kept []*chunk) *regionDir {
	touched := func(lo, hi uintptr) bool { // a kept chunk touches [lo, hi)
		i := sort.Search(len(kept), func(i int) bool { return kept[i].base+kept[i].size > lo })
		return i < len(kept) && kept[i].base < hi
	}
	drop := map[uintptr]bool{}
	for _, c := range out {
		for r := c.base >> regionShift; r <= (c.base+c.size-1)>>regionShift; r++ {
			if lo := r << regionShift; !touched(lo, lo+1<<regionShift) {
				if e := d.region(lo); e != nil {
					e.leaf.Store(nil)
					e.big.Store(0)
				}
			}
		}
		for k := c.base >> pageSpan; k <= (c.base+c.size-1)>>pageSpan; k++ {
			if !touched(k<<pageSpan, (k+1)<<pageSpan) {
				drop[k] = true
			}
		}
	}
	return d.without(drop)
}

// index makes the flat table when the pages span at most dirFlatMax keys
// (those nearest the first page otherwise).
func (d *regionDir) index() {
	if len(d.keys) == 0 {
		return
	}
	d.first = d.keys[0]
	span := min(d.keys[len(d.keys)-1]-d.first+1, dirFlatMax)
	d.flat = make([]*regionPage, span)
	for i, k := range d.keys {
		if k-d.first < span {
			d.flat[k-d.first] = d.pages[i]
		}
	}
}

// record fills the slot of the allocated block id of blk bytes at addr,
// handed out for a request of size bytes (size <= blk; the slot records
// size, which a free must give). false when the region has no entry (the
// heap was closed meanwhile).
func (d *regionDir) record(id int32, addr, blk, size uintptr) bool {
	r := d.flatRegion(addr)
	if r == nil {
		if r = d.search(addr); r == nil {
			return false
		}
	}
	if blk >= bigBlock {
		r.big.Store(bigWord(id, size, addr))
		return true
	}
	lf := r.leaf.Load()
	if lf == nil {
		lf = r.newLeaf()
	}
	lf[(addr>>UnitShift)&(leafSlots-1)].Store(leafWord(id, size))
	return true
}

// newLeaf returns r's leaf, making it if there is none.
func (r *region) newLeaf() *leaf {
	lf := new(leaf)
	if !r.leaf.CompareAndSwap(nil, lf) {
		lf = r.leaf.Load()
	}
	return lf
}

// lookup returns the slot of the block starting at ptr, in the big slots
// (big set) or the leaves; its word is 0 when there is none.
func (d *regionDir) lookup(ptr uintptr, big bool) slotRef {
	r := d.flatRegion(ptr)
	if r == nil {
		if r = d.search(ptr); r == nil {
			return slotRef{}
		}
	}
	if big {
		w := r.big.Load()
		if w>>56 != uint64(ptr>>UnitShift&(leafSlots-1)) {
			w = 0 // another block's, or none
		}
		return slotRef{big: &r.big, w: w}
	}
	lf := r.leaf.Load()
	if lf == nil {
		return slotRef{}
	}
	sp := &lf[(ptr>>UnitShift)&(leafSlots-1)]
	return slotRef{leaf: sp, w: uint64(sp.Load())}
}

// chunkTable is the heap's chunks and their address index; never modified
// once published.
type chunkTable struct {
	sorted []*chunk  // by base address
	bases  []uintptr // sorted[i].base, searched without touching the chunks
	byID   []*chunk  // by id; nil for released chunks
	dir    *regionDir
}

// find returns the chunk holding ptr, or nil.
func (t *chunkTable) find(ptr uintptr) *chunk {
	if i := addr.Search(t.bases, ptr); i >= 0 && ptr-t.sorted[i].base < t.sorted[i].size {
		return t.sorted[i]
	}
	return nil
}

// index fills in bases from sorted.
func (t *chunkTable) index() {
	t.bases = basesOf(t.sorted, func(c *chunk) uintptr { return c.base })
}

func basesOf[C any](cs []C, base func(C) uintptr) []uintptr {
	b := make([]uintptr, len(cs))
	for i, c := range cs {
		b[i] = base(c)
	}
	return b
}
