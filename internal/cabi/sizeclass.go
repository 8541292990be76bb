package cabi

import "math/bits"

// Size classes, the blocks a request is served from by the per-thread
// cache of the C ABI (capi/tc.h) and the heap's front (core/internal/heap):
// SmallClasses steps of ClassStep bytes up to SmallLimit, then
// ClassesPerDoubling per power of two up to the user's largest class
// (ClassMax for the C cache): a block is at most 1/ClassesPerDoubling
// larger than the request it serves. (Eight per power of two halve that
// and left the pool of the thread-churn workload about 0.05x smaller, but
// spread the cached blocks over twice the stacks: the random medium
// workload missed so much more often that it ran 1.5-2x slower.)
const (
	ClassStep          = 256
	SmallClasses       = 16
	SmallLimit         = SmallClasses * ClassStep // 4 KiB
	ClassesPerDoubling = 4
	// ClassMax is the C cache's largest class: 64 MiB, 14 doublings above
	// SmallLimit.
	ClassMax = 64 << 20
	// Classes is how many classes there are up to ClassMax.
	Classes = SmallClasses + ClassDoublings*ClassesPerDoubling
	// ClassDoublings is how many powers of two lie between SmallLimit and
	// ClassMax.
	ClassDoublings = 14
)

// ClassOf returns the class of a request of n bytes, 1 <= n <= ClassMax.
func ClassOf(n uintptr) int {
	if n <= SmallLimit {
		return int((n+ClassStep-1)/ClassStep) - 1
	}
	k := bits.Len64(uint64(n-1)) - 1 // 2^k < n <= 2^(k+1)
	base := uintptr(1) << k
	step := base / ClassesPerDoubling
	j := (n - base + step - 1) / step // 1..ClassesPerDoubling
	return SmallClasses + (k-bits.Len(SmallLimit)+1)*ClassesPerDoubling + int(j) - 1
}

// ClassSize returns the size of class c's blocks, 0 <= c < Classes.
func ClassSize(c int) uintptr {
	if c < SmallClasses {
		return uintptr(c+1) * ClassStep
	}
	k := bits.Len(SmallLimit) - 1 + (c-SmallClasses)/ClassesPerDoubling
	j := uintptr((c-SmallClasses)%ClassesPerDoubling) + 1
	return uintptr(1)<<k + j*(uintptr(1)<<k/ClassesPerDoubling)
}
