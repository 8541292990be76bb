package core

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	_ "unsafe" // go:linkname

	"github.com/rmmgo/rmmgo/cudart"
)

// The stream-ordered machinery shared by the pool, fixed-size and arena
// resources (docs/sub-allocators.md explains the design).
//
// Free memory is kept in lists. Each list belongs to one stream and one
// shard; the shard is picked from the P (Go's logical processor) the
// calling goroutine runs on, so goroutines running at the same time use
// different lists and different locks. A list has its own mutex, held only
// for the few nanoseconds an allocation or a free takes.
//
// Memory freed on stream S is usable at once by later work on S, so an
// allocation on S takes it from any of S's lists without further ado, and a
// free records nothing. Another stream T may use it only once T is ordered
// after the free, and the engine never touches a stream handle after the
// call that passed it has returned, because the caller may destroy the
// stream at any time after freeing memory on it (RMM allows that) and a
// destroyed stream's handle is a dangling pointer that CUDA may even hand
// out again for a new stream. So:
//
//   - The legacy default stream (0 and cudaStreamLegacy) cannot be
//     destroyed: T records its event on it lazily, when it first takes
//     memory freed on it that no record covers yet, and waits on it.
//   - Every other stream (created streams, and cudaStreamPerThread, which
//     names a different stream on each thread and cannot be recorded on from
//     another) is recorded on only during a call the caller makes on it. When
//     T wants memory freed on S, it marks S wanted; S's next call records
//     S's event (covering every free on S so far) and moves S's free blocks
//     to the settled part of its lists, where T takes them after waiting on
//     the event. A record costs a few microseconds, so it happens only when
//     another stream has asked for S's memory since S's last record.
//   - When nothing ordered is left and the resource cannot grow, a device
//     synchronization makes every block freed before it safe for every
//     stream (syncMarks, applySync).
//
// Streams are known by their CUDA stream id (cudaStreamGetId, asked during
// the caller's call), never by handle: memory freed on a destroyed stream
// must not pass unordered to a new stream that got the same handle.

//go:linkname runtime_procPin runtime.procPin
func runtime_procPin() int

//go:linkname runtime_procUnpin runtime.procUnpin
func runtime_procUnpin()

// currentP returns the id of the P the calling goroutine runs on: a shard
// hint that is distinct for goroutines running at the same time. The
// goroutine may move at once; that only costs locality, never correctness.
func currentP() uint32 {
	p := runtime_procPin()
	runtime_procUnpin()
	return uint32(p)
}

// shardCount is the number of shards for a new resource: GOMAXPROCS
// rounded up to a power of two, at most maxShards.
func shardCount() int {
	n := 1
	for n < runtime.GOMAXPROCS(0) && n < maxShards {
		n <<= 1
	}
	return n
}

const maxShards = 64

// streamState is what a resource knows about one stream.
//
// Blocks freed on the stream carry its epoch at the time of the free, their
// sequence number seq. Whoever records the stream's event, or synchronizes
// the device, first advances the epoch to e: every block freed before has
// seq < e, and its work was enqueued before the record (or the
// synchronization), so the record covers it.
type streamState struct {
	key uint64 // 0 for the legacy default stream, else id|keyNonDefault
	// handle is the stream as first seen, for messages only: it is never
	// passed to CUDA (it may be dangling by now). The legacy default stream
	// is recorded on as DefaultStream.
	handle Stream

	epoch atomic.Uint64
	// recorded: blocks with seq < recorded are covered by the event's
	// latest record. Written under mu.
	recorded atomic.Uint64
	// synced: blocks with seq < synced need no ordering at all (the device
	// was synchronized after they were freed).
	synced atomic.Uint64
	// wanted: another stream wants memory freed on this one that no record
	// covers; the stream's next call records its event and settles its
	// lists. Never set for the legacy default stream.
	wanted atomic.Bool
	// inflight counts blocks taken from this stream's lists by other
	// streams that are not ordered after it yet, and the arena's queued
	// frees made on this stream into other streams' superblocks; sweep keeps
	// the stream (and the event those wait on) while it is not 0. Raised
	// under the list's lock.
	inflight atomic.Int32

	mu     sync.Mutex
	event  cudart.Event            // created on first record; guarded by mu
	waited map[*streamState]uint64 // records of others this stream waits for (their recorded values); guarded by mu
}

const keyNonDefault = 1 << 63

// durable reports whether any caller may record on the stream at any time:
// only the legacy default stream, which cannot be destroyed and is the same
// stream on every thread.
func (st *streamState) durable() bool { return st.key == 0 }

// ordered reports whether a block freed on st with sequence number seq may
// go to another stream now, without touching st's handle: st is durable, or
// a record of st covers the block, or the device was synchronized since.
func (st *streamState) ordered(seq uint64) bool {
	return st.key == 0 || seq < st.recorded.Load() || seq < st.synced.Load()
}

// listBase is the part of every free list the engine manages. The list
// types of the pool, fixed-size and arena resources embed it.
type listBase struct {
	mu      sync.Mutex
	id      int32
	st      *streamState
	retired bool // guarded by mu: the list left the engine; insert elsewhere
	// cut splits the list (guarded by mu): blocks with seq < cut are
	// settled (covered by a record or a synchronization, so other streams may
	// take them), the others are fresh. Only non-durable streams settle.
	cut uint64
	// free is the number of bytes the list holds, settled the number of
	// settled ones; both kept under mu and read without it as hints (to skip
	// lists that cannot serve a request).
	free    relaxedUintptr
	settled relaxedUintptr
	// freed and frees count the bytes and the frees put into the list since
	// it last settled (guarded by mu), for noteFreed.
	freed uintptr
	frees int
}

func (l *listBase) base() *listBase { return l }

// fresh returns a hint of the bytes of l that no record covers.
func (l *listBase) fresh() uintptr { return l.free.Load() - min(l.settled.Load(), l.free.Load()) }

// Batches: a list of a non-durable stream that took at least settleFrees
// frees and a sixteenth of the resource's size (at least 1 MiB) since it
// last settled makes its stream settle on its own, when the resource is
// shared by several streams. Memory freed on a stream
// that nobody asked for (every stream's own lists were enough so far) then
// becomes available to the others in batches, at one record per batch,
// rather than piling up until a device synchronization or a growth.
const settleFrees = 64

// noteFreed counts n bytes freed into l, for a resource holding size
// bytes, and reports whether a batch is complete. l.mu is held.
func (l *listBase) noteFreed(n uintptr, size func() uintptr) bool {
	l.freed += n
	l.frees++
	return l.frees >= settleFrees && l.freed > max(size()/16, 1<<20)
}

// listPtr constrains the engine's list type: a pointer to a struct that
// embeds listBase.
type listPtr[T any] interface {
	*T
	base() *listBase
}

// streamLists are one stream's lists, one per shard, made on first use.
type streamLists[T any] struct {
	st     *streamState
	shards []atomic.Pointer[T]
	gone   bool // swept out of the table; guarded by engine.mu
}

// streamTable maps stream keys to their lists. It is never modified once
// published: writers copy it.
type streamTable[T any] struct {
	small []*streamLists[T] // searched first: most programs use few streams
	big   map[uint64]*streamLists[T]
}

func (t *streamTable[T]) find(key uint64) *streamLists[T] {
	for _, sl := range t.small {
		if sl.st.key == key {
			return sl
		}
	}
	if t.big != nil {
		return t.big[key]
	}
	return nil
}

// each calls fn for every stream of the table.
func (t *streamTable[T]) each(fn func(sl *streamLists[T])) {
	for _, sl := range t.small {
		fn(sl)
	}
	for _, sl := range t.big {
		fn(sl)
	}
}

const smallStreams = 8

// engine is the stream-ordered list machinery of one resource.
type engine[T any, PT listPtr[T]] struct {
	rt      cudart.Runtime
	kind    string
	mask    uint32
	newList func(st *streamState) PT
	// settleList moves the blocks of l freed before cut (seq < cut) to its
	// settled part and sets l.cut (l.mu is held, cut > l.cut); nil when the
	// resource's lists have nothing to settle (the arena's).
	settleList func(l PT, cut uint64)
	// holds reports whether l holds anything that keeps its stream from
	// being swept (l.mu is held); nil: its free bytes are not 0. The
	// arena's lists hold superblocks even when they have no free byte.
	holds func(l PT) bool

	def   *streamLists[T] // the legacy default stream
	table atomic.Pointer[streamTable[T]]
	lists atomic.Pointer[[]PT] // every list, in id order

	mu     sync.Mutex // serializes changes to table and lists
	nextID int32
	states int // streams in table, for the clean-up policy
	swept  int // streams after the last clean-up
}

func (e *engine[T, PT]) init(r cudart.Runtime, kind string, newList func(st *streamState) PT, settleList func(l PT, cut uint64)) {
	e.rt, e.kind, e.newList, e.settleList = r, kind, newList, settleList
	n := shardCount()
	e.mask = uint32(n - 1)
	e.def = &streamLists[T]{st: &streamState{}, shards: make([]atomic.Pointer[T], n)}
	e.table.Store(&streamTable[T]{})
	e.lists.Store(&[]PT{})
}

// shard returns the calling goroutine's shard.
func (e *engine[T, PT]) shard() uint32 { return currentP() & e.mask }

// streamKey identifies stream s: 0 for the legacy default stream, else its
// CUDA stream id. For the per-thread default stream the caller holds its
// goroutine on its OS thread for the whole operation.
func (e *engine[T, PT]) streamKey(s Stream) (uint64, error) {
	if s == DefaultStream || s == cudart.LegacyDefaultStream {
		return 0, nil
	}
	id, err := e.rt.StreamGetID(s)
	if err != nil {
		return 0, fmt.Errorf("%s: stream %#x: %w", e.kind, uintptr(s), cudaStreamError(err))
	}
	return id | keyNonDefault, nil
}

// cudaStreamError classifies the failure of cudaStreamGetId: an unknown
// stream is the caller's invalid argument.
func cudaStreamError(err error) error {
	var ce *cudart.Error
	if errors.As(err, &ce) && (ce.Code == cudart.ErrorInvalidResourceHandle || ce.Code == cudart.ErrorInvalidValue) {
		return fmt.Errorf("%w: not a live stream: %w", ErrInvalidArgument, err)
	}
	return fmt.Errorf("%w: %w", ErrCUDA, err)
}

// lookup returns the lists of stream s, making them on first use. s must
// be the caller's stream, alive for the duration of the call.
func (e *engine[T, PT]) lookup(s Stream) (*streamLists[T], error) {
	if s == DefaultStream || s == cudart.LegacyDefaultStream {
		return e.def, nil
	}
	key, err := e.streamKey(s)
	if err != nil {
		return nil, err
	}
	if sl := e.table.Load().find(key); sl != nil {
		return sl, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	old := e.table.Load()
	if sl := old.find(key); sl != nil {
		return sl, nil
	}
	sl := &streamLists[T]{
		st:     &streamState{key: key, handle: s},
		shards: make([]atomic.Pointer[T], len(e.def.shards)),
	}
	nt := &streamTable[T]{small: old.small, big: old.big}
	if len(old.small) < smallStreams {
		nt.small = append(append(make([]*streamLists[T], 0, len(old.small)+1), old.small...), sl)
	} else {
		nt.big = make(map[uint64]*streamLists[T], len(old.big)+1)
		for k, v := range old.big {
			nt.big[k] = v
		}
		nt.big[key] = sl
	}
	e.table.Store(nt)
	e.states++
	return sl, nil
}

// list returns sl's list for shard i, making it on first use.
func (e *engine[T, PT]) list(sl *streamLists[T], i uint32) PT {
	if l := sl.shards[i].Load(); l != nil {
		return PT(l)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if l := sl.shards[i].Load(); l != nil {
		return PT(l)
	}
	l := e.newList(sl.st)
	b := l.base()
	e.nextID++
	b.id, b.st = e.nextID, sl.st
	if sl.gone {
		// The stream was swept meanwhile: hand out a retired list, so
		// that the caller looks the stream up again.
		b.retired = true
		return l
	}
	old := *e.lists.Load()
	nl := append(append(make([]PT, 0, len(old)+1), old...), l)
	e.lists.Store(&nl)
	sl.shards[i].Store((*T)(l))
	return l
}

// allLists returns every list, in id order. The slice is not to be
// modified.
func (e *engine[T, PT]) allLists() []PT { return *e.lists.Load() }

// lockAll locks every list, in id order, and returns them; unlockAll
// undoes it. Lists made meanwhile are not included (they are empty).
func (e *engine[T, PT]) lockAll() []PT {
	ls := e.allLists()
	for _, l := range ls {
		l.base().mu.Lock()
	}
	return ls
}

func unlockAll[T any, PT listPtr[T]](ls []PT) {
	for i := len(ls) - 1; i >= 0; i-- {
		ls[i].base().mu.Unlock()
	}
}

// needSweep reports whether enough streams came since the last sweep to
// make one worth its cost.
func (e *engine[T, PT]) needSweep() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.states >= 2*e.swept+smallStreams
}

// sweep drops lists that hold nothing and whose stream was not used for
// allocation meanwhile, and the streams left without lists, so that a
// program creating and destroying many streams does not make the resource
// slower or larger over time. Every list must be locked (ls, from
// lockAll); keep is never dropped. It returns whether anything was
// dropped.
func (e *engine[T, PT]) sweep(ls []PT, keep PT) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.states < 2*e.swept+smallStreams {
		return false
	}
	locked := make(map[PT]bool, len(ls))
	for _, l := range ls {
		locked[l] = true
	}
	drop := make(map[*streamState]bool)
	// A stream is dropped when none of its lists holds anything, nobody
	// is ordering itself after it, and all its lists are locked (a list
	// made after the caller locked them all may hold memory already).
	for _, l := range e.allLists() {
		b := l.base()
		if b.st.key == 0 {
			continue
		}
		if _, seen := drop[b.st]; !seen {
			drop[b.st] = true
		}
		held := b.free.Load() != 0
		if e.holds != nil {
			held = e.holds(l)
		}
		if !locked[l] || held || l == keep || b.st.inflight.Load() != 0 {
			drop[b.st] = false
		}
	}
	n := 0
	for _, v := range drop {
		if v {
			n++
		}
	}
	if n == 0 {
		e.swept = e.states
		return false
	}
	old := e.table.Load()
	nt := &streamTable[T]{}
	for _, sl := range old.small {
		if !drop[sl.st] {
			nt.small = append(nt.small, sl)
		} else {
			sl.gone = true
		}
	}
	for k, sl := range old.big {
		if drop[sl.st] {
			sl.gone = true
			continue
		}
		if nt.big == nil {
			nt.big = make(map[uint64]*streamLists[T])
		}
		nt.big[k] = sl
	}
	var kept []PT
	for _, l := range e.allLists() {
		b := l.base()
		if drop[b.st] {
			b.retired = true
			continue
		}
		kept = append(kept, l)
	}
	e.table.Store(nt)
	e.lists.Store(&kept)
	e.states -= n
	e.swept = e.states
	for st, v := range drop {
		if v {
			e.forget(st)
		}
	}
	return true
}

// forget releases a dropped stream's event and removes it from the other
// streams' bookkeeping.
func (e *engine[T, PT]) forget(st *streamState) {
	st.mu.Lock()
	if st.event != 0 {
		_ = e.rt.EventDestroy(st.event)
		st.event = 0
	}
	st.mu.Unlock()
	visit := func(o *streamState) {
		o.mu.Lock()
		delete(o.waited, st)
		o.mu.Unlock()
	}
	visit(e.def.st)
	e.table.Load().each(func(sl *streamLists[T]) { visit(sl.st) })
}

// recordLocked records st's event on s, which names st and is alive (the
// caller's stream during its call, or the legacy default stream), and
// returns the new recorded mark: every block freed on st so far has a
// smaller sequence number. st.mu is held.
func (e *engine[T, PT]) recordLocked(st *streamState, s Stream) (uint64, error) {
	if st.event == 0 {
		ev, err := e.rt.EventCreate(cudart.EventFlagDisableTiming)
		if err != nil {
			return 0, cudaError(e.kind+": creating a stream event", err)
		}
		st.event = ev
	}
	// Advance the epoch before recording: a free that read the old epoch
	// did so before this record was enqueued, so the record covers it.
	cut := st.epoch.Add(1)
	if err := e.rt.EventRecord(st.event, s); err != nil {
		return 0, cudaError(e.kind+": recording a stream event", err)
	}
	st.recorded.Store(cut)
	return cut, nil
}

// want marks st as wanted by another stream, unless it is durable (others
// record on it themselves). Cheap when already marked.
func (e *engine[T, PT]) want(st *streamState) {
	if st.key != 0 && !st.wanted.Load() {
		st.wanted.Store(true)
	}
}

// wantOthers marks streams but st that hold memory no record covers (in
// ls, every list) as wanted, so that their next calls settle it: a stream
// that ran out of its own memory asks the others for theirs. Before it
// looks for ordered memory (short set), it asks only the streams whose
// fresh memory exceeds a sixteenth of their settled memory, so that a
// stream living on another's memory makes it record once per few frees
// rather than at every call, while its settled memory never runs dry
// (which would grow the resource); when it found none, it asks every
// stream with fresh memory. It reads hints only.
func (e *engine[T, PT]) wantOthers(ls []PT, st *streamState, short bool) {
	for _, l := range ls {
		b := l.base()
		if f := b.fresh(); b.st != st && f != 0 && (!short || f*16 > b.settled.Load()) {
			e.want(b.st)
		}
	}
}

// maybeSettle settles stream sl when another stream wants its memory. s is
// the caller's stream (sl's), alive during the call. Call it during every
// operation on a non-default stream; it costs one load when not wanted.
func (e *engine[T, PT]) maybeSettle(sl *streamLists[T], s Stream) {
	if sl.st.wanted.Load() {
		e.settle(sl, s)
	}
}

// shared reports whether the resource knows at least two streams besides
// the legacy default one: only then are batches settled (a lone stream's
// memory is wanted by nobody, or by the default stream, which asks).
func (e *engine[T, PT]) shared() bool {
	t := e.table.Load()
	return len(t.small)+len(t.big) >= 2
}

// settleNow settles stream sl (the caller's, s) at once, after a
// defragmentation or a growth put memory that any stream could use into its
// fresh lists; unless the stream is durable, or (with ifShared, for a
// growth) the resource knows no other stream to use it: a stream that never
// settled keeps the cheapest lists.
func (e *engine[T, PT]) settleNow(sl *streamLists[T], s Stream, ifShared bool) {
	if !sl.st.durable() && (!ifShared || e.shared()) {
		sl.st.wanted.Store(true)
		e.settle(sl, s)
	}
}

// settle records sl's event on s (sl's stream, the caller's) and moves
// every block freed on it so far to the settled part of its lists, where
// other streams may take it after waiting on the event. A failed record is
// not the caller's operation's failure: the memory stays unsettled, and
// others fall back to a device synchronization.
func (e *engine[T, PT]) settle(sl *streamLists[T], s Stream) {
	st := sl.st
	if !st.wanted.CompareAndSwap(true, false) {
		return // another call on the stream settles it
	}
	st.mu.Lock()
	cut, err := e.recordLocked(st, s)
	st.mu.Unlock()
	if err == nil {
		e.settleLists(sl, cut)
	}
}

// settleLists moves the blocks of sl's lists freed before cut to their
// settled parts.
func (e *engine[T, PT]) settleLists(sl *streamLists[T], cut uint64) {
	if e.settleList == nil {
		return
	}
	for i := range sl.shards {
		p := sl.shards[i].Load()
		if p == nil {
			continue
		}
		l := PT(p)
		b := l.base()
		b.mu.Lock()
		if cut > b.cut {
			e.settleList(l, cut)
			b.freed, b.frees = 0, 0
		}
		b.mu.Unlock()
	}
}

// syncMark is a stream's epoch taken before a device synchronization.
type syncMark[T any] struct {
	sl   *streamLists[T]
	mark uint64
}

// syncMarks advances every stream's epoch before a device synchronization
// and returns the new epochs: once the synchronization has returned, every
// block freed on a stream with a sequence number below its mark is idle.
// Pass them to applySync.
func (e *engine[T, PT]) syncMarks() []syncMark[T] {
	ms := []syncMark[T]{{e.def, e.def.st.epoch.Add(1)}}
	e.table.Load().each(func(sl *streamLists[T]) {
		ms = append(ms, syncMark[T]{sl, sl.st.epoch.Add(1)})
	})
	return ms
}

// applySync notes that the device was synchronized after syncMarks
// returned ms: the blocks freed before need no ordering and are settled.
func (e *engine[T, PT]) applySync(ms []syncMark[T]) {
	for _, m := range ms {
		st := m.sl.st
		for {
			old := st.synced.Load()
			if old >= m.mark || st.synced.CompareAndSwap(old, m.mark) {
				break
			}
		}
		if !st.durable() {
			e.settleLists(m.sl, m.mark)
		}
	}
}

// synchronize synchronizes the device, after which every block freed before
// the call is free for every stream. The caller holds no list lock.
func (e *engine[T, PT]) synchronize() error {
	ms := e.syncMarks()
	if err := e.rt.DeviceSynchronize(); err != nil {
		return cudaError(e.kind+": synchronizing the device to reuse memory freed on other streams", err)
	}
	e.applySync(ms)
	return nil
}

// orderAfter makes w's stream, ws (the caller's stream, alive during the
// call), wait for the work that stream o had enqueued when a block with
// sequence number seq was freed on it, so that w may use the block. o must
// be ordered for seq (o.ordered(seq)): the only stream it records on is the
// legacy default stream. It never blocks the host.
func (e *engine[T, PT]) orderAfter(ws Stream, w, o *streamState, seq uint64) error {
	if w == o || seq < o.synced.Load() {
		return nil
	}
	w.mu.Lock()
	done := w.waited[o] > seq
	w.mu.Unlock()
	if done {
		return nil
	}
	o.mu.Lock()
	r := o.recorded.Load()
	if r <= seq {
		if !o.durable() {
			o.mu.Unlock()
			if seq < o.synced.Load() {
				return nil
			}
			return fmt.Errorf("%s: %w: internal error: memory freed on stream %#x was taken before a record covered it", e.kind, ErrBadAlloc, uintptr(o.handle))
		}
		// No record covers the free yet: record one now on the legacy
		// default stream, which cannot have been destroyed.
		var err error
		if r, err = e.recordLocked(o, DefaultStream); err != nil {
			o.mu.Unlock()
			return err
		}
	}
	// o.mu is held, so the event's latest record is the one r stands for.
	err := e.rt.StreamWaitEvent(ws, o.event)
	o.mu.Unlock()
	if err != nil {
		return cudaError(e.kind+": waiting on another stream's event", err)
	}
	w.mu.Lock()
	if w.waited == nil {
		w.waited = make(map[*streamState]uint64)
	}
	if w.waited[o] < r {
		w.waited[o] = r
	}
	w.mu.Unlock()
	return nil
}

// close destroys the streams' events. Every list must be locked or the
// resource otherwise unused.
func (e *engine[T, PT]) close() error {
	var first error
	destroy := func(st *streamState) {
		st.mu.Lock()
		if st.event != 0 {
			if err := e.rt.EventDestroy(st.event); err != nil && first == nil {
				first = cudaError(e.kind+": destroying a stream event", err)
			}
			st.event = 0
		}
		st.mu.Unlock()
	}
	destroy(e.def.st)
	e.table.Load().each(func(sl *streamLists[T]) { destroy(sl.st) })
	return first
}
