package core

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLimitingConformance(t *testing.T) {
	adaptorConformance(t, "limiting", func(up Resource) (Adaptor, error) {
		return NewLimiting(up, 1<<40, DefaultAlignment)
	})
	for _, a := range []uintptr{0, 3, 100} {
		_, err := NewLimiting(newFake(), 1<<20, a)
		assert.ErrorIs(t, err, ErrBadAlignment, "alignment %d", a)
	}
}

func TestLimitingAccounting(t *testing.T) {
	up := newFake()
	l, err := NewLimiting(up, 4096, 1024)
	require.NoError(t, err)
	assert.Equal(t, uintptr(4096), l.AllocationLimit())

	p1, err := l.Allocate(DefaultStream, 1, DefaultAlignment)
	require.NoError(t, err)
	assert.Equal(t, uintptr(1024), l.AllocatedBytes(), "charged rounded up to the alignment")
	p2, err := l.AllocateSync(2048, DefaultAlignment)
	require.NoError(t, err)
	assert.Equal(t, uintptr(3072), l.AllocatedBytes())

	_, err = l.Allocate(DefaultStream, 1025, DefaultAlignment)
	require.ErrorIs(t, err, ErrOutOfMemory)
	assert.Contains(t, err.Error(), "Exceeded memory limit")
	assert.Equal(t, uintptr(3072), l.AllocatedBytes(), "a refused allocation charges nothing")
	assert.Equal(t, int64(2), up.allocs.Load()+up.allocSyncs.Load(), "a refused allocation never reaches the upstream")

	p3, err := l.Allocate(DefaultStream, 1024, DefaultAlignment)
	require.NoError(t, err, "exactly up to the limit")
	assert.Equal(t, uintptr(4096), l.AllocatedBytes())

	require.NoError(t, l.Deallocate(DefaultStream, p1, 1, DefaultAlignment))
	require.NoError(t, l.DeallocateSync(p2, 2048, DefaultAlignment))
	require.NoError(t, l.Deallocate(DefaultStream, p3, 1024, DefaultAlignment))
	assert.Zero(t, l.AllocatedBytes())

	_, err = l.Allocate(DefaultStream, ^uintptr(0)-10, DefaultAlignment)
	require.ErrorIs(t, err, ErrOutOfMemory, "a size that overflows when rounded")
	assert.Zero(t, l.AllocatedBytes())
}

func TestLimitingRollback(t *testing.T) {
	up := newFake()
	l, err := NewLimiting(up, 1<<20, DefaultAlignment)
	require.NoError(t, err)
	up.failNext(1)
	_, err = l.Allocate(DefaultStream, 1000, DefaultAlignment)
	require.ErrorIs(t, err, ErrOutOfMemory)
	assert.Zero(t, l.AllocatedBytes(), "the charge is taken back when the upstream fails")

	p, err := l.Allocate(DefaultStream, 1000, DefaultAlignment)
	require.NoError(t, err)
	up.setFreeErr(ErrCUDA)
	require.ErrorIs(t, l.Deallocate(DefaultStream, p, 1000, DefaultAlignment), ErrCUDA)
	assert.Equal(t, uintptr(1024), l.AllocatedBytes(), "memory that was not freed stays charged")
	up.setFreeErr(nil)
	require.NoError(t, l.Deallocate(DefaultStream, p, 1000, DefaultAlignment))
	assert.Zero(t, l.AllocatedBytes())
}

func TestLimitingNeverExceedsUnderContention(t *testing.T) {
	up := newFake()
	const limit = 64 << 10
	l, err := NewLimiting(up, limit, DefaultAlignment)
	require.NoError(t, err)
	var live, peak atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				p, err := l.Allocate(DefaultStream, 4096, DefaultAlignment)
				if err != nil {
					continue
				}
				v := live.Add(4096)
				for {
					pk := peak.Load()
					if v <= pk || peak.CompareAndSwap(pk, v) {
						break
					}
				}
				live.Add(-4096)
				if err := l.Deallocate(DefaultStream, p, 4096, DefaultAlignment); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, peak.Load(), int64(limit))
	assert.Zero(t, l.AllocatedBytes())
	hammer(t, l, hammerOptions{allowOOM: true, sync: true})
	assert.Zero(t, l.AllocatedBytes())
	assert.Zero(t, up.liveCount())
}

// A limit of 0 lets nothing through: refused when the adaptor is made (it
// was accepted). So is an alignment no allocation could have.
func TestLimitingRejectsZeroLimitAndHugeAlignment(t *testing.T) {
	_, err := NewLimiting(newFake(), 0, DefaultAlignment)
	requireIs(t, err, ErrInvalidArgument)
	assert.Contains(t, err.Error(), "limit of 0 bytes")
	_, err = NewLimiting(newFake(), 1<<20, 1<<62)
	requireIs(t, err, ErrBadAlignment)
	l, err := NewLimiting(newFake(), 1, DefaultAlignment)
	require.NoError(t, err, "the smallest limit")
	assert.Equal(t, uintptr(1), l.AllocationLimit())
}
