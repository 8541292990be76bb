package core

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core/internal/cachepolicy"
	"github.com/rmmgo/rmmgo/cudart/sim"
)

// fakeCache is a BlockCache that keeps blocks of one size, as the C ABI's
// thread cache does: allocated from the resource, held by no user.
type fakeCache struct {
	t        testing.TB
	r        cacheable
	size     uintptr
	mu       sync.Mutex
	blocks   []uintptr
	reclaims int
}

func (c *fakeCache) Reclaim(need uintptr) bool {
	c.mu.Lock()
	b := c.blocks
	c.blocks = nil
	c.reclaims++
	c.mu.Unlock()
	require.NoError(c.t, c.r.DeallocateBatch(DefaultStream, c.size, b))
	return len(b) > 0
}

func (c *fakeCache) HeldBytes() uintptr {
	c.mu.Lock()
	defer c.mu.Unlock()
	return uintptr(len(c.blocks)) * c.size
}

// fill takes n blocks with AllocateBatch and keeps them.
func (c *fakeCache) fill(n int) {
	out := make([]uintptr, n)
	for k := 0; k < n; {
		got, err := c.r.AllocateBatch(DefaultStream, c.size, out[k:])
		require.NoError(c.t, err)
		require.Positive(c.t, got)
		k += got
	}
	c.mu.Lock()
	c.blocks = append(c.blocks, out...)
	c.mu.Unlock()
}

// cacheables returns one of each cacheable sub-allocator over up, for a
// cache of blocks of size bytes.
func cacheables(t *testing.T, up Resource) map[string]cacheable {
	t.Helper()
	p, err := NewPool(up, PoolOptions{InitialSize: 8 << 20})
	require.NoError(t, err)
	a, err := NewArena(up, ArenaOptions{ArenaSize: 8 << 20})
	require.NoError(t, err)
	f, err := NewFixedSize(up, FixedSizeOptions{BlockSize: 64 << 10, BlocksToPreallocate: 16})
	require.NoError(t, err)
	b, err := NewBinning(up, 8, 16)
	require.NoError(t, err)
	e, err := NewExpandable(ExpandableOptions{MaximumSize: 64 << 20})
	require.NoError(t, err)
	rs := map[string]cacheable{"pool": p, "arena": a, "fixed_size": f, "binning": b, "expandable": e}
	t.Cleanup(func() {
		for _, r := range rs {
			require.NoError(t, r.(interface{ Close() error }).Close())
		}
	})
	return rs
}

func TestCacheableBatches(t *testing.T) {
	up, err := NewCuda()
	require.NoError(t, err)
	for name, r := range cacheables(t, up) {
		t.Run(name, func(t *testing.T) {
			l := r.CacheLimits()
			require.Positive(t, l.MaxRequest)
			assert.LessOrEqual(t, l.MaxRequest, uintptr(cachepolicy.MaxBlock))
			assert.GreaterOrEqual(t, l.Budget, uintptr(cachepolicy.ThreadCachesFloor))
			size := uintptr(64 << 10)
			out := make([]uintptr, 8)
			n, err := r.AllocateBatch(DefaultStream, size, out)
			require.NoError(t, err)
			require.Positive(t, n)
			seen := map[uintptr]bool{}
			for _, p := range out[:n] {
				require.NotZero(t, p)
				require.False(t, seen[p], "no block twice")
				seen[p] = true
				assert.Zero(t, p%DefaultAlignment)
			}
			// Frees with another size: what Deallocate would say.
			if name == "fixed_size" {
				assert.NoError(t, r.CheckFree(out[0], 1000, size), "any size up to a block")
				requireIs(t, r.CheckFree(out[0], 1<<20, size), ErrInvalidArgument)
			} else {
				assert.NoError(t, r.CheckFree(out[0], size-100, size), "the same size rounded to 256")
				err := r.CheckFree(out[0], 2*size, size)
				require.Error(t, err)
				if name == "pool" || name == "expandable" {
					requireIs(t, err, ErrInvalidArgument)
				} else {
					requireIs(t, err, ErrInvalidPointer)
				}
			}
			require.NoError(t, r.DeallocateBatch(DefaultStream, size, out[:n]))
		})
	}
}

// TestCacheReclaimBeforeGrowing: a pool asks its caches for their blocks
// before it grows, and counts them as not in use.
func TestCacheReclaimBeforeGrowing(t *testing.T) {
	up := newCountingUpstream(t)
	p := oneShard(t, func() (*Pool, error) { return NewPool(up, PoolOptions{InitialSize: 4 << 20}) })
	defer p.Close()
	c := &fakeCache{t: t, r: p, size: 64 << 10}
	detach := p.AttachCache(c)
	defer detach()
	c.fill(16) // 1 MiB parked
	assert.Zero(t, p.UsedBytes(), "parked blocks are not in use")
	x, err := p.Allocate(DefaultStream, 4<<20, 256)
	require.NoError(t, err)
	assert.Equal(t, 1, c.reclaims)
	assert.Equal(t, uintptr(4<<20), p.PoolSize(), "served by the parked memory, without growing")
	assert.Len(t, up.sizes, 1, "no growth")
	assert.Equal(t, uintptr(4<<20), p.UsedBytes())
	require.NoError(t, p.Deallocate(DefaultStream, x, 4<<20, 256))
	// Detached: not asked any more.
	detach()
	c.fill(16)
	y, err := p.Allocate(DefaultStream, 4<<20, 256)
	require.NoError(t, err)
	assert.Equal(t, 1, c.reclaims)
	assert.Greater(t, p.PoolSize(), uintptr(4<<20), "grew")
	require.NoError(t, p.Deallocate(DefaultStream, y, 4<<20, 256))
	require.NoError(t, p.DeallocateBatch(DefaultStream, c.size, c.blocks))
}

// TestCacheReclaimBeforeFailing: resources that cannot grow ask their
// caches before they fail; a reclaim that did not help quiets the next
// ones for cachepolicy.ReclaimQuiet.
func TestCacheReclaimBeforeFailing(t *testing.T) {
	up, err := NewCuda()
	require.NoError(t, err)
	t.Run("pool", func(t *testing.T) {
		p := oneShard(t, func() (*Pool, error) { return NewPool(up, PoolOptions{InitialSize: 4 << 20, MaximumSize: 4 << 20}) })
		defer p.Close()
		c := &fakeCache{t: t, r: p, size: 64 << 10}
		defer p.AttachCache(c)()
		c.fill(16)
		x, err := p.Allocate(DefaultStream, 4<<20, 256)
		require.NoError(t, err, "the parked MiB came back")
		require.NoError(t, p.Deallocate(DefaultStream, x, 4<<20, 256))
		c.fill(1)
		_, err = p.Allocate(DefaultStream, 8<<20, 256)
		requireIs(t, err, ErrOutOfMemory)
		assert.Equal(t, 2, c.reclaims)
		c.fill(1)
		_, err = p.Allocate(DefaultStream, 8<<20, 256)
		requireIs(t, err, ErrOutOfMemory)
		assert.Equal(t, 2, c.reclaims, "quiet after a futile reclaim")
		require.NoError(t, p.DeallocateBatch(DefaultStream, c.size, c.blocks))
	})
	t.Run("arena", func(t *testing.T) {
		a, err := NewArena(up, ArenaOptions{ArenaSize: 4 << 20})
		require.NoError(t, err)
		defer a.Close()
		c := &fakeCache{t: t, r: a, size: 1 << 20}
		defer a.AttachCache(c)()
		c.fill(2)
		x, err := a.Allocate(DefaultStream, 3<<20, 256)
		require.NoError(t, err, "the parked 2 MiB came back")
		assert.Equal(t, 1, c.reclaims)
		require.NoError(t, a.Deallocate(DefaultStream, x, 3<<20, 256))
	})
	t.Run("fixed_size", func(t *testing.T) {
		lim := newCountingUpstream(t)
		lim.limit = 1 << 20
		f, err := NewFixedSize(lim, FixedSizeOptions{BlockSize: 64 << 10, BlocksToPreallocate: 16})
		require.NoError(t, err)
		defer f.Close()
		c := &fakeCache{t: t, r: f, size: 64 << 10}
		defer f.AttachCache(c)()
		c.fill(16)
		x, err := f.Allocate(DefaultStream, 1000, 256)
		require.NoError(t, err, "a parked block came back; the upstream has no room for a chunk")
		assert.Equal(t, 1, c.reclaims)
		require.NoError(t, f.Deallocate(DefaultStream, x, 1000, 256))
	})
	t.Run("expandable", func(t *testing.T) {
		s := newSimRuntime(t, sim.Config{MemoryPerDevice: 256 * mib})
		e := newTestExpandable(t, s, ExpandableOptions{MaximumSize: 4 * mib})
		c := &fakeCache{t: t, r: e, size: 64 << 10}
		defer e.AttachCache(c)()
		c.fill(16) // 1 MiB parked in the first granule (mapping it asked the empty cache)
		assert.Equal(t, uintptr(2*mib), e.PoolSize())
		assert.Zero(t, e.UsedBytes(), "parked blocks are not in use")
		r0 := c.reclaims
		x, err := e.Allocate(DefaultStream, 4*mib, 256)
		require.NoError(t, err, "the parked MiB came back: the whole maximum in one piece")
		assert.Equal(t, r0+1, c.reclaims)
		assert.Equal(t, uintptr(4*mib), e.UsedBytes())
		require.NoError(t, e.Deallocate(DefaultStream, x, 4*mib, 256))
		// Full: a reclaim that does not save the allocation quiets the
		// next ones.
		y, err := e.Allocate(DefaultStream, 3*mib, 256)
		require.NoError(t, err)
		c.fill(1)
		_, err = e.Allocate(DefaultStream, 2*mib, 256)
		requireIs(t, err, ErrOutOfMemory)
		assert.Equal(t, r0+2, c.reclaims)
		c.fill(1)
		_, err = e.Allocate(DefaultStream, 2*mib, 256)
		requireIs(t, err, ErrOutOfMemory)
		assert.Equal(t, r0+2, c.reclaims, "quiet after a futile reclaim")
		assert.Equal(t, uintptr(4*mib), e.PoolSize(), "never past the maximum")
		require.NoError(t, e.Deallocate(DefaultStream, y, 3*mib, 256))
		require.NoError(t, e.DeallocateBatch(DefaultStream, c.size, c.blocks))
	})
	t.Run("binning", func(t *testing.T) {
		lim := newCountingUpstream(t)
		lim.limit = 64 << 10 * 128 // one chunk of the 64 KiB bin
		b, err := NewBinning(lim, -1, -1)
		require.NoError(t, err)
		defer b.Close()
		require.NoError(t, b.AddBin(64<<10, nil))
		c := &fakeCache{t: t, r: b, size: 64 << 10}
		defer b.AttachCache(c)()
		c.fill(128)
		x, err := b.Allocate(DefaultStream, 60<<10, 256)
		require.NoError(t, err, "the bin asked the binning resource's cache")
		assert.Equal(t, 1, c.reclaims)
		require.NoError(t, b.Deallocate(DefaultStream, x, 60<<10, 256))
	})
}

// TestPoolMagazineBudget: the magazines of a pool together hold at most
// cachepolicy.Magazines of its size, and give their quota back as they
// empty.
func TestPoolMagazineBudget(t *testing.T) {
	up, err := NewCuda()
	require.NoError(t, err)
	p, err := NewPool(up, PoolOptions{InitialSize: 64 << 20})
	require.NoError(t, err)
	defer p.Close()
	budget, unreserved := p.h.MagazineBudget()
	assert.Equal(t, uintptr(cachepolicy.Magazines(64<<20)), budget)
	assert.Equal(t, int64(budget), unreserved)
	var ptrs []uintptr
	for i := 0; i < 2000; i++ {
		x, err := p.Allocate(DefaultStream, 16<<10, 256)
		require.NoError(t, err)
		ptrs = append(ptrs, x)
	}
	for _, x := range ptrs {
		require.NoError(t, p.Deallocate(DefaultStream, x, 16<<10, 256))
	}
	_, held := magHeld(&p.h)
	assert.Positive(t, held)
	assert.LessOrEqual(t, held, budget, "31 MiB freed, at most the budget waits")
	_, unreserved = p.h.MagazineBudget()
	assert.GreaterOrEqual(t, unreserved, int64(0))
	require.NoError(t, p.Release()) // flushes every magazine
	_, unreserved = p.h.MagazineBudget()
	budget, _ = p.h.MagazineBudget()
	assert.GreaterOrEqual(t, unreserved, int64(budget)-int64(4*cachepolicy.Quantum), "quotas given back, a quantum per list kept at most")
}
