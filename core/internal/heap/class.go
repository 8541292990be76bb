package heap

import "math/bits"

// Size classes: 64 exact classes (in units) for blocks up to 16 KiB, then
// 2^slBits classes per power of two.
const (
	exactClasses = 64
	slBits       = 5
	numClasses   = exactClasses + (64-UnitShift-6)<<slBits
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
	c, i, id := x.find(pg, owner, u)
	if id != 0 {
		x.popAt(pg, owner, c, i)
	}
	return id
}

// find returns the block take would take, without taking it: its class,
// its position in the class's stack and its node; id 0 when the index has
// none. It may drop stale entries from the top of the stacks it looks at.
func (x *classIndex) find(pg nodePages, owner int32, u uintptr) (int, int, int32) {
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
				if sz := n.size >> UnitShift; sz >= u && sz < bestSize {
					best, bestSize = i, sz
				}
			}
			if best >= 0 {
				return c, best, s[best].id
			}
		}
		if c++; c >= numClasses {
			return 0, 0, 0
		}
	}
	w := c >> 6
	m := x.words[w] & (^uint64(0) << (c & 63))
	if m == 0 {
		t := x.top & (^uint32(0) << (w + 1))
		if t == 0 {
			return 0, 0, 0
		}
		w = bits.TrailingZeros32(t)
		m = x.words[w]
	}
	c = w<<6 + bits.TrailingZeros64(m)
	s := x.stacks[c]
	for i := len(s) - 1; i >= 0; i-- {
		if e := s[i]; entryValid(owner, pg.at(e.id), e) {
			clear(s[i+1:])
			x.stacks[c] = s[:i+1]
			return c, i, e.id
		}
	}
	return 0, 0, 0 // not reached: live[c] > 0 means a valid entry
}

// popAt takes entry i of class c's stack (a valid one, from find) out of
// the index.
func (x *classIndex) popAt(pg nodePages, owner int32, c, i int) {
	s := x.stacks[c]
	id := s[i].id
	s[i] = s[len(s)-1]
	s[len(s)-1] = classEntry{}
	x.stacks[c] = s[:len(s)-1]
	pg.at(id).stamp++
	x.dropLive(pg, owner, c)
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
