package main

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core"
)

// A block the C cache handed out and recorded, freed through a path that
// reaches the pool without the cache (an adaptor C does not run, Go code),
// is freed once: the table forgets it, and a second free through any path
// is refused (issue 24: it was accepted, and the block handed out twice).

func TestThreadCacheFreeThroughAdaptorForgetsBlock(t *testing.T) {
	requireCache(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pool, e := newPoolEntry(t, 16<<20, 0)
	h := toHandle(e.handle)
	tr, err := core.NewTracking(pool, false)
	require.NoError(t, err)
	te, err := reg.add(tr, false, 0, nil)
	require.NoError(t, err)
	th := toHandle(te.handle)

	for _, bytes := range []cSizeT{256, 4096, 5000, 100000} {
		var p unsafe.Pointer
		require.Equal(t, statusSuccess, rmm_allocate(h, nil, bytes, 256, &p), lastMessage())
		live0, _, _, _ := tcCounts()
		require.Equal(t, statusSuccess, rmm_deallocate(th, nil, p, bytes, 256), "%d bytes: %s", bytes, lastMessage())
		live1, _, _, _ := tcCounts()
		assert.Equal(t, live0-1, live1, "the table forgot the block")
		assert.Equal(t, statusInvalidPointer, rmm_deallocate(h, nil, p, bytes, 256), "%d bytes: a second free through the pool", bytes)
		assert.Equal(t, statusInvalidPointer, rmm_deallocate(th, nil, p, bytes, 256), "%d bytes: a second free through the adaptor", bytes)
		var a, b unsafe.Pointer
		require.Equal(t, statusSuccess, rmm_allocate(h, nil, bytes, 256, &a), lastMessage())
		require.Equal(t, statusSuccess, rmm_allocate(h, nil, bytes, 256, &b), lastMessage())
		assert.NotEqual(t, a, b, "%d bytes: one address handed out twice", bytes)
		require.Equal(t, statusSuccess, rmm_deallocate(h, nil, a, bytes, 256), lastMessage())
		require.Equal(t, statusSuccess, rmm_deallocate(h, nil, b, bytes, 256), lastMessage())
	}

	// Go code freeing a block the cache holds (cached, not live) is refused,
	// and one the cache handed out is freed once.
	var p unsafe.Pointer
	require.Equal(t, statusSuccess, rmm_allocate(h, nil, 3000, 256, &p), lastMessage())
	require.Equal(t, statusSuccess, rmm_deallocate(h, nil, p, 3000, 256), lastMessage())
	assert.ErrorIs(t, pool.Deallocate(core.DefaultStream, uintptr(p), 3000, 256), core.ErrInvalidPointer)
	require.Equal(t, statusSuccess, rmm_allocate(h, nil, 3000, 256, &p), lastMessage())
	assert.ErrorIs(t, pool.Deallocate(core.DefaultStream, uintptr(p), 5000, 256), core.ErrInvalidArgument, "a size the pool does not take for it")
	require.NoError(t, pool.Deallocate(core.DefaultStream, uintptr(p), 3000, 256))
	assert.Equal(t, statusInvalidPointer, rmm_deallocate(h, nil, p, 3000, 256))
	assert.EqualValues(t, 0, pool.UsedBytes(), "the rounding of the block left with it")

	require.NoError(t, reg.releaseEntry(te))
	require.NoError(t, reg.releaseEntry(e))
}
