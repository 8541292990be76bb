// Package cachepolicy is the one policy for the memory that caches keep
// away from a resource: how much the C ABI's per-thread caches in front of
// a sub-allocator may hold, how much the magazines inside the pool's heap
// may hold, and when both give it back. Every number lives here; core
// hands the ones the C cache needs to it through fastpath.CacheLimits, and
// the heap asks for its own. docs/thread-cache.md ("Bounds") explains them.
//
// The rule: a resource holding S bytes from its upstream lets its thread
// caches hold at most ThreadCaches(S) bytes in all, whatever the number of
// threads and streams, except that one cache (a thread's, for one stream)
// that holds part of the budget alone, when no other has for LoneAfter
// (or ever), may keep up to ThreadCachesLone(S): a program with one thread per resource gets a
// larger cache, a crowd of threads a bounded one. Its magazines hold at
// most Magazines(S) bytes in all. Both give everything back when the resource needs memory: before it
// grows, and before it fails for want of memory. Blocks of a thread that
// exited wait ExitedWait for a new thread on the same resource and stream
// to take them over, then go back to the resource.
package cachepolicy

import "time"

const (
	// MaxBlock is the largest block a thread cache keeps (a request
	// rounded up to its size class); larger requests always go to the
	// resource, which rounds them to 256 bytes only. The classes are four
	// per power of two, so a cached block is up to a quarter larger than
	// its request: with 64 MiB, GPT-2 training through PyTorch (most of
	// its tensors between 1 and 64 MiB) held 1.40x its peak live bytes in
	// a pool where 1 MiB holds 1.07x (bench/traces, the C path on the
	// simulated device). The pool's front and magazines stop at 1 MiB
	// too. The price: the random workload's large case (up to 64 MiB)
	// crosses into Go on most calls.
	MaxBlock = 1 << 20

	// Fraction: thread caches and magazines may each hold 1/Fraction of
	// what their resource holds from its upstream, whatever the number of
	// threads ... (A sixteenth each let the churn workload's pool reach
	// 1.53x its peak live bytes with 16 threads a round and 1.76x with 64
	// on an H100; a thirty-second, 1.44x and 1.38x: docs/benchmarks.md.)
	Fraction = 32
	// ... and one thread's cache, alone on the resource when no other
	// cache has held part of its budget for LoneAfter (or ever),
	// 1/LoneFraction (ThreadCachesLone). An eighth for every thread,
	// unbounded in all, let the thread-churn workload's pool reach
	// 1.3-1.9x its peak live bytes; a sixteenth for all threads together
	// made the random workload's medium and large cases, one thread,
	// miss for most of their working set. A quarter for the first thread
	// of each round of the churn workload, without the wait, took its
	// pool from 1.23-1.37x to 1.24-1.58x its peak live bytes.
	LoneFraction = 4
	LoneAfter    = 200 * time.Millisecond
	// SpareAfter: a resource that has not asked its caches for memory for
	// this long has memory to spare (ThreadCachesSpare). Letting the
	// caches keep the free memory of a pool that grows on demand took the
	// churn workload's pool from 1.22-1.40x to 1.34-2.02x its peak live
	// bytes.
	SpareAfter = time.Second
	// ... and each at least this much, so that a resource that starts empty and
	// grows on demand is cached from its first allocation. (2 MiB and 1 MiB
	// left the thread-churn workload's pool, some 30 MiB, 0.05x larger.)
	ThreadCachesFloor = 1 << 20
	MagazinesFloor    = 512 << 10

	// Quantum is the unit in which one thread's cache (one magazine)
	// reserves part of its resource's budget and gives it back: a cache
	// touches the shared budget once per Quantum bytes of net frees, not on
	// every call.
	Quantum = 256 << 10

	// A refill of a thread cache takes at most BatchBlocks blocks and at
	// most BatchBytes bytes, or BatchMinBlocks blocks of a class larger
	// than a BatchMinBlocks-th of BatchBytes (one block of 1 MiB a refill
	// left the random workload's medium fixed_size case crossing into Go
	// on most of its misses, one by one).
	BatchBlocks    = 32
	BatchBytes     = 1 << 20
	BatchMinBlocks = 4

	// ExitedWait is how long the blocks a thread left in its cache when it
	// exited wait for a new thread on the same resource and stream to take
	// them over, before the next call into Go gives them back.
	ExitedWait = 20 * time.Millisecond

	// ReclaimQuiet: after the caches were emptied for an allocation that
	// failed all the same, failing allocations of the same resource do not
	// empty them again for this long (a program that keeps running into a
	// full resource would otherwise synchronize the device and empty every
	// cache on each failure).
	ReclaimQuiet = 10 * time.Millisecond
)

// ThreadCaches returns the bytes the thread caches in front of a resource
// holding held bytes may hold together, however many they are.
func ThreadCaches(held uintptr) uintptr { return max(ThreadCachesFloor, held/Fraction) }

// ThreadCachesSpare returns what the thread caches in front of a resource
// holding held bytes, free of them idle, may hold together however many
// they are: ThreadCaches(held), or, while the resource has not had to ask
// its caches for memory (before growing or failing) for SpareAfter, as
// much as it has free, up to half of what it holds: a pool made much
// larger than its users' working set lets their caches keep that working
// set; one that grows on demand keeps its caches to ThreadCaches (a
// Fraction: a thirty-second).
func ThreadCachesSpare(held, free uintptr) uintptr { return max(ThreadCaches(held), min(free, held/2)) }

// CacheBudget returns what the thread caches in front of a resource
// holding held bytes, free of them idle, may hold together: budget, the
// most (what one cache alone may keep, ThreadCachesLone, or more when the
// resource has memory to spare), and shared, what they keep when several
// hold part of it (ThreadCachesSpare). The resource has memory to spare
// unless it asked its caches for memory (pressed) less than SpareAfter ago
// (sincePressed). The one place the budget is decided: core hands it to
// the C cache through CacheLimits, which applies it.
func CacheBudget(held, free uintptr, pressed bool, sincePressed time.Duration) (budget, shared uintptr) {
	if pressed && sincePressed < SpareAfter {
		free = 0
	}
	shared = ThreadCachesSpare(held, free)
	return max(ThreadCachesLone(held), shared), shared
}

// ThreadCachesLone returns the most bytes the thread caches in front of a
// resource holding held bytes may hold together: what one cache alone may
// keep, when no other has held part of the budget for LoneAfter (or ever).
func ThreadCachesLone(held uintptr) uintptr { return max(ThreadCachesFloor, held/LoneFraction) }

// Magazines returns the most bytes the magazines of a heap of size bytes
// may hold together.
func Magazines(size uintptr) uintptr { return max(MagazinesFloor, size/Fraction) }
