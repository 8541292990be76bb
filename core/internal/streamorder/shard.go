package streamorder

import (
	"runtime"
	_ "unsafe" // go:linkname
)

//go:linkname runtime_procPin runtime.procPin
func runtime_procPin() int

//go:linkname runtime_procUnpin runtime.procUnpin
func runtime_procUnpin()

// CurrentP returns the id of the P the calling goroutine runs on: a shard
// hint that is distinct for goroutines running at the same time. The
// goroutine may move at once; that only costs locality, never correctness.
func CurrentP() uint32 {
	p := runtime_procPin()
	runtime_procUnpin()
	return uint32(p)
}

// Pin pins the calling goroutine to its P (it is not preempted until
// Unpin) and returns the P's id. Keep the pinned section short: no
// blocking, no waiting for another goroutine.
func Pin() uint32 { return uint32(runtime_procPin()) }

// Unpin undoes Pin.
func Unpin() { runtime_procUnpin() }

// shardCount is the number of shards for a new resource: GOMAXPROCS
// rounded up to a power of two, at most maxShards.
func shardCount() int {
	n := 1
	for n < runtime.GOMAXPROCS(0) && n < maxShards {
		n <<= 1
	}
	return n
}

const maxShards = 64
