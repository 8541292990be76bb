package heap

import "sync/atomic"

// spinLock is a front shard's lock: held only by a goroutine pinned to its
// P, for a few nanoseconds, so a waiter yields rather than sleeps (see
// front.lockShard).
type spinLock struct{ v atomic.Uint32 }

func (l *spinLock) tryLock() bool { return l.v.CompareAndSwap(0, 1) }

func (l *spinLock) unlock() { release(&l.v) }
