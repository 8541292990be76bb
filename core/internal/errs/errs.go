// Package errs holds the sentinel errors of package core, so that core's
// internal packages (the heap, the stream-ordering engine) and the event
// log can return errors that wrap them without importing core. Package
// core exports each under its Err name (core.ErrOutOfMemory is
// errs.OutOfMemory), and documents them there.
package errs

import (
	"errors"
	"fmt"

	"github.com/rmmgo/rmmgo/cudart"
)

// The sentinels; core.ErrX documents each.
var (
	OutOfMemory     = errors.New("out of memory")
	BadAlloc        = errors.New("allocation failed")
	BadAlignment    = errors.New("unsupported alignment")
	InvalidArgument = errors.New("invalid argument")
	InvalidPointer  = errors.New("pointer not allocated by this resource")
	WrongDevice     = errors.New("resource used with the wrong device current")
	NotSupported    = errors.New("not supported")
	Closed          = errors.New("resource closed")
	CUDA            = errors.New("CUDA error")
)

// FromCUDA wraps the failure err of a CUDA call made by what (a resource's
// kind, and what it was doing), so that errors.Is finds OutOfMemory for
// cudaErrorMemoryAllocation, InvalidArgument for cudaErrorInvalidDevice and
// CUDA for anything else, and the *cudart.Error in every case.
func FromCUDA(what string, err error) error {
	if errors.Is(err, cudart.ErrMemoryAllocation) {
		return fmt.Errorf("%s: %w: %w", what, OutOfMemory, err)
	}
	if errors.Is(err, cudart.ErrInvalidDevice) {
		return fmt.Errorf("%s: %w: %w", what, InvalidArgument, err)
	}
	return fmt.Errorf("%s: %w: %w", what, CUDA, err)
}
