// Package cacheclock is the clock of the caches' policy windows
// (core/internal/cachepolicy): how long a resource has not asked its
// caches for memory (SpareAfter), how long failing allocations leave them
// alone (ReclaimQuiet), and, in the C ABI's per-thread cache, how long an
// exited thread's blocks wait (ExitedWait) and a cache has been alone
// (LoneAfter). It is monotonic time since the process started, plus what
// tests moved it on by (Advance), so that a test of a window waits for
// nothing.
package cacheclock

import (
	"sync"
	"sync/atomic"
	"time"
)

var (
	start  = time.Now()
	offset atomic.Int64

	mu    sync.Mutex
	hooks []func(time.Duration)
)

// Now returns the clock's time in nanoseconds.
func Now() int64 { return int64(time.Since(start)) + offset.Load() }

// Advance moves the clock on by d (for tests), and every clock that
// follows it (OnAdvance).
func Advance(d time.Duration) {
	mu.Lock()
	defer mu.Unlock()
	offset.Add(int64(d))
	for _, f := range hooks {
		f(d)
	}
}

// OnAdvance has f called with d by every Advance(d): for a clock kept
// elsewhere (the C cache's) that must move with this one.
func OnAdvance(f func(time.Duration)) {
	mu.Lock()
	defer mu.Unlock()
	hooks = append(hooks, f)
}
