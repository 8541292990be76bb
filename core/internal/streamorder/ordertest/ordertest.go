// Package ordertest is a stand-in CUDA runtime for the tests of the
// stream-ordering engine and of the heap: it implements the calls they make
// (stream ids, events, waits, device synchronization) over no device at
// all, counts them, and reports misuse: an event recorded on, waited on or
// destroyed after its destruction, a record on a stream after it was
// destroyed (the engine must never touch a handle after the call that
// passed it), a wait by a destroyed stream. Any other runtime call panics.
//
// Streams are any handles the test makes up (NewStream hands out fresh
// ones); 0 and cudart.LegacyDefaultStream are the legacy default stream.
package ordertest

import (
	"fmt"
	"sync"

	"github.com/rmmgo/rmmgo/cudart"
)

// Runtime is the stand-in runtime. The zero value is not usable: call New.
type Runtime struct {
	cudart.Runtime // nil: every call not defined below panics

	mu        sync.Mutex
	next      uint64 // next stream handle and id
	ids       map[cudart.Stream]uint64
	destroyed map[cudart.Stream]bool
	nextEvent cudart.Event
	events    map[cudart.Event]bool // live events
	counts    Counts
	recordsOn map[cudart.Stream]int
	misuses   []string
	failSync  bool
}

// Counts are the calls the runtime served.
type Counts struct {
	Records, Waits, Syncs, Events int // event records, stream waits, device synchronizations, events created
}

// New returns a runtime with no streams.
func New() *Runtime {
	return &Runtime{
		next:      0x1000,
		ids:       map[cudart.Stream]uint64{},
		destroyed: map[cudart.Stream]bool{},
		events:    map[cudart.Event]bool{},
		recordsOn: map[cudart.Stream]int{},
	}
}

func notLive(fn string) error {
	return &cudart.Error{Code: cudart.ErrorInvalidResourceHandle, Func: fn}
}

// NewStream returns a fresh stream handle with its own id.
func (r *Runtime) NewStream() cudart.Stream {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	s := cudart.Stream(r.next)
	r.ids[s] = r.next
	return s
}

// DestroyStream ends stream s: the engine must not use it any more.
func (r *Runtime) DestroyStream(s cudart.Stream) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.ids, s)
	r.destroyed[s] = true
}

func (r *Runtime) misuse(format string, args ...any) {
	r.misuses = append(r.misuses, fmt.Sprintf(format, args...))
}

func legacy(s cudart.Stream) bool {
	return s == cudart.DefaultStream || s == cudart.LegacyDefaultStream
}

// StreamGetID returns s's id; a stream NewStream did not make, or one
// destroyed, is cudaErrorInvalidResourceHandle.
func (r *Runtime) StreamGetID(s cudart.Stream) (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if legacy(s) {
		return 0, nil
	}
	id, ok := r.ids[s]
	if !ok {
		return 0, notLive("cudaStreamGetId")
	}
	return id, nil
}

// EventCreate makes an event.
func (r *Runtime) EventCreate(flags uint32) (cudart.Event, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextEvent++
	r.events[r.nextEvent] = true
	r.counts.Events++
	return r.nextEvent, nil
}

// EventDestroy destroys e.
func (r *Runtime) EventDestroy(e cudart.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.events[e] {
		r.misuse("EventDestroy of event %d, which does not exist", e)
		return notLive("cudaEventDestroy")
	}
	delete(r.events, e)
	return nil
}

// EventRecord records e on s.
func (r *Runtime) EventRecord(e cudart.Event, s cudart.Stream) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.events[e] {
		r.misuse("EventRecord of event %d, which does not exist", e)
		return notLive("cudaEventRecord")
	}
	if !legacy(s) && r.ids[s] == 0 {
		r.misuse("EventRecord on stream %#x, which is not alive", uintptr(s))
		return notLive("cudaEventRecord")
	}
	r.counts.Records++
	r.recordsOn[s]++
	return nil
}

// StreamWaitEvent makes s wait for e.
func (r *Runtime) StreamWaitEvent(s cudart.Stream, e cudart.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.events[e] {
		r.misuse("StreamWaitEvent on event %d, which does not exist", e)
		return notLive("cudaStreamWaitEvent")
	}
	if !legacy(s) && r.ids[s] == 0 {
		r.misuse("StreamWaitEvent by stream %#x, which is not alive", uintptr(s))
		return notLive("cudaStreamWaitEvent")
	}
	r.counts.Waits++
	return nil
}

// DeviceSynchronize counts a synchronization; it fails with
// cudaErrorIllegalAddress after FailSync(true).
func (r *Runtime) DeviceSynchronize() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failSync {
		return &cudart.Error{Code: cudart.ErrorIllegalAddress, Func: "cudaDeviceSynchronize"}
	}
	r.counts.Syncs++
	return nil
}

// FailSync makes DeviceSynchronize fail (or succeed again).
func (r *Runtime) FailSync(fail bool) {
	r.mu.Lock()
	r.failSync = fail
	r.mu.Unlock()
}

// Counts returns the calls served so far.
func (r *Runtime) Counts() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts
}

// RecordsOn returns the records made on stream s.
func (r *Runtime) RecordsOn(s cudart.Stream) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.recordsOn[s]
}

// LiveEvents returns the events created and not destroyed.
func (r *Runtime) LiveEvents() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// Misuses returns what the engine did wrong, in order.
func (r *Runtime) Misuses() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.misuses...)
}
