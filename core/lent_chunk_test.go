package core

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A chunk a live sub-allocator took from a base resource cannot be freed
// through the base resource (or an adaptor over it), even with the chunk's
// size: a pool's first block starts where its chunk does and may fill it,
// and such a free was accepted, so the base resource handed the memory out
// again while the pool still held it (issue 24 B). The sub-allocator's own
// give-back passes.
func TestLentChunkRefused(t *testing.T) {
	const chunk = 1 << 20
	subs := map[string]func(up Resource) (Resource, uintptr, error){
		"pool": func(up Resource) (Resource, uintptr, error) {
			r, err := NewPool(up, PoolOptions{InitialSize: chunk, MaximumSize: chunk})
			return r, chunk, err
		},
		"fixed_size": func(up Resource) (Resource, uintptr, error) {
			r, err := NewFixedSize(up, FixedSizeOptions{BlockSize: chunk, BlocksToPreallocate: 1})
			return r, chunk, err
		},
		"arena": func(up Resource) (Resource, uintptr, error) {
			r, err := NewArena(up, ArenaOptions{ArenaSize: 4 * chunk})
			return r, 4 * chunk, err
		},
	}
	for _, c := range baseCases {
		if strings.HasPrefix(c.kind, "cuda_async") {
			continue // their table is in C (asyncpath): not covered
		}
		for name, make := range subs {
			t.Run(c.kind+"/"+name, func(t *testing.T) {
				r := c.runtimeFor(t)
				base := c.build(t, r)
				st, err := NewStatistics(base)
				require.NoError(t, err)
				for _, up := range []Resource{base, st} {
					sub, size, err := make(up)
					require.NoError(t, err)
					bytes := uintptr(chunk)
					if name == "arena" {
						bytes = 1 << 20 // the arena's large blocks start at its base
					}
					p, err := sub.Allocate(DefaultStream, bytes, DefaultAlignment)
					require.NoError(t, err)
					err = base.Deallocate(DefaultStream, p, size, DefaultAlignment)
					requireIs(t, err, ErrInvalidPointer, "the chunk through the base resource")
					assert.Contains(t, err.Error(), "holds it")
					requireIs(t, base.DeallocateSync(p, size, DefaultAlignment), ErrInvalidPointer, "sync")
					requireIs(t, up.Deallocate(DefaultStream, p, size, DefaultAlignment), ErrInvalidPointer, "through the adaptor")
					tr, err := NewTracking(base, false)
					require.NoError(t, err)
					requireIs(t, tr.Deallocate(DefaultStream, p, size, DefaultAlignment), ErrInvalidPointer, "through tracking")
					q, err := base.Allocate(DefaultStream, size, DefaultAlignment)
					require.NoError(t, err)
					assert.NotEqual(t, p, q, "the base resource hands out memory of its own")
					require.NoError(t, base.Deallocate(DefaultStream, q, size, DefaultAlignment))
					require.NoError(t, sub.Deallocate(DefaultStream, p, bytes, DefaultAlignment))
					require.NoError(t, sub.(interface{ Close() error }).Close(), "the sub-allocator gives its chunk back")
				}
			})
		}
	}
}
