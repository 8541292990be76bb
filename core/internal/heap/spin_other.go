//go:build !amd64 || race

package heap

import "sync/atomic"

// release unlocks with an atomic store (a release on every architecture,
// and what the race detector understands).
func release(v *atomic.Uint32) { v.Store(0) }
