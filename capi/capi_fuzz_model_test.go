package main

// The model FuzzCAPI (capi_fuzz_test.go) checks the C API against: the
// handles a program made and what each must answer, the allocations it
// holds, and the checks run after every step.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"unsafe"
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
