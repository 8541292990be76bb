package core

import "github.com/rmmgo/rmmgo/core/internal/asyncpath"

// BaseAllocations reports the allocations the base resources of the process
// handed out and did not get back: how many, and their bytes as asked for.
// It counts cudaMalloc, cudaMallocManaged, cudaHostAlloc, system and
// sam_headroom memory and the blocks of the pool-based kinds (cuda_async,
// cuda_async_managed, cuda_async_view), every kind that records what it
// hands out (live_table.go); expandable's mapped memory is not counted.
//
// Sub-allocators and adaptors get their memory from base resources, so a
// program that freed what it allocated and closed the resources it made
// is back at the numbers it started with. That makes a leak check that,
// unlike the device's free memory, leaves out what the CUDA driver keeps
// for itself (the page tables of managed memory, a context's lazy
// allocations) and catches leaks smaller than the driver's 2 MiB pages.
func BaseAllocations() (count int, bytes uint64) {
	for _, t := range []*liveTable{&cudaLive, &managedLive, &pinnedHostLive, &systemLive, &samLive} {
		n, b := t.totals()
		count += n
		bytes += b
	}
	n, b := asyncpath.Totals()
	ln, lb := asyncLentTotals() // records of lent chunks, out of the C table meanwhile
	return count + n + ln, bytes + b + lb
}

// totals counts t's records and their bytes.
func (t *liveTable) totals() (count int, bytes uint64) {
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		for _, e := range s.m {
			count++
			bytes += uint64(e.size)
		}
		s.mu.Unlock()
	}
	return count, bytes
}
