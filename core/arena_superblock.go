package core

import (
	"math/bits"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/core/internal/streamorder"
)

// The arena's superblocks (arena.go): their bitmaps of used 256-byte units,
// the search for a free run, and the per-stream lists that own them.

// superblock is 1 MiB lent by the global arena to one per-stream arena.
// Its fields change under the owner's lock.
type superblock struct {
	base  uintptr
	owner atomic.Pointer[arenaList]
	idx   int                     // position in owner.sbs
	free  int                     // free units
	low   int                     // no free unit below this one
	full  uint64                  // bit k: word k of the used bitmap is full (see findShort)
	used  [superblockWords]uint64 // a bit per unit: used units
	// The first unit of each allocation, and the first unit of each
	// allocation freed on another stream and not taken back yet,
	// interleaved word by word (marks[2k] and marks[2k+1] are the start
	// and pending words of units 64k to 64k+63), so that checking a free
	// reads one cache line of them.
	marks [2 * superblockWords]uint64
}

// A bitmap of a superblock: its words, every stride-th of w.
type sbMap struct {
	w      []uint64
	stride int
}

func (sb *superblock) usedMap() sbMap    { return sbMap{sb.used[:], 1} }
func (sb *superblock) startMap() sbMap   { return sbMap{sb.marks[:], 2} }
func (sb *superblock) pendingMap() sbMap { return sbMap{sb.marks[1:], 2} }

// arenaList is the arena of one stream in one shard.
type arenaList struct {
	streamorder.List
	sbs    []*superblock
	runs   []int32 // runs[i] >= the largest free run of sbs[i], in units
	cur    int     // where the next search starts
	empty  int     // wholly free superblocks in sbs
	remote []remoteFree
	// allocs counts allocations served from the list; mark is its value
	// when a goroutine of another shard last looked here to steal (see
	// steal): a list is idle when it has not changed between two looks.
	allocs, mark uint64
}

// remoteFree is memory freed on another stream than its arena's, waiting
// for the arena to order itself after that stream.
type remoteFree struct {
	ptr   uintptr
	units int
	st    *streamorder.State
	seq   uint64
}

// setBits sets (or clears) n bits from bit i of b.
func setBits(b sbMap, i, n int, set bool) {
	for n > 0 {
		k := min(64-i&63, n)
		m := (^uint64(0) >> (64 - k)) << (i & 63)
		if set {
			b.w[i>>6*b.stride] |= m
		} else {
			b.w[i>>6*b.stride] &^= m
		}
		i, n = i+k, n-k
	}
}

// allSet reports whether n bits from bit i of b are set; noneSet whether
// none is.
func allSet(b sbMap, i, n int) bool {
	for n > 0 {
		k := min(64-i&63, n)
		m := (^uint64(0) >> (64 - k)) << (i & 63)
		if b.w[i>>6*b.stride]&m != m {
			return false
		}
		i, n = i+k, n-k
	}
	return true
}

func noneSet(b sbMap, i, n int) bool {
	for n > 0 {
		k := min(64-i&63, n)
		m := (^uint64(0) >> (64 - k)) << (i & 63)
		if b.w[i>>6*b.stride]&m != 0 {
			return false
		}
		i, n = i+k, n-k
	}
	return true
}

func bitSet(b sbMap, i int) bool { return b.w[i>>6*b.stride]&(1<<(i&63)) != 0 }

// nextZero returns the first clear bit of b at or after i
// (superblockUnits if none); nextOne the first set one.
func nextZero(b sbMap, i int) int {
	for i < superblockUnits {
		m := ^b.w[i>>6*b.stride] & (^uint64(0) << (i & 63))
		if m != 0 {
			return i&^63 + bits.TrailingZeros64(m)
		}
		i = (i | 63) + 1
	}
	return superblockUnits
}

// prevOne returns the last set bit of b before i, or -1.
func prevOne(b sbMap, i int) int {
	for i > 0 {
		i--
		m := b.w[i>>6*b.stride] & (^uint64(0) >> (63 - i&63))
		if m != 0 {
			return i&^63 + 63 - bits.LeadingZeros64(m)
		}
		i &^= 63
	}
	return -1
}

func nextOne(b sbMap, i int) int {
	for i < superblockUnits {
		m := b.w[i>>6*b.stride] & (^uint64(0) << (i & 63))
		if m != 0 {
			return i&^63 + bits.TrailingZeros64(m)
		}
		i = (i | 63) + 1
	}
	return superblockUnits
}

// alloc takes u units, first fit; it returns the first unit, or -1 and
// the largest free run (which is smaller than u).
func (sb *superblock) alloc(u int) (int, int) {
	if sb.free < u {
		return -1, sb.free
	}
	var i, largest int
	if u <= 64 {
		// No run of u units: the largest is shorter, which is all the
		// caller's hint needs to know.
		i, largest = sb.findShort(u), u-1
	} else {
		i, largest = sb.findLong(u)
	}
	if i < 0 {
		return -1, largest
	}
	setBits(sb.usedMap(), i, u, true)
	setBits(sb.startMap(), i, 1, true)
	sb.noteFull(i, u)
	sb.free -= u
	if i == sb.low {
		sb.low = nextZero(sb.usedMap(), i+u)
	}
	return i, 0
}

// noteFull notes the words that the units [i, i+u), just used, filled:
// those between the first and the last are full; those two are looked at.
func (sb *superblock) noteFull(i, u int) {
	lo, hi := i>>6, (i+u-1)>>6
	if hi-lo > 1 {
		sb.full |= (^uint64(0) >> (64 - (hi - lo - 1))) << (lo + 1)
	}
	if sb.used[lo] == ^uint64(0) {
		sb.full |= 1 << lo
	}
	if sb.used[hi] == ^uint64(0) {
		sb.full |= 1 << hi
	}
}

// findShort returns the first unit of the first run of u free units (u <=
// 64), or -1: a word of the used bitmap at a time, the runs inside a word
// found with a few shifts (log2 u), a run across two words by counting the
// free units at the end of one and the start of the next.
//
// Full words are skipped through sb.full without being read.
func (sb *superblock) findShort(u int) int {
	for ws := ^sb.full &^ (1<<(sb.low>>6) - 1); ws != 0; ws &= ws - 1 {
		k := bits.TrailingZeros64(ws)
		used := sb.used[k]
		// m: bit p set when units p .. p+n-1 of the word are free, n
		// doubling up to u.
		m := ^used
		for n := 1; n < u; {
			t := min(n, u-n)
			m &= m >> t
			n += t
		}
		if m != 0 {
			return k<<6 + bits.TrailingZeros64(m)
		}
		if top := bits.LeadingZeros64(used); top > 0 && k+1 < superblockWords &&
			top+bits.TrailingZeros64(sb.used[k+1]) >= u {
			return k<<6 + 64 - top
		}
	}
	return -1
}

// findLong returns the first unit of the first run of u free units, run
// by run, or -1 and the largest run.
func (sb *superblock) findLong(u int) (int, int) {
	largest := 0
	for i := nextZero(sb.usedMap(), sb.low); i < superblockUnits; {
		end := nextOne(sb.usedMap(), i)
		if end-i >= u {
			return i, 0
		}
		largest = max(largest, end-i)
		if end == superblockUnits {
			break
		}
		i = nextZero(sb.usedMap(), end)
	}
	return -1, largest
}

// release frees u units from unit i and returns the length of the free
// run they are now part of.
func (sb *superblock) release(i, u int) int {
	setBits(sb.usedMap(), i, u, false)
	sb.full &^= (^uint64(0) >> (63 - (i+u-1)>>6)) &^ (1<<(i>>6) - 1) // the words it touches
	sb.free += u
	if i < sb.low {
		sb.low = i
	}
	return nextOne(sb.usedMap(), i+u) - (prevOne(sb.usedMap(), i) + 1)
}

// valid reports whether units [i, i+u) are exactly one live allocation.
func (sb *superblock) valid(i, u int) bool {
	used, start := sb.usedMap(), sb.startMap()
	if i+u > superblockUnits || !bitSet(start, i) || bitSet(sb.pendingMap(), i) || !allSet(used, i, u) {
		return false
	}
	if u > 1 && !noneSet(start, i+1, u-1) {
		return false
	}
	end := i + u
	return end == superblockUnits || !bitSet(used, end) || bitSet(start, end)
}

// largestRun returns the largest run of free units.
func (sb *superblock) largestRun() int {
	best := 0
	for i := nextZero(sb.usedMap(), 0); i < superblockUnits; {
		end := nextOne(sb.usedMap(), i)
		best = max(best, end-i)
		if end == superblockUnits {
			break
		}
		i = nextZero(sb.usedMap(), end)
	}
	return best
}

// hasPending reports whether frees from other streams wait in sb.
func (sb *superblock) hasPending() bool {
	for k := 0; k < superblockWords; k++ {
		if sb.marks[2*k+1] != 0 {
			return true
		}
	}
	return false
}

// superblockAt returns the superblock holding ptr, or nil.
func (a *Arena) superblockAt(ptr uintptr) *superblock {
	off := ptr - a.base
	if off >= a.size {
		return nil
	}
	w := off / superblockSize
	if sb := a.windows[w].Load(); sb != nil && sb.base <= ptr {
		return sb
	}
	if w > 0 {
		if sb := a.windows[w-1].Load(); sb != nil && ptr-sb.base < superblockSize {
			return sb
		}
	}
	return nil
}

// allocLocal serves u units from l's superblocks. l.mu is held.
func (l *arenaList) allocLocal(u int) uintptr {
	n := len(l.sbs)
	for k := 0; k < n; k++ {
		j := l.cur + k
		if j >= n {
			j -= n
		}
		if int(l.runs[j]) < u {
			continue
		}
		sb := l.sbs[j]
		wasEmpty := sb.free == superblockUnits
		i, largest := sb.alloc(u)
		if i >= 0 {
			if wasEmpty {
				l.empty--
			}
			l.cur = j
			l.allocs++
			l.Free.Add(^(uintptr(u)<<unitShift - 1))
			return sb.base + uintptr(i)<<unitShift
		}
		l.runs[j] = int32(largest)
	}
	return 0
}

// released notes that a free run of run units appeared in sb. l.mu is
// held.
func (l *arenaList) released(sb *superblock, run int) {
	if int32(run) > l.runs[sb.idx] {
		l.runs[sb.idx] = int32(run)
	}
}

// drain takes back the memory freed on other streams. With ordered set it
// takes only what can be ordered before l's stream without touching the
// freeing stream's handle, making s (l's stream, the caller's) wait for it;
// the rest stays queued and its streams are asked to settle. Without it
// (the device is idle) it takes everything. l.mu is held.
func (a *Arena) drain(l *arenaList, s Stream, ordered bool) error {
	kept := l.remote[:0]
	var err error
	for _, r := range l.remote {
		if ordered && err == nil {
			if !r.st.Ordered(r.seq) {
				a.eng.Want(r.st) // its next call records its event
				kept = append(kept, r)
				continue
			}
			err = a.eng.OrderAfter(s, l.St, r.st, r.seq)
		}
		if err != nil {
			kept = append(kept, r)
			continue
		}
		r.st.Inflight.Add(-1)
		sb := a.superblockAt(r.ptr)
		i := int(r.ptr-sb.base) >> unitShift
		setBits(sb.startMap(), i, 1, false)
		setBits(sb.pendingMap(), i, 1, false)
		l.released(sb, sb.release(i, r.units))
		l.Free.Add(uintptr(r.units) << unitShift)
		if sb.free == superblockUnits {
			l.empty++
		}
	}
	clear(l.remote[len(kept):])
	l.remote = kept
	return err
}

// adopt adds the wholly free sb to l. l.mu is held.
func (l *arenaList) adopt(sb *superblock) { l.attach(sb, superblockUnits) }

// attach adds sb, whose largest free run is at most run units, to l. l.mu
// is held (and the previous owner's, if any).
func (l *arenaList) attach(sb *superblock, run int32) {
	sb.idx = len(l.sbs)
	sb.owner.Store(l)
	l.sbs = append(l.sbs, sb)
	l.runs = append(l.runs, run)
	l.cur = sb.idx
	if sb.free == superblockUnits {
		l.empty++
	}
	l.Free.Add(uintptr(sb.free) << unitShift)
}

// detach removes sb from l, leaving its owner to the caller. l.mu is held.
func (l *arenaList) detach(sb *superblock) {
	last := l.sbs[len(l.sbs)-1]
	l.sbs[sb.idx] = last
	l.runs[sb.idx] = l.runs[len(l.runs)-1]
	last.idx = sb.idx
	l.sbs[len(l.sbs)-1] = nil
	l.sbs = l.sbs[:len(l.sbs)-1]
	l.runs = l.runs[:len(l.runs)-1]
	if l.cur >= len(l.sbs) {
		l.cur = 0
	}
	if sb.free == superblockUnits {
		l.empty--
	}
	l.Free.Add(^(uintptr(sb.free)<<unitShift - 1))
}

// disown removes the wholly free sb from l. l.mu is held.
func (l *arenaList) disown(sb *superblock) {
	l.detach(sb)
	sb.owner.Store(nil)
}
