package core

import (
	"fmt"

	"github.com/rmmgo/rmmgo/core/internal/errs"
	"github.com/rmmgo/rmmgo/cudart"
)

// rt returns the process's CUDA runtime: real CUDA or the simulated device,
// as cudart.Default chose. Nothing in core asks which.
func rt() (cudart.Runtime, error) {
	r, err := cudart.Default()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCUDA, err)
	}
	return r, nil
}

// cudaError wraps the failure err of a CUDA call made by resource kind, so
// that errors.Is finds ErrOutOfMemory for cudaErrorMemoryAllocation and
// ErrCUDA for anything else, and the *cudart.Error in both cases.
func cudaError(kind string, err error) error { return errs.FromCUDA(kind, err) }

// SizeDefault, given as a size option, asks for RMM's default for that
// option (for example half of the free device memory for a pool's initial
// size). The C ABI spells it RMM_SIZE_DEFAULT.
const SizeDefault = ^uintptr(0)
