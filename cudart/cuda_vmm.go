//go:build cgo && unix

package cudart

// The real backend's VirtualMemory: the driver's cuMem* functions, which
// openRuntime took from the runtime with cudaGetDriverEntryPointByVersion
// (slots left at 0 where the runtime has no such entry point, or the driver
// lacks the function).

/*
#include "calls_generated.h"
*/
import "C"

import (
	"runtime"
)

var _ VirtualMemory = (*cudaRuntime)(nil)

// driverCall runs the driver function fn through call, which returns its
// CUresult. A thread on which the runtime has made no context current yet
// gets CUDA_ERROR_INVALID_CONTEXT from the driver: the call is then made
// again after cudaSetDevice has made the thread's current device's primary
// context current, on the same thread.
func (c *cudaRuntime) driverCall(fn string, call func() C.int32_t) error {
	if c.slot(fn) == 0 {
		return c.noDriverFunc(fn)
	}
	r := call()
	if r == cuErrorInvalidContext {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if d := C.rmmgo_call_cudaGetDevice(c.tbl); d.err == 0 {
			if C.rmmgo_call_cudaSetDevice(c.tbl, d.device) == 0 {
				r = call()
			}
		}
	}
	if r != 0 {
		return NewDriverError(fn, ErrorCode(r), "")
	}
	return nil
}

// noDriverFunc says why the driver function fn is not there.
func (c *cudaRuntime) noDriverFunc(fn string) error {
	if c.slot("cudaGetDriverEntryPointByVersion") == 0 {
		return NewDriverError(fn, ErrorNotSupported,
			"CUDA runtime "+versionString(c.runtimeVersion)+" has no cudaGetDriverEntryPointByVersion (CUDA 12.5 and later), through which rmmgo takes the driver's virtual memory functions")
	}
	return NewDriverError(fn, ErrorNotSupported, "the CUDA driver ("+versionString(c.driverVersion)+") does not hand out this function")
}

func cMemLocation(loc MemLocation) C.rmmgo_CUmemLocation {
	return C.rmmgo_CUmemLocation{_type: C.int32_t(loc.Type), id: C.int(loc.ID)}
}

// cAllocProp lays p out as CUmemAllocationProp, every other field zero.
func cAllocProp(p MemAllocationProp) C.rmmgo_CUmemAllocationProp {
	var cp C.rmmgo_CUmemAllocationProp
	cp._type = C.int32_t(p.Type)
	cp.requestedHandleTypes = C.int32_t(p.RequestedHandleTypes)
	cp.location = cMemLocation(p.Location)
	return cp
}

// MemGetAllocationGranularity is cuMemGetAllocationGranularity.
func (c *cudaRuntime) MemGetAllocationGranularity(prop MemAllocationProp, option MemGranularityOption) (uintptr, error) {
	var g uintptr
	err := c.driverCall("cuMemGetAllocationGranularity", func() C.int32_t {
		r := C.rmmgo_call_cuMemGetAllocationGranularity(c.tbl, cAllocProp(prop), C.int32_t(option))
		g = uintptr(r.granularity)
		return r.err
	})
	return g, err
}

// MemAddressReserve is cuMemAddressReserve with no hint and no flags.
func (c *cudaRuntime) MemAddressReserve(size, alignment uintptr) (uintptr, error) {
	var p uintptr
	err := c.driverCall("cuMemAddressReserve", func() C.int32_t {
		r := C.rmmgo_call_cuMemAddressReserve(c.tbl, C.size_t(size), C.size_t(alignment), 0, 0)
		p = uintptr(r.ptr)
		return r.err
	})
	return p, err
}

// MemAddressFree is cuMemAddressFree.
func (c *cudaRuntime) MemAddressFree(ptr, size uintptr) error {
	return c.driverCall("cuMemAddressFree", func() C.int32_t {
		return C.rmmgo_call_cuMemAddressFree(c.tbl, C.rmmgo_CUdeviceptr(ptr), C.size_t(size))
	})
}

// MemCreate is cuMemCreate with no flags.
func (c *cudaRuntime) MemCreate(size uintptr, prop MemAllocationProp) (MemHandle, error) {
	var h MemHandle
	err := c.driverCall("cuMemCreate", func() C.int32_t {
		r := C.rmmgo_call_cuMemCreate(c.tbl, C.size_t(size), cAllocProp(prop), 0)
		h = MemHandle(r.handle)
		return r.err
	})
	return h, err
}

// MemRelease is cuMemRelease.
func (c *cudaRuntime) MemRelease(h MemHandle) error {
	return c.driverCall("cuMemRelease", func() C.int32_t {
		return C.rmmgo_call_cuMemRelease(c.tbl, C.rmmgo_CUmemGenericAllocationHandle(h))
	})
}

// MemMap is cuMemMap with no flags.
func (c *cudaRuntime) MemMap(ptr, size, offset uintptr, h MemHandle) error {
	return c.driverCall("cuMemMap", func() C.int32_t {
		return C.rmmgo_call_cuMemMap(c.tbl, C.rmmgo_CUdeviceptr(ptr), C.size_t(size), C.size_t(offset),
			C.rmmgo_CUmemGenericAllocationHandle(h), 0)
	})
}

// MemUnmap is cuMemUnmap.
func (c *cudaRuntime) MemUnmap(ptr, size uintptr) error {
	return c.driverCall("cuMemUnmap", func() C.int32_t {
		return C.rmmgo_call_cuMemUnmap(c.tbl, C.rmmgo_CUdeviceptr(ptr), C.size_t(size))
	})
}

// MemSetAccess is cuMemSetAccess, one call per descriptor (each sets only
// its own location's access, so that is the same as one call with all).
func (c *cudaRuntime) MemSetAccess(ptr, size uintptr, desc ...MemAccessDesc) error {
	for _, d := range desc {
		cd := C.rmmgo_CUmemAccessDesc{location: cMemLocation(d.Location), flags: C.int32_t(d.Flags)}
		err := c.driverCall("cuMemSetAccess", func() C.int32_t {
			return C.rmmgo_call_cuMemSetAccess(c.tbl, C.rmmgo_CUdeviceptr(ptr), C.size_t(size), cd, 1)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// MemGetAccess is cuMemGetAccess.
func (c *cudaRuntime) MemGetAccess(loc MemLocation, ptr uintptr) (MemAccessFlags, error) {
	var f MemAccessFlags
	err := c.driverCall("cuMemGetAccess", func() C.int32_t {
		r := C.rmmgo_call_cuMemGetAccess(c.tbl, cMemLocation(loc), C.rmmgo_CUdeviceptr(ptr))
		f = MemAccessFlags(r.flags)
		return r.err
	})
	return f, err
}
