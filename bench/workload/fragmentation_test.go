package workload

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core"
)

// TestFragmentationShape: on a resource that never fragments (fresh
// addresses, refusing only above its limit), every big request is served,
// everything is freed, and the counts add up; a limit below the big
// requests makes them fail with room counted only when live + request fit
// the cap.
func TestFragmentationShape(t *testing.T) {
	f := FragmentationFor(256 << 20)
	r := newFake()
	res, err := f.Run(r, core.DefaultStream)
	require.NoError(t, err)
	assert.Empty(t, r.live)
	assert.Equal(t, f.Rounds, res.Big)
	assert.Equal(t, res.Big, res.BigServed)
	assert.Zero(t, res.BigWithRoom)
	assert.Zero(t, res.FailedAllocs)
	assert.Equal(t, r.allocs+r.frees, res.Ops)
	assert.Equal(t, r.peak, res.PeakLive)
	assert.InDelta(t, 0.5, float64(res.PeakLive)/float64(f.Cap), 0.1, "peak live about half the cap")

	again, err := f.Run(newFake(), core.DefaultStream)
	require.NoError(t, err)
	assert.Equal(t, res, again, "a fixed seed makes the same requests")

	r = newFake()
	res, err = f.Run(noBigBlocks{r, f.MaxLarge}, core.DefaultStream)
	require.NoError(t, err)
	assert.Zero(t, res.BigServed)
	assert.Equal(t, res.Big, res.BigWithRoom, "the cap had room; the resource did not")
	assert.Empty(t, r.live)
}

// noBigBlocks refuses any allocation larger than limit: a resource that
// has the bytes but not in one piece.
type noBigBlocks struct {
	*fake
	limit uintptr
}

func (n noBigBlocks) Allocate(s core.Stream, b, a uintptr) (uintptr, error) {
	if b > n.limit {
		return 0, core.ErrOutOfMemory
	}
	return n.fake.Allocate(s, b, a)
}

// TestSplitmix64 pins the generator the C and Python versions share.
func TestSplitmix64(t *testing.T) {
	s := uint64(42)
	assert.Equal(t, []uint64{splitmix64(&s), splitmix64(&s)}, []uint64{0xbdd732262feb6e95, 0x28efe333b266f103})
}
