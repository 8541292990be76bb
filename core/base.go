package core

import (
	"errors"
	"fmt"

	"github.com/rmmgo/rmmgo/cudart"
	"github.com/rmmgo/rmmgo/internal/cabi"
)

// Machinery shared by the base resources: the runtime and device they were
// made with, the request checks every Allocate starts with, the checked
// cudaFree (live_table.go says what is checked) and the translation of a
// failed free into ErrInvalidPointer.

// maxAllocation is the largest request a base resource passes to CUDA or to
// the C allocator (cabi.MaxAllocation, 2^57 bytes, says why): larger ones
// fail with ErrOutOfMemory before any call is made, and every size
// arithmetic below it (rounding up to 256, adding a header) cannot
// overflow.
const maxAllocation = cabi.MaxAllocation

// base is what every base resource records when it is made: the runtime it
// calls and the device that was current.
type base struct {
	rt  cudart.Runtime
	dev int
}

// newBase records r and the calling thread's current device.
func newBase(kind string, r cudart.Runtime) (base, error) {
	dev, err := r.GetDevice()
	if err != nil {
		return base{}, cudaError(kind, err)
	}
	return base{rt: r, dev: dev}, nil
}

// Device reports the device that was current when the resource was made.
func (b *base) Device() int { return b.dev }

// checkDevice enforces RMM's rule that a resource allocating device-specific
// memory is used while the device it was made on is current. It costs one
// GetDevice call.
func (b *base) checkDevice(kind string) error {
	cur, err := b.rt.GetDevice()
	if err != nil {
		return cudaError(kind, err)
	}
	if cur != b.dev {
		return fmt.Errorf("%s: %w: the resource was made on device %d but device %d is current (set device %d current on this thread first)",
			kind, ErrWrongDevice, b.dev, cur, b.dev)
	}
	return nil
}

// requestOK is the fast test every base Allocate starts with: true when
// bytes is neither 0 nor too large and alignment is a power of two no larger
// than DefaultAlignment. When it is false, rejectRequest says why.
func requestOK(bytes, alignment uintptr) bool {
	return bytes-1 < maxAllocation && alignment-1 < DefaultAlignment && alignment&(alignment-1) == 0
}

// rejectRequest explains a request requestOK refused: an error wrapping
// ErrBadAlignment for a bad alignment (checked first, so that a bad
// argument is reported even for zero bytes), nil for zero bytes (the
// caller returns 0), and an error wrapping ErrOutOfMemory for sizes no
// memory can hold.
func rejectRequest(kind string, bytes, alignment uintptr) error {
	if err := checkAlignment(kind, alignment, DefaultAlignment); err != nil {
		return err
	}
	if bytes == 0 {
		return nil
	}
	return fmt.Errorf("%s: %w: cannot allocate %d bytes (more than any address space holds)", kind, ErrOutOfMemory, bytes)
}

// freeError classifies the failure of a CUDA free (cudaFree, cudaFreeHost,
// cudaFreeAsync). CUDA answers memory it did not hand out, or memory already
// freed, with cudaErrorInvalidValue or cudaErrorInvalidDevicePointer; those
// become ErrInvalidPointer.
func freeError(kind string, ptr uintptr, err error) error {
	if errors.Is(err, cudart.ErrInvalidValue) || errors.Is(err, cudart.ErrInvalidDevicePointer) {
		return fmt.Errorf("%s: %w: %#x was not allocated by this kind of resource, or was already deallocated: %w",
			kind, ErrInvalidPointer, ptr, err)
	}
	return cudaError(kind, err)
}

// freeAlignmentOK is the test every Deallocate makes of its alignment
// (issue 24): a free with an alignment no allocation could have had (not a
// power of two) is refused, as Allocate refuses it, even where the
// resource does not need the alignment to find the memory.
func freeAlignmentOK(alignment uintptr) bool { return alignment&(alignment-1) == 0 && alignment != 0 }

// errFreeAlignment is the refusal of a free freeAlignmentOK refused.
func errFreeAlignment(kind string, ptr, alignment uintptr) error {
	return fmt.Errorf("%s: %w: deallocating %#x with alignment %d, which is not a power of two", kind, ErrBadAlignment, ptr, alignment)
}

// subFreeRefused is what every sub-allocator's Deallocate checks of a
// non-NULL ptr before it looks for the block (issue 24), nil when the free
// may go on: every block a sub-allocator hands out starts on a 256-byte
// boundary, so a pointer off one (an interior pointer: offsets 1..255
// share the block's index slot) is refused with ErrInvalidPointer; no
// sub-allocator hands out a pointer for 0 bytes, so a free of one with
// size 0 names a size the allocation did not have (ErrInvalidArgument);
// an alignment that is not a power of two, ErrBadAlignment.
func subFreeRefused(kind string, ptr, bytes, alignment uintptr) error {
	switch {
	case !freeAlignmentOK(alignment):
		return errFreeAlignment(kind, ptr, alignment)
	case ptr&(DefaultAlignment-1) != 0:
		return fmt.Errorf("%s: %w: %#x is not 256-byte aligned, so no block starts there (an interior pointer?)", kind, ErrInvalidPointer, ptr)
	case bytes == 0:
		return fmt.Errorf("%s: %w: deallocating %#x with size 0, but a zero-byte allocation returns NULL: free a block with the size it was allocated with", kind, ErrInvalidArgument, ptr)
	}
	return nil
}

// subFreeChecked makes the checks every sub-allocator's deallocation makes
// before it looks at its own state, in order: ptr 0 is a no-op, a free
// subFreeRefused refuses, a chunk another sub-allocator holds (lentHere),
// a size or alignment no allocation of self could have had. done reports
// that the deallocation ends here, with err (nil for ptr 0).
func subFreeChecked(kind string, self Resource, ptr, bytes, alignment uintptr) (done bool, err error) {
	if ptr == 0 {
		return true, nil
	}
	if err := subFreeRefused(kind, ptr, bytes, alignment); err != nil {
		return true, err
	}
	if err := lentHere(kind, self, ptr); err != nil {
		return true, err // a chunk another sub-allocator holds (lent_blocks.go)
	}
	if !subRequestOK(bytes, alignment) {
		if err := rejectRequest(kind, bytes, alignment); err != nil {
			return true, err
		}
	}
	return false, nil
}

// cudaFree frees ptr, handed out with bytes by a resource of kind whose
// allocations table t records, with cudaFree: only when t's record matches
// (see live_table.go), and putting the record back when cudaFree fails.
// ptr 0 is a no-op.
func cudaFree(r cudart.Runtime, kind string, t *liveTable, ptr, bytes, alignment uintptr) error {
	if ptr == 0 {
		return nil
	}
	if !freeAlignmentOK(alignment) {
		return errFreeAlignment(kind, ptr, alignment)
	}
	e, err := t.take(kind, ptr, bytes, 0)
	if err != nil {
		return err
	}
	if err := r.Free(ptr); err != nil {
		t.restore(ptr, e)
		return freeError(kind, ptr, err)
	}
	return nil
}

// allocError wraps the failure of a CUDA allocation call for bytes bytes.
func allocError(kind string, bytes uintptr, err error) error {
	return cudaError(fmt.Sprintf("%s: allocating %d bytes", kind, bytes), err)
}

// checkDeviceID validates a device id against the runtime's device count.
func checkDeviceID(r cudart.Runtime, dev int) error {
	n, err := r.GetDeviceCount()
	if err != nil {
		return cudaError("device", err)
	}
	if dev < 0 || dev >= n {
		return fmt.Errorf("%w: device %d does not exist (there are %d devices)", ErrInvalidArgument, dev, n)
	}
	return nil
}

// deviceAttr reads a device attribute, wrapping a failure.
func deviceAttr(kind string, r cudart.Runtime, attr cudart.DeviceAttr, dev int) (int, error) {
	v, err := r.DeviceGetAttribute(attr, dev)
	if err != nil {
		return 0, cudaError(fmt.Sprintf("%s: reading device %d attribute %d", kind, dev, attr), err)
	}
	return v, nil
}

// runtime returns the runtime the resource calls (for tests).
func (b *base) runtime() cudart.Runtime { return b.rt }
