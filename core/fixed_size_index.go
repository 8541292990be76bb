package core

// The free lists and the chunk index of FixedSize (fixed_size.go).

import (
	"sort"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/core/internal/addr"
	"github.com/rmmgo/rmmgo/core/internal/streamorder"
)

// fixedBlock is a free block: its free sequence number, its chunk and its
// index in the chunk. 16 bytes: the address follows from the chunk, which
// publishing the block loads anyway, and four entries share a cache line.
type fixedBlock struct {
	seq   uint64
	chunk int32
	idx   uint32
}

// blockList is one stream's free blocks in one shard: fresh ones (seq >=
// cut, freed since the stream's last settle) and settled ones (seq < cut:
// other streams may take them after waiting on the stream's event), each a
// stack.
type blockList struct {
	streamorder.List
	blocks []fixedBlock // fresh
	set    []fixedBlock // settled
}

// settle moves the fresh blocks freed before cut to the settled stack and
// sets l.Cut. l.mu is held.
func (l *blockList) settle(cut uint64, blockSize uintptr) {
	l.Cut = cut
	k := 0
	for _, b := range l.blocks {
		if b.seq < cut {
			l.set = append(l.set, b)
			l.Settled.Add(blockSize)
		} else {
			l.blocks[k] = b
			k++
		}
	}
	clear(l.blocks[k:])
	l.blocks = l.blocks[:k]
}

// fixedIndex finds the chunk holding an address, usually in one cache
// line. The address space is cut in granules of 2^g bytes, g the largest
// power of two not above the chunk size, so at most one chunk starts in a
// granule, at most one holds its first byte, and a chunk touches at most
// three granules. Each granule has a 64-byte slot holding the chunk that
// starts in it (its record: address, id, bitmap) and saying where it starts
// and how many granules back the chunk holding its first byte starts. A
// lookup reads the address's slot, and when the address lies before the
// chunk starting there, the slot one (or two) granules back. Slots are
// grouped in directories of fixedDirSize, made as chunks arrive.
type fixedIndex struct {
	g    uint
	size uintptr                   // the size of every chunk
	dirs atomic.Pointer[fixedDirs] // never modified once published
}

type fixedDirs struct {
	keys []uintptr // granule >> fixedDirBits, sorted
	dirs []*[fixedDirSize]fixedSlot
	// flat is dirs by key - keys[0] (nil where there is none) when the keys
	// span at most fixedFlatMax entries, as they do when the chunks come
	// from one pool or one device's address range: then a lookup is one
	// load rather than a binary search, whose branches a random workload
	// mispredicts.
	flat  []*[fixedDirSize]fixedSlot
	first uintptr // keys[0], with flat
}

// fixedSlot describes one granule, in one cache line (directories are
// page-aligned).
type fixedSlot struct {
	// word is back<<62 | start. start is 1 + the offset in the granule of
	// the chunk starting in it, 0 when none does; back (1 or 2) is how many
	// granules back the chunk holding the granule's first byte starts, 0
	// when none does. Set by add, which writes chunk before it stores start;
	// never cleared (Close drops the whole index).
	word  atomic.Uint64
	chunk fixedChunk // the chunk starting in the granule, once start is set
}

const (
	fixedBackShift = 62
	fixedStartMask = 1<<fixedBackShift - 1
)

const (
	fixedDirBits = 9 // 32 KiB directories
	fixedDirSize = 1 << fixedDirBits
	fixedFlatMax = 1 << 12 // 32 KiB of directory pointers at most
)

// slot returns granule gr's slot, or nil. The flat table's path is small
// enough to be inlined; sparse layouts search.
func (d *fixedDirs) slot(gr uintptr) *fixedSlot {
	if k := gr>>fixedDirBits - d.first; k < uintptr(len(d.flat)) {
		if dir := d.flat[k]; dir != nil {
			return &dir[gr&(fixedDirSize-1)]
		}
		return nil
	}
	return d.search(gr)
}

// search is slot without the flat table (there is none, or gr lies
// outside it).
func (d *fixedDirs) search(gr uintptr) *fixedSlot {
	if i := addr.Search(d.keys, gr>>fixedDirBits); i >= 0 && d.keys[i] == gr>>fixedDirBits {
		return &d.dirs[i][gr&(fixedDirSize-1)]
	}
	return nil
}

// find returns the chunk holding ptr, or nil.
func (x *fixedIndex) find(ptr uintptr) *fixedChunk {
	gr := ptr >> x.g
	d := x.dirs.Load()
	var s *fixedSlot
	// d.slot(gr), its common case inlined by hand (a call would make slot
	// too costly for the compiler to inline).
	if k := gr>>fixedDirBits - d.first; k < uintptr(len(d.flat)) && d.flat[k] != nil {
		s = &d.flat[k][gr&(fixedDirSize-1)]
	} else if s = d.search(gr); s == nil {
		return nil
	}
	w := s.word.Load()
	if st := uintptr(w & fixedStartMask); st == 0 || ptr-gr<<x.g < st-1 {
		// ptr lies before the chunk starting in its granule, if any: in the
		// chunk holding the granule's first byte, if any.
		back := uintptr(w >> fixedBackShift)
		if back == 0 || back > gr {
			return nil
		}
		if s = d.slot(gr - back); s == nil {
			return nil
		}
	}
	c := &s.chunk
	if ptr-c.base >= x.size {
		return nil
	}
	return c
}

// add makes a record for a chunk of x.size bytes at base with the given id
// and returns it; the caller serializes adds.
func (x *fixedIndex) add(base uintptr, id int32, words int) *fixedChunk {
	gr0 := base >> x.g
	s := x.makeSlot(gr0)
	c := &s.chunk
	c.base, c.id = base, id
	if words <= len(c.inline) {
		c.used = c.inline[:words]
	} else {
		c.used = make([]atomic.Uint64, words)
	}
	s.word.Store(s.word.Load() | uint64(base-gr0<<x.g+1))
	for gr := gr0 + 1; gr <= (base+x.size-1)>>x.g; gr++ {
		t := x.makeSlot(gr)
		t.word.Store(t.word.Load() | uint64(gr-gr0)<<fixedBackShift)
	}
	return c
}

// remove takes c's record out of the index, so that a lookup of its
// addresses finds nothing and a chunk added later may start in its
// granule; the caller serializes adds and removes. The record itself stays
// as it is until an add reuses the slot: c must have an inline bitmap
// (at most fixedInlineBlocks blocks), which an add sets to the same slice.
func (x *fixedIndex) remove(c *fixedChunk) {
	gr0 := c.base >> x.g
	d := x.dirs.Load()
	s := d.slot(gr0)
	s.word.Store(s.word.Load() &^ fixedStartMask)
	for gr := gr0 + 1; gr <= (c.base+x.size-1)>>x.g; gr++ {
		t := d.slot(gr)
		t.word.Store(t.word.Load() & fixedStartMask)
	}
}

// makeSlot returns granule gr's slot, making its directory if need be; the
// caller serializes adds.
func (x *fixedIndex) makeSlot(gr uintptr) *fixedSlot {
	key := gr >> fixedDirBits
	old := x.dirs.Load()
	i := sort.Search(len(old.keys), func(i int) bool { return old.keys[i] >= key })
	if i == len(old.keys) || old.keys[i] != key {
		nd := &fixedDirs{
			keys: append(append(append(make([]uintptr, 0, len(old.keys)+1), old.keys[:i]...), key), old.keys[i:]...),
			dirs: append(append(append(make([]*[fixedDirSize]fixedSlot, 0, len(old.dirs)+1), old.dirs[:i]...), new([fixedDirSize]fixedSlot)), old.dirs[i:]...),
		}
		if span := nd.keys[len(nd.keys)-1] - nd.keys[0] + 1; span <= fixedFlatMax {
			nd.flat, nd.first = make([]*[fixedDirSize]fixedSlot, span), nd.keys[0]
			for j, k := range nd.keys {
				nd.flat[k-nd.keys[0]] = nd.dirs[j]
			}
		}
		x.dirs.Store(nd)
		old = nd
	}
	return &old.dirs[i][gr&(fixedDirSize-1)]
}

// fixedChunk is the record of one upstream allocation of perChunk blocks,
// kept in the index slot of the granule where it starts, with a bit per
// block set while the block is allocated. The bitmap of a chunk of up to
// 128 blocks (the default) is inline, so that finding a block's chunk and
// flipping its bit touch one cache line.
type fixedChunk struct {
	base   uintptr
	used   []atomic.Uint64 // inline[:n], or its own array for larger chunks
	id     int32
	inline [fixedInlineBlocks / 64]atomic.Uint64
}

// fixedInlineBlocks is the most blocks of a chunk whose bitmap is inline.
const fixedInlineBlocks = 128
