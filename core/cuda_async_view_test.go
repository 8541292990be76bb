package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCudaAsyncViewNullPool(t *testing.T) {
	v, err := NewCudaAsyncView(0)
	requireIs(t, err, ErrInvalidArgument)
	assert.Nil(t, v)
	assert.Contains(t, err.Error(), "null")
}

func TestCudaAsyncViewSharesPool(t *testing.T) {
	r := testRuntime(t)
	c := newTestCudaAsync(t, CudaAsyncOptions{})
	v, err := NewCudaAsyncView(c.PoolHandle())
	require.NoError(t, err)
	assert.Equal(t, c.PoolHandle(), v.PoolHandle())
	assert.True(t, v.Equal(c))
	assert.True(t, c.Equal(v))

	// Equal resources free each other's memory.
	s := newStream(t, r)
	p, err := v.Allocate(s, 1<<20, DefaultAlignment)
	require.NoError(t, err)
	fillAndCheck(t, r, p, 1<<20, 0x5E, s)
	require.NoError(t, c.Deallocate(s, p, 1<<20, DefaultAlignment))
	p, err = c.Allocate(s, 1<<20, DefaultAlignment)
	require.NoError(t, err)
	require.NoError(t, v.Deallocate(s, p, 1<<20, DefaultAlignment))
	require.NoError(t, r.StreamSynchronize(s))
}

// A handle that is not a memory pool is refused when the view is made (it
// was accepted, and every allocation then failed with cudaErrorInvalidValue).
// The simulated device reports unknown pool handles; on a GPU a forged
// handle may crash the driver instead, as in CUDA itself.
func TestCudaAsyncViewRejectsForgedPool(t *testing.T) {
	if !isSimulated(t) {
		t.Skip("a forged pool handle is undefined behaviour in CUDA: only the simulated device reports it")
	}
	v, err := NewCudaAsyncView(0xdeadbeef)
	requireIs(t, err, ErrInvalidArgument)
	assert.Nil(t, v)
	assert.Contains(t, err.Error(), "0xdeadbeef is not a CUDA memory pool")

	// A pool that existed and was destroyed is no pool either.
	c := newTestCudaAsync(t, CudaAsyncOptions{})
	h := c.PoolHandle()
	require.NoError(t, c.Close())
	_, err = NewCudaAsyncView(h)
	requireIs(t, err, ErrInvalidArgument)
}
