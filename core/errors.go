package core

import (
	"github.com/rmmgo/rmmgo/core/internal/errs"
)

// Errors that classify a failure. Resources wrap them (with %w) in errors
// that also say what failed, so callers test with errors.Is. A failure of a
// CUDA call also wraps the *cudart.Error, so errors.Is(err,
// cudart.ErrMemoryAllocation) and friends work too.
var (
	// ErrOutOfMemory: the resource or its upstream has no room. It is what
	// RMM calls out_of_memory.
	ErrOutOfMemory = errs.OutOfMemory
	// ErrBadAlloc: an allocation failed for another reason (RMM's bad_alloc).
	ErrBadAlloc = errs.BadAlloc
	// ErrBadAlignment: the alignment is not a power of two, or larger than
	// the resource supports.
	ErrBadAlignment = errs.BadAlignment
	// ErrInvalidArgument: an argument is out of range (sizes, limits, nil
	// upstreams, unknown device ids).
	ErrInvalidArgument = errs.InvalidArgument
	// ErrInvalidPointer: Deallocate was given memory this resource did not
	// hand out, or memory already deallocated, where the resource can know.
	ErrInvalidPointer = errs.InvalidPointer
	// ErrWrongDevice: the resource was used while another device than its
	// own was current.
	ErrWrongDevice = errs.WrongDevice
	// ErrNotSupported: the device or runtime lacks a feature the resource
	// needs (pageable memory access, memory pools, ...).
	ErrNotSupported = errs.NotSupported
	// ErrClosed: the resource was closed.
	ErrClosed = errs.Closed
	// ErrCUDA: a CUDA call failed; the *cudart.Error is wrapped beside it.
	ErrCUDA = errs.CUDA
)
