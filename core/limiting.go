package core

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/core/internal/addr"
)

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
// never together pass the limit. A front that serves the adaptor's calls
// outside Go (the C ABI's thread cache, docs/thread-cache.md) charges the
// same counter, kept in its memory (UseAccount).
type Limiting struct {
	upstream  Resource
	limit     uintptr
	alignment uintptr
	own       atomic.Uintptr
	mu        sync.Mutex // UseAccount
	// account is the counter of bytes outstanding: own, or the front's.
	account atomic.Pointer[atomic.Uintptr]
	keep    any // what owns the front's account, kept with the adaptor
}

// movedAccount marks an account that was moved (UseAccount): a charge that
// finds it looks for the account again.
const movedAccount = ^uintptr(0)

// acct returns the account and its value, never a moved one.
func (l *Limiting) acct() (*atomic.Uintptr, uintptr) {
	for {
		a := l.account.Load()
		if v := a.Load(); v != movedAccount {
			return a, v
		}
	}
}

// UseAccount moves the adaptor's account of bytes outstanding to a, which
// is charged from then on (for the adaptor's life; keep, a's owner, is
// kept as long): a front that serves the adaptor's calls itself charges
// and refunds it with atomic operations as the adaptor does. It gives a
// the current value first. It returns the account in use: a, or the one
// an earlier call moved it to.
func (l *Limiting) UseAccount(a *atomic.Uintptr, keep any) *atomic.Uintptr {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.account.Load()
	if old != &l.own {
		return old
	}
	l.keep = keep
	a.Store(old.Swap(movedAccount)) // charges on old now wait for a
	l.account.Store(a)
	return a
}

// Alignment reports the alignment each allocation's charge is rounded up
// to.
func (l *Limiting) Alignment() uintptr { return l.alignment }

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
	l := &Limiting{upstream: upstream, limit: limit, alignment: alignment}
	l.account.Store(&l.own)
	return l, nil
}

// AllocatedBytes reports the bytes outstanding, as charged (rounded up).
func (l *Limiting) AllocatedBytes() uintptr {
	_, v := l.acct()
	return v
}

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
	p, err := l.allocate(s, bytes, alignment, false)
	if err != nil {
		return 0, explainOOM(l, s, bytes, alignment, err)
	}
	return p, nil
}

// AllocateSync is Allocate without a stream.
func (l *Limiting) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	p, err := l.allocate(DefaultStream, bytes, alignment, true)
	if err != nil {
		return 0, explainOOM(l, DefaultStream, bytes, alignment, err)
	}
	return p, nil
}

func (l *Limiting) allocate(s Stream, bytes, alignment uintptr, sync bool) (uintptr, error) {
	if bytes == 0 {
		return 0, zeroRequest(kindLimiting, alignment)
	}
	charge, ok := addr.AlignUp(bytes, l.alignment)
	if !ok || charge > l.limit {
		return 0, l.exceeded(bytes, l.AllocatedBytes())
	}
	for {
		a, cur := l.acct()
		if cur > l.limit-charge {
			return 0, l.exceeded(bytes, cur)
		}
		if a.CompareAndSwap(cur, cur+charge) {
			break
		}
	}
	p, err := upAllocate(l.upstream, s, bytes, alignment, sync)
	if err != nil {
		l.refund(charge)
		return 0, err
	}
	return p, nil
}

// refund takes charge off the account (never below 0: a size larger than
// was allocated, a caller's mistake, must not wrap the counter around and
// refuse every later allocation).
func (l *Limiting) refund(charge uintptr) {
	for {
		a, cur := l.acct()
		if a.CompareAndSwap(cur, cur-min(charge, cur)) {
			return
		}
	}
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
	if ptr == 0 {
		return nil // a size 0 goes on: the upstream refuses it for a block
	}
	charge, ok := addr.AlignUp(bytes, l.alignment)
	if cur := l.AllocatedBytes(); !ok || charge > cur {
		return fmt.Errorf("%s: %w: deallocating %#x (%d bytes, %d as charged), but only %d bytes are outstanding through this adaptor",
			kindLimiting, ErrInvalidPointer, ptr, bytes, charge, cur)
	}
	if err := upDeallocate(l.upstream, s, ptr, bytes, alignment, sync); err != nil {
		return err // the memory was not freed: it stays charged
	}
	l.refund(charge)
	return nil
}
