package heap

import (
	"errors"
	"fmt"

	"github.com/rmmgo/rmmgo/core/internal/errs"
	"github.com/rmmgo/rmmgo/core/internal/streamorder"
	"github.com/rmmgo/rmmgo/cudart"
)

// Allocate returns size bytes (a multiple of 256, not 0) usable in stream
// order on s: a block of h.BlockSize(size) bytes. For the per-thread
// default stream the caller holds its goroutine on its OS thread.
func (h *Heap) Allocate(s cudart.Stream, size uintptr) (uintptr, error) {
	if h.front != nil && size <= FrontMaxBlock && (s == cudart.DefaultStream || s == cudart.LegacyDefaultStream) {
		return h.frontAllocate(size)
	}
	if s == cudart.DefaultStream || s == cudart.LegacyDefaultStream {
		// The fast path: the default stream's list for this size in this
		// shard (never retired), made already. (Without the front, blocks
		// are size bytes.)
		if l := h.defaultList(size); l != nil {
			l.Mu.Lock()
			id, addr := h.take(l, size)
			l.Mu.Unlock()
			if id != 0 {
				return h.publishAt(id, addr, size, size)
			}
		}
	}
	return h.allocateList(s, h.blockSize(size), size, Grow)
}

// Mode says what an allocation may do when no free block the requesting
// stream can use fits.
type Mode uint8

const (
	// Grow: take a new chunk from the upstream (the heap's own policy:
	// give back wholly free chunks first, synchronize when growth fails).
	Grow Mode = iota
	// NoGrow: fail with an out-of-memory error instead of growing; no
	// device synchronization either.
	NoGrow
	// Local: only what the stream's own lists hold; no other stream's
	// memory, no merging of lists, no growth (a cheap first look).
	Local
	// SyncNoGrow: never grow, but when the heap's free memory could hold
	// the request, synchronize the device (after which every block freed
	// before is usable by every stream) and look again, as a heap whose
	// growth failed does.
	SyncNoGrow
)

// AllocateMode is Allocate with what the allocation may do when no free
// block fits (Allocate is AllocateMode with Grow). A resource with two
// heaps asks one without growing before it grows the other.
func (h *Heap) AllocateMode(s cudart.Stream, size uintptr, m Mode) (uintptr, error) {
	if m == Grow {
		return h.Allocate(s, size)
	}
	blk := h.blockSize(size)
	if h.front != nil && blk <= FrontMaxBlock && (s == cudart.DefaultStream || s == cudart.LegacyDefaultStream) {
		// Blocks in the front are free memory the lists do not see.
		h.DrainFront()
	}
	return h.allocateList(s, blk, size, m)
}

// allocateList serves a request of size bytes with a block of blk bytes
// from s's list in the calling goroutine's shard, or allocateSlow.
func (h *Heap) allocateList(s cudart.Stream, blk, size uintptr, m Mode) (uintptr, error) {
	for {
		sl, err := h.eng.Lookup(s)
		if err != nil {
			return 0, err
		}
		h.eng.MaybeSettle(sl, s)
		l := h.listFor(sl, blk)
		l.Mu.Lock()
		id, addr := h.take(l, blk)
		l.Mu.Unlock()
		if id != 0 {
			h.countRound(blk, size)
			return h.publishAt(id, addr, blk, size)
		}
		p, err := h.allocateSlow(s, sl, l, blk, size, m)
		if err != streamorder.ErrRetry {
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
//
// It serves blk bytes (h.blockSize(size)) for a request of size bytes.
func (h *Heap) allocateSlow(s cudart.Stream, sl *streamorder.Lists[freeList], own *freeList, blk, size uintptr, m Mode) (uintptr, error) {
	st := sl.St
	syncs := 0 // device synchronizations after growth failed
	// the owner's caches were asked for their blocks (SyncNoGrow follows
	// a NoGrow of the same request: its owner asked them then)
	reclaimed := m == SyncNoGrow
	gave := false    // and gave some
	trimmed := false // wholly free chunks were given back
	for {
		gen := h.gen.Load()
		// Memory freed on this stream in other shards.
		for i := range sl.Shards {
			l := sl.Shards[i].Load()
			if l == nil || l == own || l.Free.Load() < blk {
				continue
			}
			l.Mu.Lock()
			id, addr := h.take(l, blk)
			l.Mu.Unlock()
			if id != 0 {
				h.countRound(blk, size)
				return h.publishAt(id, addr, blk, size)
			}
		}
		if m == Local {
			return 0, errNoRoom
		}
		// Memory freed on other streams, once this stream waits for it.
		ls := h.eng.AllLists()
		h.eng.WantOthers(ls, st, true)
		for _, l := range ls {
			if l.St == st {
				continue
			}
			durable := l.St.Durable()
			if avail := l.Settled.Load(); durable {
				if l.Free.Load() < blk {
					continue
				}
			} else if avail < blk {
				continue
			}
			l.Mu.Lock()
			id := h.carve(l, blk, !durable)
			if id == 0 && durable && l.mag != nil && l.mag.count != 0 {
				// Blocks in the magazine of a durable stream's list are
				// ordered like the others once in the index. (Those of
				// other streams are fresh: they settle first.)
				h.magFlushAll(l)
				id = h.carve(l, blk, false)
			}
			var seq uint64
			if id != 0 {
				seq = h.nodes.load().at(id).seq
				l.St.Inflight.Add(1)
			}
			l.Mu.Unlock()
			if id == 0 {
				continue
			}
			err := h.eng.OrderAfter(s, st, l.St, seq)
			if err != nil {
				h.giveBack(l, id, seq)
			}
			l.St.Inflight.Add(-1) // after giveBack: l stays in the engine till then
			if err != nil {
				return 0, err
			}
			return h.publish(id, size)
		}
		h.eng.WantOthers(ls, st, false)
		// Enough ordered memory is free, but in pieces, some of them in
		// other lists: merge it into this stream's list and coalesce.
		if h.worthDefrag(own, blk) {
			id, err := h.defrag(s, own, blk)
			if err != nil || id != 0 {
				if id != 0 {
					// What was ordered for everyone is now fresh in own's
					// list: settle it, so that others may go on using it.
					h.eng.SettleNow(sl, s, false)
					return h.publish(id, size)
				}
				return 0, err
			}
		}
		if h.grow == nil {
			if h.closed.Load() {
				return 0, h.errClosed()
			}
			return 0, errNoRoom
		}
		// Blocks the caches in front of the heap hold (the owner's, then
		// the heap's own front) are free memory the lists do not see: take
		// them back before growing (once a call), and look again. The
		// owner's caches give theirs back through Deallocate, into the
		// front when they were freed on the default stream: drain it after.
		if !reclaimed {
			reclaimed = true
			back := h.reclaim != nil && h.reclaim(size)
			if back {
				gave = true
			}
			if h.DrainFront() || back {
				// The blocks came back, most likely into own: look there,
				// then everywhere as before.
				own.Mu.Lock()
				id, addr := h.take(own, blk)
				own.Mu.Unlock()
				if id != 0 {
					h.countRound(blk, size)
					return h.publishAt(id, addr, blk, size)
				}
				continue
			}
		}
		if m != Grow {
			if h.closed.Load() {
				return 0, h.errClosed()
			}
			if m == SyncNoGrow && syncs < maxSyncRetries && h.quietFreeBytes() >= blk {
				if err := h.eng.Synchronize(); err != nil {
					return 0, err
				}
				syncs++
				continue
			}
			return 0, errNoRoom
		}
		// Enough is free for this stream, but in pieces no request of
		// this size fits in: give the wholly free chunks back before
		// growing (once a call), so that the heap does not hold free
		// memory it cannot use on top of the new chunk. (Memory other
		// streams freed and did not settle does not count: waiting for it
		// is not this stream's business; but giving back synchronizes the
		// device, after which it is everyone's: with trimSettles, look
		// again before growing.)
		if !trimmed && h.trim != nil && h.usableBy(st) >= blk {
			trimmed = true
			if spans := h.ReleaseChunks(false); len(spans) != 0 {
				var ms []streamorder.SyncMark[freeList]
				if h.trimSettles {
					ms = h.eng.SyncMarks() // before trim synchronizes
				}
				if err := h.trim(spans); err != nil {
					return 0, err
				}
				if h.trimSettles {
					h.eng.ApplySync(ms)
					continue
				}
			}
		}
		h.growMu.Lock()
		if h.closed.Load() {
			h.growMu.Unlock()
			return 0, h.errClosed()
		}
		if h.gen.Load() != gen {
			h.growMu.Unlock()
			continue // another allocation grew the heap meanwhile: look again
		}
		base, n, err := h.grow(s, blk)
		if err != nil {
			h.growMu.Unlock()
			if !errors.Is(err, errs.OutOfMemory) || h.quietFreeBytes() < blk || syncs == maxSyncRetries {
				if gave && errors.Is(err, errs.OutOfMemory) && h.futile != nil {
					h.futile()
				}
				return 0, err
			}
			// Enough is free, but not ordered before this stream: after a
			// device synchronization all of it is. Another stream may
			// still take it first and leave it fresh in its own list (a
			// defragmentation does), hence more than one try.
			if serr := h.eng.Synchronize(); serr != nil {
				return 0, errors.Join(err, serr)
			}
			syncs++
			continue
		}
		own.Mu.Lock()
		if own.Retired {
			own.Mu.Unlock()
			h.addChunk(nil, base, n) // keep the memory; it lands in the default stream's list
			h.growMu.Unlock()
			return 0, streamorder.ErrRetry
		}
		h.addChunk(own, base, n)
		id := h.carve(own, blk, false)
		own.Mu.Unlock()
		h.gen.Add(1)
		h.growMu.Unlock()
		if id == 0 {
			return 0, fmt.Errorf("%s: %w: internal error: a new chunk of %d bytes cannot hold %d", h.kind, errs.BadAlloc, n, blk)
		}
		// The rest of the chunk is fresh in own's list: settle it, so that
		// other streams need not grow too.
		h.eng.SettleNow(sl, s, true)
		return h.publish(id, size)
	}
}

// AllocateMore fills out with blocks of size bytes (a multiple of 256,
// not 0) for stream s, taken only from what the stream's own lists hold
// (the calling goroutine's shard first): it never grows the heap,
// synchronizes or takes other streams' memory. It returns how many it
// took. For the per-thread default stream the caller holds its goroutine on
// its OS thread. A cache refilling itself calls it after Allocate gave it
// its first block.
func (h *Heap) AllocateMore(s cudart.Stream, size uintptr, out []uintptr) int {
	blk := h.blockSize(size)
	sl := h.eng.Default()
	if s != cudart.DefaultStream && s != cudart.LegacyDefaultStream {
		var err error
		if sl, err = h.eng.Lookup(s); err != nil {
			return 0
		}
	}
	n := 0
	mine := h.eng.Shard()
	for i := range sl.Shards {
		l := sl.Shards[(uint32(i)+mine)%uint32(len(sl.Shards))].Load()
		if l == nil || l.Free.Load() < blk {
			continue
		}
		n += h.takeMore(l, blk, size, out[n:])
		if n == len(out) {
			break
		}
	}
	return n
}

// takeMore fills out with blocks of blk bytes from l, for requests of
// size bytes; it returns how many.
func (h *Heap) takeMore(l *freeList, blk, size uintptr, out []uintptr) int {
	type got struct {
		id   int32
		addr uintptr
	}
	var buf [64]got
	n := 0
	l.Mu.Lock()
	for n < len(out) && n < len(buf) && !l.Retired {
		id, addr := h.take(l, blk)
		if id == 0 {
			break
		}
		buf[n] = got{id, addr}
		n++
	}
	l.Mu.Unlock()
	k := 0
	for _, b := range buf[:n] {
		p, err := h.publishAt(b.id, b.addr, blk, size)
		if err != nil {
			break // closed meanwhile: Close takes every chunk back
		}
		h.countRound(blk, size)
		out[k] = p
		k++
	}
	return k
}

// maxSyncRetries bounds the device synchronizations one allocation makes
// after growth failed while enough memory was free in the heap.
const maxSyncRetries = 4

// errNoRoom: the heap cannot serve a request and cannot grow.
var errNoRoom = fmt.Errorf("%w: no room", errs.OutOfMemory)

// giveBack returns a node carved from l but not handed out.
func (h *Heap) giveBack(l *freeList, id int32, seq uint64) {
	l.Mu.Lock()
	h.insertFree(l, id, seq)
	l.Mu.Unlock()
}

// Deallocate returns size bytes (a multiple of 256, as given to Allocate)
// at ptr, freed in stream order on s. Memory the heap did not hand out, or
// handed out and took back already, is errs.InvalidPointer; a live block of
// another size is errs.InvalidArgument.
func (h *Heap) Deallocate(s cudart.Stream, ptr, size uintptr) error {
	if h.front != nil && size <= FrontMaxBlock && (s == cudart.DefaultStream || s == cudart.LegacyDefaultStream) {
		return h.frontDeallocate(ptr, size)
	}
	sl, err := h.eng.Lookup(s)
	if err != nil {
		return err
	}
	blk := h.blockSize(size)
	id, r, err := h.claim(ptr, size, blk)
	if err != nil {
		return err
	}
	if blk != size {
		h.front.addRound(^(blk - size - 1))
	}
	if sl == h.eng.Default() {
		// The fast path, as in Allocate.
		if l := h.defaultList(blk); l != nil {
			l.Mu.Lock()
			h.magPut(l, id, ptr, blk, sl.St.Epoch.Load())
			l.Mu.Unlock()
			return nil
		}
	}
	for {
		l := h.listFor(sl, blk)
		l.Mu.Lock()
		if !l.Retired {
			h.magPut(l, id, ptr, blk, sl.St.Epoch.Load())
			batch := l.NoteFreed(blk, h.size.Load) && h.eng.Shared()
			l.Mu.Unlock()
			if batch {
				h.eng.Want(sl.St)
			}
			// A record made now covers this free too.
			h.eng.MaybeSettle(sl, s)
			return nil
		}
		l.Mu.Unlock()
		// The stream's lists were dropped meanwhile (they were empty):
		// look it up again.
		if sl, err = h.eng.Lookup(s); err != nil {
			if blk != size {
				h.front.addRound(blk - size)
			}
			r.restore()
			return err
		}
	}
}

// Which list of a stream a block goes through. Blocks up to
// MagazineMaxBlock use the list of the calling goroutine's shard, so that
// goroutines running at the same time take different locks; larger ones
// use the stream's home list (shard 0's), where the stream's free memory
// coalesces: a large block is allocated and freed seldom, and sharding it
// would only split free memory between lists that cannot merge it (the
// pool then grows with enough memory free; on real training, by a third
// and more). Smaller blocks join the home list when they coalesce with
// free memory there (insertFree).

// listFor returns the list of stream lists sl for a block of blk bytes.
func (h *Heap) listFor(sl *streamorder.Lists[freeList], blk uintptr) *freeList {
	if blk > MagazineMaxBlock {
		return h.eng.HomeOf(sl)
	}
	return h.eng.List(sl, h.eng.Shard())
}

// defaultList is listFor for the legacy default stream, nil when that
// list was not made yet (the fast paths' test).
func (h *Heap) defaultList(blk uintptr) *freeList {
	if blk > MagazineMaxBlock {
		return h.eng.Default().Shards[0].Load()
	}
	return h.eng.DefaultShard()
}

// defrag merges the movable free blocks of every list (see movable) into
