package core

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// maxStackFrames is the deepest call stack Tracking records, as in RMM.
const maxStackFrames = 64

// maxMismatches is how many mismatched deallocations Tracking keeps for
// Mismatches; it counts them all.
const maxMismatches = 1000

// TrackedAllocation is an allocation outstanding through a Tracking
// adaptor.
type TrackedAllocation struct {
	Pointer uintptr
	Size    uintptr // requested bytes
	Stream  Stream  // the stream it was allocated on
	// Stack is where it was allocated, innermost call first, one
	// "function (file:line)" per frame; nil unless the adaptor captures
	// stacks.
	Stack []string
}

// TrackingMismatch is a deallocation a Tracking adaptor could not match with
// an outstanding allocation: an unknown pointer (Known false) or a size other
// than the allocated one.
type TrackingMismatch struct {
	Pointer     uintptr
	Size        uintptr // the size given to Deallocate
	TrackedSize uintptr // the size allocated; 0 when Known is false
	Known       bool
}

func (m TrackingMismatch) String() string {
	if !m.Known {
		return fmt.Sprintf("deallocating %#x (%d B), which is not tracked", m.Pointer, m.Size)
	}
	return fmt.Sprintf("deallocating %#x with size %d B, but it was allocated with size %d B", m.Pointer, m.Size, m.TrackedSize)
}

// Tracking is RMM's tracking_resource_adaptor: it records every allocation
// outstanding through it with its size and, if asked, the call stack that
// made it, so that a leak report can say what is still live and where it
// came from.
//
// With captureStacks, each allocation records up to 64 return addresses with
// runtime.Callers (about a microsecond) and they are turned into function,
// file and line only when Outstanding or Report asks. The stack is the Go
// call stack, starting at the caller of Allocate. For C callers (through the
// C ABI) it ends at the cgo entry point: the exported capi function and
// runtime.cgocallback frames appear, frames inside C code do not (Go sees
// them only if the program installs runtime.SetCgoTraceback).
//
// Deallocating a pointer that is not tracked, or with another size than it
// was allocated with, is a caller's mistake that RMM only logs. Tracking
// passes such a deallocation on to the upstream unchanged (the upstream
// decides: base resources and sub-allocators reject what they did not hand
// out, and sizes they did not hand out) and, when the upstream accepts it,
// records it; Mismatches returns them and Report lists them after the
// outstanding allocations. A deallocation the upstream refuses changes
// nothing here (its error goes to the caller): a tracked allocation stays
// tracked. AllocatedBytes always subtracts the size that was tracked, so it
// stays exact.
//
// Zero-byte allocations are not tracked. A pointer handed out twice while
// tracked (an upstream's bug) replaces the first entry and is recorded as a
// mismatch of the first.
type Tracking struct {
	upstream      Resource
	captureStacks bool

	mu            sync.Mutex
	live          map[uintptr]tracked
	bytes         uintptr
	mismatches    []TrackingMismatch
	mismatchCount int
}

type tracked struct {
	size   uintptr
	stream Stream
	stack  []uintptr
}

// NewTracking returns an adaptor over upstream that tracks outstanding
// allocations, with their call stacks when captureStacks is true.
func NewTracking(upstream Resource, captureStacks bool) (*Tracking, error) {
	if err := checkUpstream(kindTracking, upstream); err != nil {
		return nil, err
	}
	return &Tracking{upstream: upstream, captureStacks: captureStacks, live: make(map[uintptr]tracked)}, nil
}

// CapturesStacks reports whether allocations record their call stacks.
func (t *Tracking) CapturesStacks() bool { return t.captureStacks }

// Upstream returns the resource Tracking allocates from.
func (t *Tracking) Upstream() Resource { return t.upstream }

// Properties reports the upstream's properties.
func (t *Tracking) Properties() Properties { return t.upstream.Properties() }

// Kind returns "tracking".
func (t *Tracking) Kind() string { return kindTracking }

// Equal reports whether other is this very adaptor.
func (t *Tracking) Equal(other Resource) bool {
	o, ok := other.(*Tracking)
	return ok && o == t
}

// AllocatedBytes reports the bytes outstanding (requested sizes).
func (t *Tracking) AllocatedBytes() uintptr {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bytes
}

// OutstandingCount reports the number of allocations outstanding.
func (t *Tracking) OutstandingCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.live)
}

// Allocate allocates from the upstream and tracks the allocation.
func (t *Tracking) Allocate(s Stream, bytes, alignment uintptr) (uintptr, error) {
	p, err := t.allocate(s, bytes, alignment, false)
	if err != nil {
		return 0, explainOOM(t, s, bytes, alignment, err)
	}
	return p, nil
}

// AllocateSync is Allocate without a stream.
func (t *Tracking) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	p, err := t.allocate(DefaultStream, bytes, alignment, true)
	if err != nil {
		return 0, explainOOM(t, DefaultStream, bytes, alignment, err)
	}
	return p, nil
}

func (t *Tracking) allocate(s Stream, bytes, alignment uintptr, sync bool) (uintptr, error) {
	if bytes == 0 {
		return 0, zeroRequest(kindTracking, alignment)
	}
	var stack []uintptr
	if t.captureStacks {
		// Skip runtime.Callers, this function and the exported method, so
		// that the first frame is Allocate's caller.
		var pcs [maxStackFrames]uintptr
		n := runtime.Callers(3, pcs[:])
		stack = slices.Clone(pcs[:n])
	}
	p, err := upAllocate(t.upstream, s, bytes, alignment, sync)
	if err != nil {
		return 0, err
	}
	t.mu.Lock()
	if old, dup := t.live[p]; dup {
		t.bytes -= old.size
		t.noteMismatch(TrackingMismatch{Pointer: p, Size: bytes, TrackedSize: old.size, Known: true})
	}
	t.live[p] = tracked{size: bytes, stream: s, stack: stack}
	t.bytes += bytes
	t.mu.Unlock()
	return p, nil
}

// noteMismatch records m; t.mu is held.
func (t *Tracking) noteMismatch(m TrackingMismatch) {
	t.mismatchCount++
	if len(t.mismatches) < maxMismatches {
		t.mismatches = append(t.mismatches, m)
	}
}

// Deallocate stops tracking ptr and returns it to the upstream.
func (t *Tracking) Deallocate(s Stream, ptr, bytes, alignment uintptr) error {
	return t.deallocate(s, ptr, bytes, alignment, false)
}

// DeallocateSync is Deallocate without a stream.
func (t *Tracking) DeallocateSync(ptr, bytes, alignment uintptr) error {
	return t.deallocate(DefaultStream, ptr, bytes, alignment, true)
}

func (t *Tracking) deallocate(s Stream, ptr, bytes, alignment uintptr, sync bool) error {
	if ptr == 0 {
		return nil // a size 0 goes on: the upstream refuses it for a block
	}
	// Stop tracking before the upstream frees: once freed, the address may
	// be handed to another goroutine, whose entry we must not remove.
	t.mu.Lock()
	entry, known := t.live[ptr]
	if known {
		delete(t.live, ptr)
		t.bytes -= entry.size
	}
	t.mu.Unlock()
	if err := upDeallocate(t.upstream, s, ptr, bytes, alignment, sync); err != nil {
		if known { // not freed: still outstanding
			t.mu.Lock()
			t.live[ptr] = entry
			t.bytes += entry.size
			t.mu.Unlock()
		}
		return err
	}
	if !known || entry.size != bytes {
		t.mu.Lock()
		t.noteMismatch(TrackingMismatch{Pointer: ptr, Size: bytes, TrackedSize: entry.size, Known: known})
		t.mu.Unlock()
	}
	return nil
}

// Outstanding returns the allocations outstanding, by address. It is a
// copy, safe to use while the adaptor is in use.
func (t *Tracking) Outstanding() []TrackedAllocation {
	t.mu.Lock()
	out := make([]TrackedAllocation, 0, len(t.live))
	stacks := make([][]uintptr, 0, len(t.live))
	for p, e := range t.live {
		out = append(out, TrackedAllocation{Pointer: p, Size: e.size, Stream: e.stream})
		stacks = append(stacks, e.stack)
	}
	t.mu.Unlock()
	// Symbolize outside the lock.
	for i := range out {
		out[i].Stack = symbolize(stacks[i])
	}
	slices.SortFunc(out, func(a, b TrackedAllocation) int {
		switch {
		case a.Pointer < b.Pointer:
			return -1
		case a.Pointer > b.Pointer:
			return 1
		}
		return 0
	})
	return out
}

// Mismatches returns the deallocations that did not match an outstanding
// allocation (the first 1000) and how many there were in all.
func (t *Tracking) Mismatches() ([]TrackingMismatch, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.mismatches), t.mismatchCount
}

// symbolize turns return addresses into "function (file:line)" lines.
func symbolize(pcs []uintptr) []string {
	if len(pcs) == 0 {
		return nil
	}
	frames := runtime.CallersFrames(pcs)
	var out []string
	for {
		f, more := frames.Next()
		fn := f.Function
		if fn == "" {
			fn = fmt.Sprintf("%#x", f.PC)
		}
		if f.File != "" {
			out = append(out, fn+" ("+f.File+":"+strconv.Itoa(f.Line)+")")
		} else {
			out = append(out, fn)
		}
		if !more {
			return out
		}
	}
}

// Report returns the outstanding allocations in RMM's format, one per line:
//
//	Outstanding Allocations:
//	0x7f8a3c000000: 1000000 B
//	0x7f8a3c100000: 256 B : callstack:
//	#0 in main.load (/src/main.go:42)
//	#1 in main.main (/src/main.go:17)
//
// followed, when there were any, by the mismatched deallocations.
func (t *Tracking) Report() string {
	var b strings.Builder
	b.WriteString("Outstanding Allocations:\n")
	for _, a := range t.Outstanding() {
		fmt.Fprintf(&b, "%#x: %d B", a.Pointer, a.Size)
		if len(a.Stack) > 0 {
			b.WriteString(" : callstack:")
			for i, f := range a.Stack {
				fmt.Fprintf(&b, "\n#%d in %s", i, f)
			}
		}
		b.WriteByte('\n')
	}
	ms, n := t.Mismatches()
	if n > 0 {
		fmt.Fprintf(&b, "Mismatched deallocations: %d\n", n)
		for _, m := range ms {
			b.WriteString(m.String())
			b.WriteByte('\n')
		}
		if n > len(ms) {
			fmt.Fprintf(&b, "... and %d more\n", n-len(ms))
		}
	}
	return b.String()
}
