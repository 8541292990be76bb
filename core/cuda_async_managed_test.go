package core

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
	"github.com/rmmgo/rmmgo/cudart/sim"
)

func TestCudaAsyncManagedRequirements(t *testing.T) {
	tests := []struct {
		name string
		cfg  sim.Config
		want string
	}{
		{"CUDA 12", sim.Config{RuntimeVersion: 12080}, "13.0 or later (runtime 12.8, driver 12.8)"},
		{"no concurrent managed access", sim.Config{NoConcurrentManaged: true}, "cudaDevAttrConcurrentManagedAccess"},
		{"no memory pools", sim.Config{NoMemoryPools: true}, "cudaDevAttrMemoryPoolsSupported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := newSimRuntime(t, tt.cfg)
			m, err := newCudaAsyncManaged(sim)
			requireIs(t, err, ErrNotSupported)
			assert.Nil(t, m)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestCudaAsyncManaged(t *testing.T) {
	r := testRuntime(t)
	m, err := NewCudaAsyncManaged()
	if errors.Is(err, ErrNotSupported) && !isSimulated(t) {
		t.Skipf("cuda_async_managed is not supported here: %v", err)
	}
	require.NoError(t, err)
	pool := m.PoolHandle()
	require.NotZero(t, pool)
	threshold, err := r.MemPoolGetAttribute(pool, cudart.MemPoolAttrReleaseThreshold)
	require.NoError(t, err)
	assert.Equal(t, uint64(math.MaxUint64), threshold)

	s := newStream(t, r)
	p, err := m.Allocate(s, 1<<20, DefaultAlignment)
	require.NoError(t, err)
	fillAndCheck(t, r, p, 1<<20, 0x6D, s)
	attrs, err := r.PointerGetAttributes(p)
	require.NoError(t, err)
	assert.Equal(t, cudart.MemoryTypeManaged, attrs.Type)

	require.NoError(t, m.Close())
	require.NoError(t, m.Close())
	assert.Zero(t, m.PoolHandle())
	_, err = m.Allocate(s, 256, DefaultAlignment)
	requireIs(t, err, ErrClosed)
	requireIs(t, m.Deallocate(s, p, 1<<20, DefaultAlignment), ErrClosed, "Close gave back the memory from before it")
	require.NoError(t, r.StreamSynchronize(s))
}
