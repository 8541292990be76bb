package main

/*
#include "capi_internal.h"
*/
import "C"

import (
	"sync"

	"github.com/rmmgo/rmmgo/core"
)

// The Go half of the pool-based kinds' C path (async_path.c): a handle of a
// core.CPathResource (cuda_async, cuda_async_managed, cuda_async_view) is
// published to the C mirror as it is made, with the resource's C state, and
// taken back before its resource is closed. rmm_allocate and
// rmm_deallocate then serve it in C; anything the C path does not serve
// comes to rmmgo_go_allocate and rmmgo_go_deallocate as before.

var apFuncsOnce sync.Once

// apPublish makes e servable from C when its resource has a C path.
// Called once per entry, as it is made.
func apPublish(e *entry) {
	c, ok := e.res.(core.CPathResource)
	if !ok {
		return
	}
	apFuncsOnce.Do(func() {
		a, d := core.CPathFuncs()
		C.rmmgo_ap_set_funcs(C.uintptr_t(a), C.uintptr_t(d))
	})
	p := c.CPath()
	C.rmmgo_ap_publish(C.uint64_t(e.handle), C.uintptr_t(p.State), C.uint64_t(p.Gen))
}

// apRetire takes e out of the mirror: runs when e's last reference went,
// before its resource is closed. Calls already inside the C path finish
// before the resource's Close goes on (it waits for them).
func apRetire(e *entry) { C.rmmgo_ap_unpublish(C.uint64_t(e.handle)) }
