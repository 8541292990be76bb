//go:build amd64 && !race

package heap

import (
	"sync/atomic"
	"unsafe"
)

// release stores 0 in v with a plain store: on amd64 a store is never
// reordered with the loads and stores before it, so it releases what the
// lock guarded without the full barrier (XCHG) of an atomic store. The
// compiler keeps it after them too: a store is never moved above earlier
// memory operations.
func release(v *atomic.Uint32) { *(*uint32)(unsafe.Pointer(v)) = 0 }
