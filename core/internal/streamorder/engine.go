package streamorder

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/rmmgo/rmmgo/core/internal/errs"
	"github.com/rmmgo/rmmgo/cudart"
)

// ErrRetry: the list an operation was about to use left the engine (its
// stream was swept meanwhile); look the stream up again.
var ErrRetry = errors.New("retry")

// Config is what a resource tells its engine.
type Config[T any, PT ListPtr[T]] struct {
	// Kind is the resource's kind name, for messages.
	Kind string
	// Runtime is the CUDA runtime the engine records, waits and
	// synchronizes with.
	Runtime cudart.Runtime
	// NewList makes an empty list.
	NewList func() PT
	// SettleList moves the blocks of l freed before cut (seq < cut) to its
	// settled part and sets l.Cut (l.Mu is held, cut > l.Cut); nil when the
	// resource's lists have nothing to settle (the arena's).
	SettleList func(l PT, cut uint64)
	// Holds reports whether l holds anything that keeps its stream from
	// being swept (l.Mu is held); nil: its free bytes are not 0. The
	// arena's lists hold superblocks even when they have no free byte.
	Holds func(l PT) bool
}

// Engine is the stream-ordered list machinery of one resource. Init it
// before use.
type Engine[T any, PT ListPtr[T]] struct {
	rt         cudart.Runtime
	kind       string
	mask       uint32
	newList    func() PT
	settleList func(l PT, cut uint64)
	holds      func(l PT) bool

	def   *Lists[T] // the legacy default stream
	table atomic.Pointer[table[T]]
	lists atomic.Pointer[[]PT] // every list, in id order

	// closed: Close ran. Events are made, recorded and waited on only under
	// their stream's State.mu, where this is checked, so no call racing
	// Close touches an event Close destroyed, or makes one it would miss.
	closed atomic.Bool

	mu     sync.Mutex // serializes changes to table and lists
	nextID int32
	states int // streams in table, for the clean-up policy
	swept  int // streams after the last clean-up
}

// Init readies e with one shard per P (GOMAXPROCS now, rounded up to a
// power of two, at most 64).
func (e *Engine[T, PT]) Init(c Config[T, PT]) {
	e.rt, e.kind, e.newList, e.settleList, e.holds = c.Runtime, c.Kind, c.NewList, c.SettleList, c.Holds
	n := shardCount()
	e.mask = uint32(n - 1)
	e.def = &Lists[T]{St: &State{}, Shards: make([]atomic.Pointer[T], n)}
	e.table.Store(&table[T]{})
	e.lists.Store(&[]PT{})
}

// Shard returns the calling goroutine's shard.
func (e *Engine[T, PT]) Shard() uint32 { return CurrentP() & e.mask }

// Default returns the legacy default stream's lists.
func (e *Engine[T, PT]) Default() *Lists[T] { return e.def }

// DefaultShard returns the legacy default stream's list in the calling
// goroutine's shard, or nil when it was not made yet: the resources' fast
// path (that list is never retired).
func (e *Engine[T, PT]) DefaultShard() *T { return e.def.Shards[CurrentP()&e.mask].Load() }

// streamKey identifies stream s: 0 for the legacy default stream, else its
// CUDA stream id. For the per-thread default stream the caller holds its
// goroutine on its OS thread for the whole operation.
func (e *Engine[T, PT]) streamKey(s cudart.Stream) (uint64, error) {
	if s == cudart.DefaultStream || s == cudart.LegacyDefaultStream {
		return 0, nil
	}
	id, err := e.rt.StreamGetID(s)
	if err != nil {
		return 0, fmt.Errorf("%s: stream %#x: %w", e.kind, uintptr(s), streamError(err))
	}
	return KeyOfID(id), nil
}

// KeyOfID returns the key of the stream whose CUDA stream id is id, for
// any stream but the legacy default stream (whose key is 0): the rule is
// internal/cabi's (StreamKeyFlag), which the C ABI's caches follow too.
func KeyOfID(id uint64) uint64 { return id | keyNonDefault }

// streamError classifies the failure of cudaStreamGetId: an unknown
// stream is the caller's invalid argument.
func streamError(err error) error {
	var ce *cudart.Error
	if errors.As(err, &ce) && (ce.Code == cudart.ErrorInvalidResourceHandle || ce.Code == cudart.ErrorInvalidValue) {
		return fmt.Errorf("%w: not a live stream: %w", errs.InvalidArgument, err)
	}
	return fmt.Errorf("%w: %w", errs.CUDA, err)
}

// Lookup returns the lists of stream s, making them on first use. s must
// be the caller's stream, alive for the duration of the call.
func (e *Engine[T, PT]) Lookup(s cudart.Stream) (*Lists[T], error) {
	if s == cudart.DefaultStream || s == cudart.LegacyDefaultStream {
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
	sl := &Lists[T]{
		St:     &State{key: key, Handle: s},
		Shards: make([]atomic.Pointer[T], len(e.def.Shards)),
	}
	nt := &table[T]{small: old.small, big: old.big}
	if len(old.small) < SmallStreams {
		nt.small = append(append(make([]*Lists[T], 0, len(old.small)+1), old.small...), sl)
	} else {
		nt.big = make(map[uint64]*Lists[T], len(old.big)+1)
		for k, v := range old.big {
			nt.big[k] = v
		}
		nt.big[key] = sl
	}
	e.table.Store(nt)
	e.states++
	return sl, nil
}

// List returns sl's list for shard i, making it on first use. A list made
// for a stream swept meanwhile is retired at once, so that the caller
// looks the stream up again.
//
// Shard 0's list is the stream's home: it is made before any other shard's,
// and every other list of the stream names it (Home), so that memory freed
// into a shard's list can join the free memory beside it in the home list.
func (e *Engine[T, PT]) List(sl *Lists[T], i uint32) PT {
	if l := sl.Shards[i].Load(); l != nil {
		return PT(l)
	}
	var home PT
	if i != 0 {
		home = e.List(sl, 0)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if l := sl.Shards[i].Load(); l != nil {
		return PT(l)
	}
	l := e.newList()
	b := l.Base()
	e.nextID++
	b.ID, b.St = e.nextID, sl.St
	if home != nil {
		b.home = unsafe.Pointer((*T)(home))
	}
	if sl.gone {
		// The stream was swept meanwhile: hand out a retired list, so
		// that the caller looks the stream up again.
		b.Retired = true
		return l
	}
	old := *e.lists.Load()
	nl := append(append(make([]PT, 0, len(old)+1), old...), l)
	e.lists.Store(&nl)
	sl.Shards[i].Store((*T)(l))
	return l
}

// Home returns the home list of l's stream (its shard 0 list), nil when l
// is the home list itself.
func (e *Engine[T, PT]) Home(l PT) PT { return PT((*T)(l.Base().home)) }

// HomeOf returns the home list of sl, making it on first use.
func (e *Engine[T, PT]) HomeOf(sl *Lists[T]) PT { return e.List(sl, 0) }

// ListByID returns the list whose ID is id, nil when it left the engine.
func (e *Engine[T, PT]) ListByID(id int32) PT {
	ls := e.AllLists()
	i, ok := slices.BinarySearchFunc(ls, id, func(l PT, id int32) int { return cmp.Compare(l.Base().ID, id) })
	if !ok {
		return nil
	}
	return ls[i]
}

// AllLists returns every list, in id order. The slice is not to be
// modified.
func (e *Engine[T, PT]) AllLists() []PT { return *e.lists.Load() }

// LockAll locks every list, in id order, and returns them; UnlockAll
// undoes it. Lists made meanwhile are not included (they are empty).
func (e *Engine[T, PT]) LockAll() []PT {
	ls := e.AllLists()
	for _, l := range ls {
		l.Base().Mu.Lock()
	}
	return ls
}

// UnlockAll unlocks the lists LockAll returned, in reverse order.
func UnlockAll[T any, PT ListPtr[T]](ls []PT) {
	for i := len(ls) - 1; i >= 0; i-- {
		ls[i].Base().Mu.Unlock()
	}
}

// NeedSweep reports whether enough streams came since the last sweep to
// make one worth its cost.
func (e *Engine[T, PT]) NeedSweep() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.states >= 2*e.swept+SmallStreams
}

// Sweep drops lists that hold nothing and whose stream was not used for
// allocation meanwhile, and the streams left without lists, so that a
// program creating and destroying many streams does not make the resource
// slower or larger over time. Every list must be locked (ls, from
// LockAll); keep is never dropped. It returns whether anything was
// dropped.
func (e *Engine[T, PT]) Sweep(ls []PT, keep PT) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.states < 2*e.swept+SmallStreams {
		return false
	}
	locked := make(map[PT]bool, len(ls))
	for _, l := range ls {
		locked[l] = true
	}
	drop := make(map[*State]bool)
	// A stream is dropped when none of its lists holds anything, nobody
	// is ordering itself after it, and all its lists are locked (a list
	// made after the caller locked them all may hold memory already).
	for _, l := range e.AllLists() {
		b := l.Base()
		if b.St.key == 0 {
			continue
		}
		if _, seen := drop[b.St]; !seen {
			drop[b.St] = true
		}
		held := b.Free.Load() != 0
		if e.holds != nil {
			held = e.holds(l)
		}
		if !locked[l] || held || l == keep || b.St.Inflight.Load() != 0 {
			drop[b.St] = false
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
	nt := &table[T]{}
	for _, sl := range old.small {
		if !drop[sl.St] {
			nt.small = append(nt.small, sl)
		} else {
			sl.gone = true
		}
	}
	for k, sl := range old.big {
		if drop[sl.St] {
			sl.gone = true
			continue
		}
		if nt.big == nil {
			nt.big = make(map[uint64]*Lists[T])
		}
		nt.big[k] = sl
	}
	var kept []PT
	for _, l := range e.AllLists() {
		b := l.Base()
		if drop[b.St] {
			b.Retired = true
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
func (e *Engine[T, PT]) forget(st *State) {
	st.mu.Lock()
	if st.event != 0 {
		_ = e.rt.EventDestroy(st.event)
		st.event = 0
	}
	st.mu.Unlock()
	visit := func(o *State) {
		o.mu.Lock()
		delete(o.waited, st)
		o.mu.Unlock()
	}
	visit(e.def.St)
	e.table.Load().each(func(sl *Lists[T]) { visit(sl.St) })
}

// Close destroys the streams' events. Calls racing it may go on using the
// lists; from then on a record or a wait fails with errs.Closed, and no
// event is made.
func (e *Engine[T, PT]) Close() error {
	e.closed.Store(true)
	var first error
	destroy := func(st *State) {
		st.mu.Lock()
		if st.event != 0 {
			if err := e.rt.EventDestroy(st.event); err != nil && first == nil {
				first = errs.FromCUDA(e.kind+": destroying a stream event", err)
			}
			st.event = 0
		}
		st.mu.Unlock()
	}
	destroy(e.def.St)
	e.table.Load().each(func(sl *Lists[T]) { destroy(sl.St) })
	return first
}
