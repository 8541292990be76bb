package heap

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/core/internal/errs"
	"github.com/rmmgo/rmmgo/core/internal/streamorder"
	"github.com/rmmgo/rmmgo/cudart"
)

// UnitShift: blocks are multiples of Unit, 256 bytes (core's
// DefaultAlignment), and start at multiples of it in their chunk.
const (
	UnitShift = 8
	Unit      = 1 << UnitShift
)

// GrowFunc gets a new chunk of at least size bytes from the upstream, for
// an allocation on stream s. It returns the chunk's address and size.
type GrowFunc func(s cudart.Stream, size uintptr) (uintptr, uintptr, error)

// Heap is a coalescing best-fit allocator over chunks, with stream-ordered
// free lists. Init it before use. It is safe for concurrent use.
type Heap struct {
	kind  string
	eng   streamorder.Engine[freeList, *freeList]
	nodes nodeStore
	grow  GrowFunc // nil: the heap never grows
	mags  bool     // frees go through the lists' magazines (magazine.go)
	front *front   // size classes and per-P caches (front.go); nil when off
	// reclaim asks the caches in front of the heap's owner to give their
	// blocks back; called before the heap grows (see SetReclaim).
	reclaim func(need uintptr) bool
	futile  func() // an allocation failed after reclaim gave memory back
	// trim gives chunks taken out of the heap back to the upstream (see
	// SetTrim); nil: the heap keeps its chunks until its owner releases
	// them.
	trim func([]Span) error
	// trimSettles: giving chunks back before growing counts, and then
	// reuses, memory other streams freed (see SetTrimSettles).
	trimSettles bool

	magBudget atomic.Uintptr // the magazines' budget (magazine.go)
	magAvail  atomic.Int64   // the part of it no magazine reserved

	chunks    atomic.Pointer[chunkTable]
	chunkMu   sync.Mutex // serializes chunk table changes
	nextChunk int32
	size      atomic.Uintptr // bytes in chunks
	peak      atomic.Uintptr // most bytes in chunks at once
	gen       atomic.Uint64  // counts growths

	growMu   sync.Mutex // one growth at a time
	defragMu sync.Mutex // one defragmentation at a time
	// closed: ReleaseChunks(true) took every chunk out. Set under growMu
	// and checked there before growing, so that an allocation racing it
	// never adds a chunk nobody would give back.
	closed atomic.Bool

	holes holeSet // address space holding no memory (expand.go)
}

// Init readies h for a resource of the given kind on runtime r. grow gets
// new chunks (nil: the heap never grows); with magazines set, frees of
// blocks up to 1 MiB wait in the lists' magazines (magazine.go).
func (h *Heap) Init(kind string, r cudart.Runtime, grow GrowFunc, magazines bool) {
	h.kind, h.grow, h.mags = kind, grow, magazines
	h.nodes.init()
	h.eng.Init(streamorder.Config[freeList, *freeList]{
		Kind:    kind,
		Runtime: r,
		NewList: func() *freeList { return new(freeList) },
		SettleList: func(l *freeList, cut uint64) {
			h.magFlushAll(l) // the magazine's blocks were freed before cut too
			l.settle(h.nodes.load(), cut)
		},
	})
	h.chunks.Store(&chunkTable{byID: []*chunk{nil}, dir: &regionDir{}})
	h.nextChunk = 1
	h.chunkMu.Lock()
	h.setMagBudget(0)
	h.chunkMu.Unlock()
}

// SetReclaim makes the heap call reclaim before it grows, with the size of
// the request it cannot serve: the owner's caches give their blocks back
// (deallocating them into the heap) and report whether they gave anything,
// in which case the heap looks for memory again before growing. When the
// allocation fails all the same (the heap could not grow), the heap calls
// futile. Set them before the heap is used.
func (h *Heap) SetReclaim(reclaim func(need uintptr) bool, futile func()) {
	h.reclaim, h.futile = reclaim, futile
}

// SetTrim makes the heap give its wholly free chunks back, through trim,
// before it grows for a request that its free memory could hold but no
// free block fits (fragmentation between chunks, which never merge): the
// heap then holds the new chunk instead of the new chunk and the free ones
// beside it. trim synchronizes the device and returns the spans to the
// upstream (see ReleaseChunks). Set it before the heap is used.
func (h *Heap) SetTrim(trim func([]Span) error) { h.trim = trim }

// SetTrimSettles makes a heap with a trim (SetTrim) that gave wholly free
// chunks back before growing treat every block freed before trim's device
// synchronization as free for every stream, and look for a block again
// before it grows: memory other streams freed and have not recorded their
// event on since (fresh: a stream records only during its own calls, once
// another asked for its memory) is ordered by that synchronization, where
// without it the memory waits for its streams' next calls while the heap
// grows. With many streams, most of a heap's free memory is fresh in other
// streams' lists at any time: in core's 16-stream soak the pool's small
// heap grew 500-2,000 times a second with 60-75 MiB free, 2-3 MiB of it
// usable by the growing stream, and held 4-6 times its live blocks. It adds
// no synchronization. Set it before the heap is used.
func (h *Heap) SetTrimSettles(on bool) { h.trimSettles = on }

// AddChunk adds the chunk [base, base+size), which the caller got from its
// upstream in order on the legacy default stream, as free memory of that
// stream.
func (h *Heap) AddChunk(base, size uintptr) { h.addChunk(nil, base, size) }

// Size returns the bytes of the heap's chunks.
func (h *Heap) Size() uintptr { return h.size.Load() }

// PeakSize returns the most bytes the heap's chunks held at once.
func (h *Heap) PeakSize() uintptr { return h.peak.Load() }

// FreeBytes sums the free bytes of every list, blocks waiting in magazines
// and in the front included (a hint while others work).
func (h *Heap) FreeBytes() uintptr {
	_, n := h.frontHeld()
	for _, l := range h.eng.AllLists() {
		n += l.Free.Load()
	}
	return n
}

// SyncMarks is what the heap's engine noted before a device
// synchronization (see streamorder.Engine.SyncMarks).
type SyncMarks []streamorder.SyncMark[freeList]

// SyncMarks advances every stream's epoch before a device synchronization
// made by the caller; pass the result to ApplySync once it has returned.
func (h *Heap) SyncMarks() SyncMarks { return h.eng.SyncMarks() }

// ApplySync notes that the device was synchronized after SyncMarks
// returned ms: everything freed before is free for every stream.
func (h *Heap) ApplySync(ms SyncMarks) { h.eng.ApplySync(ms) }

// Synchronize synchronizes the device, after which every block freed
// before the call is free for every stream.
func (h *Heap) Synchronize() error { return h.eng.Synchronize() }

// Close releases the streams' events, after ReleaseChunks(true). Calls
// racing it fail with errs.Closed where they need an event.
func (h *Heap) Close() error { return h.eng.Close() }

// Closed reports whether ReleaseChunks(true) ran.
func (h *Heap) Closed() bool { return h.closed.Load() }

// errClosed is the error of a call that needs memory of a closed heap.
func (h *Heap) errClosed() error { return fmt.Errorf("%s: %w", h.kind, errs.Closed) }
