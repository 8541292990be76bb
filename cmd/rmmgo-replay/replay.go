package main

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/core/eventlog"
	"github.com/rmmgo/rmmgo/cudart"
)

// maxSamples bounds the points of the memory-over-time series: longer logs
// are cut into buckets, each drawn with its highest live and reserved bytes
// and its smallest largest-free-block.
const maxSamples = 4000

// sample is one point of the memory-over-time series.
type sample struct {
	Index       int    // the event index the bucket ends at
	Live        uint64 // bytes the replay holds (requested sizes)
	Reserved    uint64 // bytes the resource holds from the device
	LargestFree uint64 // largest free block (when known)
}

// opTimes summarizes the time of one kind of operation.
type opTimes struct {
	N                   int
	Total               time.Duration
	Mean, P50, P99, Max time.Duration
}

func summarize(d []time.Duration) opTimes {
	if len(d) == 0 {
		return opTimes{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	var total time.Duration
	for _, v := range s {
		total += v
	}
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(math.Ceil(q*float64(len(s))))-1)] }
	return opTimes{N: len(s), Total: total, Mean: total / time.Duration(len(s)), P50: at(0.5), P99: at(0.99), Max: s[len(s)-1]}
}

// failure is an allocation the log made and the replay could not.
type failure struct {
	Index int
	Size  uintptr
	Err   error
}

// result is what a replay found.
type result struct {
	Events         int
	Threads        int
	Streams        int // distinct non-default streams in the log
	Allocs         int // allocations replayed successfully
	Frees          int // frees replayed successfully
	ZeroByte       int // zero-byte events (skipped: they allocate nothing)
	LoggedFailures int // "allocate failure" rows in the log (not replayed)
	Failures       []failure
	// FailuresWithRoom counts failed allocations while the resource held at
	// least the request in free bytes (reserved minus live, requested sizes).
	FailuresWithRoom int
	// StatsPeak is the peak bytes of a statistics adaptor on top (-adaptor
	// statistics), 0 without one.
	StatsPeak      uint64
	FreeErrors     []failure
	UnmatchedFrees int // frees of pointers the log never allocated (or that failed here)
	SizeMismatches int // frees whose size differs from the allocation's
	DoubleAllocs   int // allocations of a pointer already live in the log
	Leaks          int // allocations never freed in the log (freed at the end)
	LeakedBytes    uint64
	AllocTimes     opTimes
	FreeTimes      opTimes
	PeakLive       uint64 // the most bytes the replay held at once (requested sizes)
	LogPeakLive    uint64 // the most the log held: PeakLive when no allocation failed here
	PeakReserved   uint64
	FinalReserved  uint64
	HasLargestFree bool
	Samples        []sample
	Wall           time.Duration
}

type liveAlloc struct {
	ptr, size uintptr
	stream    core.Stream
}

// replayer replays events against a resource. Workers run one per logged
// thread, each locked to its own OS thread, and hand a token along in file
// order, so exactly one event runs at a time and every field below is
// touched by one goroutine at a time (the channel hand-offs order them).
type replayer struct {
	rt      cudart.Runtime
	rr      *replayResource
	events  []eventlog.Event
	streams map[core.Stream]core.Stream // logged stream -> real stream
	dev     int

	live    map[uintptr]liveAlloc // by logged pointer
	failed  map[uintptr]bool      // logged pointers whose allocation failed here
	liveSum uint64
	res     result
	allocT  []time.Duration
	freeT   []time.Duration
	bucket  int
	cur     sample
	haveCur bool
	err     error // a probe failure ends the replay
}

// Replay modes (-mode).
const (
	// modeSerial replays every event on the calling goroutine, locked to
	// its OS thread, with GOMAXPROCS 1 for the replay's duration: the
	// sub-allocators' shards follow Go's P, and with one P every run makes
	// the same decisions, so memory figures are the same on every run (on
	// the simulated device, whose streams run synchronously; on a GPU as
	// far as stream completion allows). Logged threads are counted, not
	// given threads of their own. The default.
	modeSerial = "serial"
	// modeThreads gives each logged thread a worker locked to an OS thread
	// of its own (per-thread behaviour is exercised), handing a token along
	// in log order; which P a worker runs on varies, so the pool's and the
	// arena's figures vary from run to run (-repeat reports the spread).
	modeThreads = "threads"
)

// replay runs events against rr and reports what happened.
func replay(rt cudart.Runtime, rr *replayResource, events []eventlog.Event, mode string) (*result, error) {
	dev, err := rt.GetDevice()
	if err != nil {
		return nil, fmt.Errorf("reading the current device: %w", err)
	}
	rp := &replayer{
		rt: rt, rr: rr, events: events, dev: dev,
		streams: map[core.Stream]core.Stream{},
		live:    map[uintptr]liveAlloc{},
		failed:  map[uintptr]bool{},
		bucket:  max(1, (len(events)+maxSamples-1)/maxSamples),
	}
	rp.res.Events = len(events)
	rp.res.HasLargestFree = rr.largestFree != nil
	if err := rp.makeStreams(); err != nil {
		return nil, err
	}
	defer rp.destroyStreams()

	// One worker per logged thread, in order of first appearance.
	workerOf := map[uint64]int{}
	owner := make([]int, len(events))
	var queues [][]int
	for i, e := range events {
		w, ok := workerOf[e.Thread]
		if !ok {
			w = len(queues)
			workerOf[e.Thread] = w
			queues = append(queues, nil)
		}
		owner[i] = w
		queues[w] = append(queues[w], i)
	}
	rp.res.Threads = len(queues)
	start := time.Now()
	if mode == modeSerial {
		runtime.LockOSThread()
		prev := runtime.GOMAXPROCS(1)
		for i := range events {
			if rp.safeStep(i); rp.err != nil {
				break
			}
		}
		runtime.GOMAXPROCS(prev)
		runtime.UnlockOSThread()
	} else if len(events) > 0 {
		turns := make([]chan struct{}, len(queues))
		for i := range turns {
			turns[i] = make(chan struct{}, 1)
		}
		done := make(chan struct{}, len(queues))
		stop := false
		for w := range queues {
			go func(w int) {
				defer func() { done <- struct{}{} }()
				runtime.LockOSThread() // a logged thread is an OS thread; it dies with the goroutine
				setErr := rt.SetDevice(dev)
				for _, i := range queues[w] {
					<-turns[w]
					if setErr != nil && rp.err == nil {
						rp.err = fmt.Errorf("setting device %d on a worker thread: %w", dev, setErr)
						stop = true
					}
					if !stop {
						rp.safeStep(i)
						if rp.err != nil {
							stop = true
						}
					}
					if i+1 < len(events) {
						turns[owner[i+1]] <- struct{}{}
					}
				}
			}(w)
		}
		turns[owner[0]] <- struct{}{}
		for range queues {
			<-done
		}
	}
	rp.res.Wall = time.Since(start)
	if rp.err != nil {
		rp.freeLeaks()
		return nil, rp.err
	}
	rp.flushSample(len(events) - 1)
	if rr.stats != nil {
		b, _ := rr.stats.Counters()
		rp.res.StatsPeak = uint64(b.Peak)
	}
	rp.freeLeaks()
	if err := rt.DeviceSynchronize(); err != nil {
		return nil, fmt.Errorf("synchronizing the device after the replay: %w", err)
	}
	rp.res.AllocTimes = summarize(rp.allocT)
	rp.res.FreeTimes = summarize(rp.freeT)
	if r, err := rr.reserved(); err == nil {
		rp.res.FinalReserved = r
	}
	return &rp.res, nil
}

func (rp *replayer) makeStreams() error {
	for _, e := range rp.events {
		s := e.Stream
		if _, ok := rp.streams[s]; ok {
			continue
		}
		switch s {
		case cudart.DefaultStream, cudart.LegacyDefaultStream, cudart.PerThreadDefaultStream:
			rp.streams[s] = s
			continue
		}
		real, err := rp.rt.StreamCreate(cudart.StreamFlagDefault)
		if err != nil {
			return fmt.Errorf("creating a stream for logged stream %#x: %w", uintptr(s), err)
		}
		rp.streams[s] = real
		rp.res.Streams++
	}
	return nil
}

func (rp *replayer) destroyStreams() {
	for logged, s := range rp.streams {
		if s != logged {
			_ = rp.rt.StreamSynchronize(s)
			_ = rp.rt.StreamDestroy(s)
		}
	}
}

// safeStep is step, with a panic of the resource turned into the replay's
// error, so that the token still moves on and every worker ends.
func (rp *replayer) safeStep(i int) {
	defer func() {
		if r := recover(); r != nil {
			rp.err = fmt.Errorf("event %d (%s of %d bytes): the resource panicked: %v", i, rp.events[i].Action, rp.events[i].Size, r)
		}
	}()
	rp.step(i)
}

// step replays event i and samples memory after it.
func (rp *replayer) step(i int) {
	e := rp.events[i]
	switch {
	case e.Action == eventlog.ActionAllocateFailure:
		rp.res.LoggedFailures++
	case e.Size == 0:
		rp.res.ZeroByte++
	case e.Action == eventlog.ActionAllocate:
		s := rp.streams[e.Stream]
		t0 := time.Now()
		p, err := rp.rr.top.Allocate(s, e.Size, core.DefaultAlignment)
		rp.allocT = append(rp.allocT, time.Since(t0))
		if err != nil {
			if r, rerr := rp.rr.reserved(); rerr == nil && r >= rp.liveSum && r-rp.liveSum >= uint64(e.Size) {
				rp.res.FailuresWithRoom++ // the resource held enough free bytes, not in one piece
			}
			if len(rp.res.Failures) < 1<<20 {
				rp.res.Failures = append(rp.res.Failures, failure{i, e.Size, err})
			}
			rp.failed[e.Pointer] = true
			break
		}
		delete(rp.failed, e.Pointer)
		if old, dup := rp.live[e.Pointer]; dup {
			// The log allocated this pointer twice without a free: keep the
			// first allocation too, as a leak.
			rp.res.DoubleAllocs++
			rp.live[^uintptr(0)-uintptr(i)] = old
		}
		rp.live[e.Pointer] = liveAlloc{p, e.Size, s}
		rp.liveSum += uint64(e.Size)
		rp.res.Allocs++
	case e.Action == eventlog.ActionFree:
		a, ok := rp.live[e.Pointer]
		if !ok {
			if rp.failed[e.Pointer] {
				delete(rp.failed, e.Pointer)
			} else {
				rp.res.UnmatchedFrees++
			}
			break
		}
		if a.size != e.Size {
			rp.res.SizeMismatches++
		}
		s := rp.streams[e.Stream]
		t0 := time.Now()
		err := rp.rr.top.Deallocate(s, a.ptr, a.size, core.DefaultAlignment)
		rp.freeT = append(rp.freeT, time.Since(t0))
		if err != nil {
			rp.res.FreeErrors = append(rp.res.FreeErrors, failure{i, a.size, err})
			break
		}
		delete(rp.live, e.Pointer)
		rp.liveSum -= uint64(a.size)
		rp.res.Frees++
	}
	rp.probe(i)
}

// probe reads memory after event i into the current bucket.
func (rp *replayer) probe(i int) {
	reserved, err := rp.rr.reserved()
	if err != nil {
		rp.err = fmt.Errorf("reading reserved bytes after event %d: %w", i, err)
		return
	}
	rp.res.PeakLive = max(rp.res.PeakLive, rp.liveSum)
	rp.res.PeakReserved = max(rp.res.PeakReserved, reserved)
	var lf uint64
	if rp.rr.largestFree != nil {
		lf = rp.rr.largestFree()
	}
	if !rp.haveCur {
		rp.cur = sample{Index: i, Live: rp.liveSum, Reserved: reserved, LargestFree: lf}
		rp.haveCur = true
	} else {
		rp.cur.Index = i
		rp.cur.Live = max(rp.cur.Live, rp.liveSum)
		rp.cur.Reserved = max(rp.cur.Reserved, reserved)
		rp.cur.LargestFree = min(rp.cur.LargestFree, lf)
	}
	if (i+1)%rp.bucket == 0 {
		rp.flushSample(i)
	}
}

func (rp *replayer) flushSample(int) {
	if rp.haveCur {
		rp.res.Samples = append(rp.res.Samples, rp.cur)
		rp.haveCur = false
	}
}

// freeLeaks frees what the log never freed, on the stream it was
// allocated on, and counts it.
func (rp *replayer) freeLeaks() {
	for k, a := range rp.live {
		rp.res.Leaks++
		rp.res.LeakedBytes += uint64(a.size)
		if err := rp.rr.top.Deallocate(a.stream, a.ptr, a.size, core.DefaultAlignment); err != nil {
			rp.res.FreeErrors = append(rp.res.FreeErrors, failure{-1, a.size, err})
		}
		delete(rp.live, k)
	}
	rp.liveSum = 0
}
