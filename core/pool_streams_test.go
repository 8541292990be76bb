package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPoolTrimTakesOtherStreamsMemory: stream B's free memory could hold
// its request but in pieces, so the pool gives its wholly free chunks back
// before growing, which synchronizes the device. Stream A freed a block of
// the request's size and made no call since (its memory is unordered for
// B). B takes A's block after the give-back's synchronization instead of
// growing, in the small heap and in the large one (heap.SetTrimSettles).
// Without it B grew: in the 16-stream soak most free memory waits in other
// streams' lists at any time, and the small heap held 4-6 times its live
// blocks.
func TestPoolTrimTakesOtherStreamsMemory(t *testing.T) {
	sim := simDevice(t)
	const mib = 1 << 20
	for _, tc := range []struct {
		name string
		blk  uintptr // every chunk holds two blocks of blk
	}{{"small", mib}, {"large", 4 * mib}} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newOrderingRuntime(t)
			up := newCountingUpstream(t)
			p, err := newPool(rt, up, PoolOptions{})
			require.NoError(t, err)
			defer p.Close()
			a, b := newStream(t, sim), newStream(t, sim)
			alloc := func(s Stream, n uintptr) uintptr {
				t.Helper()
				ptr, err := p.Allocate(s, n, 256)
				require.NoError(t, err)
				return ptr
			}
			free := func(s Stream, ptr, n uintptr) {
				t.Helper()
				require.NoError(t, p.Deallocate(s, ptr, n, 256))
			}
			chunk := func(s Stream) { // a chunk of 2*blk in s's list
				if tc.blk > smallBlock { // (the small heap grows by 2 MiB)
					free(s, alloc(s, 2*tc.blk), 2*tc.blk)
				}
			}
			// B's chunk: two free quarters between live ones.
			chunk(b)
			var q [4]uintptr
			for i := range q {
				q[i] = alloc(b, tc.blk/2)
			}
			free(b, q[0], tc.blk/2)
			free(b, q[2], tc.blk/2)
			// A's chunk of x and w, and memory A frees whole.
			chunk(a)
			x, w := alloc(a, tc.blk), alloc(a, tc.blk)
			u1, u2 := alloc(a, tc.blk), alloc(a, tc.blk)
			require.EqualValues(t, 6*tc.blk, p.PoolSize())
			free(a, u1, tc.blk)
			free(a, u2, tc.blk)
			free(a, x, tc.blk)

			before := rt.counts()
			z := alloc(b, tc.blk)
			after := rt.counts()
			assert.Equal(t, x, z, "A's block, once the give-back synchronized")
			assert.EqualValues(t, 4*tc.blk, p.PoolSize(), "u1 and u2's memory went back; no growth")
			assert.Equal(t, before[2]+1, after[2], "the give-back's device synchronization only")
			free(b, z, tc.blk)
			free(a, w, tc.blk)
			free(b, q[1], tc.blk/2)
			free(b, q[3], tc.blk/2)
		})
	}
}
