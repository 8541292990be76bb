package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFixedSizeOptions(t *testing.T) {
	up := newCountingUpstream(t)
	f, err := NewFixedSize(up, FixedSizeOptions{})
	require.NoError(t, err)
	assert.Equal(t, uintptr(1<<20), f.BlockSize(), "default block size 1 MiB")
	assert.Equal(t, []uintptr{128 << 20}, up.sizes, "128 blocks fetched at construction")
	require.NoError(t, f.Close())

	f, err = NewFixedSize(up, FixedSizeOptions{BlockSize: 1000, BlocksToPreallocate: 3})
	require.NoError(t, err)
	assert.Equal(t, uintptr(1024), f.BlockSize(), "rounded up to 256")
	assert.Equal(t, uintptr(3*1024), up.sizes[1])
	require.NoError(t, f.Close())

	_, err = NewFixedSize(up, FixedSizeOptions{BlocksToPreallocate: -1})
	requireIs(t, err, ErrInvalidArgument)
	_, err = NewFixedSize(nil, FixedSizeOptions{})
	requireIs(t, err, ErrInvalidArgument)
	up.setFail(true)
	_, err = NewFixedSize(up, FixedSizeOptions{})
	requireIs(t, err, ErrOutOfMemory)
	assert.Zero(t, up.liveCount())
}

func TestFixedSizeBlocks(t *testing.T) {
	up := newCountingUpstream(t)
	f := oneShard(t, func() (*FixedSize, error) {
		return NewFixedSize(up, FixedSizeOptions{BlockSize: 4096, BlocksToPreallocate: 4})
	})
	defer f.Close()
	_, err := f.Allocate(DefaultStream, 4097, 256)
	requireIs(t, err, ErrOutOfMemory)
	assert.Contains(t, err.Error(), "Maximum allocation size exceeded")
	seen := map[uintptr]bool{}
	var live []uintptr
	for i := 0; i < 6; i++ {
		x, err := f.Allocate(DefaultStream, uintptr(1+i*700), 256)
		require.NoError(t, err)
		require.False(t, seen[x])
		seen[x] = true
		live = append(live, x)
	}
	assert.Equal(t, []uintptr{4 * 4096, 4 * 4096}, up.sizes, "a second chunk when the first ran out")
	assert.Equal(t, live[0]+4096, live[1], "blocks are handed out in address order")
	requireIs(t, f.Deallocate(DefaultStream, live[0]+1024, 100, 256), ErrInvalidPointer, "inside a block")
	requireIs(t, f.Deallocate(DefaultStream, live[0], 5000, 256), ErrInvalidArgument, "more than a block")
	for i, x := range live {
		require.NoError(t, f.Deallocate(DefaultStream, x, uintptr(1+i*700), 256))
	}
	x, err := f.Allocate(DefaultStream, 10, 256)
	require.NoError(t, err)
	assert.Equal(t, live[len(live)-1], x, "last freed, first reused")
	require.NoError(t, f.Deallocate(DefaultStream, x, 10, 256))
	require.NoError(t, f.Close())
	assert.Zero(t, up.liveCount())
}

// TestFixedSizeExhaustion: a fixed-size resource whose upstream is full
// fails with ErrOutOfMemory and works again after frees.
func TestFixedSizeExhaustion(t *testing.T) {
	up := newCountingUpstream(t)
	up.limit = 8 * 4096
	f, err := NewFixedSize(up, FixedSizeOptions{BlockSize: 4096, BlocksToPreallocate: 8})
	require.NoError(t, err)
	defer f.Close()
	var live []uintptr
	for i := 0; i < 8; i++ {
		x, err := f.Allocate(DefaultStream, 4096, 256)
		require.NoError(t, err)
		live = append(live, x)
	}
	_, err = f.Allocate(DefaultStream, 4096, 256)
	requireIs(t, err, ErrOutOfMemory)
	assert.Contains(t, err.Error(), "fetching 8 blocks of 4096 bytes from the upstream")
	require.NoError(t, f.Deallocate(DefaultStream, live[5], 4096, 256))
	x, err := f.Allocate(DefaultStream, 4096, 256)
	require.NoError(t, err)
	assert.Equal(t, live[5], x)
	for _, x := range live {
		require.NoError(t, f.Deallocate(DefaultStream, x, 4096, 256))
	}
}

// TestFixedSizeIndex: the chunk index finds every block of many chunks
// spread over the address space, and nothing outside them.
func TestFixedSizeIndex(t *testing.T) {
	up := newCountingUpstream(t)
	f, err := NewFixedSize(up, FixedSizeOptions{BlockSize: 768, BlocksToPreallocate: 3})
	require.NoError(t, err)
	defer f.Close()
	var live []uintptr
	for i := 0; i < 600; i++ {
		x, err := f.Allocate(DefaultStream, 700, 256)
		require.NoError(t, err)
		live = append(live, x)
	}
	require.NoError(t, checkSpans(func() []span {
		s := make([]span, len(live))
		for i, x := range live {
			s[i] = span{x, 768, DefaultStream}
		}
		return s
	}()))
	for _, x := range live {
		require.NotNil(t, f.findChunk(x))
		require.NotNil(t, f.findChunk(x+767))
	}
	for _, x := range live {
		require.NoError(t, f.Deallocate(DefaultStream, x, 700, 256))
	}
	assert.Nil(t, f.findChunk(0x1000))
}
