package main

// FuzzCAPI runs programs of C API calls through the exported entry points,
// as C callers make them (on one locked OS thread, like a C thread): make
// base resources, sub-allocators and adaptors over live, released or forged
// handles, retain and release them, set and reset the current device
// resource, allocate and free on several streams, free twice, with a wrong
// size, an interior pointer or through an equal handle, destroy streams,
// and read the counters. A model of the handles and allocations says what
// each call must answer. Checked after every step: live allocations never
// overlap and keep their bytes; statistics, tracking, limiting and pool
// counters add up; a failed call sets a message. At the end, once every
// handle is released, the handles and what base resources have out are
// back where they were, and so is the device's free memory (exactly on the
// simulated device; on a GPU, within the driver's page).
//
// The seed corpus is in testdata/fuzz/FuzzCAPI; `go test` runs it and
// `make test-fuzz` fuzzes it for a few seconds. See docs/fuzzing.md.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/cudart"
)

// Resource kinds (rmm_resource_kind).
const (
	kCuda       = 1
	kManaged    = 2
	kPinned     = 3
	kCudaAsync  = 6
	kPool       = 20
	kArena      = 21
	kFixed      = 22
	kBinning    = 23
	kAligned    = 40
	kLimiting   = 43
	kLogging    = 44
	kPrefetch   = 45
	kStatistics = 46
	kThreadSafe = 47
	kTracking   = 48
)

var (
	fzBases = []int{kCuda, kManaged, kPinned, kCudaAsync}
	fzOver  = []int{kPool, kArena, kFixed, kBinning, kAligned, kLimiting, kLogging, kPrefetch, kStatistics, kThreadSafe, kTracking}
	fzSizes = []uint64{1, 100, 256, 257, 1000, 4096, 5000, 65536, 300 << 10, 1 << 20, 1<<20 + 17, 3 << 20}
)

func isSub(kind int) bool { return kind >= kPool && kind <= kBinning }

// fzHandle is the model of a handle.
type fzHandle struct {
	h          uintptr
	kind       int
	up         int // the upstream's index; -1 for base resources
	refs       int // references the program holds
	deps       int // live resources made over it (each holds a reference)
	current    bool
	closed     bool
	maxBin     uint64 // binning: the largest bin (0: none)
	limitAlign uint64 // limiting: the alignment charges are rounded to
	alignment  uint64 // aligned: the alignment and the threshold
	threshold  uint64
	logFile    string
	zeros      int // statistics: zero-byte allocations through it, not freed
}

func (h *fzHandle) total() int {
	n := h.refs + h.deps
	if h.current {
		n++
	}
	return n
}

// fzAlloc is the model of an allocation.
type fzAlloc struct {
	via    int // the handle it was allocated through
	owner  int // the handle whose resource holds the memory
	p      unsafe.Pointer
	n      uint64
	stream uintptr
	tag    byte
	zombie bool // via is closed; the memory stays in owner until it closes
}

type fzState struct {
	t       *testing.T
	dir     string
	hs      []*fzHandle
	allocs  []*fzAlloc
	streams []uintptr // [0] is the default stream; 0 marks a destroyed one
	tag     byte
	files   int
	step    int
}

func (s *fzState) fatalf(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("step %d: "+format+"\n%s", append(append([]any{s.step}, args...), s.describe())...)
}

// describe lists the model's handles and allocations, for failures.
func (s *fzState) describe() string {
	var b bytes.Buffer
	for i, h := range s.hs {
		fmt.Fprintf(&b, "handle %d: kind %d over %d, %d refs, %d dependents, current %v, closed %v\n", i, h.kind, h.up, h.refs, h.deps, h.current, h.closed)
	}
	for _, a := range s.allocs {
		fmt.Fprintf(&b, "allocation [%p,+%d) through %d, held by %d, stream %#x, zombie %v\n", a.p, a.n, a.via, a.owner, a.stream, a.zombie)
	}
	return b.String()
}

// expectStatus fails unless st is one of want; a failure must set a
// message.
func (s *fzState) expectStatus(what string, st status, want ...status) {
	s.t.Helper()
	for _, w := range want {
		if st == w {
			if st != testStatusSuccess && lastMessage() == "" {
				s.fatalf("%s: status %d without a message", what, st)
			}
			return
		}
	}
	s.fatalf("%s: status %d (%s), want one of %v", what, st, lastMessage(), want)
}

// upstreamSize is the size handle i asks its upstream for when asked for
// n bytes: n, but for an aligned adaptor that over-aligns.
func (s *fzState) upstreamSize(i int, n uint64) uint64 {
	h := s.hs[i]
	if h.kind != kAligned || h.alignment <= 256 || n < h.threshold {
		return n
	}
	return (n+h.alignment-1)&^(h.alignment-1) + h.alignment - 256
}

// owner is the handle whose resource holds an allocation of n bytes made
// through handle i.
func (s *fzState) owner(i int, n uint64) int {
	h := s.hs[i]
	switch {
	case h.kind == kBinning && n > h.maxBin:
		return s.owner(h.up, n)
	case isSub(h.kind) || h.up < 0:
		return i
	}
	return s.owner(h.up, s.upstreamSize(i, n))
}

// sizeAt returns the size an allocation of n bytes through handle i
// arrives with at handle j, and whether it passes through j.
func (s *fzState) sizeAt(i, j int, n uint64) (uint64, bool) {
	for ; i >= 0; i = s.hs[i].up {
		if i == j {
			return n, true
		}
		if h := s.hs[i]; isSub(h.kind) && !(h.kind == kBinning && n > h.maxBin) {
			return 0, false // served here: nothing reaches the upstream
		}
		n = s.upstreamSize(i, n)
	}
	return 0, false
}

// through reports whether handle i's calls pass through handle j.
func (s *fzState) through(i, j int) bool {
	for ; i >= 0; i = s.hs[i].up {
		if i == j {
			return true
		}
	}
	return false
}

func (s *fzState) valid(i int) bool { return !s.hs[i].closed }

// pick returns a valid handle chosen by b, or -1.
func (s *fzState) pick(b byte, ok func(*fzHandle) bool) int {
	var c []int
	for i, h := range s.hs {
		if !h.closed && (ok == nil || ok(h)) {
			c = append(c, i)
		}
	}
	if len(c) == 0 {
		return -1
	}
	return c[int(b)%len(c)]
}

// stale returns a handle value that is not live: a released one, a forged
// one, or NULL.
func (s *fzState) stale(b byte) uintptr {
	for i := range s.hs {
		if h := s.hs[(int(b)+i)%len(s.hs)]; h.closed {
			return h.h
		}
	}
	return [...]uintptr{0, 0xdeadbeef, 1, ^uintptr(0) &^ 0xff}[b%4]
}

// prepareDrop frees what must be freed before handle i loses one reference:
// if that closes it (and then, possibly, what it was made over), every
// allocation made through a closing handle whose memory a base resource
// holds (nothing gives that back at close). It returns the handles that
// will close, innermost first.
func (s *fzState) prepareDrop(i int) []int {
	var closing []int
	// j closes when this is its last reference; then its upstream loses
	// the one j held.
	for j := i; j >= 0 && s.hs[j].total() == 1; j = s.hs[j].up {
		closing = append(closing, j)
	}
	for _, c := range closing {
		for k := 0; k < len(s.allocs); k++ {
			a := s.allocs[k]
			if a.via == c && !a.zombie && s.hs[a.owner].up < 0 && !isSub(s.hs[a.owner].kind) {
				s.free(k, a.stream, a.n, false)
				k--
			}
		}
	}
	return closing
}

// dropped updates the model after handle i lost one reference and closing
// closed.
func (s *fzState) dropped(closing []int) {
	for _, c := range closing {
		s.hs[c].closed = true
		if up := s.hs[c].up; up >= 0 {
			s.hs[up].deps--
		}
		if f := s.hs[c].logFile; f != "" {
			os.Remove(f)
		}
	}
	in := func(j int) bool {
		for _, c := range closing {
			if c == j {
				return true
			}
		}
		return false
	}
	kept := s.allocs[:0]
	for _, a := range s.allocs {
		if in(a.owner) {
			continue // given back by its owner's Close
		}
		if in(a.via) {
			a.zombie = true
		}
		kept = append(kept, a)
	}
	s.allocs = kept
}

// release drops one of the program's references to handle i.
func (s *fzState) release(i int) {
	closing := s.prepareDrop(i)
	s.expectStatus("rmm_resource_release", rmm_resource_release(toHandle(s.hs[i].h)), testStatusSuccess)
	s.hs[i].refs--
	s.dropped(closing)
}

// free frees allocation k through its handle on stream st with bytes.
func (s *fzState) free(k int, st uintptr, bytes uint64, sync bool) {
	s.t.Helper()
	a := s.allocs[k]
	s.verify(a)
	if st != a.stream || sync {
		s.expectStatus("rmm_stream_synchronize", rmm_stream_synchronize(toStream(a.stream)), testStatusSuccess)
	}
	var stat status
	if sync {
		stat = rmm_deallocate_sync(toHandle(s.hs[a.via].h), a.p, cSize(bytes), 256)
	} else {
		stat = rmm_deallocate(toHandle(s.hs[a.via].h), toStream(st), a.p, cSize(bytes), 256)
	}
	s.expectStatus(fmt.Sprintf("freeing [%p,+%d) from handle %d (%d) with %d bytes", a.p, a.n, a.via, s.hs[a.via].kind, bytes), stat, testStatusSuccess)
	s.allocs = append(s.allocs[:k], s.allocs[k+1:]...)
}

// edges are the first and last (up to) 64 bytes of n.
func edges(n uint64) [][2]uint64 {
	k := min(n, 64)
	if n <= 128 {
		return [][2]uint64{{0, n}}
	}
	return [][2]uint64{{0, k}, {n - k, k}}
}

func (s *fzState) mark(a *fzAlloc) {
	for _, e := range edges(a.n) {
		s.expectStatus("rmm_memset", rmm_memset(unsafe.Add(a.p, e[0]), cInt(int(a.tag)), cSize(e[1]), toStream(a.stream)), testStatusSuccess)
	}
}

func (s *fzState) verify(a *fzAlloc) {
	s.t.Helper()
	for _, e := range edges(a.n) {
		buf := bytes.Repeat([]byte{^a.tag}, int(e[1]))
		s.expectStatus("rmm_memcpy", copyOut(buf, unsafe.Add(a.p, e[0]), a.stream), testStatusSuccess)
		s.expectStatus("rmm_stream_synchronize", rmm_stream_synchronize(toStream(a.stream)), testStatusSuccess)
		if i := bytes.IndexFunc(buf, func(r rune) bool { return byte(r) != a.tag }); i >= 0 || bytes.Count(buf, []byte{a.tag}) != len(buf) {
			s.fatalf("allocation [%p,+%d) through handle %d (kind %d) lost its bytes at offset %d (handed out twice?)", a.p, a.n, a.via, s.hs[a.via].kind, e[0])
		}
	}
}

// check verifies the invariants after a step.
func (s *fzState) check() {
	s.t.Helper()
	sorted := append([]*fzAlloc(nil), s.allocs...)
	sort.Slice(sorted, func(i, j int) bool { return uintptr(sorted[i].p) < uintptr(sorted[j].p) })
	for i := 1; i < len(sorted); i++ {
		a, b := sorted[i-1], sorted[i]
		if uintptr(a.p)+uintptr(a.n) > uintptr(b.p) {
			s.fatalf("live allocations [%p,+%d) (handle %d) and [%p,+%d) (handle %d) overlap", a.p, a.n, a.via, b.p, b.n, b.via)
		}
	}
	for i, h := range s.hs {
		if h.closed || s.subAbove(i) {
			continue // a sub-allocator over it holds memory the model does not count
		}
		var bytes, count, charged, pooled uint64
		for _, a := range s.allocs {
			n, ok := s.sizeAt(a.via, i, a.n)
			if !ok {
				continue
			}
			bytes += n
			count++
			charged += (n + h.limitAlign - 1) &^ (h.limitAlign - 1)
			pooled += (n + 255) &^ 255
		}
		hv := toHandle(h.h)
		switch h.kind {
		case kStatistics:
			b, c, st := statisticsValues(h.h)
			s.expectStatus("rmm_statistics_get", st, testStatusSuccess)
			count += uint64(h.zeros) // zero-byte allocations count, as in RMM
			if uint64(b) != bytes || uint64(c) != count {
				s.fatalf("statistics handle %d counts %d bytes in %d allocations, the model %d in %d", i, b, c, bytes, count)
			}
		case kTracking:
			b, st := sizeOut(func(p *cSizeT) status { return rmm_tracking_allocated_bytes(hv, p) })
			s.expectStatus("rmm_tracking_allocated_bytes", st, testStatusSuccess)
			c, st := sizeOut(func(p *cSizeT) status { return rmm_tracking_outstanding_count(hv, p) })
			s.expectStatus("rmm_tracking_outstanding_count", st, testStatusSuccess)
			if b != bytes || c != count {
				s.fatalf("tracking handle %d tracks %d bytes in %d allocations, the model %d in %d", i, b, c, bytes, count)
			}
		case kLimiting:
			b, st := sizeOut(func(p *cSizeT) status { return rmm_limiting_allocated_bytes(hv, p) })
			s.expectStatus("rmm_limiting_allocated_bytes", st, testStatusSuccess)
			if b != charged {
				s.fatalf("limiting handle %d has %d bytes charged, the model %d", i, b, charged)
			}
		case kPool:
			b, st := sizeOut(func(p *cSizeT) status { return rmm_pool_used_bytes(hv, p) })
			s.expectStatus("rmm_pool_used_bytes", st, testStatusSuccess)
			if b != pooled {
				s.fatalf("pool handle %d has %d bytes in use, the model %d", i, b, pooled)
			}
		}
	}
}

// create makes a resource of kind over handle up (-1: a base resource)
// with options chosen by the program.
func (s *fzState) create(kind, up int, next func() byte) {
	o := defaultTestOptions()
	h := &fzHandle{kind: kind, up: up, refs: 1, limitAlign: 256}
	if up >= 0 {
		o.upstream = s.hs[up].h
	}
	c := next()
	switch kind {
	case kPool:
		o.initialPoolSize = [...]uint64{0, 1 << 20, 4 << 20}[c%3]
		o.maximumPoolSize = [...]uint64{^uint64(0), 16 << 20, 64 << 20}[c/3%3]
	case kArena:
		o.arenaSize = [...]uint64{1 << 20, 4 << 20, 16 << 20}[c%3]
	case kFixed:
		o.blockSize = [...]uint64{256, 1024, 4096, 65536, 1 << 20}[c%5]
		o.blocksToPreallocate = [...]uint64{1, 4, 16}[c/5%3]
	case kBinning:
		e := [...][2]int{{-1, -1}, {8, 12}, {10, 16}}[c%3]
		o.minSizeExponent, o.maxSizeExponent = e[0], e[1]
		if e[1] >= 0 {
			h.maxBin = 1 << e[1]
		}
	case kAligned:
		o.alignment = [...]uint64{256, 512, 4096, 65536}[c%4]
		o.alignmentThreshold = [...]uint64{0, 4096, 1 << 20}[c/4%3]
		h.alignment, h.threshold = o.alignment, o.alignmentThreshold
	case kLimiting:
		o.allocationLimit = [...]uint64{1 << 20, 16 << 20, 256 << 20}[c%3]
		o.alignment = [...]uint64{256, 4096}[c/3%2]
		h.limitAlign = o.alignment
	case kLogging:
		s.files++
		h.logFile = filepath.Join(s.dir, fmt.Sprintf("log%d.csv", s.files))
		o.logFile = h.logFile
	case kTracking:
		o.captureStacks = c&1 != 0
	}
	var v uintptr
	var st status
	if up < 0 {
		v, st = createPlain(kind)
	} else {
		v, st = createWithOptions(kind, o)
	}
	if st == testStatusOutOfMemory && (isSub(kind) || kind == kCudaAsync) {
		return // the chunk it takes at once did not fit
	}
	s.expectStatus(fmt.Sprintf("rmm_resource_create(%d)", kind), st, testStatusSuccess)
	h.h = v
	if up >= 0 {
		s.hs[up].deps++
	}
	s.hs = append(s.hs, h)
}

// allocate allocates n bytes through handle i on stream st.
func (s *fzState) allocate(i int, n uint64, st uintptr, sync bool) {
	var p unsafe.Pointer
	var stat status
	if sync {
		stat = rmm_allocate_sync(toHandle(s.hs[i].h), cSize(n), 256, &p)
		st = 0
	} else {
		stat = rmm_allocate(toHandle(s.hs[i].h), toStream(st), cSize(n), 256, &p)
	}
	if stat == testStatusOutOfMemory {
		return
	}
	s.expectStatus(fmt.Sprintf("allocating %d bytes through handle %d (kind %d)", n, i, s.hs[i].kind), stat, testStatusSuccess)
	if p == nil || uintptr(p)%256 != 0 {
		s.fatalf("allocating %d bytes through handle %d gave %p", n, i, p)
	}
	s.tag++
	a := &fzAlloc{via: i, owner: s.owner(i, n), p: p, n: n, stream: st, tag: s.tag}
	s.allocs = append(s.allocs, a)
	s.check()
	s.mark(a)
}

// liveAlloc returns the index of a live (not zombie) allocation chosen by b,
// or -1.
func (s *fzState) liveAlloc(b byte) int {
	var c []int
	for k, a := range s.allocs {
		if !a.zombie {
			c = append(c, k)
		}
	}
	if len(c) == 0 {
		return -1
	}
	return c[int(b)%len(c)]
}

// zero allocates 0 bytes through handle i, or frees such an allocation
// (NULL, 0): success and NULL on every kind; a statistics adaptor counts
// one allocation of 0 bytes and its free uncounts it, as RMM's does.
func (s *fzState) zero(i int, free bool) {
	h := s.hs[i]
	if free && h.zeros > 0 {
		s.expectStatus("freeing a zero-byte allocation", rmm_deallocate(toHandle(h.h), nil, nil, 0, 256), testStatusSuccess)
		h.zeros--
	} else {
		var p unsafe.Pointer
		s.expectStatus("allocating 0 bytes", rmm_allocate(toHandle(h.h), nil, 0, 256, &p), testStatusSuccess)
		if p != nil {
			s.fatalf("allocating 0 bytes through handle %d gave %p", i, p)
		}
		if h.kind == kStatistics {
			h.zeros++
		}
	}
	s.check()
}

// passThrough reports whether every handle from i down to j (excluded)
// only passes a free on, keeping nothing about it (logging, prefetch,
// thread_safe, and an aligned adaptor that did not over-align n bytes).
func (s *fzState) passThrough(i, j int, n uint64) bool {
	for ; i >= 0 && i != j; i = s.hs[i].up {
		switch h := s.hs[i]; h.kind {
		case kLogging, kPrefetch, kThreadSafe:
		case kAligned:
			if s.upstreamSize(i, n) != n {
				return false
			}
		default:
			return false
		}
	}
	return i == j
}

// freeTwoWays frees allocation k through a handle that only passes frees
// on to the allocation's handle, and then through the allocation's handle
// (b odd), or the other way round: exactly one of the two frees is
// accepted (with the thread cache on, a block freed through Go was left
// LIVE in the cache's table, and the second free handed it out twice).
func (s *fzState) freeTwoWays(k int, b byte) {
	a := s.allocs[k]
	j := -1
	for n, i := 0, int(b>>1); n < len(s.hs); n, i = n+1, i+1 {
		c := i % len(s.hs)
		if c != a.via && !s.hs[c].closed && s.passThrough(c, a.via, a.n) {
			j = c
			break
		}
	}
	if j < 0 {
		return
	}
	s.verify(a)
	if a.stream != 0 {
		s.expectStatus("rmm_stream_synchronize", rmm_stream_synchronize(toStream(a.stream)), testStatusSuccess)
	}
	first, second := toHandle(s.hs[j].h), toHandle(s.hs[a.via].h)
	if b&1 == 0 {
		first, second = second, first
	}
	x := rmm_deallocate(first, toStream(a.stream), a.p, cSize(a.n), 256)
	s.expectStatus("the first of two frees", x, testStatusSuccess, testStatusInvalidPointer, testStatusInvalidArg)
	y := rmm_deallocate(second, toStream(a.stream), a.p, cSize(a.n), 256)
	if x == testStatusSuccess {
		s.refuse("a free after the block was freed through another handle", y)
	} else {
		s.expectStatus("the second of two frees", y, testStatusSuccess)
	}
	s.allocs = append(s.allocs[:k], s.allocs[k+1:]...)
	s.check()
}

// refuse fails unless a free the program knows to be wrong was refused.
func (s *fzState) refuse(what string, st status) {
	s.t.Helper()
	s.expectStatus(what, st, testStatusInvalidPointer, testStatusInvalidArg)
}

func FuzzCAPI(f *testing.F) {
	dir := f.TempDir()
	prog := func(b ...byte) []byte { return b }
	f.Add(prog())
	// A cuda resource, a pool over it, allocations on two streams, frees,
	// a double free, a wrong size, an interior pointer.
	f.Add(prog(0, 0, 2, 1, 0, 0, 0, 9, 0, 1, 2, 2, 10, 1, 9, 11, 2, 5, 1, 1, 6, 0, 7, 0, 8, 0, 4, 0))
	// Adaptors: statistics, tracking and limiting over a pool, logging
	// over them, through all of which the program allocates and frees.
	f.Add(prog(0, 0, 1, 0, 0, 1, 1, 8, 3, 1, 2, 9, 0, 1, 2, 5, 4, 1, 3, 6, 0,
		1, 4, 4, 1, 2, 6, 2, 1, 3, 1, 5, 0, 2, 3, 7, 1, 2, 4, 8, 0, 4, 3, 0, 5, 2, 6, 1, 12, 2))
	// Set the current device resource, release the handle, reset it; equal
	// handles free each other's memory; destroy a stream.
	f.Add(prog(0, 0, 0, 0, 13, 0, 2, 0, 5, 1, 12, 1, 14, 0, 15, 0, 7, 1, 4, 1, 3, 0, 4, 0))
	// A pool over cuda (served by the per-thread cache): free twice, a
	// wrong size, an interior pointer, through the pool's upstream.
	f.Add(prog(0, 0, 0, 1, 0, 0, 1, 2, 1, 6, 0, 6, 0, 2, 1, 6, 0, 7, 0, 0, 8, 0, 3, 19, 0, 0, 5, 0))
	// Issue 24: interior pointers off the grid, size 0 and alignment 3
	// through a pool, an arena, statistics and limiting over them, and
	// cuda (ops 148 = 8|0x80, 147 = 7|0x80, 67 = 7|0x40, 207 = 7|0xc0: op
	// is the byte mod 20, the flags its high bits).
	f.Add(prog(0, 0, 0, 1, 0, 0, 1, 1, 0, 1, 8, 1, 1, 8, 2,
		2, 1, 1, 0, 2, 2, 3, 1, 2, 3, 5, 0, 2, 0, 2, 0,
		148, 0, 0, 148, 1, 127, 148, 2, 254, 148, 3, 1,
		147, 0, 0, 67, 1, 0, 207, 2, 3, 147, 3, 0, 67, 4, 0, 4, 0, 4, 0))
	// Stale and forged handles.
	f.Add(prog(0, 1, 4, 0, 4, 0, 1, 0, 0, 3, 16, 0, 16, 3, 2, 0, 5, 1))
	f.Fuzz(func(t *testing.T, program []byte) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer watchdog(10 * time.Second)()
		warmDeviceOnce.Do(func() { warmDevice(t) })
		start, st := memFree()
		if st != testStatusSuccess {
			t.Fatal(lastMessage())
		}
		startHandles := reg.live()
		startBlocks, startBytes := core.BaseAllocations()
		s := &fzState{t: t, dir: dir, streams: []uintptr{0}}
		next := func() byte {
			if len(program) == 0 {
				return 0
			}
			b := program[0]
			program = program[1:]
			return b
		}
		stream := func(b byte) uintptr {
			v := s.streams[int(b)%len(s.streams)]
			return v // 0 also for a destroyed stream: the default one
		}
		trace := os.Getenv("RMMGO_FUZZ_TRACE") != ""
		for ; s.step < 200 && len(program) > 0; s.step++ {
			op := next()
			if trace {
				t.Logf("step %d: op %d (%#x), next %v\n%s", s.step, op%20, op, program[:min(3, len(program))], s.describe())
			}
			switch op % 20 {
			case 0: // a base resource
				if len(s.hs) < 12 {
					s.create(fzBases[int(next())%len(fzBases)], -1, next)
				}
			case 1: // a sub-allocator or adaptor over a live handle
				kind := fzOver[int(next())%len(fzOver)]
				if up := s.pick(next(), nil); up >= 0 && len(s.hs) < 12 {
					s.create(kind, up, next)
				}
			case 2, 3: // allocate
				i := s.pick(next(), nil)
				n := fzSizes[int(next())%len(fzSizes)]
				st := stream(next())
				if i >= 0 && op&0x80 != 0 {
					s.zero(i, n&1 != 0) // zero bytes: st unused
				} else if i >= 0 && len(s.allocs) < 40 {
					s.allocate(i, n, st, op&0x40 != 0)
				}
			case 4, 5: // free, perhaps on another stream
				if k := s.liveAlloc(next()); k >= 0 {
					a := s.allocs[k]
					st := a.stream
					if op&0x80 != 0 {
						st = stream(next())
					}
					s.free(k, st, a.n, op&0x40 != 0)
					s.check()
				}
			case 6: // free twice
				if k := s.liveAlloc(next()); k >= 0 {
					a := *s.allocs[k]
					s.free(k, a.stream, a.n, false)
					s.refuse("a second free", rmm_deallocate(toHandle(s.hs[a.via].h), toStream(a.stream), a.p, cSize(a.n), 256))
					s.check()
				}
			case 7: // a wrong size
				if k := s.liveAlloc(next()); k >= 0 {
					a := s.allocs[k]
					wrong := a.n + 2<<20 + 1 + uint64(next())
					if op&0x80 != 0 {
						wrong = 0 // issue 24: size 0 freed nothing and said yes
					}
					s.refuse(fmt.Sprintf("freeing %d bytes of %d", wrong, a.n), rmm_deallocate(toHandle(s.hs[a.via].h), toStream(a.stream), a.p, cSize(wrong), 256))
					if op&0x40 != 0 { // the right size, alignment 3
						s.expectStatus("freeing with alignment 3", rmm_deallocate(toHandle(s.hs[a.via].h), toStream(a.stream), a.p, cSize(a.n), 3), testStatusBadAlignment)
					}
					s.check()
				}
			case 8: // an interior pointer
				if k := s.liveAlloc(next()); k >= 0 && op&0x80 != 0 {
					// Issue 24: p+1..p+255 shared p's slot in a heap's index.
					a := s.allocs[k]
					off := 1 + uint64(next())%255
					s.refuse("an interior pointer off the grid", rmm_deallocate(toHandle(s.hs[a.via].h), toStream(a.stream), unsafe.Add(a.p, off), cSize(a.n), 256))
					s.check()
				} else if k >= 0 && s.allocs[k].n > 256 {
					a := s.allocs[k]
					off := 256 * (1 + uint64(next())%((a.n-1)/256))
					s.refuse("an interior pointer", rmm_deallocate(toHandle(s.hs[a.via].h), toStream(a.stream), unsafe.Add(a.p, off), cSize(a.n-off), 256))
					s.check()
				}
			case 9: // retain
				if i := s.pick(next(), nil); i >= 0 {
					s.expectStatus("rmm_resource_retain", rmm_resource_retain(toHandle(s.hs[i].h)), testStatusSuccess)
					s.hs[i].refs++
				}
			case 10, 11: // release one of the program's references
				if i := s.pick(next(), func(h *fzHandle) bool { return h.refs > 0 }); i >= 0 {
					s.release(i)
					s.check()
				}
			case 12: // create a stream, or destroy one
				if b := next(); b&1 == 0 && len(s.streams) < 4 {
					v, st := newStreamValue()
					s.expectStatus("rmm_stream_create", st, testStatusSuccess)
					s.streams = append(s.streams, v)
				} else if len(s.streams) > 1 {
					k := 1 + int(b>>1)%(len(s.streams)-1)
					v := s.streams[k]
					s.expectStatus("rmm_stream_destroy", rmm_stream_destroy(toStream(v)), testStatusSuccess)
					s.streams = append(s.streams[:k], s.streams[k+1:]...)
					for _, a := range s.allocs {
						if a.stream == v {
							a.stream = 0 // freed on the default stream from now on
						}
					}
				}
			case 13: // set the current device resource
				if i := s.pick(next(), nil); i >= 0 {
					prev := s.current()
					s.hs[i].current = true // the registry's new reference comes first
					var closing []int
					if prev >= 0 && prev != i {
						closing = s.prepareDropCurrent(prev)
					}
					s.expectStatus("rmm_set_current_device_resource", rmm_set_current_device_resource(toHandle(s.hs[i].h), nil), testStatusSuccess)
					if prev >= 0 && prev != i {
						s.hs[prev].current = false
						s.dropped(closing)
					}
					s.hs[i].current = true
				}
			case 14: // reset it
				prev := s.current()
				var closing []int
				if prev >= 0 {
					closing = s.prepareDropCurrent(prev)
				}
				s.expectStatus("rmm_reset_current_device_resource", rmm_reset_current_device_resource(nil), testStatusSuccess)
				if prev >= 0 {
					s.hs[prev].current = false
					s.dropped(closing)
				}
				s.check()
			case 15: // free through an equal handle, or through a pass-through adaptor over the handle and then the handle
				if k := s.liveAlloc(next()); k >= 0 {
					a := s.allocs[k]
					if op&0x80 != 0 {
						s.freeTwoWays(k, next())
						break
					}
					j := s.pick(next(), func(h *fzHandle) bool { return h.kind == s.hs[a.via].kind })
					if j < 0 {
						break
					}
					eq, st := isEqual(s.hs[a.via].h, s.hs[j].h)
					s.expectStatus("rmm_resource_is_equal", st, testStatusSuccess)
					if eq {
						s.verify(a)
						s.expectStatus("freeing through an equal handle", rmm_deallocate(toHandle(s.hs[j].h), toStream(a.stream), a.p, cSize(a.n), 256), testStatusSuccess)
						s.allocs = append(s.allocs[:k], s.allocs[k+1:]...)
						s.check()
					}
				}
			case 16: // stale and forged handles are refused
				v := s.stale(next())
				var p unsafe.Pointer
				s.expectStatus("rmm_allocate on a dead handle", rmm_allocate(toHandle(v), nil, 256, 256, &p), testStatusInvalidHandle, testStatusInvalidArg)
				s.expectStatus("rmm_resource_release of a dead handle", rmm_resource_release(toHandle(v)), testStatusInvalidHandle, testStatusInvalidArg)
				o := defaultTestOptions()
				o.upstream = v
				_, st := createWithOptions(kStatistics, o)
				s.expectStatus("a statistics adaptor over a dead handle", st, testStatusInvalidHandle, testStatusInvalidArg)
			case 17: // synchronize
				s.expectStatus("rmm_stream_synchronize", rmm_stream_synchronize(toStream(stream(next()))), testStatusSuccess)
			case 18: // the upstream of a handle, as a new reference, released
				if i := s.pick(next(), func(h *fzHandle) bool { return h.up >= 0 }); i >= 0 {
					v, st := outHandle(func(out *cResourceT) status { return rmm_resource_upstream(toHandle(s.hs[i].h), out) })
					s.expectStatus("rmm_resource_upstream", st, testStatusSuccess)
					if v != s.hs[s.hs[i].up].h {
						s.fatalf("the upstream of handle %d is %#x, not handle %d (%#x)", i, v, s.hs[i].up, s.hs[s.hs[i].up].h)
					}
					s.expectStatus("releasing the upstream's reference", rmm_resource_release(toHandle(v)), testStatusSuccess)
				}
			default: // memory of another resource, freed through one that is not equal to it
				if k := s.liveAlloc(next()); k >= 0 {
					a := s.allocs[k]
					j := s.pick(next(), func(h *fzHandle) bool { return h.up < 0 && !isSub(h.kind) })
					// Memory a base resource of j's kind holds for the
					// allocation's own handle is j's to free (equal
					// resources); a sub-allocator's block is never j's, not
					// even one that starts where its chunk does (lent).
					if j < 0 || !isSub(s.hs[a.owner].kind) && (s.through(a.via, j) || s.sharesBase(a.via, j)) {
						break
					}
					s.refuse("memory of an unrelated resource", rmm_deallocate(toHandle(s.hs[j].h), toStream(a.stream), a.p, cSize(a.n), 256))
					s.check()
				}
			}
		}
		// Free what base resources hold, reset the current resource,
		// release every reference, destroy the streams: the device must
		// have all its memory back.
		s.step = -1
		if prev := s.current(); prev >= 0 {
			closing := s.prepareDropCurrent(prev)
			s.expectStatus("rmm_reset_current_device_resource", rmm_reset_current_device_resource(nil), testStatusSuccess)
			s.hs[prev].current = false
			s.dropped(closing)
		}
		for i := len(s.hs) - 1; i >= 0; i-- {
			for s.hs[i].refs > 0 {
				s.release(i)
			}
		}
		for _, a := range s.allocs {
			s.fatalf("allocation [%p,+%d) through handle %d outlived every handle", a.p, a.n, a.via)
		}
		for _, v := range s.streams[1:] {
			s.expectStatus("rmm_stream_destroy", rmm_stream_destroy(toStream(v)), testStatusSuccess)
		}
		s.expectStatus("rmm_device_synchronize", rmm_device_synchronize(), testStatusSuccess)
		if n := reg.live(); n != startHandles {
			t.Fatalf("%d live handles before the program, %d after it released everything", startHandles, n)
		}
		if n, b := core.BaseAllocations(); n != startBlocks || b != startBytes {
			t.Fatalf("base resources had %d blocks (%d bytes) out before the program, %d (%d bytes) after it released everything",
				startBlocks, startBytes, n, b)
		}
		end, _ := memFree()
		if simulated() && end != start || end+driverSlack < start {
			t.Fatalf("the device had %d bytes free before the program, %d after it released everything", start, end)
		}
	})
}

// driverSlack is how much less free memory the CUDA driver may report after
// a program than before it, all its memory given back: it maps its own
// memory (managed memory's page tables, the context's lazy allocations) in
// 2 MiB pages, and releases some of it later, so that runs of one program
// in one process differ by a page either way (an H100, CUDA 13.0). The
// simulated device keeps nothing of its own: there the free memory must
// match exactly. Leaks of any size show in core.BaseAllocations.
const driverSlack = 2 << 20

// simulated reports whether the tests run on the simulated device.
func simulated() bool {
	r, err := cudart.Default()
	return err == nil && r.Backend() == cudart.BackendSimulated
}

var warmDeviceOnce sync.Once

// warmDevice makes the CUDA driver take, before the first program measures
// the free memory, what it takes once per process on first use: every base
// kind allocates a small and a large block, written on the device, on the
// default stream and on a created one, and a pool over managed memory does
// the same (the first managed memory a GPU touched took 126 MiB of device
// memory that the driver kept after everything was freed).
func warmDevice(t *testing.T) {
	sv, st := newStreamValue()
	if st != testStatusSuccess {
		t.Fatal(lastMessage())
	}
	use := func(h uintptr) {
		for _, stream := range []uintptr{0, sv} {
			for _, n := range []uint64{4096, 3 << 20} {
				var p unsafe.Pointer
				if rmm_allocate(toHandle(h), toStream(stream), cSize(n), 256, &p) != testStatusSuccess {
					t.Fatalf("warming the device up: %s", lastMessage())
				}
				_ = rmm_memset(p, 1, cSize(n), toStream(stream))
				_ = rmm_stream_synchronize(toStream(stream))
				_ = rmm_deallocate(toHandle(h), toStream(stream), p, cSize(n), 256)
			}
		}
	}
	for _, kind := range fzBases {
		h, st := createPlain(kind)
		if st != testStatusSuccess {
			continue // not supported here: no program makes it either
		}
		use(h)
		if kind == kManaged {
			o := defaultTestOptions()
			o.upstream = h
			if p, st := createWithOptions(kPool, o); st == testStatusSuccess {
				use(p)
				_ = rmm_resource_release(toHandle(p))
			}
		}
		_ = rmm_resource_release(toHandle(h))
	}
	_ = rmm_stream_destroy(toStream(sv))
	_ = rmm_device_synchronize()
}

// subAbove reports whether a live sub-allocator was made over handle i
// (directly or through adaptors).
func (s *fzState) subAbove(i int) bool {
	for j, h := range s.hs {
		if j != i && !h.closed && isSub(h.kind) && s.through(j, i) {
			return true
		}
	}
	return false
}

// current returns the handle set as the current device resource, or -1.
func (s *fzState) current() int {
	for i, h := range s.hs {
		if h.current && !h.closed {
			return i
		}
	}
	return -1
}

// prepareDropCurrent is prepareDrop for the reference the current device
// resource holds.
func (s *fzState) prepareDropCurrent(i int) []int {
	s.hs[i].refs++ // count the registry's reference as the one dropped
	s.hs[i].current = false
	closing := s.prepareDrop(i)
	s.hs[i].current = true
	s.hs[i].refs--
	return closing
}

// sharesBase reports whether the base resources under handles i and j are
// of one kind (equal stateless resources free each other's memory, a pool
// block may start where its chunk does).
func (s *fzState) sharesBase(i, j int) bool {
	base := func(i int) int {
		for s.hs[i].up >= 0 {
			i = s.hs[i].up
		}
		return s.hs[i].kind
	}
	return base(i) == base(j)
}

// watchdog crashes the process with every goroutine's stack when a program
// runs longer than limit (a hang: the fuzzer has no timeout of its own, and
// a crash keeps the input); call the function it returns when done.
func watchdog(limit time.Duration) func() {
	t := time.AfterFunc(limit, func() {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		panic(fmt.Sprintf("the program ran for more than %v: hung?\n%s", limit, buf[:n]))
	})
	return func() { t.Stop() }
}
