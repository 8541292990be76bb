package sim

import "github.com/rmmgo/rmmgo/cudart"

// Streams and events of the simulated device.
//
// A stream is a FIFO of operations. An operation runs when it reaches the
// head of its stream, the stream is not paused (PauseStream), and the event
// record it waits on (if any) has completed. When nothing holds it back, an
// operation runs at once, in the call that enqueues it; otherwise it is
// queued and runs later, in whichever call releases it (ResumeStream, or the
// completion of the event record it waits on). Operations run with the
// simulator's lock held.

// simStream is a stream: created, or one of a device's default streams.
type simStream struct {
	handle    cudart.Stream
	id        uint64
	dev       int
	flags     uint32
	paused    bool
	destroyed bool // handle gone; kept until its queue drains
	queue     []simOp
	// poolFrees counts, per pool, the frees queued on the stream by
	// FreeAsync that no host synchronization with the stream covered yet.
	poolFrees map[*simPool]int
}

// simOp is one queued operation: run it, or (wait != nil) wait for an event
// record to complete.
type simOp struct {
	run  func()
	wait *simRecord
}

// simRecord is one EventRecord: it completes when its stream reaches it.
type simRecord struct{ done bool }

// simEvent is an event; last is its most recent record (nil: never
// recorded, which CUDA reports as complete).
type simEvent struct {
	handle cudart.Event
	flags  uint32
	last   *simRecord
}

func (s *Runtime) newStream(dev int, flags uint32, h cudart.Stream) *simStream {
	s.nextStreamID++
	return &simStream{handle: h, id: s.nextStreamID, dev: dev, flags: flags}
}

// stream resolves a stream handle for the calling thread: 0 and
// LegacyDefaultStream are the current device's default stream,
// PerThreadDefaultStream its per-thread stream. Unknown and destroyed
// streams fail with cudaErrorInvalidResourceHandle. s.mu held.
func (s *Runtime) stream(fn string, h cudart.Stream, tok uint64) (*simStream, error) {
	switch h {
	case cudart.DefaultStream, cudart.LegacyDefaultStream:
		return s.curDev(tok).null, nil
	case cudart.PerThreadDefaultStream:
		return s.curDev(tok).ptds, nil
	}
	q, ok := s.streams[h]
	if !ok || q.destroyed {
		return nil, s.badHandle(fn, cudart.ErrorInvalidResourceHandle, streamHandle, uintptr(h))
	}
	return q, nil
}

func (s *Runtime) event(fn string, h cudart.Event) (*simEvent, error) {
	e, ok := s.events[h]
	if !ok {
		return nil, s.badHandle(fn, cudart.ErrorInvalidResourceHandle, eventHandle, uintptr(h))
	}
	return e, nil
}

func (o *simOp) ready() bool { return o.wait == nil || o.wait.done }

// enqueue adds o to q, running it (and whatever it releases) at once when
// nothing holds it back. s.mu held.
func (s *Runtime) enqueue(q *simStream, o simOp) {
	if len(q.queue) == 0 && !q.paused && o.ready() {
		if o.run != nil {
			o.run()
		}
		if len(s.busy) > 0 {
			s.pump() // o may have completed a record that other streams wait on
		}
		return
	}
	q.queue = append(q.queue, o)
	s.busy[q] = struct{}{}
}

// pump runs every queued operation that nothing holds back any more, until
// none is left, and wakes the waiters if anything ran. Its cost is in the
// number of streams with queued work, not in all streams. s.mu held.
func (s *Runtime) pump() {
	ran := false
	for moved := true; moved; {
		moved = false
		for q := range s.busy {
			for !q.paused && len(q.queue) > 0 && q.queue[0].ready() {
				o := q.queue[0]
				q.queue[0] = simOp{}
				q.queue = q.queue[1:]
				if o.run != nil {
					o.run()
				}
				moved = true
			}
			if len(q.queue) == 0 {
				q.queue = nil
				delete(s.busy, q)
				if q.destroyed {
					delete(s.streams, q.handle)
				}
			}
		}
		ran = ran || moved
	}
	if ran {
		s.cond.Broadcast()
	}
}

// runSync runs f in order on q and waits for it, as a synchronous CUDA call
// does on the default stream. s.mu held.
func (s *Runtime) runSync(fn string, q *simStream, f func()) error {
	done := false
	s.enqueue(q, simOp{run: func() { f(); done = true }})
	for !done {
		if s.closed {
			return simErr(fn, cudart.ErrorCudartUnloading, "the simulated device was closed")
		}
		s.cond.Wait()
	}
	return nil
}

// waitUntil blocks until cond holds (a test may resume a paused stream from
// another goroutine), then lets pools give back memory above their release
// threshold, as CUDA does at synchronization. s.mu held.
func (s *Runtime) waitUntil(fn string, cond func() bool) error {
	for !cond() {
		if s.closed {
			return simErr(fn, cudart.ErrorCudartUnloading, "the simulated device was closed")
		}
		s.cond.Wait()
	}
	if s.closed {
		return simErr(fn, cudart.ErrorCudartUnloading, "the simulated device was closed")
	}
	s.trimPools()
	return nil
}

// StreamCreate makes a stream on the current device. flags is
// StreamFlagDefault or StreamFlagNonBlocking (the simulator treats both
// alike: it has no implicit synchronization with the legacy stream).
func (s *Runtime) StreamCreate(flags uint32) (cudart.Stream, error) {
	tok := threadToken()
	const fn = "cudaStreamCreateWithFlags"
	if err := s.lock(fn); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if flags&^cudart.StreamFlagNonBlocking != 0 {
		return 0, simErr(fn, cudart.ErrorInvalidValue, "unknown flags %#x", flags)
	}
	h := cudart.Stream(s.newHandle(streamHandle))
	s.streams[h] = s.newStream(s.curDev(tok).id, flags, h)
	return h, nil
}

// StreamDestroy destroys a created stream. As in CUDA, work still queued on
// it completes later (once resumed, if paused); the handle is invalid at
// once. The default streams cannot be destroyed
// (cudaErrorInvalidResourceHandle).
func (s *Runtime) StreamDestroy(st cudart.Stream) error {
	tok := threadToken()
	const fn = "cudaStreamDestroy"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if st == cudart.DefaultStream || st == cudart.LegacyDefaultStream || st == cudart.PerThreadDefaultStream {
		return simErr(fn, cudart.ErrorInvalidResourceHandle, "the default stream %#x cannot be destroyed", uintptr(st))
	}
	q, err := s.stream(fn, st, tok)
	if err != nil {
		return err
	}
	q.destroyed = true
	if len(q.queue) == 0 {
		delete(s.streams, st)
	}
	return nil
}

// StreamSynchronize waits until every operation queued on st has run.
func (s *Runtime) StreamSynchronize(st cudart.Stream) error {
	tok := threadToken()
	const fn = "cudaStreamSynchronize"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	q, err := s.stream(fn, st, tok)
	if err != nil {
		return err
	}
	if err := s.waitUntil(fn, func() bool { return len(q.queue) == 0 }); err != nil {
		return err
	}
	s.synced(q)
	return nil
}

// StreamQuery returns nil when st has nothing queued, and an *Error with
// ErrorNotReady otherwise.
func (s *Runtime) StreamQuery(st cudart.Stream) error {
	tok := threadToken()
	const fn = "cudaStreamQuery"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	q, err := s.stream(fn, st, tok)
	if err != nil {
		return err
	}
	if len(q.queue) > 0 {
		return simErr(fn, cudart.ErrorNotReady, "%d operations queued", len(q.queue))
	}
	return nil
}

// StreamWaitEvent makes work queued on st after this call wait until e's
// most recent record (at the time of this call) has completed. An event
// never recorded imposes no wait.
func (s *Runtime) StreamWaitEvent(st cudart.Stream, ev cudart.Event) error {
	tok := threadToken()
	const fn = "cudaStreamWaitEvent"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	q, err := s.stream(fn, st, tok)
	if err != nil {
		return err
	}
	e, err := s.event(fn, ev)
	if err != nil {
		return err
	}
	if e.last == nil || e.last.done {
		return nil
	}
	s.enqueue(q, simOp{wait: e.last})
	return nil
}

// StreamGetID returns st's unique id. Stream 0 and LegacyDefaultStream share
// the current device's default-stream id.
func (s *Runtime) StreamGetID(st cudart.Stream) (uint64, error) {
	tok := threadToken()
	const fn = "cudaStreamGetId"
	if err := s.lock(fn); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	q, err := s.stream(fn, st, tok)
	if err != nil {
		return 0, err
	}
	return q.id, nil
}

// EventCreate makes an event. flags combines EventFlagBlockingSync,
// EventFlagDisableTiming and cudaEventInterprocess (4, which needs
// DisableTiming).
func (s *Runtime) EventCreate(flags uint32) (cudart.Event, error) {
	const fn = "cudaEventCreateWithFlags"
	if err := s.lock(fn); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	const interprocess = 4
	if flags&^(cudart.EventFlagBlockingSync|cudart.EventFlagDisableTiming|interprocess) != 0 ||
		flags&interprocess != 0 && flags&cudart.EventFlagDisableTiming == 0 {
		return 0, simErr(fn, cudart.ErrorInvalidValue, "flags %#x", flags)
	}
	h := cudart.Event(s.newHandle(eventHandle))
	s.events[h] = &simEvent{handle: h, flags: flags}
	return h, nil
}

// EventDestroy destroys an event. Records still queued complete for the
// streams that wait on them.
func (s *Runtime) EventDestroy(ev cudart.Event) error {
	const fn = "cudaEventDestroy"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, err := s.event(fn, ev); err != nil {
		return err
	}
	delete(s.events, ev)
	return nil
}

// EventRecord records ev on st: the event completes when st reaches this
// point. Queries and waits refer to the most recent record.
func (s *Runtime) EventRecord(ev cudart.Event, st cudart.Stream) error {
	tok := threadToken()
	const fn = "cudaEventRecord"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	e, err := s.event(fn, ev)
	if err != nil {
		return err
	}
	q, err := s.stream(fn, st, tok)
	if err != nil {
		return err
	}
	rec := &simRecord{}
	e.last = rec
	s.enqueue(q, simOp{run: func() { rec.done = true }})
	return nil
}

// EventQuery returns nil when ev's most recent record has completed (or ev
// was never recorded), and an *Error with ErrorNotReady otherwise.
func (s *Runtime) EventQuery(ev cudart.Event) error {
	const fn = "cudaEventQuery"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	e, err := s.event(fn, ev)
	if err != nil {
		return err
	}
	if e.last != nil && !e.last.done {
		return simErr(fn, cudart.ErrorNotReady, "")
	}
	return nil
}

// EventSynchronize waits until ev's most recent record has completed.
func (s *Runtime) EventSynchronize(ev cudart.Event) error {
	const fn = "cudaEventSynchronize"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	e, err := s.event(fn, ev)
	if err != nil {
		return err
	}
	rec := e.last
	return s.waitUntil(fn, func() bool { return rec == nil || rec.done })
}

// DeviceSynchronize waits until every stream of the current device has run
// all its queued work.
func (s *Runtime) DeviceSynchronize() error {
	tok := threadToken()
	const fn = "cudaDeviceSynchronize"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	dev := s.curDev(tok).id
	err := s.waitUntil(fn, func() bool {
		for q := range s.busy {
			if q.dev == dev {
				return false
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	for q := range s.unsyncedFrees {
		if q.dev == dev {
			s.synced(q)
		}
	}
	return nil
}

// PauseStream holds back the work on st: operations queued on it from now on
// do not run, so its events stay not ready, StreamQuery reports
// ErrorNotReady once work is queued, synchronizing with it blocks, and
// streams waiting on its events wait too. st may be a default stream (that of
// the calling thread's current device). Test control; not part of CUDA.
func (s *Runtime) PauseStream(st cudart.Stream) error {
	return s.setPaused("PauseStream", st, true)
}

// ResumeStream lets a paused stream run its queued work, and whatever waits
// on it. A stream destroyed while paused can still be resumed. Test control;
// not part of CUDA.
func (s *Runtime) ResumeStream(st cudart.Stream) error {
	return s.setPaused("ResumeStream", st, false)
}

func (s *Runtime) setPaused(fn string, st cudart.Stream, paused bool) error {
	tok := threadToken()
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	q, ok := s.streams[st]
	if !ok {
		var err error
		if q, err = s.stream(fn, st, tok); err != nil {
			return err
		}
	}
	q.paused = paused
	if !paused && len(q.queue) > 0 {
		s.pump()
	}
	return nil
}
