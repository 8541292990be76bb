package heap

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
)

// TestTrimSettles: stream B's free memory could hold its request but in
// pieces, so the heap gives its wholly free
// chunk back before growing, which synchronizes the device. Stream A freed
// a block of the request's size and made no further call since (its memory
// is unordered for B). With SetTrimSettles B takes A's block after the
// give-back's synchronization; without, B grows. No synchronization is
// added: where nothing is given back, B grows without one.
func TestTrimSettles(t *testing.T) {
	const size = 64 << 10
	for _, on := range []bool{false, true} {
		h := newTestHeap(t, 2*size, 0, true)
		var given []Span
		h.SetTrim(func(spans []Span) error {
			given = append(given, spans...)
			return h.rt.DeviceSynchronize() // as a trim must, before giving back
		})
		h.SetTrimSettles(on)
		a, b := h.rt.NewStream(), h.rt.NewStream()
		// B's memory: the first chunk, two free halves of size between
		// live ones.
		var half [4]uintptr
		for i := range half {
			p, err := h.Allocate(b, size/2)
			require.NoError(t, err)
			half[i] = p
		}
		require.NoError(t, h.Deallocate(b, half[0], size/2))
		require.NoError(t, h.Deallocate(b, half[2], size/2))
		// A's chunk of x and w, and one A frees whole.
		x, err := h.Allocate(a, size)
		require.NoError(t, err)
		w, err := h.Allocate(a, size)
		require.NoError(t, err)
		y, err := h.Allocate(a, 4*size)
		require.NoError(t, err)
		require.Equal(t, 2, h.growths())
		require.NoError(t, h.Deallocate(a, y, 4*size))
		require.NoError(t, h.Deallocate(a, x, size))

		before := h.rt.Counts()
		z, err := h.Allocate(b, size)
		require.NoError(t, err)
		after := h.rt.Counts()
		require.Len(t, given, 1, "the wholly free chunk went back")
		assert.Equal(t, Span{y, 4 * size}, given[0])
		assert.Equal(t, before.Syncs+1, after.Syncs, "the give-back's synchronization only")
		if on {
			assert.Equal(t, x, z, "the block A freed, once the give-back synchronized")
			assert.Equal(t, 2, h.growths(), "no growth")
		} else {
			assert.NotEqual(t, x, z, "nothing orders B after A: B grows")
			assert.Equal(t, 3, h.growths())
		}

		// Nothing wholly free: B grows, without synchronizing.
		grows := h.growths()
		before = h.rt.Counts()
		v, err := h.Allocate(b, 32*size)
		require.NoError(t, err)
		assert.Equal(t, grows+1, h.growths())
		assert.Len(t, given, 1)
		assert.Equal(t, before.Syncs, h.rt.Counts().Syncs)

		for _, f := range []struct {
			s    cudart.Stream
			p, n uintptr
		}{{b, v, 32 * size}, {b, z, size}, {a, w, size}, {b, half[1], size / 2}, {b, half[3], size / 2}} {
			require.NoError(t, h.Deallocate(f.s, f.p, f.n))
		}
		assert.Zero(t, h.used())
	}
}
