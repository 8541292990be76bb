package core

import (
	"fmt"
	"math/bits"
)

// IsPow2 reports whether v is a power of two (0 is not).
func IsPow2(v uintptr) bool { return v != 0 && v&(v-1) == 0 }

// AlignUp rounds v up to a multiple of a, a power of two. It reports false
// when the result does not fit in a uintptr.
func AlignUp(v, a uintptr) (uintptr, bool) {
	r, carry := bits.Add64(uint64(v), uint64(a-1), 0)
	if carry != 0 {
		return 0, false
	}
	return uintptr(r) &^ (a - 1), true
}

// AlignDown rounds v down to a multiple of a, a power of two.
func AlignDown(v, a uintptr) uintptr { return v &^ (a - 1) }

// IsAligned reports whether v is a multiple of a, a power of two.
func IsAligned(v, a uintptr) bool { return v&(a-1) == 0 }

// checkAlignment validates an alignment argument: a power of two, and at
// most max when max is not 0.
func checkAlignment(kind string, alignment, max uintptr) error {
	if !IsPow2(alignment) {
		return fmt.Errorf("%s: %w: %d is not a power of two", kind, ErrBadAlignment, alignment)
	}
	if max != 0 && alignment > max {
		return fmt.Errorf("%s: %w: %d is larger than %d (wrap the resource in an aligned adaptor for more)", kind, ErrBadAlignment, alignment, max)
	}
	return nil
}
