package streamorder

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/rmmgo/rmmgo/core/internal/relaxed"
	"github.com/rmmgo/rmmgo/cudart"
	"github.com/rmmgo/rmmgo/internal/cabi"
)

// State is what a resource knows about one stream.
//
// Blocks freed on the stream carry its epoch at the time of the free, their
// sequence number seq. Whoever records the stream's event, or synchronizes
// the device, first advances the epoch to e: every block freed before has
// seq < e, and its work was enqueued before the record (or the
// synchronization), so the record covers it.
type State struct {
	key uint64 // 0 for the legacy default stream, else id|keyNonDefault
	// Handle is the stream as first seen, for messages only: it is never
	// passed to CUDA (it may be dangling by now). The legacy default stream
	// is recorded on as DefaultStream.
	Handle cudart.Stream

	// Epoch is the sequence number a block freed on the stream now gets.
	Epoch atomic.Uint64
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
	// Inflight counts blocks taken from this stream's lists by other
	// streams that are not ordered after it yet, and the arena's queued
	// frees made on this stream into other streams' superblocks; Sweep keeps
	// the stream (and the event those wait on) while it is not 0. Raised
	// under the list's lock.
	Inflight atomic.Int32

	mu     sync.Mutex
	event  cudart.Event      // created on first record; guarded by mu
	waited map[*State]uint64 // records of others this stream waits for (their recorded values); guarded by mu
}

const keyNonDefault = cabi.StreamKeyFlag

// Durable reports whether any caller may record on the stream at any time:
// only the legacy default stream, which cannot be destroyed and is the same
// stream on every thread.
func (st *State) Durable() bool { return st.key == 0 }

// Ordered reports whether a block freed on st with sequence number seq may
// go to another stream now, without touching st's handle: st is durable, or
// a record of st covers the block, or the device was synchronized since.
func (st *State) Ordered(seq uint64) bool {
	return st.key == 0 || seq < st.recorded.Load() || seq < st.synced.Load()
}

// Event returns the stream's event, 0 before its first record or after the
// stream was forgotten.
func (st *State) Event() cudart.Event {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.event
}

// List is the part of every free list the engine manages. The list types
// of the pool's heap, the fixed-size resource and the arena embed it.
type List struct {
	Mu      sync.Mutex
	ID      int32
	St      *State
	Retired bool // guarded by Mu: the list left the engine; insert elsewhere
	// Cut splits the list (guarded by Mu): blocks with seq < Cut are
	// settled (covered by a record or a synchronization, so other streams may
	// take them), the others are fresh. Only non-durable streams settle.
	Cut uint64
	// Free is the number of bytes the list holds, Settled the number of
	// settled ones; both kept under Mu and read without it as hints (to skip
	// lists that cannot serve a request).
	Free    relaxed.Uintptr
	Settled relaxed.Uintptr
	// freed and frees count the bytes and the frees put into the list since
	// it last settled (guarded by Mu), for NoteFreed.
	freed uintptr
	frees int
	// home is shard 0's list of the same stream (a *T of the engine), nil
	// for shard 0's own; set once when the list is made (Engine.Home).
	home unsafe.Pointer
}

// Base returns l; through embedding, the List of a resource's list.
func (l *List) Base() *List { return l }

// Fresh returns a hint of the bytes of l that no record covers.
func (l *List) Fresh() uintptr { return l.Free.Load() - min(l.Settled.Load(), l.Free.Load()) }

// Batches: a list of a non-durable stream that took at least settleFrees
// frees and a sixteenth of the resource's size (at least 1 MiB) since it
// last settled makes its stream settle on its own, when the resource is
// shared by several streams. Memory freed on a stream
// that nobody asked for (every stream's own lists were enough so far) then
// becomes available to the others in batches, at one record per batch,
// rather than piling up until a device synchronization or a growth.
const settleFrees = 64

// NoteFreed counts n bytes freed into l, for a resource holding size
// bytes, and reports whether a batch is complete. l.Mu is held.
func (l *List) NoteFreed(n uintptr, size func() uintptr) bool {
	l.freed += n
	l.frees++
	return l.frees >= settleFrees && l.freed > max(size()/16, 1<<20)
}

// ListPtr constrains the engine's list type: a pointer to a struct that
// embeds List.
type ListPtr[T any] interface {
	*T
	Base() *List
}

// Lists are one stream's lists, one per shard, made on first use.
type Lists[T any] struct {
	St     *State
	Shards []atomic.Pointer[T]
	gone   bool // swept out of the table; guarded by Engine.mu
}

// table maps stream keys to their lists. It is never modified once
// published: writers copy it.
type table[T any] struct {
	small []*Lists[T] // searched first: most programs use few streams
	big   map[uint64]*Lists[T]
}

func (t *table[T]) find(key uint64) *Lists[T] {
	for _, sl := range t.small {
		if sl.St.key == key {
			return sl
		}
	}
	if t.big != nil {
		return t.big[key]
	}
	return nil
}

// each calls fn for every stream of the table.
func (t *table[T]) each(fn func(sl *Lists[T])) {
	for _, sl := range t.small {
		fn(sl)
	}
	for _, sl := range t.big {
		fn(sl)
	}
}

// SmallStreams is the number of streams looked up by a scan before the
// table turns to a map; it is also the sweep's minimum step.
const SmallStreams = 8
