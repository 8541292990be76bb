package core

// Tests every sub-allocator (pool, arena, fixed-size, binning) must pass.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

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
			_, err = r.Allocate(Stream(0xdead0000), 100, DefaultAlignment)
			requireIs(t, err, ErrInvalidArgument, "a stream that does not exist")
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

// TestSubAllocatorCrossStreamReuse: memory freed on stream A while A still
// has queued work that writes it may go to stream B only after B waits for
// A. With A paused, a fill queued on A and then the block freed on A, the
// block allocated on B and filled on B must hold B's value once A runs.
func TestSubAllocatorCrossStreamReuse(t *testing.T) {
	sim := simDevice(t)
	const size = 4 << 20
	cases := []struct {
		name string
		make func(t *testing.T, r cudart.Runtime, up *countingUpstream) subAllocator
	}{
		{"pool", func(t *testing.T, r cudart.Runtime, up *countingUpstream) subAllocator {
			p, err := newPool(r, up, PoolOptions{InitialSize: size, MaximumSize: size})
			require.NoError(t, err)
			return p
		}},
		{"fixed_size", func(t *testing.T, r cudart.Runtime, up *countingUpstream) subAllocator {
			up.limit = size
			f, err := newFixedSize(r, up, FixedSizeOptions{BlockSize: size, BlocksToPreallocate: 1})
			require.NoError(t, err)
			return f
		}},
		{"arena", func(t *testing.T, r cudart.Runtime, up *countingUpstream) subAllocator {
			a, err := newArena(r, up, ArenaOptions{ArenaSize: size})
			require.NoError(t, err)
			return a
		}},
		{"binning", func(t *testing.T, r cudart.Runtime, up *countingUpstream) subAllocator {
			up.limit = size
			b, err := newBinning(r, up, -1, -1)
			require.NoError(t, err)
			f, err := newFixedSize(r, up, FixedSizeOptions{BlockSize: size, BlocksToPreallocate: 1})
			require.NoError(t, err)
			t.Cleanup(func() { _ = f.Close() })
			require.NoError(t, b.AddBin(size, f))
			return b
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rt := newOrderingRuntime(t)
			up := newCountingUpstream(t)
			r := c.make(t, rt, up)
			defer r.Close()
			a, b := newStream(t, sim), newStream(t, sim)

			x, err := r.Allocate(a, size, DefaultAlignment)
			require.NoError(t, err)
			require.NoError(t, sim.PauseStream(a))
			t.Cleanup(func() { _ = sim.ResumeStream(a) })
			require.NoError(t, sim.MemsetAsync(x, 0xAA, size, a)) // queued: A is paused
			require.NoError(t, r.Deallocate(a, x, size, DefaultAlignment))

			before := rt.counts()
			y, err := r.Allocate(b, size, DefaultAlignment)
			require.NoError(t, err)
			require.Equal(t, x, y, "the only block is the one freed on A")
			after := rt.counts()
			assert.Equal(t, before[0]+1, after[0], "one event record on A")
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
		})
	}
}

// TestSubAllocatorDestroyedStream: memory freed on a stream that is then
// destroyed is reused by another stream after one device synchronization
// (its event cannot be recorded any more).
func TestSubAllocatorDestroyedStream(t *testing.T) {
	sim := simDevice(t)
	const size = 2 << 20
	rt := newOrderingRuntime(t)
	up := newCountingUpstream(t)
	p, err := newPool(rt, up, PoolOptions{InitialSize: size, MaximumSize: size})
	require.NoError(t, err)
	defer p.Close()
	s, err := sim.StreamCreate(0)
	require.NoError(t, err)
	x, err := p.Allocate(s, size, DefaultAlignment)
	require.NoError(t, err)
	require.NoError(t, p.Deallocate(s, x, size, DefaultAlignment))
	require.NoError(t, sim.StreamDestroy(s))
	before := rt.counts()
	y, err := p.Allocate(DefaultStream, size, DefaultAlignment)
	require.NoError(t, err)
	assert.Equal(t, x, y)
	after := rt.counts()
	assert.Equal(t, before[2]+1, after[2], "one device synchronization")
	assert.Equal(t, before[0], after[0], "no record on a destroyed stream")
	_, err = p.Allocate(s, 256, DefaultAlignment)
	requireIs(t, err, ErrInvalidArgument, "a destroyed stream")
	require.NoError(t, p.Deallocate(DefaultStream, y, size, DefaultAlignment))
}

// TestSubAllocatorPerThreadDefaultStream: frees on the per-thread default
// stream record its event at once (it cannot be recorded from another
// thread later), so another stream reuses the memory with a wait only.
func TestSubAllocatorPerThreadDefaultStream(t *testing.T) {
	sim := simDevice(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const size = 1 << 20
	rt := newOrderingRuntime(t)
	up := newCountingUpstream(t)
	p, err := newPool(rt, up, PoolOptions{InitialSize: size, MaximumSize: size})
	require.NoError(t, err)
	defer p.Close()
	x, err := p.Allocate(cudart.PerThreadDefaultStream, size, DefaultAlignment)
	require.NoError(t, err)
	before := rt.counts()
	require.NoError(t, p.Deallocate(cudart.PerThreadDefaultStream, x, size, DefaultAlignment))
	assert.Equal(t, before[0]+1, rt.counts()[0], "a free on the per-thread stream records its event")
	other := newStream(t, sim)
	before = rt.counts()
	y, err := p.Allocate(other, size, DefaultAlignment)
	require.NoError(t, err)
	assert.Equal(t, x, y)
	after := rt.counts()
	assert.Equal(t, before[0], after[0], "no further record")
	assert.Equal(t, before[1]+1, after[1], "one wait")
	require.NoError(t, p.Deallocate(other, y, size, DefaultAlignment))
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
			t.Logf("%s: %d event records and %d waits for %d operations", m.name, after[0]-before[0], after[1]-before[1], raceScale(20000))
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
