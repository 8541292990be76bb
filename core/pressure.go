package core

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

const kindPressure = "pressure"

// PressureEvent is a crossing of a threshold of live bytes.
type PressureEvent struct {
	Threshold uintptr // the threshold crossed
	Live      uintptr // the live bytes that crossed it
	Up        bool    // true: live bytes rose to the threshold or above; false: fell below it
}

// PressureOptions configures a Pressure adaptor.
type PressureOptions struct {
	// Thresholds of live bytes (any order; zeros ignored). OnCross is
	// called once each time live bytes reach a threshold from below (Up)
	// and once each time they fall below it again.
	Thresholds []uintptr
	OnCross    func(PressureEvent)
	// OnFailure is called when the upstream runs out of memory, with the
	// request, the number of retries so far (0 at the first failure) and
	// the error (an *OutOfMemoryError inside); true retries the allocation,
	// false returns the error. A program spills, frees, and answers true.
	OnFailure func(bytes uintptr, retry int, err error) bool
	// History keeps the last History allocation and free events (and
	// out-of-memory events) for memory snapshots' traces; 0 keeps none.
	History int
}

// Pressure is an adaptor that watches live bytes: callbacks when they cross
// thresholds, up and down, and when an allocation fails (with the retry
// count), so a program can spill and retry. Its cost on the allocation path
// is one atomic add and one compare with the next threshold; the slow path
// runs only when a threshold is crossed.
//
// Callbacks run on the goroutine (or C thread) whose call crossed the
// threshold, one at a time and in the order of the crossings; a callback may
// allocate and free through the adaptor (its own crossings are delivered
// after it returns).
type Pressure struct {
	upstream  Resource
	live      atomic.Int64
	up, down  atomic.Int64 // next threshold above (reach it: slow path); current one below (fall under it: slow path)
	onFailure func(uintptr, int, error) bool

	mu         sync.Mutex
	thresholds []uintptr // sorted
	level      int       // thresholds[:level] are reached
	onCross    func(PressureEvent)
	queue      []PressureEvent
	delivering bool

	histMu  sync.Mutex
	hist    []TraceEvent
	histCap int
	histPos int
}

// NewPressure returns a Pressure adaptor over upstream.
func NewPressure(upstream Resource, opts PressureOptions) (*Pressure, error) {
	if err := checkUpstream(kindPressure, upstream); err != nil {
		return nil, err
	}
	if len(opts.Thresholds) > 0 && opts.OnCross == nil {
		return nil, fmt.Errorf("%s: %w: thresholds without an OnCross callback", kindPressure, ErrInvalidArgument)
	}
	if opts.History < 0 {
		return nil, fmt.Errorf("%s: %w: negative history", kindPressure, ErrInvalidArgument)
	}
	p := &Pressure{upstream: upstream, onCross: opts.OnCross, onFailure: opts.OnFailure, histCap: opts.History}
	for _, t := range opts.Thresholds {
		if t != 0 && t <= 1<<62 {
			p.thresholds = append(p.thresholds, t)
		}
	}
	sort.Slice(p.thresholds, func(i, j int) bool { return p.thresholds[i] < p.thresholds[j] })
	p.setBounds()
	return p, nil
}

// setBounds publishes the thresholds around p.level. p.mu is held (or p
// is new).
func (p *Pressure) setBounds() {
	up, down := int64(1)<<62, int64(-1)
	if p.level < len(p.thresholds) {
		up = int64(p.thresholds[p.level])
	}
	if p.level > 0 {
		down = int64(p.thresholds[p.level-1])
	}
	p.up.Store(up)
	p.down.Store(down)
}

// Upstream returns the resource Pressure allocates from.
func (p *Pressure) Upstream() Resource { return p.upstream }

// Properties reports the upstream's properties.
func (p *Pressure) Properties() Properties { return p.upstream.Properties() }

// Kind returns "pressure".
func (p *Pressure) Kind() string { return kindPressure }

// Equal reports whether other is this very adaptor.
func (p *Pressure) Equal(other Resource) bool {
	o, ok := other.(*Pressure)
	return ok && o == p
}

// LiveBytes returns the bytes allocated through the adaptor and not freed.
func (p *Pressure) LiveBytes() uintptr { return uintptr(max(p.live.Load(), 0)) }

// Thresholds returns the thresholds, smallest first.
func (p *Pressure) Thresholds() []uintptr {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]uintptr(nil), p.thresholds...)
}

// Allocate allocates from the upstream, calling OnFailure and retrying
// while it runs out of memory and OnFailure answers true.
func (p *Pressure) Allocate(s Stream, bytes, alignment uintptr) (uintptr, error) {
	return p.allocate(s, bytes, alignment, false)
}

// AllocateSync is Allocate without a stream.
func (p *Pressure) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	return p.allocate(DefaultStream, bytes, alignment, true)
}

func (p *Pressure) allocate(s Stream, bytes, alignment uintptr, sync bool) (uintptr, error) {
	if bytes == 0 {
		return 0, zeroRequest(kindPressure, alignment)
	}
	for retry := 0; ; retry++ {
		ptr, err := upAllocate(p.upstream, s, bytes, alignment, sync)
		if err == nil {
			if n := p.live.Add(int64(bytes)); n >= p.up.Load() {
				p.crossed()
			}
			if p.histCap > 0 {
				p.record(TraceEvent{Action: "alloc", Address: ptr, Size: bytes, Stream: s})
			}
			return ptr, nil
		}
		err = explainOOM(p, s, bytes, alignment, err)
		if !errors.Is(err, ErrOutOfMemory) {
			return 0, err
		}
		if p.histCap > 0 {
			var e *OutOfMemoryError
			ev := TraceEvent{Action: "oom", Size: bytes, Stream: s}
			if errors.As(err, &e) {
				ev.DeviceFree = e.DeviceFree
			}
			p.record(ev)
		}
		if p.onFailure == nil || !p.callFailure(bytes, retry, err) {
			return 0, err
		}
	}
}

func (p *Pressure) callFailure(bytes uintptr, retry int, err error) (again bool) {
	defer func() {
		if r := recover(); r != nil {
			again = false
		}
	}()
	return p.onFailure(bytes, retry, err)
}

// Deallocate returns memory to the upstream.
func (p *Pressure) Deallocate(s Stream, ptr, bytes, alignment uintptr) error {
	if ptr == 0 {
		return nil // a size 0 goes on: the upstream refuses it for a block
	}
	if err := p.upstream.Deallocate(s, ptr, bytes, alignment); err != nil {
		return err
	}
	p.freed(s, ptr, bytes)
	return nil
}

// DeallocateSync is Deallocate without a stream.
func (p *Pressure) DeallocateSync(ptr, bytes, alignment uintptr) error {
	if ptr == 0 {
		return nil // a size 0 goes on: the upstream refuses it for a block
	}
	if err := p.upstream.DeallocateSync(ptr, bytes, alignment); err != nil {
		return err
	}
	p.freed(DefaultStream, ptr, bytes)
	return nil
}

func (p *Pressure) freed(s Stream, ptr, bytes uintptr) {
	if n := p.live.Add(-int64(bytes)); n < p.down.Load() {
		p.crossed()
	}
	if p.histCap > 0 {
		p.record(TraceEvent{Action: "free_requested", Address: ptr, Size: bytes, Stream: s})
		p.record(TraceEvent{Action: "free_completed", Address: ptr, Size: bytes, Stream: s})
	}
}

// crossed moves the level to where live bytes are now, queues an event per
// threshold crossed, and delivers the queue unless another call is
// delivering it (which then delivers these too, in order).
func (p *Pressure) crossed() {
	p.mu.Lock()
	live := p.live.Load()
	for p.level < len(p.thresholds) && live >= int64(p.thresholds[p.level]) {
		p.queue = append(p.queue, PressureEvent{Threshold: p.thresholds[p.level], Live: uintptr(live), Up: true})
		p.level++
	}
	for p.level > 0 && live < int64(p.thresholds[p.level-1]) {
		p.level--
		p.queue = append(p.queue, PressureEvent{Threshold: p.thresholds[p.level], Live: uintptr(max(live, 0)), Up: false})
	}
	p.setBounds()
	if p.delivering || len(p.queue) == 0 {
		p.mu.Unlock()
		return
	}
	p.delivering = true
	for len(p.queue) > 0 {
		ev := p.queue[0]
		p.queue = p.queue[1:]
		p.mu.Unlock()
		p.callCross(ev)
		p.mu.Lock()
	}
	p.delivering = false
	p.mu.Unlock()
}

func (p *Pressure) callCross(ev PressureEvent) {
	defer func() { _ = recover() }() // a panicking callback must not take the allocation down
	p.onCross(ev)
}

// record appends ev to the history ring.
func (p *Pressure) record(ev TraceEvent) {
	ev.TimeUS = time.Now().UnixMicro()
	p.histMu.Lock()
	if len(p.hist) < p.histCap {
		p.hist = append(p.hist, ev)
	} else {
		p.hist[p.histPos] = ev
		p.histPos = (p.histPos + 1) % p.histCap
	}
	p.histMu.Unlock()
}

// traceEvents returns the history, oldest first.
func (p *Pressure) traceEvents() []TraceEvent {
	p.histMu.Lock()
	defer p.histMu.Unlock()
	out := make([]TraceEvent, 0, len(p.hist))
	out = append(out, p.hist[p.histPos:]...)
	return append(out, p.hist[:p.histPos]...)
}

func (p *Pressure) oomReport() ResourceReport {
	p.mu.Lock()
	level := p.level
	p.mu.Unlock()
	return ResourceReport{Kind: kindPressure, Live: p.LiveBytes(),
		Note: fmt.Sprintf("%d of %d thresholds reached", level, len(p.thresholds))}
}
