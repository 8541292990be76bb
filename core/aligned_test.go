package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAlignedConformance(t *testing.T) {
	adaptorConformance(t, "aligned", func(up Resource) (Adaptor, error) {
		return NewAligned(up, 4096, 64<<10)
	})
}

func TestAlignedRejectsBadAlignment(t *testing.T) {
	for _, a := range []uintptr{0, 3, 257, 1000, 4097} {
		_, err := NewAligned(newFake(), a, 0)
		assert.ErrorIs(t, err, ErrBadAlignment, "alignment %d", a)
	}
	for _, a := range []uintptr{1, 64, 256, 4096, 1 << 21} {
		_, err := NewAligned(newFake(), a, 0)
		assert.NoError(t, err, "alignment %d", a)
	}
}

func TestAlignedAlgorithm(t *testing.T) {
	tests := []struct {
		name              string
		alignment, thresh uintptr
		bytes, callAlign  uintptr
		wantUpstream      uintptr // bytes asked of the upstream
		wantOver          bool
		wantAlignedTo     uintptr
	}{
		{"default alignment passes through", 256, 0, 1000, 256, 1000, false, 256},
		{"small alignment is 256", 64, 0, 1000, 256, 1000, false, 256},
		{"over-aligned", 4096, 0, 1000, 256, 4096 + 4096 - 256, true, 4096},
		{"exact multiple", 4096, 0, 8192, 256, 8192 + 4096 - 256, true, 4096},
		{"below threshold passes through", 4096, 1 << 20, 1000, 256, 1000, false, 256},
		{"at threshold is aligned", 4096, 1000, 1000, 256, 4096 + 4096 - 256, true, 4096},
		{"2 MiB", 1 << 21, 0, 3 << 20, 256, (4 << 20) + (2 << 20) - 256, true, 1 << 21},
		{"per-call alignment raises it", 256, 0, 1000, 4096, 4096 + 4096 - 256, true, 4096},
		{"per-call alignment beats the threshold", 256, 1 << 20, 1000, 1024, 1024 + 1024 - 256, true, 1024},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			up := newFake()
			a, err := NewAligned(up, tc.alignment, tc.thresh)
			require.NoError(t, err)
			p, err := a.Allocate(DefaultStream, tc.bytes, tc.callAlign)
			require.NoError(t, err)
			assert.Zero(t, p%tc.wantAlignedTo, "pointer %#x aligned to %d", p, tc.wantAlignedTo)
			up.mu.Lock()
			require.Len(t, up.live, 1)
			for orig, al := range up.live {
				assert.Equal(t, tc.wantUpstream, al.size, "upstream request")
				assert.LessOrEqual(t, orig, p)
				assert.LessOrEqual(t, p+tc.bytes, orig+al.size, "the aligned block lies inside the upstream one")
				if !tc.wantOver {
					assert.Equal(t, orig, p)
				}
			}
			up.mu.Unlock()
			a.mu.Lock()
			assert.Equal(t, tc.wantOver, len(a.origins) == 1)
			a.mu.Unlock()
			require.NoError(t, a.Deallocate(DefaultStream, p, tc.bytes, tc.callAlign))
			assert.Zero(t, up.liveCount())
			assert.Empty(t, a.origins)
		})
	}
}

func TestAlignedActuallyMisalignedUpstream(t *testing.T) {
	// Make the fake's next address 256- but not 4096-aligned, so that the
	// adaptor must move the pointer inside the block.
	up := newFake()
	up.next = 1<<32 + 256
	a, err := NewAligned(up, 4096, 0)
	require.NoError(t, err)
	p, err := a.AllocateSync(5000, DefaultAlignment)
	require.NoError(t, err)
	assert.Zero(t, p%4096)
	assert.Equal(t, uintptr(1<<32+4096), p)
	require.NoError(t, a.DeallocateSync(p, 5000, DefaultAlignment))
	assert.Zero(t, up.liveCount())
}

func TestAlignedErrors(t *testing.T) {
	up := newFake()
	a, err := NewAligned(up, 4096, 0)
	require.NoError(t, err)
	p, err := a.Allocate(DefaultStream, 1000, DefaultAlignment)
	require.NoError(t, err)

	err = a.Deallocate(DefaultStream, p+4096, 1000, DefaultAlignment)
	assert.ErrorIs(t, err, ErrInvalidPointer, "unknown pointer")
	err = a.Deallocate(DefaultStream, p, 1000, 3)
	assert.ErrorIs(t, err, ErrBadAlignment)

	// A failed upstream free keeps the allocation, so that it can be freed.
	up.setFreeErr(ErrCUDA)
	require.Error(t, a.Deallocate(DefaultStream, p, 1000, DefaultAlignment))
	up.setFreeErr(nil)
	require.NoError(t, a.Deallocate(DefaultStream, p, 1000, DefaultAlignment))
	assert.ErrorIs(t, a.Deallocate(DefaultStream, p, 1000, DefaultAlignment), ErrInvalidPointer, "double free")

	_, err = a.Allocate(DefaultStream, ^uintptr(0)-100, DefaultAlignment)
	assert.ErrorIs(t, err, ErrOutOfMemory, "a size that overflows")
	up.setCapacity(1 << 20)
	_, err = a.Allocate(DefaultStream, 2<<20, DefaultAlignment)
	assert.ErrorIs(t, err, ErrOutOfMemory)
	assert.Empty(t, a.origins)
	assert.Equal(t, uintptr(4096), a.Alignment())
	assert.Zero(t, a.Threshold())
}

func TestAlignedConcurrent(t *testing.T) {
	up := newFake()
	a, err := NewAligned(up, 4096, 512)
	require.NoError(t, err)
	hammer(t, a, hammerOptions{sizes: []uintptr{600, 4096, 5000, 100000}, expect: 4096, sync: true})
	assert.Zero(t, up.liveCount())
	assert.Empty(t, a.origins)
}

// An alignment no allocation could ever have is refused when the adaptor is
// made (it was accepted, and every over-aligned allocation then failed).
func TestAlignedRejectsHugeAlignment(t *testing.T) {
	for _, a := range []uintptr{1 << 57, 1 << 62, 1 << 63} {
		_, err := NewAligned(newFake(), a, 0)
		requireIs(t, err, ErrBadAlignment, "alignment ", a)
		assert.Contains(t, err.Error(), "2^56")
	}
	a, err := NewAligned(newFake(), 1<<56, 0)
	require.NoError(t, err, "2^56 is the largest alignment accepted")
	assert.Equal(t, uintptr(1)<<56, a.Alignment())
}
