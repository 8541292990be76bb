package core

// Close racing calls on the same resource: the C API closes a resource when
// its last handle goes, while other threads may still be inside calls on
// it, and a Go program may do the same. Those calls finish or fail with
// ErrClosed, and every byte goes back upstream.

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
)

// gateRuntime wraps a runtime so that a test can stop one call inside a
// resource, at a CUDA call it makes, while the test closes the resource;
// it also counts the events made and destroyed.
type gateRuntime struct {
	cudart.Runtime

	mu      sync.Mutex
	fn      string        // the call that stops, once; "" when none
	stream  cudart.Stream // StreamGetID stops only for this stream
	entered chan struct{} // closed when the call stopped
	release chan struct{} // closed to let it go on

	events atomic.Int64 // made less destroyed
}

func newGateRuntime(t testing.TB) *gateRuntime {
	return &gateRuntime{Runtime: testRuntime(t)}
}

// arm makes the next call of fn (a cudart.Runtime method name) stop until
// open is called; entered returns a channel closed once it stopped.
func (g *gateRuntime) arm(fn string, s cudart.Stream) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fn, g.stream = fn, s
	g.entered, g.release = make(chan struct{}), make(chan struct{})
}

func (g *gateRuntime) wait() { <-g.entered }
func (g *gateRuntime) open() { close(g.release) }

// stop stops the calling goroutine when fn is armed.
func (g *gateRuntime) stop(fn string, s cudart.Stream) {
	g.mu.Lock()
	if g.fn != fn || (fn == "StreamGetID" && s != g.stream) {
		g.mu.Unlock()
		return
	}
	g.fn = ""
	entered, release := g.entered, g.release
	g.mu.Unlock()
	close(entered)
	<-release
}

func (g *gateRuntime) StreamGetID(s cudart.Stream) (uint64, error) {
	g.stop("StreamGetID", s)
	return g.Runtime.StreamGetID(s)
}

func (g *gateRuntime) MallocFromPoolAsync(size uintptr, pool cudart.MemPool, s cudart.Stream) (uintptr, error) {
	g.stop("MallocFromPoolAsync", s)
	return g.Runtime.MallocFromPoolAsync(size, pool, s)
}

func (g *gateRuntime) EventCreate(flags uint32) (cudart.Event, error) {
	e, err := g.Runtime.EventCreate(flags)
	if err == nil {
		g.events.Add(1)
	}
	return e, err
}

func (g *gateRuntime) EventDestroy(e cudart.Event) error {
	err := g.Runtime.EventDestroy(e)
	if err == nil {
		g.events.Add(-1)
	}
	return err
}

// TestSubAllocatorCloseRacingCalls stops a call on a created stream inside
// each sub-allocator (in cudaStreamGetId, after the call checked that the
// resource is open), closes the resource, and lets the call go on. It must
// fail with ErrClosed (not an invalid pointer or an out-of-memory), take
// nothing more from the upstream, and leave no event behind. Before the
// fix a pool grew after its Close (the chunk was never given back), an
// arena reported out of memory, and frees reported invalid pointers.
func TestSubAllocatorCloseRacingCalls(t *testing.T) {
	const size = 4 << 10 // served by every maker (binning's bins go to 16 KiB)
	for _, m := range raceMakers() {
		for _, op := range []string{"allocate", "deallocate"} {
			t.Run(m.name+"/"+op, func(t *testing.T) {
				g := newGateRuntime(t)
				free0 := deviceFree(t, g)
				up := newCountingUpstream(t)
				r := m.make(t, g, up)
				s := newStream(t, g)
				var p uintptr
				if op == "deallocate" {
					var err error
					p, err = r.Allocate(s, size, DefaultAlignment)
					require.NoError(t, err)
				}
				g.arm("StreamGetID", s)
				done := make(chan error, 1)
				go func() {
					if op == "allocate" {
						q, err := r.Allocate(s, size, DefaultAlignment)
						if err == nil {
							err = fmt.Errorf("allocated %#x from a closed resource", q)
						}
						done <- err
						return
					}
					done <- r.Deallocate(s, p, size, DefaultAlignment)
				}()
				g.wait()
				require.NoError(t, r.Close())
				g.open()
				err := <-done
				requireIs(t, err, ErrClosed)
				assert.Zero(t, up.liveBytes(), "every byte is back upstream")
				checkDeviceFree(t, g, free0)
				assert.Zero(t, g.events.Load(), "no event left")
			})
		}
	}
}

// gateVMRuntime is a gateRuntime that offers virtual memory management too
// (for the expandable resource).
type gateVMRuntime struct {
	*gateRuntime
	cudart.VirtualMemory
}

// raceMakers are the sub-allocators of makers, and the expandable resource
// (which has no upstream: the device's memory counts for it), made on g.
func raceMakers() []struct {
	name string
	make func(t testing.TB, g *gateRuntime, up Resource) closer
} {
	type mk = struct {
		name string
		make func(t testing.TB, g *gateRuntime, up Resource) closer
	}
	var ms []mk
	for _, m := range makers {
		m := m
		ms = append(ms, mk{m.name, func(t testing.TB, g *gateRuntime, up Resource) closer { return m.make(t, g, up) }})
	}
	return append(ms, mk{"expandable", func(t testing.TB, g *gateRuntime, _ Resource) closer {
		vm, err := cudart.VirtualMemoryOf(g.Runtime)
		if err != nil {
			t.Skipf("expandable: %v", err)
		}
		e, err := newExpandable(&gateVMRuntime{g, vm}, ExpandableOptions{})
		require.NoError(t, err)
		return e
	}})
}

// closer is a resource that can be closed.
type closer interface {
	Resource
	Close() error
}

// closeUnderLoad closes r while four goroutines allocate and free on the
// default stream and on streams of their own (made through g): every call
// must succeed or fail with ErrClosed, and calls made after Close returned
// must fail.
func closeUnderLoad(t *testing.T, g *gateRuntime, r closer, round int) {
	t.Helper()
	const workers = 4
	var ops atomic.Int64
	var closed atomic.Bool
	errc := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		s := DefaultStream
		if w%2 == 1 {
			s = newStream(t, g)
		}
		wg.Add(1)
		go func(w int, s Stream) {
			defer wg.Done()
			size := uintptr(256 << (w % 6)) // 256 B .. 8 KiB
			for {
				after := closed.Load()
				p, err := r.Allocate(s, size, DefaultAlignment)
				if err == nil && after {
					errc <- fmt.Errorf("an allocation that began after Close succeeded")
					return
				}
				if err == nil {
					ops.Add(1)
					err = r.Deallocate(s, p, size, DefaultAlignment)
				}
				if err != nil {
					if !errors.Is(err, ErrClosed) {
						errc <- err
					}
					return
				}
			}
		}(w, s)
	}
	for start := time.Now(); ops.Load() < 200 && time.Since(start) < 2*time.Second; {
		runtime.Gosched()
	}
	require.NoError(t, r.Close())
	closed.Store(true)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Errorf("round %d: %v", round, err)
	}
}

// TestSubAllocatorCloseUnderLoad closes each sub-allocator under load
// (closeUnderLoad): the upstream gets every byte back and no event is left.
func TestSubAllocatorCloseUnderLoad(t *testing.T) {
	for _, m := range raceMakers() {
		t.Run(m.name, func(t *testing.T) {
			g := newGateRuntime(t)
			free0 := deviceFree(t, g)
			for round := 0; round < raceScale(6); round++ {
				up := newCountingUpstream(t)
				closeUnderLoad(t, g, m.make(t, g, up), round)
				require.Zero(t, up.liveBytes(), "round %d: every byte is back upstream", round)
				require.Zero(t, g.events.Load(), "round %d: no event left", round)
			}
			checkDeviceFree(t, g, free0)
		})
	}
}

// asyncOwners make the kinds that own a CUDA memory pool, on runtime r.
var asyncOwners = []struct {
	name string
	make func(r cudart.Runtime) (closer, error)
}{
	{"cuda_async", func(r cudart.Runtime) (closer, error) { return newCudaAsync(r, CudaAsyncOptions{}) }},
	{"cuda_async_managed", func(r cudart.Runtime) (closer, error) { return newCudaAsyncManaged(r) }},
}

// newAsyncOwner makes one, skipping the test where the device lacks it.
func newAsyncOwner(t *testing.T, name string, make func(r cudart.Runtime) (closer, error), r cudart.Runtime) closer {
	t.Helper()
	c, err := make(r)
	if errors.Is(err, ErrNotSupported) && !isSimulated(t) {
		t.Skipf("%s is not supported here: %v", name, err)
	}
	require.NoError(t, err)
	return c
}

// checkDeviceFree asserts that the device's free memory is free0 again.
// Only on the simulated device: on a GPU the driver's own allocations
// (streams, events, pools) move cudaMemGetInfo; the stress program, which
// warms those up first, checks device memory there.
func checkDeviceFree(t *testing.T, r cudart.Runtime, free0 uint64) {
	t.Helper()
	if isSimulated(t) {
		assert.Equal(t, free0, deviceFree(t, r), "the device has every byte back")
	}
}

// deviceFree is the current device's free memory once the device is idle.
func deviceFree(t *testing.T, r cudart.Runtime) uint64 {
	t.Helper()
	require.NoError(t, r.DeviceSynchronize())
	free, _, err := r.MemGetInfo()
	require.NoError(t, err)
	return free
}

// TestAsyncCloseRacingAllocate stops an allocation inside a cuda_async (and
// a cuda_async_managed) resource, in cudaMallocFromPoolAsync, and closes
// the resource meanwhile. Close must wait for the call (before the fix it
// destroyed the pool under it, and the call failed with a CUDA error on the
// destroyed pool, which on a GPU may crash), and give back every block
// still outstanding, the racing call's and one held from before (before,
// CUDA kept a destroyed pool's memory until blocks nobody could free any
// more were freed: the device lost them).
func TestAsyncCloseRacingAllocate(t *testing.T) {
	for _, k := range asyncOwners {
		t.Run(k.name, func(t *testing.T) {
			g := newGateRuntime(t)
			free0 := deviceFree(t, g)
			r := newAsyncOwner(t, k.name, k.make, g)
			held, err := r.Allocate(DefaultStream, 1<<20, DefaultAlignment)
			require.NoError(t, err)

			g.arm("MallocFromPoolAsync", DefaultStream)
			type result struct {
				p   uintptr
				err error
			}
			done := make(chan result, 1)
			go func() {
				p, err := r.Allocate(DefaultStream, 2<<20, DefaultAlignment)
				done <- result{p, err}
			}()
			g.wait()
			closed := make(chan error, 1)
			go func() { closed <- r.Close() }()
			select {
			case err := <-closed:
				closed <- err
				t.Errorf("Close returned while an allocation was inside the resource")
			case <-time.After(20 * time.Millisecond):
			}
			g.open()
			got := <-done
			require.NoError(t, got.err, "the allocation began before Close")
			require.NoError(t, <-closed)
			for _, b := range []struct{ p, n uintptr }{{held, 1 << 20}, {got.p, 2 << 20}} {
				requireIs(t, r.Deallocate(DefaultStream, b.p, b.n, DefaultAlignment), ErrClosed, "Close gave it back")
			}
			_, err = r.Allocate(DefaultStream, 256, DefaultAlignment)
			requireIs(t, err, ErrClosed)
			if k.name == "cuda_async" { // managed memory is not device memory to MemGetInfo
				checkDeviceFree(t, g, free0)
			}
		})
	}
}

// TestAsyncCloseUnderLoad closes each pool-owning kind under load
// (closeUnderLoad): the device gets every byte back.
func TestAsyncCloseUnderLoad(t *testing.T) {
	for _, k := range asyncOwners {
		t.Run(k.name, func(t *testing.T) {
			g := newGateRuntime(t)
			free0 := deviceFree(t, g)
			for round := 0; round < raceScale(10); round++ {
				closeUnderLoad(t, g, newAsyncOwner(t, k.name, k.make, g), round)
			}
			if k.name == "cuda_async" {
				checkDeviceFree(t, g, free0)
			}
		})
	}
}
