package heap

import (
	"runtime"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/core/internal/cachepolicy"
	"github.com/rmmgo/rmmgo/core/internal/relaxed"
	"github.com/rmmgo/rmmgo/core/internal/streamorder"
	"github.com/rmmgo/rmmgo/cudart"
	"github.com/rmmgo/rmmgo/internal/cabi"
)

// The front: size classes, and per-P caches of blocks freed on the legacy
// default stream, for heaps that enable them (the pool's; EnableFront).
//
// Size classes. With the front on, a request of up to FrontMaxBlock bytes
// gets a block of its class's size, whatever its stream: 256-byte steps up
// to 4 KiB, then four classes per power of two (5, 6, 7, 8 KiB, 10, 12,
// 14, 16 KiB, ... 1 MiB), the classes of the C ABI's thread caches. A freed
// block then serves any later request of its class, in the front or in a
// magazine, rather than only one of exactly its size. The block's index
// slot records the size the user asked for (rounded to 256), so a free
// with another size is refused as before; the rounding (class size minus
// that) counts as not in use (RoundingBytes).
//
// The front. A free on the legacy default stream of a block of a class
// does not go to the heap's lists: the block waits, as it is (its node
// untouched, its slot empty, so a second free of it fails at once, as for
// a magazine's blocks), in a stack of its class in the front shard of the
// P the freeing goroutine runs on. An allocation on the default stream pops
// the newest block of its class from its P's shard: no list lock, no
// index, no node. When the shard has none, the allocation is served by
// the default stream's lists. (It takes no more blocks for the shard than
// it needs: blocks carved ahead for a class that is not asked for again
// would break the heap's free memory into holes.)
//
// Stream order: the default stream is one stream for every thread, and a
// block freed on it may be reused at once by later work on it, whichever
// goroutine queues that work. Other streams never see a front's block
// until it is drained into the default stream's list, where it is a block
// freed on the default stream now (its sequence number is the stream's
// epoch at the drain, later than at the free: ordering after it is
// ordering after the free), and the stream-ordering machinery takes over.
//
// Bounds: the front shares the magazines' budget (cachepolicy.Magazines
// of the heap's size): each shard reserves a quota from the heap's account
// a cachepolicy.Quantum at a time, as a magazine does, and a free that
// would take a shard past what it can reserve first drains the oldest
// blocks of a class into the default stream's list (they coalesce there).
// Everything goes back (DrainFront) before the heap grows, before it
// fails for want of memory, on ReleaseChunks and Stats.
//
// Locking: a shard has a spin lock, taken only with the goroutine pinned
// to its P (streamorder.Pin), so its holder is never preempted; a shard's
// own P takes it with one compare-and-swap, another goroutine (a drain)
// only to empty it. The lock is never held with a list lock.

// FrontMaxBlock is the largest request the size classes and the front
// serve: 1 MiB, the magazines' largest block.
const FrontMaxBlock = frontMaxUnits << UnitShift

const (
	frontMaxUnits = magMaxUnits
	// The front's classes are the C thread cache's, up to frontMaxUnits
	// (internal/cabi: 16 of 256-byte steps, then four per power of two):
	// the classes below 1 MiB, and 1 MiB's own.
	// The doublings from cabi.SmallLimit (2^12 bytes) to FrontMaxBlock
	// (2^20): TestFrontClassesAreCabis checks the count against cabi.
	frontClasses = cabi.SmallClasses + cabi.ClassesPerDoubling*(20-12)
	// frontDrainBatch: blocks a free drains into the heap at once when its
	// shard is over its quota.
	frontDrainBatch = 64
)

// frontClass returns the class of a request of u units (1 <= u <=
// frontMaxUnits) and its size in units: the C cache's classes, one rule
// (internal/cabi).
func frontClass(u uintptr) (int, uintptr) {
	c := cabi.ClassOf(u << UnitShift)
	return c, cabi.ClassSize(c) >> UnitShift
}

// blockSize returns the size of the block that serves a request of size
// bytes (a multiple of 256, not 0): its class's size with the front on and
// size at most FrontMaxBlock, else size.
func (h *Heap) blockSize(size uintptr) uintptr {
	if h.front == nil || size > FrontMaxBlock {
		return size
	}
	_, u := frontClass(size >> UnitShift)
	return u << UnitShift
}

// BlockSize returns the size of the block the heap hands out for a
// request of size bytes (a multiple of 256, not 0).
func (h *Heap) BlockSize(size uintptr) uintptr { return h.blockSize(size) }

// frontEntry is a block in a front shard.
type frontEntry struct {
	addr uintptr
	id   int32
}

// frontShard is the front of one P (or of several, if GOMAXPROCS grew
// since the heap was made).
type frontShard struct {
	lock spinLock
	// bytes and count are the blocks the shard holds; quota the part of
	// the heap's magazine budget it reserved (>= bytes). Written under
	// lock; bytes and count are read without it as hints.
	bytes  relaxed.Uintptr
	count  relaxed.Uintptr
	quota  relaxed.Uintptr
	stacks [frontClasses][]frontEntry
	// round sums the rounding of the blocks handed out from this P
	// (class size minus the user's size), less that of the blocks freed
	// from it; it wraps, the sum over the shards does not.
	round atomic.Uintptr
	_     [64]byte
}

// front is a heap's shards.
type front struct {
	shards []frontShard
	mask   uint32
}

// EnableFront turns on size classes and the front (see front.go). Call
// it after Init, before the heap is used; the heap must have magazines.
func (h *Heap) EnableFront() {
	n := 1
	for n < runtime.GOMAXPROCS(0) && n < 64 {
		n <<= 1
	}
	h.front = &front{shards: make([]frontShard, n), mask: uint32(n - 1)}
}

// lockShard pins the calling goroutine and locks its P's shard. Release
// it with unlockShard.
func (f *front) lockShard() *frontShard {
	for {
		sh := &f.shards[streamorder.Pin()&f.mask]
		if sh.lock.tryLock() {
			return sh
		}
		// Another goroutine holds it (a drain, or one of another P sharing
		// the shard): let it run.
		streamorder.Unpin()
		runtime.Gosched()
	}
}

// lockShardAt pins the calling goroutine and locks shard i.
func (f *front) lockShardAt(i int) *frontShard {
	sh := &f.shards[i]
	for {
		streamorder.Pin()
		if sh.lock.tryLock() {
			return sh
		}
		streamorder.Unpin()
		runtime.Gosched()
	}
}

func unlockShard(sh *frontShard) {
	sh.lock.unlock()
	streamorder.Unpin()
}

// addRound adds d (two's complement for a decrease) to the rounding
// counted on the calling goroutine's P.
func (f *front) addRound(d uintptr) {
	f.shards[streamorder.CurrentP()&f.mask].round.Add(d)
}

// frontAllocate serves a request of size bytes (a multiple of 256, at
// most FrontMaxBlock) on the legacy default stream. Its common case, a
// block in the calling P's shard whose leaf or big slot exists, is written
// out here: two calls (pin, unpin), one compare-and-swap, one store into
// the slot.
func (h *Heap) frontAllocate(size uintptr) (uintptr, error) {
	c, u := frontClass(size >> UnitShift)
	blk := u << UnitShift
	f := h.front
	sh := &f.shards[streamorder.Pin()&f.mask]
	if sh.lock.tryLock() {
		if st := sh.stacks[c]; len(st) > 0 {
			e := st[len(st)-1]
			sh.stacks[c] = st[:len(st)-1]
			sh.bytes.Add(^(blk - 1))
			sh.count.Add(^uintptr(0))
			if blk != size {
				sh.round.Add(blk - size)
			}
			sh.lock.unlock()
			streamorder.Unpin()
			if r := h.chunks.Load().dir.flatRegion(e.addr); r != nil {
				if blk >= bigBlock {
					r.big.Store(bigWord(e.id, size, e.addr))
					return e.addr, nil
				}
				if lf := r.leaf.Load(); lf != nil {
					lf[(e.addr>>UnitShift)&(leafSlots-1)].Store(leafWord(e.id, size))
					return e.addr, nil
				}
			}
			return h.publishAt(e.id, e.addr, blk, size)
		}
		sh.lock.unlock()
		streamorder.Unpin()
		return h.frontMiss(blk, size)
	}
	streamorder.Unpin()
	return h.frontAllocateSlow(c, blk, size)
}

// frontAllocateSlow is frontAllocate when another goroutine held the
// shard: the shard once more (waiting for it), then frontMiss.
func (h *Heap) frontAllocateSlow(c int, blk, size uintptr) (uintptr, error) {
	sh := h.front.lockShard()
	if st := sh.stacks[c]; len(st) > 0 {
		e := st[len(st)-1]
		sh.stacks[c] = st[:len(st)-1]
		sh.bytes.Add(^(blk - 1))
		sh.count.Add(^uintptr(0))
		if blk != size {
			sh.round.Add(blk - size)
		}
		unlockShard(sh)
		return h.publishAt(e.id, e.addr, blk, size)
	}
	unlockShard(sh)
	return h.frontMiss(blk, size)
}

// frontMiss serves a request the shard had no block for from the default
// stream's lists (the fast path: this shard's list, made already).
func (h *Heap) frontMiss(blk, size uintptr) (uintptr, error) {
	if l := h.eng.DefaultShard(); l != nil {
		l.Mu.Lock()
		id, addr := h.take(l, blk)
		l.Mu.Unlock()
		if id != 0 {
			h.countRound(blk, size)
			return h.publishAt(id, addr, blk, size)
		}
	}
	return h.allocateList(cudart.DefaultStream, blk, size, Grow)
}

// frontReserve raises sh's quota by at least need bytes from the heap's
// magazine budget (a quantum when it can); false when the budget has no
// room for need. sh is locked.
func (h *Heap) frontReserve(sh *frontShard, need uintptr) bool {
	for _, want := range [2]uintptr{max(need, cachepolicy.Quantum), need} {
		for {
			avail := h.magAvail.Load()
			if avail < int64(want) {
				break
			}
			if h.magAvail.CompareAndSwap(avail, avail-int64(want)) {
				sh.quota.Add(want)
				return true
			}
		}
	}
	return false
}

// frontDeallocate frees size bytes at ptr (a multiple of 256, at most
// FrontMaxBlock) on the legacy default stream into the front. Its common
// case, a slot that holds the size and a shard with room, is written out
// here; anything else goes through claim (which reports what is wrong)
// and frontPut.
func (h *Heap) frontDeallocate(ptr, size uintptr) error {
	u := size >> UnitShift
	c, bu := frontClass(u)
	blk := bu << UnitShift
	var id int32
	if r := h.chunks.Load().dir.flatRegion(ptr); r != nil && ptr&(Unit-1) == 0 {
		if blk >= bigBlock {
			if w := r.big.Load(); w>>32 == uint64(ptr>>UnitShift&(leafSlots-1))<<24|uint64(u) && r.big.CompareAndSwap(w, 0) {
				id = int32(uint32(w))
			}
		} else if lf := r.leaf.Load(); lf != nil {
			sp := &lf[(ptr>>UnitShift)&(leafSlots-1)]
			if w := sp.Load(); w>>23 == leafPacked>>23|uint32(u) && sp.CompareAndSwap(w, 0) {
				id = int32(w & (1<<23 - 1))
			}
		}
	}
	if id == 0 {
		var err error
		if id, _, err = h.claim(ptr, size, blk); err != nil {
			return err
		}
	}
	f := h.front
	sh := &f.shards[streamorder.Pin()&f.mask]
	if sh.lock.tryLock() {
		if sh.bytes.Load()+blk <= sh.quota.Load() {
			sh.stacks[c] = append(sh.stacks[c], frontEntry{ptr, id})
			sh.bytes.Add(blk)
			sh.count.Add(1)
			if blk != size {
				sh.round.Add(^(blk - size - 1))
			}
			sh.lock.unlock()
			streamorder.Unpin()
			return nil
		}
		sh.lock.unlock()
	}
	streamorder.Unpin()
	h.frontPut(c, blk, size, frontEntry{ptr, id})
	return nil
}

// frontPut is frontDeallocate's end when the shard was locked by another
// goroutine or is at its quota: it reserves more of the budget, or makes
// room (frontOverflow).
func (h *Heap) frontPut(c int, blk, size uintptr, e frontEntry) {
	if blk != size {
		h.front.addRound(^(blk - size - 1))
	}
	sh := h.front.lockShard()
	if need := sh.bytes.Load() + blk; need > sh.quota.Load() && !h.frontReserve(sh, need-sh.quota.Load()) {
		h.frontOverflow(sh, c, blk, e)
		return
	}
	sh.stacks[c] = append(sh.stacks[c], e)
	sh.bytes.Add(blk)
	sh.count.Add(1)
	unlockShard(sh)
}

// frontOverflow frees e, a block of class c (blk bytes), into sh, whose
// quota cannot grow to hold it. It makes room in the budget first from
// the shard holding the most (a goroutine that moved to another P leaves
// its blocks, and the quota they hold, behind), then by draining blocks of
// class c and the classes after it from sh; the blocks drained go to the
// heap, within frontDrainBatch. sh is locked; frontOverflow unlocks it.
func (h *Heap) frontOverflow(sh *frontShard, c int, blk uintptr, e frontEntry) {
	var out [frontDrainBatch]frontEntry
	n := 0
	if o := h.front.fullest(sh); o != nil && o.bytes.Load() > sh.bytes.Load()/2 && o.lock.tryLock() {
		// (tryLock: never wait for a shard while holding one.)
		var got uintptr
		n, got = o.drain(0, o.bytes.Load()/2, out[:len(out)-1])
		o.quota.Add(^(got - 1))
		h.magAvail.Add(int64(got))
		o.lock.unlock()
	}
	if need := sh.bytes.Load() + blk; n == 0 || need > sh.quota.Load() && !h.frontReserve(sh, need-sh.quota.Load()) {
		k, _ := sh.drain(c, max(sh.bytes.Load()/4, blk), out[n:len(out)-1])
		n += k
	}
	if sh.bytes.Load()+blk <= sh.quota.Load() {
		sh.stacks[c] = append(sh.stacks[c], e)
		sh.bytes.Add(blk)
		sh.count.Add(1)
	} else {
		// The shard holds less than a block of this size: the block goes to
		// the heap too.
		out[n] = e
		n++
	}
	unlockShard(sh)
	h.frontInsert(out[:n])
}

// fullest returns the shard other than sh that holds the most bytes (a
// hint), or nil when none holds any.
func (f *front) fullest(sh *frontShard) *frontShard {
	var best *frontShard
	var most uintptr
	for i := range f.shards {
		if o := &f.shards[i]; o != sh && o.bytes.Load() > most {
			best, most = o, o.bytes.Load()
		}
	}
	return best
}

// drain moves blocks into out, and returns how many and their bytes: the
// newest half of class c, then of the classes after it (cyclically),
// until they add up to want bytes or out is full. sh is locked.
func (sh *frontShard) drain(c int, want uintptr, out []frontEntry) (int, uintptr) {
	n := 0
	var got uintptr
	for i := 0; i < frontClasses && n < len(out) && got < want; i++ {
		if st := sh.stacks[c]; len(st) > 0 {
			cb := frontSizeOf(c) << UnitShift
			k := min(len(st), len(out)-n, max(len(st)/2, 1))
			copy(out[n:], st[len(st)-k:])
			sh.stacks[c] = st[:len(st)-k]
			sh.bytes.Add(^(uintptr(k)*cb - 1))
			sh.count.Add(^uintptr(k - 1))
			n += k
			got += uintptr(k) * cb
		}
		if c++; c == frontClasses {
			c = 0
		}
	}
	return n, got
}

// frontSizeOf returns the size in units of class c.
func frontSizeOf(c int) uintptr { return cabi.ClassSize(c) >> UnitShift }

// frontInsert frees blocks drained from a front into the default stream's
// list of the calling goroutine's shard, where they coalesce (after a
// look at all their nodes, as a magazine flush does).
func (h *Heap) frontInsert(es []frontEntry) {
	sl := h.eng.Default()
	l := h.eng.List(sl, h.eng.Shard())
	var batch [magBatch]magEntry
	l.Mu.Lock()
	seq := sl.St.Epoch.Load()
	for len(es) > 0 {
		n := min(len(es), magBatch)
		for i, e := range es[:n] {
			batch[i] = magEntry{addr: e.addr, seq: seq, id: e.id}
		}
		h.insertBatch(l, batch[:n], false)
		es = es[n:]
	}
	l.Mu.Unlock()
}

// DrainFront empties every front shard into the heap's lists and gives
// the shards' quotas back; it reports whether it drained anything. The
// caller holds no list lock.
func (h *Heap) DrainFront() bool {
	f := h.front
	if f == nil {
		return false
	}
	drained := false
	for i := range f.shards {
		if f.shards[i].count.Load() == 0 && f.shards[i].quota.Load() == 0 {
			continue
		}
		sh := f.lockShardAt(i)
		stacks := sh.stacks
		sh.stacks = [frontClasses][]frontEntry{}
		sh.bytes.Store(0)
		sh.count.Store(0)
		h.magAvail.Add(int64(sh.quota.Load()))
		sh.quota.Store(0)
		unlockShard(sh)
		for _, st := range stacks {
			if len(st) > 0 {
				drained = true
				h.frontInsert(st)
			}
		}
	}
	return drained
}

// clearFront forgets every block of the front (ReleaseChunks(true) takes
// their memory back) and gives the quotas back.
func (h *Heap) clearFront() {
	f := h.front
	if f == nil {
		return
	}
	for i := range f.shards {
		sh := f.lockShardAt(i)
		sh.stacks = [frontClasses][]frontEntry{}
		sh.bytes.Store(0)
		sh.count.Store(0)
		h.magAvail.Add(int64(sh.quota.Load()))
		sh.quota.Store(0)
		unlockShard(sh)
	}
}

// frontHeld returns the blocks and bytes the front holds (hints).
func (h *Heap) frontHeld() (blocks int, bytes uintptr) {
	if h.front == nil {
		return 0, 0
	}
	for i := range h.front.shards {
		blocks += int(h.front.shards[i].count.Load())
		bytes += h.front.shards[i].bytes.Load()
	}
	return blocks, bytes
}

// RoundingBytes returns the bytes by which the live blocks exceed what
// their users asked for (rounded to 256): the size classes' rounding. A
// snapshot while others work; exact when none does.
func (h *Heap) RoundingBytes() uintptr {
	if h.front == nil {
		return 0
	}
	var n uintptr
	for i := range h.front.shards {
		n += h.front.shards[i].round.Load()
	}
	return n
}
