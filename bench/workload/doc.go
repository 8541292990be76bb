// Package workload implements the random-allocations workload that every
// allocator benchmark of rmmgo reports (its definition: bench/README.md,
// "The random-allocations workload"), the same shape as RMM's
// RANDOM_ALLOCATIONS benchmark:
//
//   - NumAllocations allocations in all; the loop runs 2*NumAllocations
//     steps.
//   - Each step draws a size uniformly from 1 byte to MaxSize.
//   - While something is live, a step allocates with probability 73 % (and
//     only while fewer than NumAllocations have been made and live bytes +
//     size stay under MaxUsage); otherwise it frees a live allocation chosen
//     uniformly at random. A failed allocation frees instead. With nothing
//     live a step allocates.
//   - Whatever is live at the end is freed. Every allocation and every free
//     counts as one operation.
//
// A Plan holds the random draws of one run, made in advance from a fixed
// seed, so that running it measures the allocator and not the random
// number generator. Multi-threaded runs give each goroutine its own Plan
// (its own seed) on one shared resource (RunParallel).
package workload
