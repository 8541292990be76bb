package streamorder

import (
	"fmt"

	"github.com/rmmgo/rmmgo/core/internal/errs"
	"github.com/rmmgo/rmmgo/cudart"
)

// recordLocked records st's event on s, which names st and is alive (the
// caller's stream during its call, or the legacy default stream), and
// returns the new recorded mark: every block freed on st so far has a
// smaller sequence number. st.mu is held. After Close it fails with
// errs.Closed.
func (e *Engine[T, PT]) recordLocked(st *State, s cudart.Stream) (uint64, error) {
	if e.closed.Load() {
		return 0, e.errClosed()
	}
	if st.event == 0 {
		ev, err := e.rt.EventCreate(cudart.EventFlagDisableTiming)
		if err != nil {
			return 0, errs.FromCUDA(e.kind+": creating a stream event", err)
		}
		st.event = ev
	}
	// Advance the epoch before recording: a free that read the old epoch
	// did so before this record was enqueued, so the record covers it.
	cut := st.Epoch.Add(1)
	if err := e.rt.EventRecord(st.event, s); err != nil {
		return 0, errs.FromCUDA(e.kind+": recording a stream event", err)
	}
	st.recorded.Store(cut)
	return cut, nil
}

// Record records st's event on s (st's stream, the caller's, alive during
// the call) and returns the new recorded mark, without settling st's
// lists.
func (e *Engine[T, PT]) Record(st *State, s cudart.Stream) (uint64, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return e.recordLocked(st, s)
}

// Want marks st as wanted by another stream, unless it is durable (others
// record on it themselves). Cheap when already marked.
func (e *Engine[T, PT]) Want(st *State) {
	if st.key != 0 && !st.wanted.Load() {
		st.wanted.Store(true)
	}
}

// WantOthers marks streams but st that hold memory no record covers (in
// ls, every list) as wanted, so that their next calls settle it: a stream
// that ran out of its own memory asks the others for theirs. Before it
// looks for ordered memory (short set), it asks only the streams whose
// fresh memory exceeds a sixteenth of their settled memory, so that a
// stream living on another's memory makes it record once per few frees
// rather than at every call, while its settled memory never runs dry
// (which would grow the resource); when it found none, it asks every
// stream with fresh memory. It reads hints only.
func (e *Engine[T, PT]) WantOthers(ls []PT, st *State, short bool) {
	for _, l := range ls {
		b := l.Base()
		if f := b.Fresh(); b.St != st && f != 0 && (!short || f*16 > b.Settled.Load()) {
			e.Want(b.St)
		}
	}
}

// MaybeSettle settles stream sl when another stream wants its memory. s is
// the caller's stream (sl's), alive during the call. Call it during every
// operation on a non-default stream; it costs one load when not wanted.
func (e *Engine[T, PT]) MaybeSettle(sl *Lists[T], s cudart.Stream) {
	if sl.St.wanted.Load() {
		e.settle(sl, s)
	}
}

// Shared reports whether the resource knows at least two streams besides
// the legacy default one: only then are batches settled (a lone stream's
// memory is wanted by nobody, or by the default stream, which asks).
func (e *Engine[T, PT]) Shared() bool {
	t := e.table.Load()
	return len(t.small)+len(t.big) >= 2
}

// SettleNow settles stream sl (the caller's, s) at once, after a
// defragmentation or a growth put memory that any stream could use into its
// fresh lists; unless the stream is durable, or (with ifShared, for a
// growth) the resource knows no other stream to use it: a stream that never
// settled keeps the cheapest lists.
func (e *Engine[T, PT]) SettleNow(sl *Lists[T], s cudart.Stream, ifShared bool) {
	if !sl.St.Durable() && (!ifShared || e.Shared()) {
		sl.St.wanted.Store(true)
		e.settle(sl, s)
	}
}

// settle records sl's event on s (sl's stream, the caller's) and moves
// every block freed on it so far to the settled part of its lists, where
// other streams may take it after waiting on the event. A failed record is
// not the caller's operation's failure: the memory stays unsettled, and
// others fall back to a device synchronization.
func (e *Engine[T, PT]) settle(sl *Lists[T], s cudart.Stream) {
	st := sl.St
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
func (e *Engine[T, PT]) settleLists(sl *Lists[T], cut uint64) {
	if e.settleList == nil {
		return
	}
	for i := range sl.Shards {
		p := sl.Shards[i].Load()
		if p == nil {
			continue
		}
		l := PT(p)
		b := l.Base()
		b.Mu.Lock()
		if cut > b.Cut {
			e.settleList(l, cut)
			b.freed, b.frees = 0, 0
		}
		b.Mu.Unlock()
	}
}

// SyncMark is a stream's epoch taken before a device synchronization.
type SyncMark[T any] struct {
	sl   *Lists[T]
	mark uint64
}

// SyncMarks advances every stream's epoch before a device synchronization
// and returns the new epochs: once the synchronization has returned, every
// block freed on a stream with a sequence number below its mark is idle.
// Pass them to ApplySync.
func (e *Engine[T, PT]) SyncMarks() []SyncMark[T] {
	ms := []SyncMark[T]{{e.def, e.def.St.Epoch.Add(1)}}
	e.table.Load().each(func(sl *Lists[T]) {
		ms = append(ms, SyncMark[T]{sl, sl.St.Epoch.Add(1)})
	})
	return ms
}

// ApplySync notes that the device was synchronized after SyncMarks
// returned ms: the blocks freed before need no ordering and are settled.
func (e *Engine[T, PT]) ApplySync(ms []SyncMark[T]) {
	for _, m := range ms {
		st := m.sl.St
		for {
			old := st.synced.Load()
			if old >= m.mark || st.synced.CompareAndSwap(old, m.mark) {
				break
			}
		}
		if !st.Durable() {
			e.settleLists(m.sl, m.mark)
		}
	}
}

// Synchronize synchronizes the device, after which every block freed before
// the call is free for every stream. The caller holds no list lock.
func (e *Engine[T, PT]) Synchronize() error {
	ms := e.SyncMarks()
	if err := e.rt.DeviceSynchronize(); err != nil {
		return errs.FromCUDA(e.kind+": synchronizing the device to reuse memory freed on other streams", err)
	}
	e.ApplySync(ms)
	return nil
}

// OrderAfter makes w's stream, ws (the caller's stream, alive during the
// call), wait for the work that stream o had enqueued when a block with
// sequence number seq was freed on it, so that w may use the block. o must
// be ordered for seq (o.Ordered(seq)): the only stream it records on is the
// legacy default stream. It never blocks the host.
func (e *Engine[T, PT]) OrderAfter(ws cudart.Stream, w, o *State, seq uint64) error {
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
	if e.closed.Load() {
		o.mu.Unlock()
		return e.errClosed() // o's event is destroyed, or about to be
	}
	r := o.recorded.Load()
	if r <= seq {
		if !o.Durable() {
			o.mu.Unlock()
			if seq < o.synced.Load() {
				return nil
			}
			return fmt.Errorf("%s: %w: internal error: memory freed on stream %#x was taken before a record covered it", e.kind, errs.BadAlloc, uintptr(o.Handle))
		}
		// No record covers the free yet: record one now on the legacy
		// default stream, which cannot have been destroyed.
		var err error
		if r, err = e.recordLocked(o, cudart.DefaultStream); err != nil {
			o.mu.Unlock()
			return err
		}
	}
	// o.mu is held, so the event's latest record is the one r stands for.
	err := e.rt.StreamWaitEvent(ws, o.event)
	o.mu.Unlock()
	if err != nil {
		return errs.FromCUDA(e.kind+": waiting on another stream's event", err)
	}
	w.mu.Lock()
	if w.waited == nil {
		w.waited = make(map[*State]uint64)
	}
	if w.waited[o] < r {
		w.waited[o] = r
	}
	w.mu.Unlock()
	return nil
}

// errClosed is the error of a record or a wait after Close.
func (e *Engine[T, PT]) errClosed() error { return fmt.Errorf("%s: %w", e.kind, errs.Closed) }
