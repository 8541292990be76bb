package core

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/internal/fastpath"
)

// ErrOutOfRange: an index or level is out of range, e.g. popping the last
// level of a Statistics adaptor's counters (RMM's std::out_of_range). The C
// ABI reports it as RMM_ERROR_OUT_OF_RANGE.
var ErrOutOfRange = errors.New("out of range")

// Counter is a current value, its peak and its running total.
type Counter struct {
	Value int64 // current
	Peak  int64 // highest Value seen
	Total int64 // sum of all increments
}

// fold merges a popped child level into c, as RMM does.
func (c *Counter) fold(child Counter) {
	c.Peak = max(c.Peak, c.Value+child.Peak)
	c.Value += child.Value
	c.Total += child.Total
}

// Statistics is RMM's statistics_resource_adaptor: it counts the bytes and
// the number of allocations outstanding through it, their peaks and their
// totals.
//
// Bytes are the requested (unrounded) sizes. A zero-byte allocation counts
// one allocation of zero bytes (as in RMM), without calling the upstream, and
// a zero-byte deallocation uncounts it. Failed calls count nothing, and
// neither does Deallocate(0, n) for n > 0, a no-op.
//
// A deallocation is counted before the upstream is asked and uncounted
// when the upstream refuses it (a foreign pointer, a double free, a wrong
// size), so a refused free leaves the counters as they were. One that asks
// for more bytes, or more allocations, than are outstanding through the
// adaptor (every level together) cannot be of memory it handed out: it is
// refused with an error wrapping ErrInvalidPointer and the upstream is not
// asked (a zero-byte one is then a no-op). Memory the upstream handed out
// directly and freed through the adaptor, within what is outstanding, is
// beyond what counters can see: Tracking knows every pointer.
//
// The counters form a stack with at least one level. Allocations and
// deallocations update the innermost level only. PushCounters starts a new
// level at zero (to measure a scope); PopCounters removes it and folds it
// into the level below: peak = max(peak, value + child.peak), value +=
// child.value, total += child.total. A deallocation of memory allocated
// before a push makes the inner level's value negative, as in RMM.
//
// Every update and read holds one mutex for a handful of additions (no
// allocation, no upstream call under it); see BenchmarkStatistics. A front
// that serves the adaptor's calls outside Go (the C ABI's thread cache,
// docs/thread-cache.md) keeps the part every call changes, fastpath.StatisticsHot,
// in its own memory (UseStore) and counts there under its own lock: the
// numbers are the same whichever side counted.
type Statistics struct {
	upstream Resource

	mu sync.Mutex
	// outer are the levels below the innermost (outer[0] the first).
	outer []counters
	// hot is the innermost level and what is outstanding, under mu unless
	// store holds it.
	hot   fastpath.StatisticsHot
	store fastpath.StatisticsStore // set once, under mu
	// zeros counts the zero-byte allocations outstanding: a free of size 0
	// uncounts one of them, never an allocation of another size (issue 24).
	zeros atomic.Int64
}

type counters struct{ bytes, count Counter }

// UseStore moves the adaptor's hot counters (fastpath.StatisticsHot) into s, which keeps it from
// then on (for the adaptor's life). It gives s the current values first.
// It returns the store in use: s, or the one an earlier call gave.
func (st *Statistics) UseStore(s fastpath.StatisticsStore) fastpath.StatisticsStore {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.store != nil {
		return st.store
	}
	hot := st.hot
	s.Update(func(h *fastpath.StatisticsHot) { *h = hot })
	st.store = s
	return s
}

// update runs fn on the hot part, wherever it is. st.mu is held; it is
// released.
func (st *Statistics) update(fn func(h *fastpath.StatisticsHot)) {
	if s := st.store; s != nil {
		st.mu.Unlock()
		s.Update(fn)
		return
	}
	fn(&st.hot)
	st.mu.Unlock()
}

// NewStatistics returns an adaptor over upstream that counts allocations.
func NewStatistics(upstream Resource) (*Statistics, error) {
	if err := checkUpstream(kindStatistics, upstream); err != nil {
		return nil, err
	}
	return &Statistics{upstream: upstream, outer: make([]counters, 0, 4)}, nil
}

// Counters returns the innermost level's byte and allocation counters.
func (st *Statistics) Counters() (bytes, count Counter) {
	st.mu.Lock()
	st.update(func(h *fastpath.StatisticsHot) { bytes, count = Counter(h.Bytes), Counter(h.Count) })
	return bytes, count
}

// Depth reports the number of levels (at least 1).
func (st *Statistics) Depth() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.outer) + 1
}

// PushCounters returns the innermost level's counters and starts a new
// level at zero.
func (st *Statistics) PushCounters() (bytes, count Counter) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.hotLocked(func(h *fastpath.StatisticsHot) {
		bytes, count = Counter(h.Bytes), Counter(h.Count)
		h.Bytes, h.Count = fastpath.Counter{}, fastpath.Counter{}
	})
	st.outer = append(st.outer, counters{bytes, count})
	return bytes, count
}

// PopCounters removes the innermost level, folds it into the one below and
// returns it. With only one level left it returns an error wrapping
// ErrOutOfRange and changes nothing.
func (st *Statistics) PopCounters() (bytes, count Counter, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	n := len(st.outer)
	if n == 0 {
		return Counter{}, Counter{}, fmt.Errorf("%s: %w: cannot pop the last level of counters (push before popping)", kindStatistics, ErrOutOfRange)
	}
	parent := st.outer[n-1]
	st.outer = st.outer[:n-1]
	st.hotLocked(func(h *fastpath.StatisticsHot) {
		bytes, count = Counter(h.Bytes), Counter(h.Count)
		parent.bytes.fold(Counter(h.Bytes))
		parent.count.fold(Counter(h.Count))
		h.Bytes, h.Count = fastpath.Counter(parent.bytes), fastpath.Counter(parent.count)
	})
	return bytes, count, nil
}

// hotLocked runs fn on the hot part with st.mu held (and kept).
func (st *Statistics) hotLocked(fn func(h *fastpath.StatisticsHot)) {
	if st.store != nil {
		st.store.Update(fn)
		return
	}
	fn(&st.hot)
}

// Upstream returns the resource Statistics allocates from.
func (st *Statistics) Upstream() Resource { return st.upstream }

// Properties reports the upstream's properties.
func (st *Statistics) Properties() Properties { return st.upstream.Properties() }

// Kind returns "statistics".
func (st *Statistics) Kind() string { return kindStatistics }

// Equal reports whether other is this very adaptor.
func (st *Statistics) Equal(other Resource) bool {
	o, ok := other.(*Statistics)
	return ok && o == st
}

// Allocate allocates from the upstream and counts the allocation.
func (st *Statistics) Allocate(s Stream, bytes, alignment uintptr) (uintptr, error) {
	p, err := st.allocate(s, bytes, alignment, false)
	if err != nil {
		return 0, explainOOM(st, s, bytes, alignment, err)
	}
	return p, nil
}

// AllocateSync is Allocate without a stream.
func (st *Statistics) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	p, err := st.allocate(DefaultStream, bytes, alignment, true)
	if err != nil {
		return 0, explainOOM(st, DefaultStream, bytes, alignment, err)
	}
	return p, nil
}

func (st *Statistics) allocate(s Stream, bytes, alignment uintptr, sync bool) (uintptr, error) {
	var p uintptr
	if bytes == 0 {
		// Counted as RMM counts it: one allocation of 0 bytes. RMM asks the
		// upstream, which answers NULL; no rmmgo resource answers otherwise,
		// so the upstream is not asked (as by every adaptor).
		if err := zeroRequest(kindStatistics, alignment); err != nil {
			return 0, err
		}
		st.zeros.Add(1)
	} else {
		var err error
		if p, err = upAllocate(st.upstream, s, bytes, alignment, sync); err != nil {
			return 0, err
		}
	}
	st.mu.Lock()
	if st.store == nil {
		st.hot.Alloc(bytes)
		st.mu.Unlock()
	} else {
		st.update(func(h *fastpath.StatisticsHot) { h.Alloc(bytes) })
	}
	return p, nil
}

// Deallocate returns memory to the upstream and uncounts it.
func (st *Statistics) Deallocate(s Stream, ptr, bytes, alignment uintptr) error {
	return st.deallocate(s, ptr, bytes, alignment, false)
}

// DeallocateSync is Deallocate without a stream.
func (st *Statistics) DeallocateSync(ptr, bytes, alignment uintptr) error {
	return st.deallocate(DefaultStream, ptr, bytes, alignment, true)
}

func (st *Statistics) deallocate(s Stream, ptr, bytes, alignment uintptr, sync bool) error {
	if bytes == 0 {
		return st.deallocateZero(s, ptr, alignment, sync)
	}
	if ptr == 0 {
		return nil // no allocation returns 0 for a nonzero size: nothing to uncount
	}
	var (
		ok       bool
		outBytes uintptr
		outCount int64
	)
	st.mu.Lock()
	if st.store == nil {
		ok, outBytes, outCount = st.hot.Free(bytes), st.hot.OutBytes, st.hot.OutCount
		st.mu.Unlock()
	} else {
		st.update(func(h *fastpath.StatisticsHot) { ok, outBytes, outCount = h.Free(bytes), h.OutBytes, h.OutCount })
	}
	if !ok {
		// More than went out through this adaptor: memory allocated through
		// another resource over the same upstream (RMM's NegativeInnerTracking).
		// The upstream decides (base resources refuse what they did not hand
		// out, issue 24); what it frees is counted, below zero if need be.
		if err := upDeallocate(st.upstream, s, ptr, bytes, alignment, sync); err != nil {
			return fmt.Errorf("%s: %w: deallocating %#x (%d bytes), with only %d bytes in %d allocations outstanding through this adaptor, was refused by its upstream: %w",
				kindStatistics, ErrInvalidPointer, ptr, bytes, outBytes, outCount, err)
		}
		st.mu.Lock()
		st.update(func(h *fastpath.StatisticsHot) { h.FreeForeign(bytes) })
		return nil
	}
	if err := upDeallocate(st.upstream, s, ptr, bytes, alignment, sync); err != nil {
		st.mu.Lock()
		st.update(func(h *fastpath.StatisticsHot) { h.Unfree(bytes) })
		return err
	}
	return nil
}

// deallocateZero is the free of a zero-byte allocation, as RMM's: the
// upstream frees ptr (which refuses a block of another size: a size 0 for a
// live block is a wrong size, issue 24), then one zero-byte allocation is
// uncounted, if one is outstanding. deallocate(NULL, 0) with none
// outstanding is a no-op: it must never uncount an allocation of another
// size, whose own free would then be refused.
func (st *Statistics) deallocateZero(s Stream, ptr, alignment uintptr, sync bool) error {
	if ptr != 0 {
		if err := upDeallocate(st.upstream, s, ptr, 0, alignment, sync); err != nil {
			return err
		}
	}
	for {
		n := st.zeros.Load()
		if n == 0 {
			return nil
		}
		if st.zeros.CompareAndSwap(n, n-1) {
			break
		}
	}
	var ok bool
	st.mu.Lock()
	st.update(func(h *fastpath.StatisticsHot) { ok = h.Free(0) })
	if !ok {
		st.zeros.Add(1)
	}
	return nil
}
