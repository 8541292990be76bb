package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestArenaTakesRoomFromOtherStreamsSuperblocks: streams come and go, each
// leaving one live block in the superblock it used (a block its thread
// frees later on the default stream, as the stress program's streams
// scenario does; a thread cache holding blocks does the same). Every
// superblock then belongs to the list of a destroyed stream, mostly free,
// and no superblock is wholly free to go back to the global arena. A new
// stream must still be served from that free room, after a device
// synchronization makes it idle for every stream. Before, it ran out of
// memory with 1/8 of the arena live (on an H100, a 256 MiB arena failed
// with at most 32 MiB live after a few hundred destroyed streams).
func TestArenaTakesRoomFromOtherStreamsSuperblocks(t *testing.T) {
	r := testRuntime(t)
	up := newCountingUpstream(t)
	const sbs = 16
	a := oneShard(t, func() (*Arena, error) { return newArena(r, up, ArenaOptions{ArenaSize: sbs * superblockSize}) })
	const n = superblockSize / 8
	var held []uintptr
	for i := 0; i < sbs; i++ {
		s, err := r.StreamCreate(0)
		require.NoError(t, err)
		var ps [8]uintptr
		for j := range ps {
			ps[j], err = a.Allocate(s, n, DefaultAlignment)
			require.NoError(t, err, "stream %d, block %d", i, j)
		}
		for _, p := range ps[1:] {
			require.NoError(t, a.Deallocate(s, p, n, DefaultAlignment))
		}
		held = append(held, ps[0])
		require.NoError(t, r.StreamSynchronize(s))
		require.NoError(t, r.StreamDestroy(s))
	}
	// 2 MiB live of 16 MiB, in 16 superblocks of destroyed streams.
	s := newStream(t, r)
	var got []uintptr
	for i := 0; i < 7*sbs; i++ {
		p, err := a.Allocate(s, n, DefaultAlignment)
		require.NoError(t, err, "allocation %d, with %d bytes live of %d", i, (len(held)+len(got))*n, sbs*superblockSize)
		got = append(got, p)
	}
	fillAndCheck(t, r, got[0], n, 0x5c, s)
	for _, p := range got {
		require.NoError(t, a.Deallocate(s, p, n, DefaultAlignment))
	}
	for _, p := range held {
		require.NoError(t, a.Deallocate(DefaultStream, p, n, DefaultAlignment))
	}
	require.NoError(t, a.Close())
	assert.Zero(t, up.liveBytes())
}
