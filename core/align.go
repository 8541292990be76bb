package core

import (
	"fmt"

	"github.com/rmmgo/rmmgo/core/internal/addr"
)

// checkAlignment validates an alignment argument: a power of two, and at
// most max when max is not 0.
func checkAlignment(kind string, alignment, max uintptr) error {
	if !addr.IsPow2(alignment) {
		return fmt.Errorf("%s: %w: %d is not a power of two", kind, ErrBadAlignment, alignment)
	}
	if max != 0 && alignment > max {
		return fmt.Errorf("%s: %w: %d is larger than %d (wrap the resource in an aligned adaptor for more)", kind, ErrBadAlignment, alignment, max)
	}
	return nil
}
