package core

import (
	"errors"
	"fmt"
	"sync"
)

const kindStatistics = "statistics"

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

// add counts an increment of n (n >= 0).
func (c *Counter) add(n int64) {
	c.Value += n
	c.Total += n
	if c.Value > c.Peak {
		c.Peak = c.Value
	}
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
// allocation, no upstream call under it); see BenchmarkStatistics.
type Statistics struct {
	upstream Resource

	mu     sync.Mutex
	levels []counters // levels[len-1] is the innermost
	// Outstanding through the adaptor, every level together: what a
	// deallocation is checked against.
	outBytes uintptr
	outCount int64
}

type counters struct{ bytes, count Counter }

// NewStatistics returns an adaptor over upstream that counts allocations.
func NewStatistics(upstream Resource) (*Statistics, error) {
	if err := checkUpstream(kindStatistics, upstream); err != nil {
		return nil, err
	}
	return &Statistics{upstream: upstream, levels: make([]counters, 1, 4)}, nil
}

// Counters returns the innermost level's byte and allocation counters.
func (st *Statistics) Counters() (bytes, count Counter) {
	st.mu.Lock()
	top := st.levels[len(st.levels)-1]
	st.mu.Unlock()
	return top.bytes, top.count
}

// Depth reports the number of levels (at least 1).
func (st *Statistics) Depth() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.levels)
}

// PushCounters returns the innermost level's counters and starts a new
// level at zero.
func (st *Statistics) PushCounters() (bytes, count Counter) {
	st.mu.Lock()
	defer st.mu.Unlock()
	top := st.levels[len(st.levels)-1]
	st.levels = append(st.levels, counters{})
	return top.bytes, top.count
}

// PopCounters removes the innermost level, folds it into the one below and
// returns it. With only one level left it returns an error wrapping
// ErrOutOfRange and changes nothing.
func (st *Statistics) PopCounters() (bytes, count Counter, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	n := len(st.levels)
	if n == 1 {
		return Counter{}, Counter{}, fmt.Errorf("%s: %w: cannot pop the last level of counters (push before popping)", kindStatistics, ErrOutOfRange)
	}
	child := st.levels[n-1]
	st.levels = st.levels[:n-1]
	parent := &st.levels[n-2]
	parent.bytes.fold(child.bytes)
	parent.count.fold(child.count)
	return child.bytes, child.count, nil
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
	return st.allocate(s, bytes, alignment, false)
}

// AllocateSync is Allocate without a stream.
func (st *Statistics) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	return st.allocate(DefaultStream, bytes, alignment, true)
}

func (st *Statistics) allocate(s Stream, bytes, alignment uintptr, sync bool) (uintptr, error) {
	var p uintptr
	if bytes == 0 {
		if err := zeroRequest(kindStatistics, alignment); err != nil {
			return 0, err
		}
	} else {
		var err error
		if p, err = upAllocate(st.upstream, s, bytes, alignment, sync); err != nil {
			return 0, err
		}
	}
	st.mu.Lock()
	top := &st.levels[len(st.levels)-1]
	top.bytes.add(int64(bytes))
	top.count.add(1)
	st.outBytes += bytes
	st.outCount++
	st.mu.Unlock()
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
	if ptr == 0 && bytes != 0 {
		return nil // no allocation returns 0 for a nonzero size: nothing to uncount
	}
	st.mu.Lock()
	if st.outCount < 1 || st.outBytes < bytes {
		outBytes, outCount := st.outBytes, st.outCount
		st.mu.Unlock()
		if bytes == 0 {
			return nil
		}
		return fmt.Errorf("%s: %w: deallocating %#x (%d bytes), but only %d bytes in %d allocations are outstanding through this adaptor",
			kindStatistics, ErrInvalidPointer, ptr, bytes, outBytes, outCount)
	}
	st.uncount(bytes)
	st.mu.Unlock()
	if ptr != 0 && bytes != 0 {
		if err := upDeallocate(st.upstream, s, ptr, bytes, alignment, sync); err != nil {
			st.mu.Lock()
			st.recount(bytes)
			st.mu.Unlock()
			return err
		}
	}
	return nil
}

// uncount takes a deallocation of bytes off the innermost level; st.mu is
// held.
func (st *Statistics) uncount(bytes uintptr) {
	top := &st.levels[len(st.levels)-1]
	top.bytes.Value -= int64(bytes)
	top.count.Value--
	st.outBytes -= bytes
	st.outCount--
}

// recount undoes uncount for a deallocation the upstream refused; st.mu is
// held. Totals are not touched (deallocations never add to them); a peak
// is raised if allocations made meanwhile, with the refused memory still
// live, went past it.
func (st *Statistics) recount(bytes uintptr) {
	top := &st.levels[len(st.levels)-1]
	top.bytes.Value += int64(bytes)
	top.bytes.Peak = max(top.bytes.Peak, top.bytes.Value)
	top.count.Value++
	top.count.Peak = max(top.count.Peak, top.count.Value)
	st.outBytes += bytes
	st.outCount++
}
