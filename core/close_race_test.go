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
	for _, m := range makers {
		for _, op := range []string{"allocate", "deallocate"} {
			t.Run(m.name+"/"+op, func(t *testing.T) {
				g := newGateRuntime(t)
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
				assert.Zero(t, g.events.Load(), "no event left")
			})
		}
	}
}

// TestSubAllocatorCloseUnderLoad closes each sub-allocator while goroutines
// allocate and free on the default stream and on streams of their own: every
// call succeeds or fails with ErrClosed, calls made after Close returned
// fail, and the upstream gets every byte back.
func TestSubAllocatorCloseUnderLoad(t *testing.T) {
	const workers = 4
	for _, m := range makers {
		t.Run(m.name, func(t *testing.T) {
			g := newGateRuntime(t)
			for round := 0; round < raceScale(10); round++ {
				up := newCountingUpstream(t)
				r := m.make(t, g, up)
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
				for ops.Load() < 200 {
					runtime.Gosched()
				}
				require.NoError(t, r.Close())
				closed.Store(true)
				wg.Wait()
				close(errc)
				for err := range errc {
					t.Errorf("round %d: %v", round, err)
				}
				require.Zero(t, up.liveBytes(), "round %d: every byte is back upstream", round)
				require.Zero(t, g.events.Load(), "round %d: no event left", round)
			}
		})
	}
}
