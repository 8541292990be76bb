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
// allocation on S takes it from any of S's lists without further ado. Memory
// freed on another stream T is usable on S only once S is ordered after the
// free: the allocation then records an event on T (unless a record made
// after the free exists already) and makes S wait on it
// (cudaStreamWaitEvent). Nothing is recorded when memory is freed: a free
// costs no CUDA call, and a block freed and reused on one stream never
// costs one. Each stream has one event, re-recorded only when another
// stream takes memory that a record does not yet cover, and each stream
// remembers which record of every other stream it already waits for, so a
// burst of cross-stream reuse costs one record and one wait.
//
// Streams are known by their CUDA stream id (cudaStreamGetId), never by
// handle: a destroyed stream's handle can be reused by a new stream, and
// memory freed on the old one must not pass to the new one unordered. The
// legacy default stream (0 and cudaStreamLegacy) needs no lookup. Before
// recording on a stream the engine checks that the handle still names the
// stream it knew; when it does not (the stream was destroyed), it
// synchronizes the device once and marks the stream dead, after which its
// memory is free for every stream.
//
// The per-thread default stream (cudaStreamPerThread) names a different
// stream on every OS thread, and an event can only be recorded on it from
// its own thread. Frees on it therefore record the event at once (as RMM
// does for every free), on the freeing thread, and its memory is known by
// that thread's stream id.

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

// streamState is what a resource knows about one stream: its handle and
// id, its event and how often it was recorded, and which records of other
// streams it already waits for.
type streamState struct {
	key    uint64 // 0 for the legacy default stream, else id|keyNonDefault
	handle Stream
	eager  bool // the per-thread default stream: record at every free

	// recorded counts the records of event. A block freed while recorded
	// was r is covered by record r+1 and every later one. Written under mu.
	recorded atomic.Uint64
	// dead: the stream was destroyed and the device synchronized since;
	// nothing freed on it needs ordering any more.
	dead atomic.Bool
	// inflight counts blocks taken from this stream's lists by other
	// streams that are not ordered after it yet; sweep keeps the stream
	// while it is not 0. Raised under the list's lock.
	inflight atomic.Int32

	mu     sync.Mutex
	event  cudart.Event            // created on first record; guarded by mu
	waited map[*streamState]uint64 // record count of others this stream waits for; guarded by mu
}

const keyNonDefault = 1 << 63

// listBase is the part of every free list the engine manages. The list
// types of the pool, fixed-size and arena resources embed it.
type listBase struct {
	mu      sync.Mutex
	id      int32
	st      *streamState
	retired bool // guarded by mu: the list left the engine; insert elsewhere
	// free is the number of bytes the list holds, kept under mu and read
	// without it as a hint (to skip lists that cannot serve a request).
	free relaxedUintptr
}

func (l *listBase) base() *listBase { return l }

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

const smallStreams = 8

// engine is the stream-ordered list machinery of one resource.
type engine[T any, PT listPtr[T]] struct {
	rt      cudart.Runtime
	kind    string
	mask    uint32
	newList func(st *streamState) PT

	def   *streamLists[T] // the legacy default stream
	table atomic.Pointer[streamTable[T]]
	lists atomic.Pointer[[]PT] // every list, in id order

	mu     sync.Mutex // serializes changes to table and lists
	nextID int32
	states int // streams in table, for the clean-up policy
	swept  int // streams after the last clean-up
}

func (e *engine[T, PT]) init(r cudart.Runtime, kind string, newList func(st *streamState) PT) {
	e.rt, e.kind, e.newList = r, kind, newList
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

// lookup returns the lists of stream s, making them on first use.
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
		st:     &streamState{key: key, handle: s, eager: s == cudart.PerThreadDefaultStream},
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

// sweep drops lists that hold nothing and whose stream is dead or was not
// used for allocation meanwhile, and the streams left without lists, so
// that a program creating and destroying many streams does not make the
// resource slower or larger over time. Every list must be locked (ls, from
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
		if !locked[l] || b.free.Load() != 0 || l == keep || b.st.inflight.Load() != 0 {
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
		}
		if !drop[sl.st] {
			if nt.big == nil {
				nt.big = make(map[uint64]*streamLists[T])
			}
			nt.big[k] = sl
		}
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
	t := e.table.Load()
	for _, sl := range t.small {
		visit(sl.st)
	}
	for _, sl := range t.big {
		visit(sl.st)
	}
}

// freeSeq returns the sequence number a block freed now on st carries. For
// the per-thread default stream it records st's event first (on the
// calling thread, which the caller holds), so that the record covers the
// free.
func (e *engine[T, PT]) freeSeq(st *streamState) (uint64, error) {
	if !st.eager {
		return st.recorded.Load(), nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	seq := st.recorded.Load()
	if err := e.recordLocked(st); err != nil {
		return 0, err
	}
	return seq, nil
}

// recordLocked records st's event on st. st.mu is held.
func (e *engine[T, PT]) recordLocked(st *streamState) error {
	if st.event == 0 {
		ev, err := e.rt.EventCreate(cudart.EventFlagDisableTiming)
		if err != nil {
			return cudaError(e.kind+": creating a stream event", err)
		}
		st.event = ev
	}
	if err := e.rt.EventRecord(st.event, st.handle); err != nil {
		return cudaError(e.kind+": recording a stream event", err)
	}
	st.recorded.Add(1)
	return nil
}

// alive reports whether st's handle still names the stream st knew. The
// per-thread default stream is never asked (it is only recorded on its
// own thread) and the legacy default stream is always alive.
func (e *engine[T, PT]) alive(st *streamState) bool {
	if st.key == 0 {
		return true
	}
	id, err := e.rt.StreamGetID(st.handle)
	return err == nil && id|keyNonDefault == st.key
}

// orderAfter makes stream w wait for the work that stream o had enqueued
// when a block with sequence number seq was freed on it, so that w may use
// the block. It never blocks the host, except once per destroyed stream.
func (e *engine[T, PT]) orderAfter(w, o *streamState, seq uint64) error {
	if w == o || o.dead.Load() {
		return nil
	}
	w.mu.Lock()
	done := w.waited[o] > seq
	w.mu.Unlock()
	if done {
		return nil
	}
	o.mu.Lock()
	if o.dead.Load() {
		o.mu.Unlock()
		return nil
	}
	r := o.recorded.Load()
	if r <= seq {
		// No record covers the free yet: record one now, on o. A
		// per-thread default stream records at every free, so it never
		// gets here; a destroyed stream cannot be recorded on.
		if o.eager || !e.alive(o) {
			err := e.rt.DeviceSynchronize()
			if err == nil {
				o.dead.Store(true)
			}
			o.mu.Unlock()
			if err != nil {
				return cudaError(e.kind+": synchronizing after a destroyed stream", err)
			}
			return nil
		}
		if err := e.recordLocked(o); err != nil {
			o.mu.Unlock()
			return err
		}
		r = o.recorded.Load()
	}
	// o.mu is held, so the event's latest record is record r.
	err := e.rt.StreamWaitEvent(w.handle, o.event)
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
	t := e.table.Load()
	for _, sl := range t.small {
		destroy(sl.st)
	}
	for _, sl := range t.big {
		destroy(sl.st)
	}
	return first
}
