package core

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmmgo/rmmgo/core/internal/addr"
	"github.com/rmmgo/rmmgo/core/internal/heap"
	"github.com/rmmgo/rmmgo/core/internal/streamorder"
	"github.com/rmmgo/rmmgo/cudart"
)

const kindArena = "arena"

// Superblocks are 1 MiB: 4096 units of 256 bytes (the heap's units), a
// bit each.
const (
	unitShift       = heap.UnitShift
	superblockSize  = 1 << 20
	superblockUnits = superblockSize >> unitShift
	superblockWords = superblockUnits / 64
)

// smallLimit is the largest request served from a superblock.
const smallLimit = superblockSize / 4

// ArenaDumpFile is the file an Arena with DumpLogOnFailure writes when an
// allocation fails, in the working directory, as RMM names it.
const ArenaDumpFile = "rmm_arena_memory_dump.log"

// ArenaOptions configures an Arena.
type ArenaOptions struct {
	// ArenaSize is the size of the global arena, taken from the upstream
	// once: 0 or SizeDefault take half of the current device's free memory.
	// It is aligned down to 256 bytes and must be at least 1 MiB.
	ArenaSize uintptr
	// DumpLogOnFailure appends a description of the arena's fragmentation
	// to ArenaDumpFile when an allocation fails.
	DumpLogOnFailure bool
}

// Arena is a sub-allocator built for many threads allocating at once, like
// RMM's arena_memory_resource. It takes one global arena from the upstream
// when it is made and never grows. Requests of more than 256 KiB are
// served from the global arena (a coalescing best-fit heap with per-stream
// lists, as in Pool); smaller ones from superblocks of 1 MiB that the
// global arena lends to per-stream arenas. (RMM sends only requests above
// 1 MiB to the global arena; a superblock holds few mid-size blocks, and
// the global arena finds a block for them in constant time.)
//
// Go has no thread-local storage, so where RMM gives each thread an arena
// this one gives each (stream, shard) pair one: the shard is the P (Go's
// logical processor) the goroutine runs on, so goroutines running at the
// same time on one stream use different arenas and different locks. Inside
// a superblock allocations are first fit in a bitmap of 256-byte units,
// freed units merge with their neighbours by construction. A superblock
// that becomes wholly free returns to the global arena (one per arena is
// kept), where any stream can take it in stream order.
//
// Memory freed on the stream of the arena that owns its superblock is
// reused at once. Memory freed on another stream waits in the owning
// arena's queue until that arena needs room; it then makes its stream wait
// for the freeing stream and takes the memory back, once a record of the
// freeing stream's event covers it (made lazily on the default stream, or
// during the freeing stream's next call, as in Pool: the freeing stream's
// handle is never used after its own calls). When an allocation finds no
// room, the Arena synchronizes the device, takes back every queued free
// and every wholly free superblock, moves to the allocation's arena a
// partly used superblock of another stream's arena that has room for it
// (after the synchronization its free memory is idle for every stream),
// and tries again, with the global arena to itself until it has (calls
// that would use the global arena meanwhile wait); if that fails too it
// writes ArenaDumpFile (with DumpLogOnFailure) and returns ErrOutOfMemory.
//
// Sizes are rounded up to 256 bytes; alignments above 256 are refused. An
// Arena is safe for concurrent use.
type Arena struct {
	upstream   Resource
	rt         cudart.Runtime
	dev        int
	base, size uintptr
	dump       bool

	global heap.Heap
	eng    streamorder.Engine[arenaList, *arenaList]
	// windows[i] is the superblock that starts in the i-th MiB of the
	// arena, if any (at most one can, superblocks being 1 MiB).
	windows []atomic.Pointer[superblock]

	reclaimMu sync.Mutex  // held by the caller that quiesced the arena, and Close
	quiet     atomic.Bool // the global arena is a reclaiming caller's alone
	caches    caches      // caches in front of the arena (cache.go)
	closed    atomic.Bool
	closeMu   sync.Mutex
	dumpMu    sync.Mutex
}

// NewArena returns an arena over upstream, taking the global arena from it
// at once.
func NewArena(upstream Resource, opts ArenaOptions) (*Arena, error) {
	r, err := rt()
	if err != nil {
		return nil, err
	}
	return newArena(r, upstream, opts)
}

func newArena(r cudart.Runtime, upstream Resource, opts ArenaOptions) (*Arena, error) {
	if upstream == nil {
		return nil, fmt.Errorf("%s: %w: nil upstream resource", kindArena, ErrInvalidArgument)
	}
	size := opts.ArenaSize
	if size == 0 || size == SizeDefault {
		free, _, err := r.MemGetInfo()
		if err != nil {
			return nil, cudaError(kindArena+": reading the free device memory", err)
		}
		size = uintptr(free / 2)
	}
	size = addr.AlignDown(size, DefaultAlignment)
	if size < superblockSize || size > maxAllocation {
		return nil, fmt.Errorf("%s: %w: arena size %d bytes (at least 1 MiB, the size of a superblock)", kindArena, ErrInvalidArgument, size)
	}
	dev, err := r.GetDevice()
	if err != nil {
		return nil, cudaError(kindArena, err)
	}
	base, err := takeChunk(kindArena, upstream, DefaultStream, size)
	if err != nil {
		return nil, fmt.Errorf("%s: allocating the global arena of %d bytes from the upstream: %w", kindArena, size, err)
	}
	a := &Arena{upstream: upstream, rt: r, dev: dev, base: base, size: size, dump: opts.DumpLogOnFailure}
	a.global.Init(kindArena, r, nil, false)
	a.global.AddChunk(base, size)
	// The arena's lists hold no blocks to settle: memory freed on another
	// stream than its arena's waits in remote with its seq, and a record of
	// the freeing stream covers it where it lies.
	a.eng.Init(streamorder.Config[arenaList, *arenaList]{
		Kind:    kindArena,
		Runtime: r,
		NewList: func() *arenaList { return new(arenaList) },
		Holds:   func(l *arenaList) bool { return len(l.sbs) > 0 || len(l.remote) > 0 },
	})
	a.windows = make([]atomic.Pointer[superblock], size/superblockSize+1)
	return a, nil
}

// Allocate returns bytes (rounded up to 256) usable in stream order on
// stream. Errors: ErrBadAlignment; ErrOutOfMemory ("No room in arena") when
// neither a superblock nor the global arena has room even after taking back
// everything free; ErrClosed after Close.
func (a *Arena) Allocate(stream Stream, bytes, alignment uintptr) (uintptr, error) {
	if !subRequestOK(bytes, alignment) {
		return 0, rejectRequest(kindArena, bytes, alignment)
	}
	if a.closed.Load() {
		return 0, errClosed(kindArena)
	}
	size := (bytes + DefaultAlignment - 1) &^ (DefaultAlignment - 1)
	if stream == cudart.PerThreadDefaultStream {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	if size > smallLimit {
		p, err := a.allocateLarge(stream, size)
		if err != nil {
			return 0, explainOOM(a, stream, bytes, alignment, closedOr(&a.closed, kindArena, err))
		}
		return p, nil
	}
	u := int(size >> unitShift)
	for {
		sl, err := a.eng.Lookup(stream)
		if err != nil {
			return 0, err
		}
		a.eng.MaybeSettle(sl, stream)
		l := a.eng.List(sl, a.eng.Shard())
		l.Mu.Lock()
		p := l.allocLocal(u)
		l.Mu.Unlock()
		if p != 0 {
			return p, nil
		}
		p, err = a.allocateSlow(stream, sl, l, u)
		if err != streamorder.ErrRetry {
			if err != nil {
				return 0, explainOOM(a, stream, bytes, alignment, closedOr(&a.closed, kindArena, err))
			}
			return p, nil
		}
	}
}

// allocateSlow serves a request its own list could not: memory freed into
// the list from other streams, then room in the stream's lists of other
// shards, then a new superblock from the global arena, and when that is
// exhausted everything reclaim takes back.
//
// The stream's other shards come before the global arena because a stream
// used by goroutines that move between Ps would otherwise spread its blocks
// over one partly used superblock per P (on a 32-core host, sixteen such
// streams filled a 384 MiB arena with under 100 MiB live). A superblock
// found there moves into this list, so the next allocations are local.
func (a *Arena) allocateSlow(s Stream, sl *streamorder.Lists[arenaList], l *arenaList, u int) (uintptr, error) {
	l.Mu.Lock()
	if len(l.remote) > 0 {
		err := a.drain(l, s, true)
		if err == nil {
			if p := l.allocLocal(u); p != 0 {
				l.Mu.Unlock()
				return p, nil
			}
		}
		if err != nil {
			l.Mu.Unlock()
			return 0, err
		}
	}
	l.Mu.Unlock()
	if p := a.steal(sl, l, u, true); p != 0 {
		return p, nil
	}
	if a.eng.NeedSweep() {
		// Many streams came since the last sweep: drop the lists of those
		// that hold nothing (destroyed ones, typically), so that a program
		// making stream after stream does not make the arena larger or
		// slower over time.
		ls := a.eng.LockAll()
		a.eng.Sweep(ls, l)
		streamorder.UnlockAll(ls)
	}
	a.waitQuiet()
	sbp, err := a.global.Allocate(s, superblockSize)
	if err == nil {
		return a.lend(s, l, sbp, u)
	}
	return a.allocateReclaiming(s, sl, l, u, err)
}

// lend lends the superblock at sbp, just taken from the global arena on s,
// to l and serves u units from it.
func (a *Arena) lend(s Stream, l *arenaList, sbp uintptr, u int) (uintptr, error) {
	sb := &superblock{base: sbp, free: superblockUnits}
	a.windows[(sbp-a.base)/superblockSize].Store(sb)
	l.Mu.Lock()
	if l.Retired {
		l.Mu.Unlock()
		a.windows[(sbp-a.base)/superblockSize].Store(nil)
		if err := a.global.Deallocate(s, sbp, superblockSize); err != nil {
			return 0, err
		}
		return 0, streamorder.ErrRetry
	}
	l.adopt(sb)
	p := l.allocLocal(u)
	l.Mu.Unlock()
	if p == 0 {
		return 0, fmt.Errorf("%s: %w: internal error: a new superblock cannot hold %d units", kindArena, ErrBadAlloc, u)
	}
	return p, nil
}

// allocateReclaiming is allocateSlow once the global arena had no
// superblock for it (err): it reclaims, looks in its own list and the
// stream's other shards, and asks the global arena again, with the global
// arena to itself from the reclaim to that request (see quiesce), up to
// maxReclaims times.
func (a *Arena) allocateReclaiming(s Stream, sl *streamorder.Lists[arenaList], l *arenaList, u int, err error) (uintptr, error) {
	quiet := false
	defer func() {
		if quiet {
			a.unquiesce()
		}
	}()
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			var sbp uintptr
			sbp, err = a.global.Allocate(s, superblockSize)
			a.unquiesce()
			quiet = false
			if err == nil {
				return a.lend(s, l, sbp, u)
			}
		}
		if !errors.Is(err, ErrOutOfMemory) || attempt == maxReclaims {
			return 0, a.failure(s, uintptr(u)<<unitShift, err)
		}
		// Any room in the stream's other shards costs no synchronization.
		if p := a.steal(sl, l, u, false); p != 0 {
			return p, nil
		}
		a.quiesce()
		quiet = true
		progress, rerr := a.reclaim(l, u)
		if rerr != nil {
			return 0, rerr
		}
		// Memory freed on other streams into this stream's lists came
		// back, or a superblock of another stream moved here: look there
		// first. Another allocation's reclaim may have swept the list
		// meanwhile (it held nothing): look the stream up again.
		l.Mu.Lock()
		if l.Retired {
			l.Mu.Unlock()
			return 0, streamorder.ErrRetry
		}
		p := l.allocLocal(u)
		l.Mu.Unlock()
		if p != 0 {
			return p, nil
		}
		if p := a.steal(sl, l, u, false); p != 0 {
			return p, nil
		}
		if !progress {
			return 0, a.failure(s, uintptr(u)<<unitShift, err)
		}
		// Ask the global arena again, still quiet.
	}
}

// arenaAfterReclaim, when set (by tests), runs between a large request's
// reclaim and its retry.
var arenaAfterReclaim func()

// maxReclaims bounds the reclaims one allocation makes while each frees
// something that it then does not find (a large request: a call already
// under way when it quiesced took it, or merged it into a block of its
// stream's).
const maxReclaims = 4

// steal serves u units from a superblock of the stream's list in another
// shard than own, moving that superblock into own when it can (no memory
// freed on other streams waits in it: that queue belongs to its list).
// 0 when no other shard has room.
//
// With idleOnly set (before the global arena is asked) it takes only from
// a list that served no allocation since the last look from another shard
// and is at least half free, and skips a list another goroutine holds
// locked: a stream's lists that
// goroutines are busy with keep their superblocks (taking them made
// those goroutines take them back, every allocation a slow one), while
// the lists a goroutine left behind when it moved to another P give theirs
// up. Without it (the global arena is exhausted) any list will do and it
// waits for the locks.
func (a *Arena) steal(sl *streamorder.Lists[arenaList], own *arenaList, u int, idleOnly bool) uintptr {
	need := uintptr(u) << unitShift
	for i := range sl.Shards {
		l := sl.Shards[i].Load()
		if l == nil || l == own || l.Free.Load() < need {
			continue
		}
		first, second := own, l
		if idleOnly {
			// Own blocking, the other only if free: TryLock never waits,
			// so no lock order is needed.
			own.Mu.Lock()
			if !l.Mu.TryLock() {
				own.Mu.Unlock()
				continue
			}
		} else {
			// Both locks, in id order (the order lockAll takes them in).
			if l.ID < own.ID {
				first, second = l, own
			}
			first.Mu.Lock()
			second.Mu.Lock()
		}
		var p uintptr
		switch {
		case l.Retired || own.Retired:
		case idleOnly && l.allocs != l.mark:
			l.mark = l.allocs // busy since the last look; idle if not by the next
		case idleOnly && 2*l.Free.Load() < uintptr(len(l.sbs))*superblockSize:
			// Idle but at least half used: its superblocks are not what a
			// goroutine left behind, and taking fragmented superblocks
			// makes allocation search longer (measured: 2-4x per op with
			// many goroutines on one stream).
		default:
			p = l.moveTo(own, u)
		}
		second.Mu.Unlock()
		first.Mu.Unlock()
		if p != 0 {
			return p
		}
	}
	return 0
}

// moveTo serves u units from one of l's superblocks and, unless frees from
// other streams are queued in it, moves that superblock to dst. Both lists
// are locked.
func (l *arenaList) moveTo(dst *arenaList, u int) uintptr {
	for j, sb := range l.sbs {
		if int(l.runs[j]) < u {
			continue
		}
		wasEmpty := sb.free == superblockUnits
		i, largest := sb.alloc(u)
		if i < 0 {
			l.runs[j] = int32(largest)
			continue
		}
		if wasEmpty {
			l.empty--
		}
		l.Free.Add(^(uintptr(u)<<unitShift - 1))
		if !sb.hasPending() {
			run := l.runs[j]
			l.detach(sb)
			dst.attach(sb, run)
		}
		return sb.base + uintptr(i)<<unitShift
	}
	return 0
}

func (a *Arena) allocateLarge(s Stream, size uintptr) (uintptr, error) {
	a.waitQuiet()
	p, err := a.global.Allocate(s, size)
	for try := 0; err != nil && errors.Is(err, ErrOutOfMemory) && try < maxReclaims; try++ {
		a.quiesce()
		_, rerr := a.reclaim(nil, 0)
		if rerr == nil {
			if arenaAfterReclaim != nil {
				arenaAfterReclaim()
			}
			p, err = a.global.Allocate(s, size)
		}
		a.unquiesce()
		if rerr != nil {
			return 0, rerr
		}
	}
	if err != nil {
		return 0, a.failure(s, size, err)
	}
	return p, nil
}

// failure reports an allocation the arena cannot serve, writing the dump
// when asked to (not when it failed because the arena was closed meanwhile).
func (a *Arena) failure(s Stream, size uintptr, cause error) error {
	if !errors.Is(cause, ErrOutOfMemory) || a.closed.Load() {
		return closedOr(&a.closed, kindArena, cause)
	}
	a.caches.futile()
	if a.dump {
		a.writeDump(s, size)
	}
	return fmt.Errorf("%s: %w: failed to allocate %s on stream %#x: No room in arena.", kindArena, ErrOutOfMemory, formatBytes(size), uintptr(s))
}

// Deallocate returns memory in stream order on stream. bytes must be what
// was passed to Allocate; memory the arena did not hand out, or already
// deallocated, gives ErrInvalidPointer.
func (a *Arena) Deallocate(stream Stream, ptr, bytes, alignment uintptr) error {
	if fc := a.caches.claimer(); fc != nil && ptr != 0 && bytes != 0 {
		return claimedFree(a, fc, ptr, bytes, func(n uintptr) error { return a.deallocateUnclaimed(stream, ptr, n, alignment) })
	}
	return a.deallocateUnclaimed(stream, ptr, bytes, alignment)
}

// deallocateUnclaimed is Deallocate without the claim of a cache in front
// (DeallocateBatch: the cache's own give-back).
func (a *Arena) deallocateUnclaimed(stream Stream, ptr, bytes, alignment uintptr) error {
	if done, err := subFreeChecked(kindArena, a, ptr, bytes, alignment); done {
		return err
	}
	if a.closed.Load() {
		return errClosed(kindArena)
	}
	size := (bytes + DefaultAlignment - 1) &^ (DefaultAlignment - 1)
	if stream == cudart.PerThreadDefaultStream {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	if size > smallLimit {
		a.waitQuiet()
		return closedOr(&a.closed, kindArena, a.global.Deallocate(stream, ptr, size))
	}
	sl, err := a.eng.Lookup(stream)
	if err != nil {
		return err
	}
	sb := a.superblockAt(ptr)
	if sb == nil || ptr&(DefaultAlignment-1) != 0 {
		return closedOr(&a.closed, kindArena, fmt.Errorf("%s: %w: %#x", kindArena, ErrInvalidPointer, ptr))
	}
	i, u := int(ptr-sb.base)>>unitShift, int(size>>unitShift)
	for {
		l := sb.owner.Load()
		if l == nil {
			return closedOr(&a.closed, kindArena, fmt.Errorf("%s: %w: %#x is not a live allocation (deallocated already?)", kindArena, ErrInvalidPointer, ptr))
		}
		l.Mu.Lock()
		if sb.owner.Load() != l {
			l.Mu.Unlock()
			continue
		}
		if !sb.valid(i, u) {
			l.Mu.Unlock()
			return a.badFree(ptr, size)
		}
		if l.St != sl.St {
			// Freed on another stream than the arena's: queue it there.
			setBits(sb.pendingMap(), i, 1, true)
			l.remote = append(l.remote, remoteFree{ptr: ptr, units: u, st: sl.St, seq: sl.St.Epoch.Load()})
			// The freeing stream must outlive the entry: the sweep would forget
			// it (destroying the event drain waits on) once its own lists are
			// empty. Dropped when drain takes the entry.
			sl.St.Inflight.Add(1)
			l.Mu.Unlock()
			// A record made now covers this free too.
			a.eng.MaybeSettle(sl, stream)
			return nil
		}
		setBits(sb.startMap(), i, 1, false)
		l.released(sb, sb.release(i, u))
		l.Free.Add(size)
		var give bool
		if sb.free == superblockUnits {
			if l.empty > 0 {
				l.empty++
				l.disown(sb)
				a.windows[(sb.base-a.base)/superblockSize].Store(nil)
				give = true
			} else {
				l.empty++
			}
		}
		l.Mu.Unlock()
		a.eng.MaybeSettle(sl, stream)
		if give {
			a.waitQuiet()
			return closedOr(&a.closed, kindArena, a.global.Deallocate(stream, sb.base, superblockSize))
		}
		return nil
	}
}

func (a *Arena) badFree(ptr, size uintptr) error {
	if a.closed.Load() {
		return errClosed(kindArena)
	}
	return fmt.Errorf("%s: %w: %#x is not a live allocation of %d bytes (deallocated already, or another size?)", kindArena, ErrInvalidPointer, ptr, size)
}

// AllocateSync allocates on the default stream and synchronizes it, so the
// memory is ready for any use (RMM's arena does not synchronize).
func (a *Arena) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	return allocateSync(a, a.rt, bytes, alignment)
}

// DeallocateSync deallocates on the default stream.
func (a *Arena) DeallocateSync(ptr, bytes, alignment uintptr) error {
	return a.Deallocate(DefaultStream, ptr, bytes, alignment)
}

// Properties reports the upstream's properties.
func (a *Arena) Properties() Properties { return a.upstream.Properties() }

// Equal reports whether other is this very arena.
func (a *Arena) Equal(other Resource) bool {
	o, ok := other.(*Arena)
	return ok && o == a
}

// Kind returns "arena".
func (a *Arena) Kind() string { return kindArena }

// Upstream returns the resource the global arena came from.
func (a *Arena) Upstream() Resource { return a.upstream }

// Device returns the device that was current when the arena was made.
func (a *Arena) Device() int { return a.dev }

// ArenaSize returns the size of the global arena.
func (a *Arena) ArenaSize() uintptr { return a.size }

// Close returns the global arena to the upstream (after synchronizing the
// device) and releases the events. Later calls fail with ErrClosed; closing
// again does nothing. Calls racing Close finish, or fail with ErrClosed.
func (a *Arena) Close() error {
	a.closeMu.Lock()
	defer a.closeMu.Unlock()
	if a.closed.Swap(true) {
		return nil
	}
	a.reclaimMu.Lock()
	ls := a.eng.LockAll()
	a.global.ReleaseChunks(true)
	for _, l := range ls {
		for _, sb := range l.sbs {
			sb.owner.Store(nil)
		}
		l.sbs, l.runs, l.remote, l.empty, l.cur = nil, nil, nil, 0, 0
		l.Free.Store(0)
	}
	streamorder.UnlockAll(ls)
	a.reclaimMu.Unlock()
	var errs []error
	if err := a.rt.DeviceSynchronize(); err != nil {
		errs = append(errs, cudaError(kindArena+": synchronizing before returning memory upstream", err))
	}
	lendChunk(a.upstream, a.base, false)
	if err := a.upstream.Deallocate(DefaultStream, a.base, a.size, DefaultAlignment); err != nil {
		lendChunk(a.upstream, a.base, true)
		errs = append(errs, fmt.Errorf("%s: returning the global arena upstream: %w", kindArena, err))
	}
	errs = append(errs, a.eng.Close(), a.global.Close())
	return errors.Join(errs...)
}

// writeDump appends a description of the arena's state to ArenaDumpFile.
func (a *Arena) writeDump(s Stream, size uintptr) {
	a.dumpMu.Lock()
	defer a.dumpMu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] arena %p: allocation of %d bytes (%s) on stream %#x failed: no room in arena\n",
		time.Now().Format("2006-01-02 15:04:05.000000"), a, size, formatBytes(size), uintptr(s))
	fmt.Fprintf(&b, "global arena: %#x, %d bytes (%s)\n", a.base, a.size, formatBytes(a.size))
	gs := a.global.Stats()
	fmt.Fprintf(&b, "global arena free: %d blocks, %d bytes (%s), largest %d bytes (%s)\n",
		gs.FreeBlocks, gs.FreeBytes, formatBytes(gs.FreeBytes), gs.Largest, formatBytes(gs.Largest))
	ls := a.eng.LockAll()
	var sbs, lent int
	for _, l := range ls {
		if len(l.sbs) == 0 && len(l.remote) == 0 {
			continue
		}
		var free, largest int
		for _, sb := range l.sbs {
			free += sb.free
			largest = max(largest, sb.largestRun())
		}
		sbs += len(l.sbs)
		lent += len(l.sbs) * superblockSize
		fmt.Fprintf(&b, "stream arena %d (stream %#x): %d superblocks, %d free bytes, largest free run %d bytes, %d frees from other streams pending\n",
			l.ID, uintptr(l.St.Handle), len(l.sbs), free<<unitShift, largest<<unitShift, len(l.remote))
	}
	streamorder.UnlockAll(ls)
	fmt.Fprintf(&b, "superblocks lent: %d (%d bytes)\n\n", sbs, lent)
	f, err := os.OpenFile(ArenaDumpFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	_, _ = f.WriteString(b.String())
	_ = f.Close()
}
