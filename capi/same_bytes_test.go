package main

// Never the same bytes twice (issue 24), through the C entry points.

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFreeThroughAdaptorThenHandle: a block the pool's handle handed out
// (from its per-thread cache) freed through an adaptor over the pool, and
// then through the pool's handle, or the other way round. Before, with the
// cache on, both frees were accepted: the adaptor's went to Go, which gave
// the block back, and left the table's LIVE entry, so the cache took the
// second free too and handed the block out twice. Exactly one of the two
// frees must be accepted, with the cache on or off.
func TestFreeThroughAdaptorThenHandle(t *testing.T) {
	for _, ad := range []int{kThreadSafe, kTracking, kPrefetch, kStatistics} {
		for _, n := range []uint64{1000, 4096, 20000} {
			for _, adaptorFirst := range []bool{true, false} {
				t.Run(fmt.Sprintf("%d/%d/%v", ad, n, adaptorFirst), func(t *testing.T) {
					o := defaultTestOptions()
					cuda, st := createPlain(kCuda)
					require.Equal(t, testStatusSuccess, st, lastMessage())
					o.upstream = cuda
					o.initialPoolSize = 0
					pool, st := createWithOptions(kPool, o)
					require.Equal(t, testStatusSuccess, st, lastMessage())
					o.upstream = pool
					top, st := createWithOptions(ad, o)
					require.Equal(t, testStatusSuccess, st, lastMessage())
					defer func() {
						for _, h := range []uintptr{top, pool, cuda} {
							require.Equal(t, testStatusSuccess, rmm_resource_release(toHandle(h)))
						}
					}()
					var p unsafe.Pointer
					require.Equal(t, testStatusSuccess, rmm_allocate(toHandle(pool), nil, cSize(n), 256, &p), lastMessage())
					first, second := toHandle(top), toHandle(pool)
					if !adaptorFirst {
						first, second = second, first
					}
					a := deallocateAt(first, uintptr(p), n)
					b := deallocateAt(second, uintptr(p), n)
					assert.True(t, (a == testStatusSuccess) != (b == testStatusSuccess),
						"one free accepted, the other refused: got %d then %d (%s)", a, b, lastMessage())
					var q, r unsafe.Pointer
					require.Equal(t, testStatusSuccess, rmm_allocate(toHandle(pool), nil, cSize(n), 256, &q))
					require.Equal(t, testStatusSuccess, rmm_allocate(toHandle(pool), nil, cSize(n), 256, &r))
					assert.NotEqual(t, q, r, "one block handed out twice")
					if a != testStatusSuccess && b != testStatusSuccess {
						require.Equal(t, testStatusSuccess, deallocateAt(toHandle(pool), uintptr(p), n))
					}
					require.Equal(t, testStatusSuccess, deallocateAt(toHandle(pool), uintptr(q), n))
					require.Equal(t, testStatusSuccess, deallocateAt(toHandle(pool), uintptr(r), n))
				})
			}
		}
	}
}
