package core

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/rmmgo/rmmgo/core/internal/addr"
)

// Machinery shared by the adaptors (aligned, failure_callback, limiting,
// logging, prefetch, statistics, thread_safe, tracking): the upstream check
// every constructor makes, the zero-byte rule, and the choice between the
// stream-ordered and the synchronous upstream call.
//
// An adaptor's AllocateSync and DeallocateSync do what Allocate and
// Deallocate do, around the upstream's AllocateSync and DeallocateSync, so
// that the upstream's own "ready for any use" guarantee holds; the adaptor
// adds no synchronization of its own (as in RMM).

// checkUpstream rejects a nil upstream, including a typed nil pointer in a
// non-nil interface.
func checkUpstream(kind string, up Resource) error {
	if up == nil {
		return fmt.Errorf("%s: %w: upstream resource is nil", kind, ErrInvalidArgument)
	}
	if v := reflect.ValueOf(up); v.Kind() == reflect.Pointer && v.IsNil() {
		return fmt.Errorf("%s: %w: upstream resource is a nil %T", kind, ErrInvalidArgument, up)
	}
	return nil
}

// zeroRequest answers a zero-byte request: nil (the caller returns 0 without
// calling its upstream) unless the alignment is bad, which is reported even
// for zero bytes, as the base resources do.
func zeroRequest(kind string, alignment uintptr) error {
	if !addr.IsPow2(alignment) {
		return fmt.Errorf("%s: %w: %d is not a power of two", kind, ErrBadAlignment, alignment)
	}
	return nil
}

// upAllocate calls up.AllocateSync when sync is true, else up.Allocate.
func upAllocate(up Resource, s Stream, bytes, alignment uintptr, sync bool) (uintptr, error) {
	if sync {
		return up.AllocateSync(bytes, alignment)
	}
	return up.Allocate(s, bytes, alignment)
}

// upDeallocate calls up.DeallocateSync when sync is true, else up.Deallocate.
func upDeallocate(up Resource, s Stream, ptr, bytes, alignment uintptr, sync bool) error {
	if sync {
		return up.DeallocateSync(ptr, bytes, alignment)
	}
	return up.Deallocate(s, ptr, bytes, alignment)
}

// Aligned is RMM's aligned_resource_adaptor: it gives allocations of at
// least a threshold size a larger alignment than the upstream guarantees.
//
// With A = max(alignment, DefaultAlignment), a request is passed through
// unchanged when it is for zero bytes, when A is DefaultAlignment, or when
// it is smaller than the threshold. Otherwise Aligned allocates
// AlignUp(bytes, A) + A - DefaultAlignment bytes upstream, returns the first
// A-aligned address inside, and remembers which upstream pointer it came
// from. A per-call alignment larger than A raises A for that call (the
// contract of Resource), and one larger than DefaultAlignment is always
// honoured, whatever the threshold.
//
// Aligned is safe for concurrent use: the map of over-aligned allocations is
// guarded by a mutex held only for the map access.
type Aligned struct {
	upstream  Resource
	alignment uintptr
	threshold uintptr

	mu      sync.Mutex
	origins map[uintptr]uintptr // aligned pointer -> upstream pointer
}

// maxAdaptorAlignment is the largest alignment an adaptor accepts: 2^56
// bytes, the largest for which one aligned byte and the slack in front of it
// fit in the 2^57 bytes any allocation can have (maxAllocation). A larger
// one could never be served, so it is refused when the adaptor is made
// rather than at every allocation.
const maxAdaptorAlignment = maxAllocation / 2

// checkAdaptorAlignment validates the alignment an adaptor is made with: a
// power of two no larger than maxAdaptorAlignment (ErrBadAlignment).
func checkAdaptorAlignment(kind string, alignment uintptr) error {
	if !addr.IsPow2(alignment) {
		return fmt.Errorf("%s: %w: alignment %d is not a power of two", kind, ErrBadAlignment, alignment)
	}
	if alignment > maxAdaptorAlignment {
		return fmt.Errorf("%s: %w: alignment %d is larger than %d (2^56), the most any allocation can be aligned to",
			kind, ErrBadAlignment, alignment, maxAdaptorAlignment)
	}
	return nil
}

// NewAligned returns an adaptor that aligns allocations of at least
// threshold bytes to alignment, a power of two of at most 2^56 (an error
// wrapping ErrBadAlignment otherwise; RMM checks only the power of two, and
// larger alignments could never be served). RMM's defaults are alignment
// 256 and threshold 0.
func NewAligned(upstream Resource, alignment, threshold uintptr) (*Aligned, error) {
	if err := checkUpstream(kindAligned, upstream); err != nil {
		return nil, err
	}
	if err := checkAdaptorAlignment(kindAligned, alignment); err != nil {
		return nil, err
	}
	return &Aligned{
		upstream:  upstream,
		alignment: alignment,
		threshold: threshold,
		origins:   make(map[uintptr]uintptr),
	}, nil
}

// Alignment reports the alignment given to NewAligned.
func (a *Aligned) Alignment() uintptr { return a.alignment }

// Threshold reports the size from which allocations are over-aligned.
func (a *Aligned) Threshold() uintptr { return a.threshold }

// Upstream returns the resource Aligned allocates from.
func (a *Aligned) Upstream() Resource { return a.upstream }

// Properties reports the upstream's properties.
func (a *Aligned) Properties() Properties { return a.upstream.Properties() }

// Kind returns "aligned".
func (a *Aligned) Kind() string { return kindAligned }

// Equal reports whether other is this very adaptor.
func (a *Aligned) Equal(other Resource) bool {
	o, ok := other.(*Aligned)
	return ok && o == a
}

// plan decides how a request is served. It returns the effective alignment
// and whether the request is over-aligned (false: pass through).
func (a *Aligned) plan(bytes, alignment uintptr) (uintptr, bool) {
	eff := max(a.alignment, alignment, DefaultAlignment)
	if eff == DefaultAlignment {
		return eff, false
	}
	if bytes < a.threshold && alignment <= DefaultAlignment {
		return eff, false
	}
	return eff, true
}

// upstreamSize is the over-allocation for bytes at alignment eff.
func upstreamSize(bytes, eff uintptr) (uintptr, bool) {
	up, ok := addr.AlignUp(bytes, eff)
	if !ok {
		return 0, false
	}
	n := up + eff - DefaultAlignment
	if n < up {
		return 0, false
	}
	return n, true
}

// Allocate allocates bytes on stream s, aligned as described on Aligned.
func (a *Aligned) Allocate(s Stream, bytes, alignment uintptr) (uintptr, error) {
	p, err := a.allocate(s, bytes, alignment, false)
	if err != nil {
		return 0, explainOOM(a, s, bytes, alignment, err)
	}
	return p, nil
}

// AllocateSync is Allocate without a stream.
func (a *Aligned) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	p, err := a.allocate(DefaultStream, bytes, alignment, true)
	if err != nil {
		return 0, explainOOM(a, DefaultStream, bytes, alignment, err)
	}
	return p, nil
}

func (a *Aligned) allocate(s Stream, bytes, alignment uintptr, sync bool) (uintptr, error) {
	if bytes == 0 || !addr.IsPow2(alignment) {
		return 0, zeroRequest(kindAligned, alignment)
	}
	eff, over := a.plan(bytes, alignment)
	if !over {
		return upAllocate(a.upstream, s, bytes, alignment, sync)
	}
	n, ok := upstreamSize(bytes, eff)
	if !ok {
		return 0, fmt.Errorf("%s: %w: %d bytes aligned to %d do not fit in the address space", kindAligned, ErrOutOfMemory, bytes, eff)
	}
	orig, err := upAllocate(a.upstream, s, n, DefaultAlignment, sync)
	if err != nil {
		return 0, err
	}
	p, _ := addr.AlignUp(orig, eff) // orig+n does not overflow, so neither does this
	a.mu.Lock()
	a.origins[p] = orig
	a.mu.Unlock()
	return p, nil
}

// Deallocate returns memory from Allocate; bytes and alignment must be
// those given to Allocate. A pointer Aligned did not over-align, where the
// request says it should have, is an error wrapping ErrInvalidPointer.
func (a *Aligned) Deallocate(s Stream, ptr, bytes, alignment uintptr) error {
	return a.deallocate(s, ptr, bytes, alignment, false)
}

// DeallocateSync is Deallocate without a stream.
func (a *Aligned) DeallocateSync(ptr, bytes, alignment uintptr) error {
	return a.deallocate(DefaultStream, ptr, bytes, alignment, true)
}

func (a *Aligned) deallocate(s Stream, ptr, bytes, alignment uintptr, sync bool) error {
	if ptr == 0 {
		return nil
	}
	if !addr.IsPow2(alignment) {
		return fmt.Errorf("%s: %w: %d is not a power of two", kindAligned, ErrBadAlignment, alignment)
	}
	if bytes == 0 {
		// No allocation of 0 bytes went upstream: the upstream refuses it.
		return upDeallocate(a.upstream, s, ptr, 0, alignment, sync)
	}
	eff, over := a.plan(bytes, alignment)
	if !over {
		return upDeallocate(a.upstream, s, ptr, bytes, alignment, sync)
	}
	if err := lentHere(kindAligned, a, ptr); err != nil {
		return err // a chunk a sub-allocator over this adaptor holds (lent_blocks.go)
	}
	n, _ := upstreamSize(bytes, eff)
	// Take the pointer out of the map before the upstream frees it: once
	// freed, the upstream may hand the same address to another goroutine,
	// whose entry must not be removed by us.
	a.mu.Lock()
	orig, ok := a.origins[ptr]
	if ok {
		delete(a.origins, ptr)
	}
	a.mu.Unlock()
	if !ok {
		return fmt.Errorf("%s: %w: %#x (%d bytes, alignment %d) is not an over-aligned allocation of this adaptor",
			kindAligned, ErrInvalidPointer, ptr, bytes, eff)
	}
	if err := upDeallocate(a.upstream, s, orig, n, DefaultAlignment, sync); err != nil {
		a.mu.Lock()
		a.origins[ptr] = orig
		a.mu.Unlock()
		return err
	}
	return nil
}

// overAligned reports whether ptr is an over-aligned block of a: its
// address is not the upstream allocation's (lendChunk).
func (a *Aligned) overAligned(ptr uintptr) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.origins[ptr]
	return ok
}
