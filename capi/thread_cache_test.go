package main

import (
	"math/rand"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/cudart"
)

// The per-thread cache seen from Go: what the C side holds (tcCounts) after
// each kind of flush, and many goroutines (each on its own OS thread while
// it runs) allocating and freeing through the C entry points under -race.

func newPoolEntry(t *testing.T, max uintptr) (*core.Pool, *entry) {
	t.Helper()
	cuda, err := core.NewCuda()
	require.NoError(t, err)
	pool, err := core.NewPool(cuda, core.PoolOptions{InitialSize: 16 << 20, MaximumSize: max})
	require.NoError(t, err)
	e, err := reg.add(pool, true, 0, nil)
	require.NoError(t, err)
	return pool, e
}

func requireCache(t *testing.T) {
	if !tcEnabled() {
		t.Skip("RMMGO_THREAD_CACHE turns the cache off")
	}
}

func TestThreadCacheServesBarePoolsOnly(t *testing.T) {
	requireCache(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pool, e := newPoolEntry(t, 0)
	h := toHandle(e.handle)
	assert.True(t, e.cached)

	var p, q unsafe.Pointer
	require.Equal(t, statusSuccess, rmm_allocate(h, nil, 5000, 256, &p), lastMessage())
	live, cached, _, _ := tcCounts()
	assert.Equal(t, 1, live)
	assert.Positive(t, cached, "a refill caches the rest of its batch")
	// The pool counts the batch; the C query does not.
	assert.Greater(t, pool.UsedBytes(), uintptr(5120))
	var used C_size
	require.Equal(t, statusSuccess, rmm_pool_used_bytes(h, &used.v))
	assert.EqualValues(t, 5120, used.v)
	require.Equal(t, statusSuccess, rmm_deallocate(h, nil, p, 5000, 256), lastMessage())
	require.Equal(t, statusSuccess, rmm_allocate(h, nil, 5100, 256, &q), lastMessage())
	assert.Equal(t, p, q, "same class, same stream: the block comes back at once")
	require.Equal(t, statusSuccess, rmm_deallocate(h, nil, q, 5100, 256), lastMessage())

	// An adaptor over the pool is never cached: it must see every call.
	stats, err := core.NewStatistics(pool)
	require.NoError(t, err)
	se, err := reg.add(stats, false, 0, nil)
	require.NoError(t, err)
	assert.False(t, se.cached)
	live0, _, _, _ := tcCounts()
	require.Equal(t, statusSuccess, rmm_allocate(toHandle(se.handle), nil, 5000, 256, &p), lastMessage())
	live1, _, _, _ := tcCounts()
	assert.Equal(t, live0, live1)
	_, count := stats.Counters()
	assert.EqualValues(t, 1, count.Value)
	require.Equal(t, statusSuccess, rmm_deallocate(toHandle(se.handle), nil, p, 5000, 256), lastMessage())
	require.NoError(t, reg.release(se.handle))

	// The last release takes every block of the handle out of the C side
	// before the pool closes.
	require.NoError(t, reg.release(e.handle))
	live, cached, _, _ = tcCounts()
	assert.Zero(t, live)
	assert.Zero(t, cached)
}

// C_size holds a size_t out-parameter for the exports.
type C_size struct{ v cSizeT }

func TestThreadCacheStreamDestroyGivesBlocksBack(t *testing.T) {
	requireCache(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pool, e := newPoolEntry(t, 0)
	defer reg.release(e.handle)
	h := toHandle(e.handle)
	r, err := cudart.Default()
	require.NoError(t, err)
	s, err := r.StreamCreate(cudart.StreamFlagNonBlocking)
	require.NoError(t, err)
	var p unsafe.Pointer
	require.Equal(t, statusSuccess, rmm_allocate(h, toStream(uintptr(s)), 3000, 256, &p), lastMessage())
	require.Equal(t, statusSuccess, rmm_deallocate(h, toStream(uintptr(s)), p, 3000, 256), lastMessage())
	_, cached, _, _ := tcCounts()
	require.Positive(t, cached)
	require.Equal(t, statusSuccess, rmm_stream_destroy(toStream(uintptr(s))), lastMessage())
	_, cached, _, _ = tcCounts()
	assert.Zero(t, cached, "blocks cached under the stream went back before it was destroyed")
	assert.Zero(t, pool.UsedBytes())
}

func TestThreadCacheOutOfMemoryFlushesOtherThreads(t *testing.T) {
	requireCache(t)
	_, e := newPoolEntry(t, 16<<20)
	defer reg.release(e.handle)
	h := toHandle(e.handle)
	// Another OS thread caches 16 x 256 KiB and stays alive.
	parked, done := make(chan struct{}), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ps := make([]unsafe.Pointer, 16)
		for i := range ps {
			if st := rmm_allocate(h, nil, 256<<10, 256, &ps[i]); st != statusSuccess {
				t.Errorf("allocate: %s", lastMessage())
			}
		}
		for i := range ps {
			if st := rmm_deallocate(h, nil, ps[i], 256<<10, 256); st != statusSuccess {
				t.Errorf("deallocate: %s", lastMessage())
			}
		}
		close(parked)
		<-done
	}()
	<-parked
	defer close(done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_, cached, _, _ := tcCounts()
	require.Positive(t, cached)
	var p unsafe.Pointer
	require.Equal(t, statusSuccess, rmm_allocate(h, nil, 14<<20, 256, &p), lastMessage())
	_, cached, _, _ = tcCounts()
	assert.Zero(t, cached, "the failed attempt flushed every cache")
	require.Equal(t, statusSuccess, rmm_deallocate(h, nil, p, 14<<20, 256), lastMessage())
}

func TestThreadCacheBinningAdaptorBinTurnsItOff(t *testing.T) {
	requireCache(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cuda, err := core.NewCuda()
	require.NoError(t, err)
	b, err := core.NewBinning(cuda, 8, 12)
	require.NoError(t, err)
	e, err := reg.add(b, true, 0, nil)
	require.NoError(t, err)
	defer reg.release(e.handle)
	h := toHandle(e.handle)
	var p unsafe.Pointer
	require.Equal(t, statusSuccess, rmm_allocate(h, nil, 1000, 256, &p), lastMessage())
	require.Equal(t, statusSuccess, rmm_deallocate(h, nil, p, 1000, 256), lastMessage())
	_, cached, _, _ := tcCounts()
	require.Positive(t, cached)
	// A statistics bin: the cache lets go of the handle for good.
	sres, err := core.NewStatistics(cuda)
	require.NoError(t, err)
	stats, err := reg.add(sres, true, 0, nil)
	require.NoError(t, err)
	require.Equal(t, statusSuccess, rmm_binning_add_bin(h, 1<<16, toHandle(stats.handle)), lastMessage())
	require.NoError(t, reg.release(stats.handle))
	live, cached, _, _ := tcCounts()
	assert.Zero(t, live+cached)
	require.Equal(t, statusSuccess, rmm_allocate(h, nil, 1000, 256, &p), lastMessage())
	live, _, _, _ = tcCounts()
	assert.Zero(t, live)
	require.Equal(t, statusSuccess, rmm_deallocate(h, nil, p, 1000, 256), lastMessage())
}

// Many goroutines, each on its own thread while it runs, allocate on the
// default stream and free some of their blocks from another goroutine.
func TestThreadCacheConcurrent(t *testing.T) {
	pool, e := newPoolEntry(t, 0)
	h := toHandle(e.handle)
	const workers, steps = 8, 2000
	handoff := make(chan [2]uintptr, 1024)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			rng := rand.New(rand.NewSource(int64(w)))
			var live [][2]uintptr
			for i := 0; i < steps; i++ {
				if len(live) < 32 && rng.Intn(3) != 0 {
					size := uintptr(1 + rng.Intn(64<<10))
					var p unsafe.Pointer
					if st := rmm_allocate(h, nil, cSize(uint64(size)), 256, &p); st != statusSuccess {
						t.Errorf("allocate: %s", lastMessage())
						return
					}
					live = append(live, [2]uintptr{uintptr(p), size})
					continue
				}
				select {
				case b := <-handoff: // another goroutine's block
					if st := deallocateAt(h, b[0], uint64(b[1])); st != statusSuccess {
						t.Errorf("cross free: %s", lastMessage())
					}
				default:
				}
				if len(live) > 0 {
					k := rng.Intn(len(live))
					b := live[k]
					live = append(live[:k], live[k+1:]...)
					select {
					case handoff <- b:
					default:
						if st := deallocateAt(h, b[0], uint64(b[1])); st != statusSuccess {
							t.Errorf("free: %s", lastMessage())
						}
					}
				}
			}
			for _, b := range live {
				if st := deallocateAt(h, b[0], uint64(b[1])); st != statusSuccess {
					t.Errorf("final free: %s", lastMessage())
				}
			}
		}(w)
	}
	wg.Wait()
	close(handoff)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for b := range handoff {
		require.Equal(t, statusSuccess, deallocateAt(h, b[0], uint64(b[1])), lastMessage())
	}
	var used C_size
	require.Equal(t, statusSuccess, rmm_pool_used_bytes(h, &used.v))
	assert.Zero(t, used.v)
	require.NoError(t, reg.release(e.handle))
	live, cached, _, _ := tcCounts()
	assert.Zero(t, live+cached)
	_ = pool
}

// A flush that did not help quiets further out-of-memory flushes of that
// handle for a moment, so a program that keeps hitting a full resource does
// not synchronize the device and empty every cache on each failure.
func TestThreadCacheFutileFlushQuiets(t *testing.T) {
	requireCache(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_, e := newPoolEntry(t, 16<<20)
	defer reg.release(e.handle)
	h := toHandle(e.handle)
	park := func() {
		t.Helper()
		var p unsafe.Pointer
		require.Equal(t, statusSuccess, rmm_allocate(h, nil, 1000, 256, &p), lastMessage())
		require.Equal(t, statusSuccess, rmm_deallocate(h, nil, p, 1000, 256), lastMessage())
		_, cached, _, _ := tcCounts()
		require.Positive(t, cached)
	}
	tooBig := func() {
		t.Helper()
		var p unsafe.Pointer
		require.Equal(t, statusOutOfMemory, rmm_allocate(h, nil, 32<<20, 256, &p))
	}
	park()
	tooBig() // flushes, retries, fails: futile
	_, cached, _, _ := tcCounts()
	require.Zero(t, cached, "the first failure flushes")
	park()
	tooBig()
	_, cached, _, _ = tcCounts()
	assert.Positive(t, cached, "a failure right after a futile flush leaves the caches alone")
	time.Sleep(tcFutileQuiet + 5*time.Millisecond)
	tooBig()
	_, cached, _, _ = tcCounts()
	assert.Zero(t, cached, "after the quiet time a failure flushes again")
}

// A thread that exits leaves its cache to the orphan list; a new thread on
// the same handle and stream adopts it on its first miss instead of giving
// it back to Go (which costs a device synchronization); another stream's
// pair does not take it.
func TestThreadCacheOrphansAdopted(t *testing.T) {
	requireCache(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_, e := newPoolEntry(t, 0)
	defer reg.release(e.handle)
	h := toHandle(e.handle)
	freed := map[unsafe.Pointer]bool{}
	ps := make([]unsafe.Pointer, 40)
	for i := range ps {
		require.Equal(t, statusSuccess, rmm_allocate(h, nil, 3000, 256, &ps[i]), lastMessage())
	}
	for _, p := range ps {
		require.Equal(t, statusSuccess, rmm_deallocate(h, nil, p, 3000, 256), lastMessage())
		freed[p] = true
	}
	_, cachedBefore, _, _ := tcCounts()
	tcExitMine() // as if this thread exited
	_, cached, orphans, _ := tcCounts()
	require.Positive(t, orphans)
	assert.Equal(t, cachedBefore, cached, "orphans stay CACHED in the table: a free of one is a double free")
	assert.Equal(t, statusInvalidPointer, rmm_deallocate(h, nil, ps[0], 3000, 256), "double free of an orphan")

	// Another stream's pair leaves them alone.
	r, err := cudart.Default()
	require.NoError(t, err)
	s, err := r.StreamCreate(cudart.StreamFlagNonBlocking)
	require.NoError(t, err)
	var q unsafe.Pointer
	require.Equal(t, statusSuccess, rmm_allocate(h, toStream(uintptr(s)), 3000, 256, &q), lastMessage())
	_, _, o2, _ := tcCounts()
	assert.Equal(t, orphans, o2, "a pair of another stream adopts nothing")
	require.Equal(t, statusSuccess, rmm_deallocate(h, toStream(uintptr(s)), q, 3000, 256), lastMessage())
	require.Equal(t, statusSuccess, rmm_stream_destroy(toStream(uintptr(s))), lastMessage())

	// The "new thread" (a fresh cache on this one) on the default stream.
	require.Equal(t, statusSuccess, rmm_allocate(h, nil, 2900, 256, &q), lastMessage())
	_, _, o3, _ := tcCounts()
	assert.Zero(t, o3, "the same handle and stream adopt every orphan")
	assert.True(t, freed[q], "the allocation is served from the adopted blocks")
	require.Equal(t, statusSuccess, rmm_deallocate(h, nil, q, 2900, 256), lastMessage())
}
