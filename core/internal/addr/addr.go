// Package addr is the address arithmetic core's resources share: rounding
// to powers of two, and finding an address among sorted ones.
package addr

import "math/bits"

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

// Search returns the index of the last of the sorted bases that is at most
// p, or -1. It is a binary search whose loop has no data-dependent branch
// but the comparison, for the chunk tables' lookups.
func Search(bases []uintptr, p uintptr) int {
	lo, n := 0, len(bases)
	if n == 0 {
		return -1
	}
	for n > 1 {
		half := n >> 1
		if bases[lo+half] <= p {
			lo += half
		}
		n -= half
	}
	if bases[lo] > p {
		return -1
	}
	return lo
}
