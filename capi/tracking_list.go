package main

/*
#include "capi_internal.h"
*/
import "C"

import (
	"unsafe"

	"github.com/rmmgo/rmmgo/core"
)

// rmm_tracking_outstanding lists a tracking resource's outstanding
// allocations (RMM's tracking_resource_adaptor::get_outstanding_allocations,
// for rmm/mr/tracking_resource_adaptor.hpp): by address, up to capacity of
// them into ptrs and sizes, and how many there are in all into *count.

type trackingLister interface {
	Outstanding() []core.TrackedAllocation
}

//export rmm_tracking_outstanding
func rmm_tracking_outstanding(mr C.rmm_resource_t, ptrs *unsafe.Pointer, sizes *C.size_t, capacity C.size_t, count *C.size_t) status {
	const fn = "rmm_tracking_outstanding"
	if capacity > 0 && (ptrs == nil || sizes == nil) {
		return invalid(fn, "ptrs or sizes is NULL but capacity is %d", capacity)
	}
	return onKind(fn, mr, trackingKinds, func(t trackingLister, _ *entry) status {
		out := t.Outstanding()
		n := min(uintptr(len(out)), uintptr(capacity))
		if n > 0 {
			// The slots are void*, written as the device addresses they
			// are (not Go memory: no unsafe.Pointer is made of them).
			ps := unsafe.Slice((*uintptr)(unsafe.Pointer(ptrs)), n)
			ss := unsafe.Slice(sizes, n)
			for i := uintptr(0); i < n; i++ {
				ps[i] = out[i].Pointer
				ss[i] = C.size_t(out[i].Size)
			}
		}
		*count = C.size_t(len(out))
		return statusSuccess
	}, outParam{"count", count == nil})
}
