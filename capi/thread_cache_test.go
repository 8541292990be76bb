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
	"github.com/rmmgo/rmmgo/internal/cabi"
	"github.com/rmmgo/rmmgo/internal/cacheclock"
	"github.com/rmmgo/rmmgo/internal/fastpath"
)

// The per-thread cache seen from Go: what the C side holds (tcCounts,
// tcBudget) after each kind of flush, its bounds, and many goroutines (each
// on its own OS thread while it runs) allocating and freeing through the C
// entry points under -race.

func newPoolEntry(t *testing.T, initial, max uintptr) (*core.Pool, *entry) {
	t.Helper()
	cuda, err := core.NewCuda()
	require.NoError(t, err)
	pool, err := core.NewPool(cuda, core.PoolOptions{InitialSize: initial, MaximumSize: max})
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

// C_size holds a size_t out-parameter for the exports.
type C_size struct{ v cSizeT }

func poolUsed(t *testing.T, h uintptr) uintptr {
	t.Helper()
	var used C_size
	require.Equal(t, statusSuccess, rmm_pool_used_bytes(toHandle(h), &used.v), lastMessage())
	return uintptr(used.v)
}

func TestThreadCacheServesCacheableOnly(t *testing.T) {
	requireCache(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pool, e := newPoolEntry(t, 16<<20, 0)
	h := toHandle(e.handle)
	assert.NotNil(t, tcFrontOf(e.handle))

	var p, q unsafe.Pointer
	require.Equal(t, statusSuccess, rmm_allocate(h, nil, 5000, 256, &p), lastMessage())
	live, cached, _, _ := tcCounts()
	assert.Equal(t, 1, live)
	assert.Positive(t, cached, "a refill caches the rest of its batch")
	// One number for bytes in use, whoever asks: the blocks the cache
	// keeps are not in use.
	assert.EqualValues(t, 5120, pool.UsedBytes())
	assert.EqualValues(t, 5120, poolUsed(t, e.handle))
	require.Equal(t, statusSuccess, rmm_deallocate(h, nil, p, 5000, 256), lastMessage())
	require.Equal(t, statusSuccess, rmm_allocate(h, nil, 5100, 256, &q), lastMessage())
	assert.Equal(t, p, q, "same class, same stream: the block comes back at once")
	require.Equal(t, statusSuccess, rmm_deallocate(h, nil, q, 5100, 256), lastMessage())

	// An adaptor the C side cannot run (tracking) is never cached: it must
	// see every call.
	tr, err := core.NewTracking(pool, false)
	require.NoError(t, err)
	te, err := reg.add(tr, false, 0, nil)
	require.NoError(t, err)
	assert.Nil(t, tcFrontOf(te.handle))
	live0, _, _, _ := tcCounts()
	require.Equal(t, statusSuccess, rmm_allocate(toHandle(te.handle), nil, 5000, 256, &p), lastMessage())
	live1, _, _, _ := tcCounts()
	assert.Equal(t, live0, live1)
	assert.Equal(t, 1, tr.OutstandingCount())
	require.Equal(t, statusSuccess, rmm_deallocate(toHandle(te.handle), nil, p, 5000, 256), lastMessage())
	require.NoError(t, reg.release(te.handle))

	// A statistics adaptor over the pool is served from C (its counters in
	// C memory, thread_cache_adaptors.go), and counts every call.
	stats, err := core.NewStatistics(pool)
	require.NoError(t, err)
	se, err := reg.add(stats, false, 0, nil)
	require.NoError(t, err)
	if f := tcFrontOf(se.handle); assert.NotNil(t, f) {
		assert.Equal(t, fastpath.Cacheable(pool), f.res, "its blocks come from the pool")
	}
	live0, _, _, _ = tcCounts()
	require.Equal(t, statusSuccess, rmm_allocate(toHandle(se.handle), nil, 5000, 256, &p), lastMessage())
	live1, _, _, _ = tcCounts()
	assert.Equal(t, live0+1, live1)
	bytes, count := stats.Counters()
	assert.EqualValues(t, 1, count.Value)
	assert.EqualValues(t, 5000, bytes.Value)
	require.Equal(t, statusSuccess, rmm_deallocate(toHandle(se.handle), nil, p, 5000, 256), lastMessage())
	bytes, count = stats.Counters()
	assert.Zero(t, count.Value)
	assert.EqualValues(t, 5000, bytes.Peak)
	require.NoError(t, reg.release(se.handle))

	// The last release takes every block of the handle out of the C side
	// before the pool closes.
	require.NoError(t, reg.release(e.handle))
	live, cached, _, _ = tcCounts()
	assert.Zero(t, live)
	assert.Zero(t, cached)
	assert.Nil(t, tcFrontOf(e.handle))
}

// TestThreadCacheUsedBytesOneNumber: blocks rounded up to a size class
// count with the size their users asked for, from C and from Go alike, and
// parked blocks not at all, whichever thread allocated or freed them, also
// while that thread exits. (An exit that had taken its cache off the list
// but not yet moved its pairs' rounding to their handle left the rounding
// out: 40 KiB too many bytes in use, once, on an H100. A slow exit shows it
// every time.)
func TestThreadCacheUsedBytesOneNumber(t *testing.T) {
	requireCache(t)
	pool, e := newPoolEntry(t, 16<<20, 0)
	defer reg.release(e.handle)
	h := toHandle(e.handle)
	sizes := []uintptr{1, 1000, 4400, 9000, 70000, 300001, 1 << 20, 6 << 20}
	ptrs := make([]unsafe.Pointer, len(sizes))
	var want uintptr
	tcTestExitDelay(50 * time.Millisecond)
	defer tcTestExitDelay(0)
	exited := onThread(func() {
		for i, n := range sizes {
			require.Equal(t, statusSuccess, rmm_allocate(h, nil, cSize(uint64(n)), 256, &ptrs[i]), lastMessage())
			want += (n + 255) &^ 255
		}
	})
	// The exit has taken the cache off the list, and waits.
	require.Eventually(t, tcTestExitWaiting, 5*time.Second, 100*time.Microsecond)
	assert.Equal(t, want, pool.UsedBytes(), "while the thread exits")
	<-exited
	assert.Equal(t, want, pool.UsedBytes())
	assert.Equal(t, want, poolUsed(t, e.handle))
	// Freed by another thread: the rounding and the parked blocks move
	// there, the number stays right.
	tcTestExitDelay(0)
	<-onThread(func() {
		for i := 0; i < len(sizes); i += 2 {
			require.Equal(t, statusSuccess, rmm_deallocate(h, nil, ptrs[i], cSize(uint64(sizes[i])), 256), lastMessage())
			want -= (sizes[i] + 255) &^ 255
		}
	})
	assert.Equal(t, want, pool.UsedBytes())
	assert.Equal(t, want, poolUsed(t, e.handle))
	<-onThread(func() {
		for i := 1; i < len(sizes); i += 2 {
			require.Equal(t, statusSuccess, rmm_deallocate(h, nil, ptrs[i], cSize(uint64(sizes[i])), 256), lastMessage())
		}
	})
	assert.Zero(t, pool.UsedBytes())
	assert.Zero(t, poolUsed(t, e.handle))
}

// onThread runs fn on an OS thread of its own and returns once fn did;
// then the thread's exit handling of its cache runs (its cache goes to the
// depot) while the caller goes on, as a C thread's exit would. The
// returned channel is closed once that is done. (The exit handling is
// called rather than left to the thread's end: Go may keep a thread whose
// goroutine exited locked to it, the main thread always.)
func onThread(fn func()) (exited <-chan struct{}) {
	ran, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		func() {
			defer close(ran)
			fn()
		}()
		tcExitMine()
	}()
	<-ran
	return done
}

func TestThreadCacheStreamContract(t *testing.T) {
	pool, e := newPoolEntry(t, 16<<20, 0)
	defer reg.release(e.handle)
	h := toHandle(e.handle)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var sv C_stream
	require.Equal(t, statusSuccess, rmm_stream_create(&sv.v), lastMessage())
	s := sv.v
	var p unsafe.Pointer
	require.Equal(t, statusSuccess, rmm_allocate(h, s, 3000, 256, &p), lastMessage())
	require.Equal(t, statusSuccess, rmm_deallocate(h, s, p, 3000, 256), lastMessage())
	if tcEnabled() {
		_, cached, _, _ := tcCounts()
		require.Positive(t, cached)
	}
	require.Equal(t, statusSuccess, rmm_stream_destroy(s), lastMessage())
	_, cached, _, _ := tcCounts()
	assert.Zero(t, cached, "blocks cached under the stream went back before it was destroyed")
	assert.Zero(t, pool.UsedBytes())

	// Every call naming the destroyed stream fails, and says why.
	for _, c := range []struct {
		name string
		st   status
	}{
		{"rmm_allocate", rmm_allocate(h, s, 3000, 256, &p)},
		{"rmm_deallocate", rmm_deallocate(h, s, p, 3000, 256)},
		{"rmm_stream_synchronize", rmm_stream_synchronize(s)},
		{"rmm_stream_destroy", rmm_stream_destroy(s)},
		{"rmm_memset", rmm_memset(p, 0, 1, s)},
	} {
		assert.Equal(t, statusInvalidArgument, c.st, c.name)
		assert.Contains(t, lastMessage(), "was destroyed by rmm_stream_destroy", c.name)
	}
	// A new stream of the same kind reuses it: alive again.
	var s2 C_stream
	require.Equal(t, statusSuccess, rmm_stream_create(&s2.v), lastMessage())
	assert.Equal(t, s, s2.v, "the retired stream is reused")
	require.Equal(t, statusSuccess, rmm_allocate(h, s2.v, 3000, 256, &p), lastMessage())
	require.Equal(t, statusSuccess, rmm_deallocate(h, s2.v, p, 3000, 256), lastMessage())
	require.Equal(t, statusSuccess, rmm_stream_synchronize(s2.v), lastMessage())
	require.Equal(t, statusSuccess, rmm_stream_destroy(s2.v), lastMessage())

	// A stream the library did not make is passed on; destroying it
	// destroys it.
	r, err := cudart.Default()
	require.NoError(t, err)
	foreign, err := r.StreamCreate(cudart.StreamFlagNonBlocking)
	require.NoError(t, err)
	require.Equal(t, statusSuccess, rmm_allocate(h, toStream(uintptr(foreign)), 3000, 256, &p), lastMessage())
	require.Equal(t, statusSuccess, rmm_deallocate(h, toStream(uintptr(foreign)), p, 3000, 256), lastMessage())
	before := streams.parkedCount()
	require.Equal(t, statusSuccess, rmm_stream_destroy(toStream(uintptr(foreign))), lastMessage())
	assert.Equal(t, before, streams.parkedCount(), "not parked")
	if r.Backend() == cudart.BackendSimulated {
		// Only the simulated device can say so: on a GPU the handle now
		// dangles, and asking CUDA about it is undefined.
		assert.Error(t, r.StreamSynchronize(foreign), "destroyed in CUDA")
	}
}

// C_stream holds an rmm_stream_t out-parameter.
type C_stream struct{ v cStream }

func TestThreadCacheReclaimBeforeFailing(t *testing.T) {
	requireCache(t)
	_, e := newPoolEntry(t, 16<<20, 16<<20)
	defer reg.release(e.handle)
	h := toHandle(e.handle)
	// Another OS thread caches blocks and stays alive.
	parked, done := make(chan struct{}), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ps := make([]unsafe.Pointer, 16)
		for i := range ps {
			if st := rmm_allocate(h, nil, 64<<10, 256, &ps[i]); st != statusSuccess {
				t.Errorf("allocate: %s", lastMessage())
			}
		}
		for i := range ps {
			if st := rmm_deallocate(h, nil, ps[i], 64<<10, 256); st != statusSuccess {
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
	require.Equal(t, statusSuccess, rmm_allocate(h, nil, 16<<20, 256, &p), lastMessage())
	_, cached, _, _ = tcCounts()
	assert.Zero(t, cached, "the pool took every cached block back before failing")
	require.Equal(t, statusSuccess, rmm_deallocate(h, nil, p, 16<<20, 256), lastMessage())
}

// TestThreadCacheReclaimBeforeGrowing: a pool that grows on demand takes
// the blocks parked in thread caches back before it grows.
func TestThreadCacheReclaimBeforeGrowing(t *testing.T) {
	requireCache(t)
	pool, e := newPoolEntry(t, 4<<20, 0)
	defer reg.release(e.handle)
	h := toHandle(e.handle)
	parked, done := make(chan struct{}), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ps := make([]unsafe.Pointer, 16)
		for i := range ps {
			if st := rmm_allocate(h, nil, 64<<10, 256, &ps[i]); st != statusSuccess {
				t.Errorf("allocate: %s", lastMessage())
			}
		}
		for i := range ps {
			if st := rmm_deallocate(h, nil, ps[i], 64<<10, 256); st != statusSuccess {
				t.Errorf("deallocate: %s", lastMessage())
			}
		}
		close(parked)
		<-done
	}()
	<-parked
	defer close(done)
	_, _, cached := tcBudget(e.handle)
	require.GreaterOrEqual(t, cached, uintptr(1<<20), "a MiB parked in the other thread")
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var p unsafe.Pointer
	require.Equal(t, statusSuccess, rmm_allocate(h, nil, 4<<20, 256, &p), lastMessage())
	assert.Equal(t, uintptr(4<<20), pool.PoolSize(), "served by the parked memory, without growing")
	_, _, cached = tcBudget(e.handle)
	assert.Zero(t, cached)
	require.Equal(t, statusSuccess, rmm_deallocate(h, nil, p, 4<<20, 256), lastMessage())
}

// TestThreadCacheBudget: whatever the number of threads, the caches of a
// handle hold at most its budget in bytes, which follows the pool's size.
func TestThreadCacheBudget(t *testing.T) {
	requireCache(t)
	pool, e := newPoolEntry(t, 0, 0)
	defer reg.release(e.handle)
	h := toHandle(e.handle)
	const threads = 8
	var wg sync.WaitGroup
	release := make(chan struct{})
	var ready sync.WaitGroup
	ready.Add(threads)
	for w := 0; w < threads; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			// Each thread frees 16 MiB of blocks of many classes: far more
			// than the budget allows any thread to keep.
			var ps []unsafe.Pointer
			var ns []uint64
			for i := 0; i < 256; i++ {
				n := uint64(1+rand.Intn(128)) << 10
				var p unsafe.Pointer
				if st := rmm_allocate(h, nil, cSize(n), 256, &p); st != statusSuccess {
					t.Errorf("allocate: %s", lastMessage())
					return
				}
				ps, ns = append(ps, p), append(ns, n)
			}
			for i := range ps {
				if st := rmm_deallocate(h, nil, ps[i], cSize(ns[i]), 256); st != statusSuccess {
					t.Errorf("deallocate: %s", lastMessage())
				}
			}
			ready.Done()
			<-release // keep the cache alive
		}(w)
	}
	ready.Wait()
	budget, unreserved, cached := tcBudget(e.handle)
	assert.Equal(t, pool.CacheLimits().Budget, budget, "the budget follows the pool's size")
	assert.Positive(t, cached)
	assert.LessOrEqual(t, cached, budget, "the caches keep at most the budget")
	assert.GreaterOrEqual(t, unreserved, int64(0))
	assert.Zero(t, pool.UsedBytes())
	close(release)
	wg.Wait()
	// The threads exited: their blocks went to the depot, still within the
	// budget and not in use.
	_, _, cached = tcBudget(e.handle)
	assert.LessOrEqual(t, cached, budget)
	assert.Zero(t, pool.UsedBytes())
}

func TestThreadCacheBinningAdaptorBin(t *testing.T) {
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
	// A statistics bin for 64 KiB: the sizes it serves are not cached any
	// more (it must see every call); the fixed-size bins' still are.
	sres, err := core.NewStatistics(cuda)
	require.NoError(t, err)
	stats, err := reg.add(sres, true, 0, nil)
	require.NoError(t, err)
	require.Equal(t, statusSuccess, rmm_binning_add_bin(h, 1<<16, toHandle(stats.handle)), lastMessage())
	require.NoError(t, reg.release(stats.handle))
	live, cached, _, _ := tcCounts()
	assert.Zero(t, live+cached, "adding a bin empties the cache")
	require.Equal(t, statusSuccess, rmm_allocate(h, nil, 1000, 256, &p), lastMessage())
	live, _, _, _ = tcCounts()
	assert.Equal(t, 1, live, "1000 bytes: a fixed-size bin's, cached")
	require.Equal(t, statusSuccess, rmm_deallocate(h, nil, p, 1000, 256), lastMessage())
	require.Equal(t, statusSuccess, rmm_allocate(h, nil, 5000, 256, &p), lastMessage())
	live, _, _, _ = tcCounts()
	assert.Equal(t, 0, live, "5000 bytes: the statistics bin's, not cached")
	_, count := sres.Counters()
	assert.EqualValues(t, 1, count.Value)
	require.Equal(t, statusSuccess, rmm_deallocate(h, nil, p, 5000, 256), lastMessage())
}

// Many goroutines, each on its own thread while it runs, allocate on the
// default stream and free some of their blocks from another goroutine.
func TestThreadCacheConcurrent(t *testing.T) {
	pool, e := newPoolEntry(t, 16<<20, 0)
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
	assert.Zero(t, poolUsed(t, e.handle))
	assert.Zero(t, pool.UsedBytes())
	require.NoError(t, reg.release(e.handle))
	live, cached, depot, _ := tcCounts()
	assert.Zero(t, live+cached+depot)
}

// A reclaim that did not save an allocation quiets further reclaims of
// that resource for a moment, so a program that keeps hitting a full
// resource does not synchronize the device and empty every cache on each
// failure.
func TestThreadCacheFutileReclaimQuiets(t *testing.T) {
	requireCache(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_, e := newPoolEntry(t, 16<<20, 16<<20)
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
	tooBig() // reclaims, retries, fails: futile
	_, cached, _, _ := tcCounts()
	require.Zero(t, cached, "the first failure reclaims")
	park()
	tooBig()
	_, cached, _, _ = tcCounts()
	assert.Positive(t, cached, "a failure right after a futile reclaim leaves the caches alone")
	cacheclock.Advance(20 * time.Millisecond) // past cachepolicy.ReclaimQuiet (10 ms)
	tooBig()
	_, cached, _, _ = tcCounts()
	assert.Zero(t, cached, "after the quiet time a failure reclaims again")
}

// A thread that exits leaves its pairs in the depot; a new thread on the
// same handle and stream takes a pair over whole on its first miss;
// another stream's pair does not. What nobody takes goes back with the
// next crossing once it waited long enough.
func TestThreadCacheExitedThreads(t *testing.T) {
	requireCache(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pool, e := newPoolEntry(t, 16<<20, 0)
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
	_, cached, depot, _ := tcCounts()
	require.Positive(t, depot)
	assert.Equal(t, cachedBefore, cached, "depot blocks stay CACHED in the table: a free of one is a double free")
	assert.Equal(t, statusInvalidPointer, rmm_deallocate(h, nil, ps[0], 3000, 256), "double free of a depot block")
	assert.Zero(t, pool.UsedBytes(), "the depot's blocks are not in use")

	// Another stream's pair leaves them alone.
	var s C_stream
	require.Equal(t, statusSuccess, rmm_stream_create(&s.v), lastMessage())
	var q unsafe.Pointer
	require.Equal(t, statusSuccess, rmm_allocate(h, s.v, 3000, 256, &q), lastMessage())
	_, _, d2, _ := tcCounts()
	assert.Equal(t, depot, d2, "a pair of another stream takes nothing")
	require.Equal(t, statusSuccess, rmm_deallocate(h, s.v, q, 3000, 256), lastMessage())
	require.Equal(t, statusSuccess, rmm_stream_destroy(s.v), lastMessage())

	// The "new thread" (a fresh cache on this one) on the default stream.
	require.Equal(t, statusSuccess, rmm_allocate(h, nil, 2900, 256, &q), lastMessage())
	_, _, d3, _ := tcCounts()
	assert.Zero(t, d3, "the same handle and stream take the pair over")
	assert.True(t, freed[q], "the allocation is served from the taken-over blocks")
	require.Equal(t, statusSuccess, rmm_deallocate(h, nil, q, 2900, 256), lastMessage())

	// Exit again; nobody takes the pair; after the wait, the next crossing
	// (a miss of another class) gives it back.
	tcExitMine()
	_, _, d4, _ := tcCounts()
	require.Positive(t, d4)
	cacheclock.Advance(pool.CacheLimits().ExitedWait + time.Millisecond)
	var r C_stream
	require.Equal(t, statusSuccess, rmm_stream_create(&r.v), lastMessage())
	require.Equal(t, statusSuccess, rmm_allocate(h, r.v, 100000, 256, &q), lastMessage())
	_, cached, d5, _ := tcCounts()
	assert.Zero(t, d5, "given back by the crossing")
	_, _, held := tcBudget(e.handle)
	assert.Less(t, held, uintptr(1<<20), "only the new pair's blocks are cached")
	_ = cached
	require.Equal(t, statusSuccess, rmm_deallocate(h, r.v, q, 100000, 256), lastMessage())
	require.Equal(t, statusSuccess, rmm_stream_destroy(r.v), lastMessage())
}

// TestStreamKey: the default streams' key is 0; a created stream's is its
// id | cabi.StreamKeyFlag, the key core's resources know it by
// (core/internal/streamorder takes the flag from internal/cabi too), and
// the C cache computes the same (cStreamKey: the CUDA backend's id
// function, else Go).
func TestStreamKey(t *testing.T) {
	for _, s := range []core.Stream{core.DefaultStream, cudart.LegacyDefaultStream} {
		k, err := streamKey(s)
		require.NoError(t, err)
		assert.Zero(t, k)
	}
	var s C_stream
	require.Equal(t, statusSuccess, rmm_stream_create(&s.v), lastMessage())
	defer rmm_stream_destroy(s.v)
	k, err := streamKey(streamValue(s.v))
	require.NoError(t, err)
	r, err := cudart.Default()
	require.NoError(t, err)
	id, err := r.StreamGetID(streamValue(s.v))
	require.NoError(t, err)
	assert.Equal(t, id|cabi.StreamKeyFlag, k)
}

// TestThreadCacheReclaimSizes: a bin of a binning resource that needs a
// chunk takes back only the cached blocks of its own sizes.
func TestThreadCacheReclaimSizes(t *testing.T) {
	requireCache(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cuda, err := core.NewCuda()
	require.NoError(t, err)
	b, err := core.NewBinning(cuda, 10, 14) // bins 1 KiB .. 16 KiB
	require.NoError(t, err)
	e, err := reg.add(b, true, 0, nil)
	require.NoError(t, err)
	defer reg.release(e.handle)
	h := toHandle(e.handle)
	f := tcFrontOf(e.handle)
	require.NotNil(t, f)
	park := func(n uint64, k int) {
		ps := make([]unsafe.Pointer, k)
		for i := range ps {
			require.Equal(t, statusSuccess, rmm_allocate(h, nil, cSize(n), 256, &ps[i]), lastMessage())
		}
		for i := range ps {
			require.Equal(t, statusSuccess, rmm_deallocate(h, nil, ps[i], cSize(n), 256), lastMessage())
		}
	}
	park(1000, 8)  // the 1 KiB bin
	park(12000, 8) // the 16 KiB bin (class 12 KiB)
	_, before, _, _ := tcCounts()
	require.GreaterOrEqual(t, before, 16)
	assert.True(t, f.ReclaimSizes(8<<10, 16<<10), "the 16 KiB bin's blocks")
	_, after, _, _ := tcCounts()
	assert.GreaterOrEqual(t, before-after, 8)
	assert.False(t, f.ReclaimSizes(8<<10, 16<<10), "none left of those sizes")
	assert.True(t, f.ReclaimSizes(512, 1<<10), "the 1 KiB bin's are still there")
	_, rest, _, _ := tcCounts()
	assert.Zero(t, rest)
}

// TestThreadCacheBinningTwoStreams: two threads, each on a stream of its
// own, allocating and freeing random sizes of a binning resource's bins
// (over a pool, as the random-allocations benchmark makes it) are served
// from their caches, crossing into Go for batches: a refill brings many
// blocks and the bins do not keep taking the blocks back from the caches.
// It counts crossings, not time. (The binning resource once let its caches
// keep a pool's budget of its bins' blocks: the bins ran dry, took them
// back from both caches over and over, and the blocks came back to the
// threads one per crossing, from the default stream's list: about one
// crossing every three calls, and half the rate of the base tree.)
func TestThreadCacheBinningTwoStreams(t *testing.T) {
	requireCache(t)
	cuda, err := core.NewCuda()
	require.NoError(t, err)
	pool, err := core.NewPool(cuda, core.PoolOptions{InitialSize: 256 << 20})
	require.NoError(t, err)
	defer pool.Close()
	b, err := core.NewBinning(pool, 8, 16) // bins 256 B .. 64 KiB
	require.NoError(t, err)
	e, err := reg.add(b, true, 0, nil)
	require.NoError(t, err)
	defer reg.release(e.handle)
	h := toHandle(e.handle)

	const threads, reps, ops, maxLive = 2, 4, 40000, 48 << 20
	type live struct {
		p unsafe.Pointer
		n uint64
	}
	var ready, warm, done sync.WaitGroup
	ready.Add(threads)
	warm.Add(1)
	done.Add(threads)
	errs := make(chan string, threads)
	work := func(id int) {
		defer done.Done()
		warmed := sync.OnceFunc(ready.Done)
		defer warmed() // on a failure too
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var sv C_stream
		if st := rmm_stream_create(&sv.v); st != statusSuccess {
			errs <- lastMessage()
			return
		}
		defer rmm_stream_destroy(sv.v)
		rng := rand.New(rand.NewSource(int64(id) + 1))
		for r := 0; r < reps; r++ {
			if r == 1 {
				warmed() // the first repetition fills the bins
				warm.Wait()
			}
			var ls []live
			var bytes uint64
			for i := 0; i < ops; i++ {
				if len(ls) == 0 || rng.Intn(2) == 0 && bytes < maxLive {
					n := uint64(1 + rng.Intn(4096))
					var p unsafe.Pointer
					if st := rmm_allocate(h, sv.v, cSize(n), 256, &p); st != statusSuccess {
						errs <- lastMessage()
						return
					}
					ls = append(ls, live{p, n})
					bytes += n
					continue
				}
				k := rng.Intn(len(ls))
				if st := rmm_deallocate(h, sv.v, ls[k].p, cSize(ls[k].n), 256); st != statusSuccess {
					errs <- lastMessage()
					return
				}
				bytes -= ls[k].n
				ls[k] = ls[len(ls)-1]
				ls = ls[:len(ls)-1]
			}
			for _, l := range ls {
				if st := rmm_deallocate(h, sv.v, l.p, cSize(l.n), 256); st != statusSuccess {
					errs <- lastMessage()
					return
				}
			}
		}
	}
	for i := 0; i < threads; i++ {
		go work(i)
	}
	ready.Wait()
	refills, refilled, drains, reclaims := tcCrossed.refills.Load(), tcCrossed.refilled.Load(), tcCrossed.drains.Load(), tcCrossed.reclaims.Load()
	warm.Done()
	done.Wait()
	close(errs)
	for m := range errs {
		t.Fatal(m)
	}
	refills = tcCrossed.refills.Load() - refills
	refilled = tcCrossed.refilled.Load() - refilled
	drains = tcCrossed.drains.Load() - drains
	reclaims = tcCrossed.reclaims.Load() - reclaims
	calls := int64(threads * (reps - 1) * ops) // allocations and frees, not counting the last frees
	t.Logf("%d calls: %d refills (%d blocks), %d drains, %d reclaims", calls, refills, refilled, drains, reclaims)
	assert.Less(t, float64(refills+drains)/float64(calls), 0.001, "crossings per call")
	assert.GreaterOrEqual(t, refilled, 8*refills, "blocks a refill brings")
	assert.Less(t, reclaims, int64(threads*(reps-1)*4), "reclaims")
}
