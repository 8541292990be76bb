package core

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (b *Binning) binSizes() []uintptr {
	bins := b.bins.Load().bins
	out := make([]uintptr, len(bins))
	for i, bn := range bins {
		out[i] = bn.size
	}
	return out
}

func TestBinningBins(t *testing.T) {
	up := newCountingUpstream(t)
	for _, c := range []struct{ min, max int }{{-1, 0}, {0, -1}, {5, 4}, {-2, -2}, {3, 60}} {
		_, err := NewBinning(up, c.min, c.max)
		requireIs(t, err, ErrInvalidArgument, fmt.Sprint(c))
	}
	_, err := NewBinning(nil, -1, -1)
	requireIs(t, err, ErrInvalidArgument)

	b, err := NewBinning(up, 6, 10)
	require.NoError(t, err)
	assert.Equal(t, []uintptr{256, 512, 1024}, b.binSizes(), "2^6..2^8 all round up to one 256-byte bin")
	assert.Equal(t, []uintptr{128 * 256, 128 * 512, 128 * 1024}, up.sizes, "each bin preallocates 128 blocks")
	require.NoError(t, b.Close())
	assert.Zero(t, up.liveCount(), "Close closes the bins the Binning made")

	b, err = NewBinning(up, -1, -1)
	require.NoError(t, err)
	assert.Empty(t, b.binSizes())
	x, err := b.Allocate(DefaultStream, 100, 256)
	require.NoError(t, err, "no bins: everything from the upstream")
	assert.Equal(t, uintptr(100), up.live[x])
	require.NoError(t, b.Deallocate(DefaultStream, x, 100, 256))
	require.NoError(t, b.Close())
}

func TestBinningRouting(t *testing.T) {
	up := newCountingUpstream(t)
	small, mid := newCountingUpstream(t), newCountingUpstream(t)
	b, err := NewBinning(up, -1, -1)
	require.NoError(t, err)
	require.NoError(t, b.AddBin(1000, small)) // 1024
	require.NoError(t, b.AddBin(4096, mid))
	require.NoError(t, b.AddBin(1024, newCountingUpstream(t)), "a bin of an existing size is ignored")
	require.NoError(t, b.AddBin(2048, nil)) // an owned fixed-size bin
	assert.Equal(t, []uintptr{1024, 2048, 4096}, b.binSizes())
	requireIs(t, b.AddBin(0, nil), ErrInvalidArgument)

	for _, c := range []struct {
		bytes uintptr
		want  *countingUpstream
	}{{1, small}, {1024, small}, {1025, nil}, {2048, nil}, {2049, mid}, {4096, mid}, {4097, up}, {1 << 20, up}} {
		calls := []int{small.calls, mid.calls, up.calls}
		x, err := b.Allocate(DefaultStream, c.bytes, 256)
		require.NoError(t, err)
		if c.want != nil {
			assert.Contains(t, c.want.live, x, "%d bytes", c.bytes)
		} else {
			assert.Equal(t, calls, []int{small.calls, mid.calls, up.calls}, "%d bytes go to the owned 2 KiB bin", c.bytes)
		}
		require.NoError(t, b.Deallocate(DefaultStream, x, c.bytes, 256))
	}
	assert.Zero(t, small.liveCount())
	assert.Zero(t, mid.liveCount())
	x, err := b.AllocateSync(3000, 256)
	require.NoError(t, err)
	assert.Contains(t, mid.live, x)
	require.NoError(t, b.DeallocateSync(x, 3000, 256))
	require.NoError(t, b.Close())
	assert.Zero(t, up.liveCount(), "the owned bin returned its chunk")
	requireIs(t, b.AddBin(8192, nil), ErrClosed)
}

// TestBinningAddBinConcurrent: AddBin is safe while other goroutines
// allocate (RMM's is not), from sizes the new bins do not cover.
func TestBinningAddBinConcurrent(t *testing.T) {
	up := newCountingUpstream(t)
	p, err := NewPool(up, PoolOptions{})
	require.NoError(t, err)
	defer p.Close()
	b, err := NewBinning(p, 8, 10)
	require.NoError(t, err)
	defer b.Close()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 8)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				n := uintptr(1 + (i*977)%1024)
				x, err := b.Allocate(DefaultStream, n, 256)
				if err != nil {
					errs <- err
					return
				}
				if err := b.Deallocate(DefaultStream, x, n, 256); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for e := 11; e <= 14; e++ {
		require.NoError(t, b.AddBin(1<<e, nil))
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, []uintptr{256, 512, 1024, 2048, 4096, 8192, 16384}, b.binSizes())
}

// TestBinTableFind: the bin lookup (a table load for power-of-two bins, a
// short scan otherwise) agrees with the definition, the smallest bin at
// least the request rounded up to 256 bytes, for every layout and for
// sizes around every boundary.
func TestBinTableFind(t *testing.T) {
	layouts := map[string][]uintptr{
		"none":         nil,
		"powers 8..20": {256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 1 << 17, 1 << 18, 1 << 19, 1 << 20},
		"one":          {4096},
		"uneven":       {768, 1024, 3072, 3328, 1 << 20, 3 << 20},
		"dense":        {256, 512, 768, 1024, 1280},
		"huge":         {256, 1 << 40, 1 << 57},
	}
	for name, sizes := range layouts {
		t.Run(name, func(t *testing.T) {
			bins := make([]bin, len(sizes))
			for i, s := range sizes {
				bins[i] = bin{size: s}
			}
			tab := newBinTable(bins)
			want := func(n uintptr) *bin {
				r := (n + 255) &^ 255
				for i := range tab.bins {
					if tab.bins[i].size >= r {
						return &tab.bins[i]
					}
				}
				return nil
			}
			var probes []uintptr
			for k := 0; k <= 57; k++ {
				p := uintptr(1) << k
				probes = append(probes, p-1, p, p+1, p+255, p+256, p+257)
			}
			for _, s := range sizes {
				probes = append(probes, s-256, s-255, s-1, s, s+1, s+256)
			}
			for _, n := range probes {
				if n == 0 || n > maxAllocation {
					continue
				}
				got, exp := tab.find(n), want(n)
				if got != exp {
					t.Fatalf("find(%d) = %v, want %v", n, got, exp)
				}
			}
		})
	}
}

// TestBinningFixedBinDirect: a FixedSize bin given to AddBin is called
// directly only when its blocks hold the bin's size; a smaller one still
// refuses requests above its block size, as it did through the interface.
func TestBinningFixedBinDirect(t *testing.T) {
	up := newCountingUpstream(t)
	b, err := NewBinning(up, -1, -1)
	require.NoError(t, err)
	defer b.Close()
	small, err := NewFixedSize(up, FixedSizeOptions{BlockSize: 512, BlocksToPreallocate: 4})
	require.NoError(t, err)
	defer small.Close()
	big, err := NewFixedSize(up, FixedSizeOptions{BlockSize: 8192, BlocksToPreallocate: 4})
	require.NoError(t, err)
	defer big.Close()
	require.NoError(t, b.AddBin(1024, small))
	require.NoError(t, b.AddBin(4096, big))
	tab := b.bins.Load()
	assert.Nil(t, tab.find(1000).fixed, "512-byte blocks cannot serve the 1 KiB bin directly")
	assert.Same(t, big, tab.find(4000).fixed)

	_, err = b.Allocate(DefaultStream, 1000, 256)
	requireIs(t, err, ErrOutOfMemory, "the 512-byte bin refuses 1000 bytes")
	x, err := b.Allocate(DefaultStream, 500, 256)
	require.NoError(t, err)
	require.NoError(t, b.Deallocate(DefaultStream, x, 500, 256))
	y, err := b.Allocate(DefaultStream, 3000, 256)
	require.NoError(t, err)
	requireIs(t, b.Deallocate(DefaultStream, y+256, 3000, 256), ErrInvalidPointer, "inside a block")
	require.NoError(t, b.Deallocate(DefaultStream, y, 3000, 256))
	requireIs(t, b.Deallocate(DefaultStream, y, 3000, 256), ErrInvalidPointer, "a double free through the binning")
	require.NoError(t, big.Close())
	_, err = b.Allocate(DefaultStream, 3000, 256)
	requireIs(t, err, ErrClosed, "a closed bin is closed through the binning too")
}

// A bin that would make a binning resource its own descendant is refused by
// the AddBin call that would close the loop. Before, two binning resources
// given each other as bins recursed until the stack overflowed.
func TestBinningRefusesCycles(t *testing.T) {
	up := newCountingUpstream(t)
	a, err := NewBinning(up, -1, -1)
	require.NoError(t, err)
	b, err := NewBinning(up, -1, -1)
	require.NoError(t, err)
	stats, err := NewStatistics(a)
	require.NoError(t, err)

	err = a.AddBin(4096, a)
	requireIs(t, err, ErrInvalidArgument, "itself")
	assert.Contains(t, err.Error(), "its own descendant")
	require.NoError(t, a.AddBin(4096, b))
	requireIs(t, b.AddBin(4096, a), ErrInvalidArgument, "two binning resources as each other's bins")
	requireIs(t, b.AddBin(8192, stats), ErrInvalidArgument, "a loop through an adaptor's upstream")
	requireIs(t, a.AddBin(1<<20, stats), ErrInvalidArgument, "an adaptor over itself")
	assert.Equal(t, []uintptr{4096}, a.binSizes())
	assert.Empty(t, b.binSizes(), "a refused bin is not added")

	// Both still allocate: a's 4 KiB bin is b, whose requests go upstream.
	p, err := a.Allocate(DefaultStream, 1000, DefaultAlignment)
	require.NoError(t, err)
	require.NoError(t, a.Deallocate(DefaultStream, p, 1000, DefaultAlignment))
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
	assert.Zero(t, up.liveCount())
}

// Two goroutines giving two binning resources each other as bins at once:
// at most one succeeds.
func TestBinningRefusesCyclesConcurrently(t *testing.T) {
	up := newCountingUpstream(t)
	for range 50 {
		a, err := NewBinning(up, -1, -1)
		require.NoError(t, err)
		b, err := NewBinning(up, -1, -1)
		require.NoError(t, err)
		var wg sync.WaitGroup
		var errA, errB error
		wg.Add(2)
		go func() { defer wg.Done(); errA = a.AddBin(4096, b) }()
		go func() { defer wg.Done(); errB = b.AddBin(4096, a) }()
		wg.Wait()
		assert.True(t, (errA == nil) != (errB == nil), "exactly one of the two links is made: %v / %v", errA, errB)
		require.NoError(t, a.Close())
		require.NoError(t, b.Close())
	}
}

// TestBinningGivesBackFreeChunks: when the upstream pool needs memory, the
// bins give back their wholly free chunks, and the pool serves from them
// rather than growing beside them; a bin then fetches a chunk again.
func TestBinningGivesBackFreeChunks(t *testing.T) {
	up := newCountingUpstream(t)
	p, err := NewPool(up, PoolOptions{})
	require.NoError(t, err)
	defer p.Close()
	b, err := NewBinning(p, 18, 18) // one bin: 256 KiB blocks, 8 MiB chunks
	require.NoError(t, err)
	bin := b.bins.Load().find(256 << 10).fixed
	small := b.bins.Load().find(8 << 10).fixed // hidden, chunks of 1 MiB
	w, err := b.Allocate(DefaultStream, 5000, 256)
	require.NoError(t, err)
	require.NoError(t, b.Deallocate(DefaultStream, w, 5000, 256))
	x, err := b.Allocate(DefaultStream, 200<<10, 256)
	require.NoError(t, err)
	require.NoError(t, b.Deallocate(DefaultStream, x, 200<<10, 256))
	require.Equal(t, uintptr(binChunk), bin.HeldBytes())
	require.Equal(t, uintptr(1<<20), small.HeldBytes())
	held := up.liveBytes()

	y, err := b.Allocate(DefaultStream, binChunk, 256) // above the bins: the pool's
	require.NoError(t, err)
	assert.Zero(t, bin.HeldBytes(), "the bin gave its free chunk back")
	assert.Equal(t, held, up.liveBytes(), "the pool served from the chunk the bin gave back")
	assert.Equal(t, uintptr(1<<20), small.HeldBytes(), "a chunk of 1 MiB stays")

	x, err = b.Allocate(DefaultStream, 200<<10, 256)
	require.NoError(t, err, "the bin fetches a chunk again")
	assert.Equal(t, uintptr(binChunk), bin.HeldBytes())
	z, err := b.Allocate(DefaultStream, binChunk, 256)
	require.NoError(t, err)
	assert.Equal(t, uintptr(binChunk), bin.HeldBytes(), "a chunk with a live block stays")
	for _, a := range []struct{ p, n uintptr }{{x, 200 << 10}, {y, binChunk}, {z, binChunk}} {
		require.NoError(t, b.Deallocate(DefaultStream, a.p, a.n, 256))
	}
	require.NoError(t, b.Close())
	require.NoError(t, p.Close())
	assert.Zero(t, up.liveCount())
}

// TestBinningHiddenBins: NewBinning makes hidden bins for the powers of two
// from 256 bytes up to half its smallest bin, which fetch nothing before
// their first request: a request far below the smallest bin takes a block
// of its own power of two, not one of the smallest bin. AddBin of a hidden
// size makes it a bin like the others, or replaces it with the caller's.
func TestBinningHiddenBins(t *testing.T) {
	up := newCountingUpstream(t)
	b, err := NewBinning(up, 12, 14)
	require.NoError(t, err)
	assert.Equal(t, []uintptr{4096, 8192, 16384}, b.BinSizes())
	assert.Equal(t, []uintptr{128 * 4096, 128 * 8192, 128 * 16384}, up.sizes, "the hidden bins fetch nothing yet")
	for _, c := range []struct{ bytes, block uintptr }{{1, 256}, {1000, 1024}, {2048, 2048}, {2049, 4096}, {5000, 8192}} {
		x, err := b.Allocate(DefaultStream, c.bytes, 256)
		require.NoError(t, err)
		bn := b.bins.Load().find(c.bytes)
		assert.Equal(t, c.block, bn.size, "%d bytes", c.bytes)
		assert.NotNil(t, bn.fixed.findChunk(x), "%d bytes: a block of the bin of %d", c.bytes, c.block)
		require.NoError(t, b.Deallocate(DefaultStream, x, c.bytes, 256))
	}
	assert.Equal(t, uintptr(128*1024), up.sizes[4], "the 1 KiB bin fetched its first chunk")

	n := len(up.sizes)
	require.NoError(t, b.AddBin(2048, nil))
	assert.Equal(t, []uintptr{2048, 4096, 8192, 16384}, b.BinSizes())
	assert.Len(t, up.sizes, n, "the hidden bin became a bin: nothing fetched")
	mine := newCountingUpstream(t)
	require.NoError(t, b.AddBin(512, mine))
	assert.Equal(t, []uintptr{512, 2048, 4096, 8192, 16384}, b.BinSizes())
	x, err := b.Allocate(DefaultStream, 300, 256)
	require.NoError(t, err)
	assert.Contains(t, mine.live, x, "the caller's bin replaced the hidden one")
	require.NoError(t, b.Deallocate(DefaultStream, x, 300, 256))
	require.NoError(t, b.Close())
	assert.Zero(t, up.liveCount(), "Close closes the hidden bins too")
}

// TestBinningChunkSizes: the bins NewBinning makes take 16 MiB chunks from
// the upstream, but at least 8 blocks up to 32 MiB (binBlocks): five bins
// of 256 KiB to 4 MiB held 160 MiB for one block each with 32 MiB chunks,
// which kept 16 streams allocating random sizes (TestSoakStreams) at 3x
// their peak live bytes.
func TestBinningChunkSizes(t *testing.T) {
	up := newCountingUpstream(t)
	p, err := NewPool(up, PoolOptions{})
	require.NoError(t, err)
	defer p.Close()
	b, err := NewBinning(p, 18, 22)
	require.NoError(t, err)
	defer b.Close()
	want := map[uintptr]uintptr{
		64 << 10: 8 << 20, 128 << 10: 16 << 20, // hidden: 128 blocks each
		256 << 10: 16 << 20, 512 << 10: 16 << 20, 1 << 20: 16 << 20, // 64, 32, 16 blocks
		2 << 20: 16 << 20, 4 << 20: 32 << 20, // 8 blocks
	}
	for size, chunk := range want {
		ptr, err := b.Allocate(DefaultStream, size, DefaultAlignment)
		require.NoError(t, err)
		bin := b.bins.Load().find(size).fixed
		assert.Equal(t, chunk, bin.HeldBytes(), "bin of %d bytes", size)
		require.NoError(t, b.Deallocate(DefaultStream, ptr, size, DefaultAlignment))
	}
	assert.Equal(t, 1, binBlocks(64<<20), "a bin over 32 MiB takes one block at a time")
	assert.Equal(t, 4, binBlocks(8<<20))
	assert.Equal(t, 128, binBlocks(4<<10))
}
