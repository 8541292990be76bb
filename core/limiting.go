package core

import (
	"fmt"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/core/internal/addr"
)

const kindLimiting = "limiting"

// Limiting is RMM's limiting_resource_adaptor: it refuses allocations that
// would take the bytes outstanding through it past a limit.
//
// Each allocation is charged AlignUp(bytes, alignment), with the alignment
// given to NewLimiting, before the upstream is asked; the charge is taken
// back when the upstream fails and when the memory is deallocated (callers
// must pass the size they allocated, as always). A deallocation is taken
// off the account only once the upstream has freed the memory, so a free
// the upstream refuses (a foreign pointer, a double free, a wrong size)
// leaves it as it was; one whose charge is more than is outstanding cannot
// be of memory the adaptor handed out and is refused with an error
// wrapping ErrInvalidPointer before the upstream is asked. Charging is one
// compare-and-swap loop on an atomic counter: no lock, and two goroutines can
// never together pass the limit.
type Limiting struct {
	upstream  Resource
	limit     uintptr
	alignment uintptr
	allocated atomic.Uintptr
}

// NewLimiting returns an adaptor over upstream that allows at most limit
// bytes outstanding, counting each allocation rounded up to alignment (a
// power of two of at most 2^56; RMM's default is 256). A limit of 0, which
// would let no allocation through, is an error wrapping ErrInvalidArgument.
func NewLimiting(upstream Resource, limit, alignment uintptr) (*Limiting, error) {
	if err := checkUpstream(kindLimiting, upstream); err != nil {
		return nil, err
	}
	if limit == 0 {
		return nil, fmt.Errorf("%s: %w: an allocation limit of 0 bytes lets no allocation through", kindLimiting, ErrInvalidArgument)
	}
	if err := checkAdaptorAlignment(kindLimiting, alignment); err != nil {
		return nil, err
	}
	return &Limiting{upstream: upstream, limit: limit, alignment: alignment}, nil
}

// AllocatedBytes reports the bytes outstanding, as charged (rounded up).
func (l *Limiting) AllocatedBytes() uintptr { return l.allocated.Load() }

// AllocationLimit reports the limit given to NewLimiting.
func (l *Limiting) AllocationLimit() uintptr { return l.limit }

// Upstream returns the resource Limiting allocates from.
func (l *Limiting) Upstream() Resource { return l.upstream }

// Properties reports the upstream's properties.
func (l *Limiting) Properties() Properties { return l.upstream.Properties() }

// Kind returns "limiting".
func (l *Limiting) Kind() string { return kindLimiting }

// Equal reports whether other is this very adaptor.
func (l *Limiting) Equal(other Resource) bool {
	o, ok := other.(*Limiting)
	return ok && o == l
}

// Allocate allocates from the upstream if the limit allows; otherwise it
// returns an error wrapping ErrOutOfMemory.
func (l *Limiting) Allocate(s Stream, bytes, alignment uintptr) (uintptr, error) {
	return l.allocate(s, bytes, alignment, false)
}

// AllocateSync is Allocate without a stream.
func (l *Limiting) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	return l.allocate(DefaultStream, bytes, alignment, true)
}

func (l *Limiting) allocate(s Stream, bytes, alignment uintptr, sync bool) (uintptr, error) {
	if bytes == 0 {
		return 0, zeroRequest(kindLimiting, alignment)
	}
	charge, ok := addr.AlignUp(bytes, l.alignment)
	if !ok || charge > l.limit {
		return 0, l.exceeded(bytes, l.allocated.Load())
	}
	for {
		cur := l.allocated.Load()
		if cur > l.limit-charge {
			return 0, l.exceeded(bytes, cur)
		}
		if l.allocated.CompareAndSwap(cur, cur+charge) {
			break
		}
	}
	p, err := upAllocate(l.upstream, s, bytes, alignment, sync)
	if err != nil {
		l.allocated.Add(-charge)
		return 0, err
	}
	return p, nil
}

func (l *Limiting) exceeded(bytes, cur uintptr) error {
	return fmt.Errorf("%s: %w: Exceeded memory limit: allocating %d bytes with %d of %d bytes in use",
		kindLimiting, ErrOutOfMemory, bytes, cur, l.limit)
}

// Deallocate returns memory to the upstream and takes its charge back.
func (l *Limiting) Deallocate(s Stream, ptr, bytes, alignment uintptr) error {
	return l.deallocate(s, ptr, bytes, alignment, false)
}

// DeallocateSync is Deallocate without a stream.
func (l *Limiting) DeallocateSync(ptr, bytes, alignment uintptr) error {
	return l.deallocate(DefaultStream, ptr, bytes, alignment, true)
}

func (l *Limiting) deallocate(s Stream, ptr, bytes, alignment uintptr, sync bool) error {
	if ptr == 0 || bytes == 0 {
		return nil
	}
	charge, ok := addr.AlignUp(bytes, l.alignment)
	if cur := l.allocated.Load(); !ok || charge > cur {
		return fmt.Errorf("%s: %w: deallocating %#x (%d bytes, %d as charged), but only %d bytes are outstanding through this adaptor",
			kindLimiting, ErrInvalidPointer, ptr, bytes, charge, cur)
	}
	if err := upDeallocate(l.upstream, s, ptr, bytes, alignment, sync); err != nil {
		return err // the memory was not freed: it stays charged
	}
	for {
		// A size larger than was allocated (a caller's mistake) must not
		// wrap the counter around and refuse every later allocation.
		cur := l.allocated.Load()
		if l.allocated.CompareAndSwap(cur, cur-min(charge, cur)) {
			return nil
		}
	}
}
