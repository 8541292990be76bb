package main

/*
#include "capi_internal.h"

// rmm_deallocate and rmm_deallocate_sync with the pointer as an integer
// (for Go tests, which hold device addresses as uintptr).
static rmm_status rmmgo_ap_test_free(uintptr_t mr, uintptr_t stream, uintptr_t ptr, size_t bytes) {
  return rmm_deallocate((rmm_resource_t)mr, (rmm_stream_t)stream, (void*)ptr, bytes, RMM_DEFAULT_ALIGNMENT);
}
static rmm_status rmmgo_ap_test_free_sync(uintptr_t mr, uintptr_t ptr, size_t bytes) {
  return rmm_deallocate_sync((rmm_resource_t)mr, (void*)ptr, bytes, RMM_DEFAULT_ALIGNMENT);
}
*/
import "C"

import (
	"sync"

	"github.com/rmmgo/rmmgo/internal/fastpath"
)

// The Go half of the pool-based kinds' C path (async_path.c): a handle of a
// fastpath.CPathResource (cuda_async, cuda_async_managed, cuda_async_view) is
// published to the C mirror as it is made, with the resource's C state, and
// taken back before its resource is closed. rmm_allocate and
// rmm_deallocate then serve it in C; anything the C path does not serve
// comes to rmmgo_go_allocate and rmmgo_go_deallocate as before.

var apFuncsOnce sync.Once

// apPublish makes e servable from C when its resource has a C path: false
// when it has none. Called once per entry, as it is made (mirrorPublish).
// Calls already inside the C path when the handle is taken back
// (mirrorRetire) finish before the resource's Close goes on (it waits for
// them).
func apPublish(e *entry) bool {
	c, ok := e.res.(fastpath.CPathResource)
	if !ok {
		return false
	}
	p := c.CPath()
	apFuncsOnce.Do(func() { C.rmmgo_ap_set_funcs(C.uintptr_t(p.Allocate), C.uintptr_t(p.Deallocate)) })
	pub := C.rmmgo_publication{tag: C.RMMGO_MIRROR_ASYNC, ap_state: C.uintptr_t(p.State), ap_gen: C.uint64_t(p.Gen)}
	C.rmmgo_mirror_publish(C.uint64_t(e.handle), &pub)
	return true
}

// apServedMine reports how many calls the C path served on the calling
// thread (for tests, on a goroutine locked to its thread).
func apServedMine() uint64 { return uint64(C.rmmgo_ap_served_mine()) }

// deallocateOn and deallocateSyncAt are rmm_deallocate and
// rmm_deallocate_sync of p (for tests).
func deallocateOn(h, stream, p uintptr, n uint64) status {
	return C.rmmgo_ap_test_free(C.uintptr_t(h), C.uintptr_t(stream), C.uintptr_t(p), C.size_t(n))
}

func deallocateSyncAt(h, p uintptr, n uint64) status {
	return C.rmmgo_ap_test_free_sync(C.uintptr_t(h), C.uintptr_t(p), C.size_t(n))
}
