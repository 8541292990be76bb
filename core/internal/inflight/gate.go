// Package inflight counts the calls inside a resource, so that its Close
// can wait for them without making every call touch one shared counter.
//
// A Gate keeps one counter per P (Go's logical processor), each on its own
// cache line: a call adds one to the counter of the P it runs on as it
// enters and takes it off as it leaves (from whatever P it then runs on, as
// Exit is told which counter it raised), so goroutines running at the same
// time touch different cache lines. Close marks the gate closed and waits
// until the counters sum to zero. Enter raises its counter before it reads
// the mark, and Close sets the mark before it reads the counters (Go's
// atomics are sequentially consistent), so a call either sees the mark and
// backs out, or Close sees the call and waits for it.
package inflight

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/rmmgo/rmmgo/core/internal/streamorder"
)

// shards is the number of counters: P ids above it share (which costs only
// locality).
const shards = 64

// Gate counts calls in flight. The zero value is an open gate.
type Gate struct {
	closed atomic.Bool
	n      [shards]counter
}

// counter is one P's count, alone on its cache line.
type counter struct {
	n atomic.Int64
	_ [56]byte
}

// Ticket says which counter a call raised.
type Ticket uint32

// Enter counts a call in, unless the gate is closed (ok false: the call
// must not go on).
func (g *Gate) Enter() (t Ticket, ok bool) {
	t = Ticket(streamorder.CurrentP() % shards)
	c := &g.n[t].n
	c.Add(1)
	if g.closed.Load() {
		c.Add(-1)
		return 0, false
	}
	return t, true
}

// Exit counts out the call that Enter let in with t.
func (g *Gate) Exit(t Ticket) { g.n[t].n.Add(-1) }

// Closed reports whether Close began.
func (g *Gate) Closed() bool { return g.closed.Load() }

// Close closes the gate and waits until every call let in has left. It
// reports false when the gate was closed already (then it does not wait).
// A call in flight must not wait for its own resource's Close.
func (g *Gate) Close() bool {
	if g.closed.Swap(true) {
		return false
	}
	for spins := 0; g.inFlight() != 0; spins++ {
		if spins < 64 {
			runtime.Gosched()
		} else {
			time.Sleep(10 * time.Microsecond) // calls in flight wait on CUDA
		}
	}
	return true
}

// inFlight sums the counters.
func (g *Gate) inFlight() int64 {
	var n int64
	for i := range g.n {
		n += g.n[i].n.Load()
	}
	return n
}
