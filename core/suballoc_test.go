package core

// Tests every sub-allocator (pool, arena, fixed-size, binning) must pass.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
)

func TestSubAllocatorBasics(t *testing.T) {
	for _, m := range makers {
		t.Run(m.name, func(t *testing.T) {
			up := newCountingUpstream(t)
			r := m.make(t, testRuntime(t), up)
			assert.Equal(t, m.name, r.Kind())
			assert.Equal(t, up.Properties(), r.Properties())
			assert.True(t, r.Equal(r))
			assert.Same(t, Resource(up), r.Upstream())
			other := m.make(t, testRuntime(t), up)
			assert.False(t, r.Equal(other), "distinct resources must not be equal")
			assert.False(t, r.Equal(up))

			calls := up.calls
			p, err := r.Allocate(DefaultStream, 0, DefaultAlignment)
			require.NoError(t, err)
			assert.Zero(t, p, "a zero-byte request returns 0")
			assert.Equal(t, calls, up.calls, "a zero-byte request must not reach the upstream")
			require.NoError(t, r.Deallocate(DefaultStream, 0, 0, DefaultAlignment))
			require.NoError(t, r.Deallocate(DefaultStream, 0, 100, DefaultAlignment))

			for _, a := range []uintptr{0, 3, 24, 257} {
				_, err := r.Allocate(DefaultStream, 100, a)
				requireIs(t, err, ErrBadAlignment, "alignment ", a)
			}
			for _, a := range []uintptr{512, 4096} {
				_, err := r.Allocate(DefaultStream, 100, a)
				requireIs(t, err, ErrBadAlignment, "alignments above 256 are refused, not ignored: ", a)
			}
			for _, a := range []uintptr{1, 2, 8, 64, 128, 256} {
				p, err := r.Allocate(DefaultStream, 1000, a)
				require.NoError(t, err)
				assert.Zero(t, p%DefaultAlignment, "pointer %#x is not 256-byte aligned", p)
				require.NoError(t, r.Deallocate(DefaultStream, p, 1000, a))
			}
			p, err = r.AllocateSync(5000, DefaultAlignment)
			require.NoError(t, err)
			require.NoError(t, r.DeallocateSync(p, 5000, DefaultAlignment))

			require.NoError(t, other.Close())
			require.NoError(t, r.Close())
			require.NoError(t, r.Close(), "closing twice is fine")
			_, err = r.Allocate(DefaultStream, 100, DefaultAlignment)
			requireIs(t, err, ErrClosed)
			requireIs(t, r.Deallocate(DefaultStream, 0x1000, 100, DefaultAlignment), ErrClosed)
			assert.Zero(t, up.liveCount(), "Close must return everything to the upstream")
		})
	}
}

func TestSubAllocatorInvalidFrees(t *testing.T) {
	for _, m := range makers {
		t.Run(m.name, func(t *testing.T) {
			up := newCountingUpstream(t)
			r := m.make(t, testRuntime(t), up)
			defer r.Close()
			p, err := r.Allocate(DefaultStream, 1000, DefaultAlignment)
			require.NoError(t, err)
			q, err := r.Allocate(DefaultStream, 1000, DefaultAlignment)
			require.NoError(t, err)
			requireIs(t, r.Deallocate(DefaultStream, 0x12340000, 1000, DefaultAlignment), ErrInvalidPointer, "a pointer never handed out")
			requireIs(t, r.Deallocate(DefaultStream, p+256, 1000, DefaultAlignment), ErrInvalidPointer, "an interior pointer")
			require.NoError(t, r.Deallocate(DefaultStream, p, 1000, DefaultAlignment))
			requireIs(t, r.Deallocate(DefaultStream, p, 1000, DefaultAlignment), ErrInvalidPointer, "a double free")
			if isSimulated(t) {
				// On a GPU a forged stream is a wild pointer that CUDA
				// dereferences (the caller's error, as in RMM): only the
				// simulated device can report it.
				_, err = r.Allocate(Stream(0xdead0000), 100, DefaultAlignment)
				requireIs(t, err, ErrInvalidArgument, "a stream that does not exist")
			}
			require.NoError(t, r.Deallocate(DefaultStream, q, 1000, DefaultAlignment))
		})
	}
}

// TestSubAllocatorRandomWorkload checks the invariants on random workloads
// over several streams: allocations are aligned and never overlap, and
// everything returns to the upstream at Close.
func TestSubAllocatorRandomWorkload(t *testing.T) {
	for _, m := range makers {
		t.Run(m.name, func(t *testing.T) {
			r0 := testRuntime(t)
			up := newCountingUpstream(t)
			r := m.make(t, r0, up)
			streams := []Stream{DefaultStream, newStream(t, r0), newStream(t, r0)}
			rng := rand.New(rand.NewPCG(7, uint64(len(m.name))))
			var used func() uintptr
			if p, ok := r.(*Pool); ok {
				used = p.UsedBytes
			}
			_, err := randomWorkload(r, rng, raceScale(30000), m.maxSize, streams, 97, used)
			require.NoError(t, err)
			if p, ok := r.(*Pool); ok {
				assert.Zero(t, p.UsedBytes())
			}
			require.NoError(t, r.Close())
			assert.Zero(t, up.liveCount())
			assert.Zero(t, up.liveBytes())
		})
	}
}

// TestSubAllocatorConcurrent runs 16 goroutines at once on each resource,
// each on its own stream or the default one, freeing on either; run it
// with -race.
func TestSubAllocatorConcurrent(t *testing.T) {
	for _, m := range makers {
		t.Run(m.name, func(t *testing.T) {
			r0 := testRuntime(t)
			up := newCountingUpstream(t)
			r := m.make(t, r0, up)
			const goroutines = 16
			streams := make([]Stream, goroutines)
			for i := range streams {
				if i%2 == 1 {
					streams[i] = newStream(t, r0)
				}
			}
			var wg sync.WaitGroup
			errs := make([]error, goroutines)
			for i := 0; i < goroutines; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(i), 99))
					ss := []Stream{streams[i], streams[(i+1)%goroutines]}
					_, errs[i] = randomWorkload(r, rng, raceScale(6000), m.maxSize/8, ss, 0, nil)
				}()
			}
			wg.Wait()
			require.NoError(t, errors.Join(errs...))
			if p, ok := r.(*Pool); ok {
				assert.Zero(t, p.UsedBytes())
			}
			require.NoError(t, r.Close())
			assert.Zero(t, up.liveCount(), "everything back upstream after Close")
		})
	}
}

// orderMaker builds a sub-allocator for the stream-order tests: blocks of
// size bytes, the default stream's memory (taken at construction) enough
// for initial bytes, and at most max bytes in all. extra is the size of the
// second block the freeing stream keeps in TestSubAllocatorSettledReuse.
type orderMaker struct {
	name  string
	extra func(size uintptr) uintptr
	make  func(t *testing.T, r cudart.Runtime, up *countingUpstream, size, initial, max uintptr) subAllocator
}

var orderMakers = []orderMaker{
	{"pool", func(uintptr) uintptr { return 64 << 10 }, func(t *testing.T, r cudart.Runtime, up *countingUpstream, size, initial, max uintptr) subAllocator {
		p, err := newPool(r, up, PoolOptions{InitialSize: initial, MaximumSize: max})
		require.NoError(t, err)
		return p
	}},
	{"fixed_size", func(size uintptr) uintptr { return size }, func(t *testing.T, r cudart.Runtime, up *countingUpstream, size, initial, max uintptr) subAllocator {
		up.limit = max
		f, err := newFixedSize(r, up, FixedSizeOptions{BlockSize: size, BlocksToPreallocate: 1})
		require.NoError(t, err)
		return f
	}},
	{"arena", func(uintptr) uintptr { return 2 * smallLimit }, func(t *testing.T, r cudart.Runtime, up *countingUpstream, size, initial, max uintptr) subAllocator {
		a, err := newArena(r, up, ArenaOptions{ArenaSize: max})
		require.NoError(t, err)
		return a
	}},
	{"binning", func(size uintptr) uintptr { return size }, func(t *testing.T, r cudart.Runtime, up *countingUpstream, size, initial, max uintptr) subAllocator {
		up.limit = max
		b, err := newBinning(r, up, -1, -1)
		require.NoError(t, err)
		f, err := newFixedSize(r, up, FixedSizeOptions{BlockSize: size, BlocksToPreallocate: 1})
		require.NoError(t, err)
		t.Cleanup(func() { _ = f.Close() })
		require.NoError(t, b.AddBin(size, f))
		return b
	}},
}

// TestSubAllocatorCrossStreamReuse: memory freed on the legacy default
// stream while it still has queued work that writes it may go to stream B
// only after B waits for it. With the default stream paused, a fill queued
// on it and then the block freed on it, the block allocated on B and filled
// on B must hold B's value once the default stream runs. The default stream
// cannot be destroyed, so B records its event on it lazily: one record and
// one wait, no synchronization.
func TestSubAllocatorCrossStreamReuse(t *testing.T) {
	sim := simDevice(t)
	const size = 4 << 20
	for _, m := range orderMakers {
		t.Run(m.name, func(t *testing.T) {
			rt := newOrderingRuntime(t)
			up := newCountingUpstream(t)
			r := m.make(t, rt, up, size, size, size)
			defer r.Close()
			a, b := DefaultStream, newStream(t, sim)

			x, err := r.Allocate(a, size, DefaultAlignment)
			require.NoError(t, err)
			require.NoError(t, sim.PauseStream(a))
			defer sim.ResumeStream(a) // before Close, which synchronizes
			// Queued: A is paused.
			require.NoError(t, sim.MemsetAsync(x, 0xAA, size, a))
			require.NoError(t, r.Deallocate(a, x, size, DefaultAlignment))

			before := rt.counts()
			y, err := r.Allocate(b, size, DefaultAlignment)
			require.NoError(t, err)
			require.Equal(t, x, y, "the only block is the one freed on A")
			after := rt.counts()
			assert.Equal(t, before[0]+1, after[0], "one event record on A")
			assert.Equal(t, 1, rt.recordsOnStream(a), "on A")
			assert.Equal(t, before[1]+1, after[1], "one wait on B")
			assert.Equal(t, before[2:], after[2:], "no host synchronization")
			require.Error(t, sim.StreamQuery(b), "B must wait for A, which is paused")

			require.NoError(t, sim.MemsetAsync(y, 0xBB, size, b))
			require.NoError(t, sim.ResumeStream(a))
			require.NoError(t, expect(sim, y, size, 0xBB, b), "B's fill ran before A's")

			// Reuse on the stream that freed: no event, no wait.
			require.NoError(t, r.Deallocate(b, y, size, DefaultAlignment))
			before = rt.counts()
			z, err := r.Allocate(b, size, DefaultAlignment)
			require.NoError(t, err)
			assert.Equal(t, y, z)
			assert.Equal(t, before, rt.counts(), "reuse on the freeing stream costs no CUDA call")
			require.NoError(t, r.Deallocate(b, z, size, DefaultAlignment))
			assert.Empty(t, rt.misuses())
		})
	}
}

// TestSubAllocatorSettledReuse: memory freed on a created stream A goes to
// stream B only through a record of A's event made during a later call on
// A, and is then used by B even after A is destroyed, without any call on
// A's handle. A frees x with a fill of x queued (A paused); B asks for
// memory, which marks A wanted and grows instead of touching A; A's next
// call (freeing its other block w) records A's event; A is destroyed; B's
// next allocation takes x (or w) after one wait, and B's fill lands after
// A's once A runs.
func TestSubAllocatorSettledReuse(t *testing.T) {
	sim := simDevice(t)
	const size = 4 << 20
	for _, m := range orderMakers {
		t.Run(m.name, func(t *testing.T) {
			rt := newOrderingRuntime(t)
			up := newCountingUpstream(t)
			extra := m.extra(size)
			r := m.make(t, rt, up, size, size+extra, 2*size+extra)
			defer r.Close()
			a, err := sim.StreamCreate(cudart.StreamFlagDefault)
			require.NoError(t, err)
			b := newStream(t, sim)

			x, err := r.Allocate(a, size, DefaultAlignment)
			require.NoError(t, err)
			w, err := r.Allocate(a, extra, DefaultAlignment)
			require.NoError(t, err)
			require.NoError(t, sim.PauseStream(a))
			defer sim.ResumeStream(a) // before Close, which synchronizes
			require.NoError(t, sim.MemsetAsync(x, 0xAA, size, a))
			require.NoError(t, sim.MemsetAsync(w, 0xAA, extra, a))
			require.NoError(t, r.Deallocate(a, x, size, DefaultAlignment))

			before := rt.counts()
			onA := rt.recordsOnStream(a) // growth settles the grower: fixed-size recorded on A for w
			z, err := r.Allocate(b, size, DefaultAlignment)
			require.NoError(t, err, "B grows instead of waiting for A")
			assert.NotEqual(t, x, z, "nothing orders B after A yet")
			mid := rt.counts()
			assert.Equal(t, before[2:], mid[2:], "no host synchronization")
			assert.Equal(t, onA, rt.recordsOnStream(a), "B never records on A")

			require.NoError(t, r.Deallocate(a, w, extra, DefaultAlignment))
			assert.Equal(t, onA+1, rt.recordsOnStream(a), "A's next call records A's event")
			require.NoError(t, rt.StreamDestroy(a), "destroying a stream after freeing memory on it is legal")

			before = rt.counts()
			y, err := r.Allocate(b, size, DefaultAlignment)
			require.NoError(t, err)
			assert.Contains(t, []uintptr{x, w}, y, "a block freed on A")
			after := rt.counts()
			assert.Equal(t, before[0], after[0], "no record")
			assert.Equal(t, before[1]+1, after[1], "one wait on B")
			assert.Equal(t, before[2:], after[2:], "no host synchronization")
			require.Error(t, sim.StreamQuery(b), "B waits for A, which is paused")

			require.NoError(t, sim.MemsetAsync(y, 0xBB, size, b))
			require.NoError(t, sim.ResumeStream(a))
			require.NoError(t, expect(sim, y, size, 0xBB, b), "B's fill ran after A's")
			require.NoError(t, r.Deallocate(b, y, size, DefaultAlignment))
			require.NoError(t, r.Deallocate(b, z, size, DefaultAlignment))
			assert.Empty(t, rt.misuses(), "no call on the destroyed stream")
		})
	}
}

// TestSubAllocatorDestroyedStream: memory freed on a stream that is then
// destroyed, with its work still queued and no record covering the free,
// is reused by another stream only after a device synchronization, which
// waits for the destroyed stream's work; its handle is never used again.
func TestSubAllocatorDestroyedStream(t *testing.T) {
	sim := simDevice(t)
	const size = 2 << 20
	for _, m := range orderMakers {
		t.Run(m.name, func(t *testing.T) {
			rt := newOrderingRuntime(t)
			up := newCountingUpstream(t)
			r := m.make(t, rt, up, size, size, size)
			defer r.Close()
			a, err := sim.StreamCreate(cudart.StreamFlagDefault)
			require.NoError(t, err)
			b := newStream(t, sim)
			x, err := r.Allocate(a, size, DefaultAlignment)
			require.NoError(t, err)
			require.NoError(t, sim.PauseStream(a))
			defer sim.ResumeStream(a) // before Close, which synchronizes
			require.NoError(t, sim.MemsetAsync(x, 0xAA, size, a))
			require.NoError(t, r.Deallocate(a, x, size, DefaultAlignment))
			require.NoError(t, rt.StreamDestroy(a))

			before := rt.counts()
			type result struct {
				p   uintptr
				err error
			}
			done := make(chan result, 1)
			go func() {
				p, err := r.Allocate(b, size, DefaultAlignment)
				done <- result{p, err}
			}()
			select {
			case res := <-done:
				t.Fatalf("the allocation returned (%#x, %v) while the destroyed stream's work is pending", res.p, res.err)
			case <-time.After(50 * time.Millisecond):
			}
			require.NoError(t, sim.ResumeStream(a))
			res := <-done
			require.NoError(t, res.err)
			assert.Equal(t, x, res.p)
			after := rt.counts()
			assert.Equal(t, before[2]+1, after[2], "one device synchronization")
			assert.Zero(t, rt.recordsOnStream(a), "no record on a destroyed stream")
			require.NoError(t, sim.MemsetAsync(res.p, 0xBB, size, b))
			require.NoError(t, expect(sim, res.p, size, 0xBB, b))
			assert.Empty(t, rt.misuses(), "no call on the destroyed stream")

			_, err = r.Allocate(a, 256, DefaultAlignment)
			requireIs(t, err, ErrInvalidArgument, "a destroyed stream (the caller's error, reported by the simulator)")
			require.NoError(t, r.Deallocate(b, res.p, size, DefaultAlignment))
		})
	}
}

// TestSubAllocatorPerThreadDefaultStream: the per-thread default stream
// names another stream on each thread, so no other thread may record on
// it. Frees on it record nothing; another stream that wants its memory
// marks it, and its next call (on its own thread) records its event.
func TestSubAllocatorPerThreadDefaultStream(t *testing.T) {
	sim := simDevice(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const size, extra = 1 << 20, 64 << 10
	rt := newOrderingRuntime(t)
	up := newCountingUpstream(t)
	p, err := newPool(rt, up, PoolOptions{InitialSize: size + extra, MaximumSize: 2*size + extra})
	require.NoError(t, err)
	defer p.Close()
	pt := cudart.PerThreadDefaultStream
	x, err := p.Allocate(pt, size, DefaultAlignment)
	require.NoError(t, err)
	w, err := p.Allocate(pt, extra, DefaultAlignment)
	require.NoError(t, err)
	before := rt.counts()
	require.NoError(t, p.Deallocate(pt, x, size, DefaultAlignment))
	assert.Equal(t, before, rt.counts(), "a free records nothing")
	other := newStream(t, sim)
	z, err := p.Allocate(other, size, DefaultAlignment)
	require.NoError(t, err)
	assert.NotEqual(t, x, z)
	assert.Zero(t, rt.recordsOnStream(pt))
	require.NoError(t, p.Deallocate(pt, w, extra, DefaultAlignment))
	assert.Equal(t, 1, rt.recordsOnStream(pt), "the next call records, on its own thread")
	before = rt.counts()
	y, err := p.Allocate(other, size, DefaultAlignment)
	require.NoError(t, err)
	assert.Equal(t, x, y)
	after := rt.counts()
	assert.Equal(t, before[0], after[0], "no further record")
	assert.Equal(t, before[1]+1, after[1], "one wait")
	assert.Equal(t, before[2:], after[2:], "no synchronization")
	require.NoError(t, p.Deallocate(other, y, size, DefaultAlignment))
	require.NoError(t, p.Deallocate(other, z, size, DefaultAlignment))
	assert.Empty(t, rt.misuses())
}

// TestSubAllocatorNoHostSync: the random workload over several streams,
// cross-stream frees included, never synchronizes the host.
func TestSubAllocatorNoHostSync(t *testing.T) {
	for _, m := range makers {
		t.Run(m.name, func(t *testing.T) {
			rt := newOrderingRuntime(t)
			up := newCountingUpstream(t)
			r := m.make(t, rt, up)
			defer r.Close()
			streams := []Stream{DefaultStream, newStream(t, rt), newStream(t, rt)}
			before := rt.counts()
			rng := rand.New(rand.NewPCG(3, 4))
			_, err := randomWorkload(r, rng, raceScale(20000), m.maxSize/2, streams, 0, nil)
			require.NoError(t, err)
			after := rt.counts()
			assert.Equal(t, before[2:], after[2:], "no device or stream synchronization")
			t.Logf("%s: %d event records and %d waits for %d operations; upstream peak %d KiB", m.name, after[0]-before[0], after[1]-before[1], raceScale(20000), up.peak>>10)
		})
	}
}

func ExampleNewPool() {
	cuda, err := NewCuda()
	if err != nil {
		fmt.Println(err)
		return
	}
	pool, err := NewPool(cuda, PoolOptions{InitialSize: 64 << 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	p, err := pool.Allocate(DefaultStream, 1000, DefaultAlignment)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(pool.UsedBytes(), pool.PoolSize())
	_ = pool.Deallocate(DefaultStream, p, 1000, DefaultAlignment)
	// Output: 1024 67108864
}

// liveSet is a process-wide set of live blocks, to catch one block handed
// to two goroutines at once.
type liveSet struct {
	mu sync.Mutex
	m  map[uintptr]uintptr // start -> rounded size
}

func (s *liveSet) add(p, n uintptr) error {
	n = (n + 255) &^ 255
	s.mu.Lock()
	defer s.mu.Unlock()
	for q, m := range s.m {
		if p < q+m && q < p+n {
			return fmt.Errorf("[%#x, +%d) overlaps the live [%#x, +%d) of another goroutine", p, n, q, m)
		}
	}
	s.m[p] = n
	return nil
}

func (s *liveSet) remove(p uintptr) {
	s.mu.Lock()
	delete(s.m, p)
	s.mu.Unlock()
}

// TestSubAllocatorThreads mirrors tests/c/threads_test.c: 16 goroutines,
// each on its own stream, allocate, fill with their own pattern, check and
// free; no block may ever be live for two goroutines, and every pattern
// must read back intact.
func TestSubAllocatorThreads(t *testing.T) {
	r0 := testRuntime(t)
	for _, m := range makers {
		t.Run(m.name, func(t *testing.T) {
			up := newCountingUpstream(t)
			r := m.make(t, r0, up)
			defer r.Close()
			const goroutines = 16
			live := &liveSet{m: map[uintptr]uintptr{}}
			var wg sync.WaitGroup
			errs := make([]error, goroutines)
			for g := 0; g < goroutines; g++ {
				s := newStream(t, r0)
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[g] = func() error {
						rng := rand.New(rand.NewPCG(uint64(g), 11))
						type blk struct {
							p, n uintptr
							v    byte
						}
						var mine []blk
						for i := 0; i < raceScale(1500); i++ {
							if len(mine) == 24 || len(mine) > 0 && rng.IntN(3) == 0 {
								k := rng.IntN(len(mine))
								b := mine[k]
								mine[k] = mine[len(mine)-1]
								mine = mine[:len(mine)-1]
								if err := expect(r0, b.p, min(b.n, 4096), b.v, s); err != nil {
									return fmt.Errorf("goroutine %d: %w: overwritten by another allocation", g, err)
								}
								live.remove(b.p)
								if err := r.Deallocate(s, b.p, b.n, 256); err != nil {
									return err
								}
								continue
							}
							n := uintptr(rng.IntN(int(m.maxSize/8))) + 1
							p, err := r.Allocate(s, n, 256)
							if err != nil {
								return err
							}
							if err := live.add(p, n); err != nil {
								return err
							}
							v := byte(g*16 + i%16)
							if err := r0.MemsetAsync(p, int(v), n, s); err != nil {
								return err
							}
							mine = append(mine, blk{p, n, v})
						}
						for _, b := range mine {
							if err := expect(r0, b.p, min(b.n, 4096), b.v, s); err != nil {
								return fmt.Errorf("goroutine %d: %w", g, err)
							}
							live.remove(b.p)
							if err := r.Deallocate(s, b.p, b.n, 256); err != nil {
								return err
							}
						}
						return r0.StreamSynchronize(s)
					}()
				}()
			}
			wg.Wait()
			require.NoError(t, errors.Join(errs...))
		})
	}
}
