package core

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTrackingConformance(t *testing.T) {
	for _, stacks := range []bool{false, true} {
		t.Run(fmt.Sprint("stacks=", stacks), func(t *testing.T) {
			adaptorConformance(t, "tracking", func(up Resource) (Adaptor, error) {
				return NewTracking(up, stacks)
			})
		})
	}
}

func TestTrackingOutstanding(t *testing.T) {
	up := newFake()
	tr, err := NewTracking(up, false)
	require.NoError(t, err)
	assert.False(t, tr.CapturesStacks())
	p1, err := tr.Allocate(Stream(7), 1000, DefaultAlignment)
	require.NoError(t, err)
	p2, err := tr.AllocateSync(1, DefaultAlignment)
	require.NoError(t, err)
	z, err := tr.Allocate(DefaultStream, 0, DefaultAlignment)
	require.NoError(t, err)
	assert.Equal(t, uintptr(1001), tr.AllocatedBytes(), "requested bytes")
	assert.Equal(t, 2, tr.OutstandingCount(), "zero-byte allocations are not tracked")

	out := tr.Outstanding()
	require.Len(t, out, 2)
	assert.Less(t, out[0].Pointer, out[1].Pointer, "sorted by address")
	assert.Equal(t, TrackedAllocation{Pointer: p1, Size: 1000, Stream: 7}, out[0])
	assert.Equal(t, TrackedAllocation{Pointer: p2, Size: 1, Stream: DefaultStream}, out[1])

	want := fmt.Sprintf("Outstanding Allocations:\n%#x: 1000 B\n%#x: 1 B\n", p1, p2)
	assert.Equal(t, want, tr.Report())

	require.NoError(t, tr.Deallocate(DefaultStream, z, 0, DefaultAlignment))
	require.NoError(t, tr.Deallocate(Stream(7), p1, 1000, DefaultAlignment))
	require.NoError(t, tr.DeallocateSync(p2, 1, DefaultAlignment))
	assert.Zero(t, tr.AllocatedBytes())
	assert.Empty(t, tr.Outstanding())
	assert.Equal(t, "Outstanding Allocations:\n", tr.Report())
	ms, n := tr.Mismatches()
	assert.Empty(t, ms)
	assert.Zero(t, n)
}

//go:noinline
func allocateHere(t *testing.T, r Resource, n uintptr) uintptr {
	p, err := r.Allocate(DefaultStream, n, DefaultAlignment)
	require.NoError(t, err)
	return p
}

func TestTrackingStacks(t *testing.T) {
	up := newFake()
	tr, err := NewTracking(up, true)
	require.NoError(t, err)
	p := allocateHere(t, tr, 4096)
	q, err := tr.AllocateSync(8, DefaultAlignment)
	require.NoError(t, err)
	out := tr.Outstanding()
	require.Len(t, out, 2)
	var got TrackedAllocation
	for _, a := range out {
		if a.Pointer == p {
			got = a
		}
	}
	require.NotEmpty(t, got.Stack)
	assert.Contains(t, got.Stack[0], "core.allocateHere", "the first frame is the caller of Allocate")
	assert.Contains(t, got.Stack[0], "tracking_test.go:")
	assert.Contains(t, got.Stack[1], "core.TestTrackingStacks")
	assert.LessOrEqual(t, len(got.Stack), maxStackFrames)
	for _, a := range out {
		if a.Pointer == q {
			assert.Contains(t, a.Stack[0], "core.TestTrackingStacks")
		}
	}

	report := tr.Report()
	assert.Regexp(t, regexp.MustCompile(fmt.Sprintf(`(?m)^%#x: 4096 B : callstack:\n#0 in .*core\.allocateHere \(.*tracking_test\.go:\d+\)\n#1 in .*core\.TestTrackingStacks`, p)), report)
	require.NoError(t, tr.Deallocate(DefaultStream, p, 4096, DefaultAlignment))
	require.NoError(t, tr.DeallocateSync(q, 8, DefaultAlignment))
	assert.Equal(t, "Outstanding Allocations:\n", tr.Report())
}

func TestTrackingMismatches(t *testing.T) {
	up := newFake()
	tr, err := NewTracking(up, false)
	require.NoError(t, err)
	p, err := tr.Allocate(DefaultStream, 1000, DefaultAlignment)
	require.NoError(t, err)

	// Wrong size: passed on; the fake upstream rejects it, so nothing is
	// recorded and the allocation stays tracked because it was not freed.
	err = tr.Deallocate(DefaultStream, p, 999, DefaultAlignment)
	require.ErrorIs(t, err, ErrInvalidPointer, "the upstream's answer")
	assert.Equal(t, uintptr(1000), tr.AllocatedBytes())
	assert.Equal(t, 1, tr.OutstandingCount())

	// Unknown pointer: passed on, rejected, not recorded.
	err = tr.Deallocate(DefaultStream, p+1<<20, 10, DefaultAlignment)
	require.ErrorIs(t, err, ErrInvalidPointer)
	_, n := tr.Mismatches()
	require.Zero(t, n, "frees the upstream refused are the caller's errors, not mismatches")

	// A wrong size the upstream accepts (a fixed-size resource frees any
	// size up to its block) is recorded.
	fs, err := NewFixedSize(up, FixedSizeOptions{BlockSize: 4096, BlocksToPreallocate: 4})
	require.NoError(t, err)
	trf, err := NewTracking(fs, false)
	require.NoError(t, err)
	f, err := trf.Allocate(DefaultStream, 3000, DefaultAlignment)
	require.NoError(t, err)
	require.NoError(t, trf.Deallocate(DefaultStream, f, 4000, DefaultAlignment))
	fms, _ := trf.Mismatches()
	assert.Equal(t, []TrackingMismatch{{Pointer: f, Size: 4000, TrackedSize: 3000, Known: true}}, fms)
	assert.Zero(t, trf.AllocatedBytes())
	require.NoError(t, fs.Close())

	// Memory from the upstream directly, freed through the adaptor: the
	// upstream frees it, the adaptor records the mismatch.
	q, err := up.Allocate(DefaultStream, 64, DefaultAlignment)
	require.NoError(t, err)
	require.NoError(t, tr.Deallocate(DefaultStream, q, 64, DefaultAlignment))

	ms, n := tr.Mismatches()
	require.Equal(t, 1, n)
	assert.Equal(t, []TrackingMismatch{{Pointer: q, Size: 64}}, ms)
	report := tr.Report()
	assert.Contains(t, report, "Mismatched deallocations: 1\n")
	assert.Contains(t, report, fmt.Sprintf("deallocating %#x (64 B), which is not tracked", q))
	assert.Contains(t, trf.Report(), fmt.Sprintf("deallocating %#x with size 4000 B, but it was allocated with size 3000 B", f))

	require.NoError(t, tr.Deallocate(DefaultStream, p, 1000, DefaultAlignment))
	assert.Zero(t, tr.AllocatedBytes())
	assert.Zero(t, up.liveCount())
	assert.True(t, strings.HasPrefix(tr.Report(), "Outstanding Allocations:\nMismatched"))
}

func TestTrackingConcurrent(t *testing.T) {
	for _, stacks := range []bool{false, true} {
		up := newFake()
		tr, err := NewTracking(up, stacks)
		require.NoError(t, err)
		hammer(t, tr, hammerOptions{sync: true})
		assert.Zero(t, tr.AllocatedBytes())
		assert.Zero(t, tr.OutstandingCount())
		_, n := tr.Mismatches()
		assert.Zero(t, n, "address reuse across goroutines is never mistaken for a mismatch")
		assert.Zero(t, up.liveCount())
	}
}
