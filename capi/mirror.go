package main

/*
#include "capi_internal.h"
*/
import "C"

// The registry's mirror in C (mirror.h, mirror.c): for each live handle,
// which C path serves rmm_allocate and rmm_deallocate for it -- the
// per-thread cache (thread_cache.go) or the pool-based kinds' C path
// (async_path.go) -- or none (Go serves it). The registry updates it
// through these two calls only.

// mirrorPublish publishes e with the tag of the C path that serves it, if
// one does. Called once per entry, as it is made, before any call can
// look it up.
func mirrorPublish(e *entry) {
	if !tcPublish(e) {
		apPublish(e)
	}
}

// mirrorRetire takes e out of the mirror when its last reference went,
// before its resource is closed: from then on its calls go to Go, which
// refuses them. Then the cache lets go of e's blocks (tcRetire).
func mirrorRetire(e *entry) {
	C.rmmgo_mirror_unpublish(C.uint64_t(e.handle))
	tcRetire(e)
}
