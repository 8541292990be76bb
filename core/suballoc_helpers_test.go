package core

// Test helpers of the sub-allocator tests (pool, arena, fixed-size,
// binning).

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
	"github.com/rmmgo/rmmgo/cudart/sim"
)

// countingUpstream is an upstream over another resource that counts what it
// hands out, can be told to refuse (a full device), and can carve its
// memory from one region so that chunks are adjacent in memory.
type countingUpstream struct {
	inner Resource

	mu       sync.Mutex
	live     map[uintptr]uintptr
	bytes    uintptr
	peak     uintptr
	calls    int
	sizes    []uintptr // sizes of successful allocations, in order
	failAll  bool
	limit    uintptr // refuse when bytes would exceed it (0: no limit)
	region   uintptr // bump allocation from [region, region+regionN)
	regionN  uintptr
	regionAt uintptr
}

func newCountingUpstream(t testing.TB) *countingUpstream {
	t.Helper()
	c, err := NewCuda()
	require.NoError(t, err)
	return &countingUpstream{inner: c, live: map[uintptr]uintptr{}}
}

// contiguous makes the upstream carve every allocation from one region of
// n bytes, in address order, so that consecutive chunks touch.
func (u *countingUpstream) contiguous(t testing.TB, n uintptr) {
	t.Helper()
	p, err := u.inner.Allocate(DefaultStream, n, DefaultAlignment)
	require.NoError(t, err)
	u.region, u.regionN = p, n
	t.Cleanup(func() { _ = u.inner.Deallocate(DefaultStream, p, n, DefaultAlignment) })
}

func (u *countingUpstream) Allocate(s Stream, bytes, alignment uintptr) (uintptr, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.calls++
	if bytes == 0 {
		return 0, nil
	}
	if u.failAll || (u.limit != 0 && u.bytes+bytes > u.limit) {
		return 0, fmt.Errorf("counting upstream: %w: refusing %d bytes (%d in use)", ErrOutOfMemory, bytes, u.bytes)
	}
	var p uintptr
	if u.region != 0 {
		if u.regionAt+bytes > u.regionN {
			return 0, fmt.Errorf("counting upstream: %w: region full", ErrOutOfMemory)
		}
		p = u.region + u.regionAt
		u.regionAt += (bytes + 255) &^ 255
	} else {
		var err error
		if p, err = u.inner.Allocate(s, bytes, alignment); err != nil {
			return 0, err
		}
	}
	u.live[p] = bytes
	u.bytes += bytes
	u.peak = max(u.peak, u.bytes)
	u.sizes = append(u.sizes, bytes)
	return p, nil
}

func (u *countingUpstream) Deallocate(s Stream, p, bytes, alignment uintptr) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if p == 0 {
		return nil
	}
	n, ok := u.live[p]
	if !ok {
		return fmt.Errorf("counting upstream: %w: %#x", ErrInvalidPointer, p)
	}
	if n != bytes {
		return fmt.Errorf("counting upstream: %w: %#x freed with %d bytes, allocated with %d", ErrInvalidArgument, p, bytes, n)
	}
	delete(u.live, p)
	u.bytes -= n
	if u.region != 0 {
		return nil
	}
	return u.inner.Deallocate(s, p, bytes, alignment)
}

func (u *countingUpstream) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	return u.Allocate(DefaultStream, bytes, alignment)
}
func (u *countingUpstream) DeallocateSync(p, bytes, alignment uintptr) error {
	return u.Deallocate(DefaultStream, p, bytes, alignment)
}
func (u *countingUpstream) Properties() Properties { return DeviceAccessible }
func (u *countingUpstream) Equal(o Resource) bool  { return o == Resource(u) }
func (u *countingUpstream) Kind() string           { return "counting" }

func (u *countingUpstream) liveBytes() uintptr {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.bytes
}

func (u *countingUpstream) liveCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.live)
}

func (u *countingUpstream) setFail(fail bool) {
	u.mu.Lock()
	u.failAll = fail
	u.mu.Unlock()
}

// simDevice returns the simulated runtime, or skips the test on a GPU.
func simDevice(t testing.TB) *sim.Runtime {
	t.Helper()
	skipOnCUDA(t, "observes stream order or device accounting")
	s, ok := testRuntime(t).(*sim.Runtime)
	if !ok {
		t.Skip("the runtime is not a *sim.Runtime")
	}
	return s
}

// span is a live allocation in a workload.
type span struct {
	ptr, size uintptr
	stream    Stream
}

// checkSpans verifies that live allocations are 256-byte aligned and never
// overlap (sizes rounded up to 256, as the sub-allocators hand them out).
func checkSpans(spans []span) error {
	s := append([]span(nil), spans...)
	sort.Slice(s, func(i, j int) bool { return s[i].ptr < s[j].ptr })
	for i, a := range s {
		if a.ptr%DefaultAlignment != 0 {
			return fmt.Errorf("pointer %#x is not 256-byte aligned", a.ptr)
		}
		if i > 0 {
			prev := s[i-1]
			if prev.ptr+((prev.size+255)&^255) > a.ptr {
				return fmt.Errorf("allocations overlap: [%#x, +%d) and [%#x, +%d)", prev.ptr, prev.size, a.ptr, a.size)
			}
		}
	}
	return nil
}

// randomWorkload allocates and frees at random on r from the given streams
// (each free on a random stream of them), checking the invariants every
// checkEvery steps, and frees everything at the end. It keeps at most 32
// maximal requests' worth of bytes live. It returns the peak live bytes.
func randomWorkload(r Resource, rng *rand.Rand, steps int, maxSize uintptr, streams []Stream, checkEvery int, used func() uintptr) (uintptr, error) {
	budget := 32 * maxSize
	failures := 0
	var live []span
	var liveBytes, peak uintptr
	for i := 0; i < steps; i++ {
		size := uintptr(rng.Int64N(int64(maxSize))) + 1
		if len(live) == 0 || rng.IntN(100) < 60 && liveBytes+size <= budget {
			s := streams[rng.IntN(len(streams))]
			p, err := r.Allocate(s, size, DefaultAlignment)
			if err != nil {
				// Others may hold the memory for a while (concurrent
				// tests): tolerate a few refusals.
				if errors.Is(err, ErrOutOfMemory) && failures < steps/10 {
					failures++
					if len(live) > 0 {
						goto free
					}
					continue
				}
				return peak, fmt.Errorf("step %d: Allocate(%d): %w", i, size, err)
			}
			live = append(live, span{p, size, s})
			liveBytes += (size + 255) &^ 255
			peak = max(peak, liveBytes)
			goto check
		}
	free:
		{
			k := rng.IntN(len(live))
			a := live[k]
			live[k] = live[len(live)-1]
			live = live[:len(live)-1]
			s := streams[rng.IntN(len(streams))]
			if err := r.Deallocate(s, a.ptr, a.size, DefaultAlignment); err != nil {
				return peak, fmt.Errorf("step %d: Deallocate(%#x, %d): %w", i, a.ptr, a.size, err)
			}
			liveBytes -= (a.size + 255) &^ 255
		}
	check:
		if checkEvery > 0 && i%checkEvery == 0 {
			if err := checkSpans(live); err != nil {
				return peak, fmt.Errorf("step %d: %w", i, err)
			}
			if used != nil {
				if got := used(); got != liveBytes {
					return peak, fmt.Errorf("step %d: resource reports %d bytes in use, the workload holds %d", i, got, liveBytes)
				}
			}
		}
	}
	if err := checkSpans(live); err != nil {
		return peak, err
	}
	for _, a := range live {
		if err := r.Deallocate(a.stream, a.ptr, a.size, DefaultAlignment); err != nil {
			return peak, fmt.Errorf("final Deallocate(%#x, %d): %w", a.ptr, a.size, err)
		}
	}
	return peak, nil
}

// raceScale divides workload sizes under the race detector or -short.
func raceScale(n int) int {
	if raceEnabled || testing.Short() {
		return max(1, n/10)
	}
	return n
}

// orderingRuntime wraps a runtime and counts the calls that order streams or
// block the host, so that tests can prove what the fast paths do not do. It
// also catches any call on a stream destroyed through it, or any call the
// runtime refused for an invalid handle: on a GPU such a call is a use of a
// dangling pointer.
type orderingRuntime struct {
	cudart.Runtime
	records, waits, deviceSyncs, streamSyncs, streamIDs atomic.Int64

	mu        sync.Mutex
	recordsOn map[cudart.Stream]int
	destroyed map[cudart.Stream]bool
	misuse    []string
}

func newOrderingRuntime(t testing.TB) *orderingRuntime {
	return &orderingRuntime{Runtime: testRuntime(t), recordsOn: map[cudart.Stream]int{}, destroyed: map[cudart.Stream]bool{}}
}

// check notes a call of fn on stream s that used a destroyed stream or was
// refused for an invalid handle.
func (c *orderingRuntime) check(fn string, s cudart.Stream, err error) {
	var ce *cudart.Error
	bad := errors.As(err, &ce) && ce.Code == cudart.ErrorInvalidResourceHandle
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.destroyed[s] || bad {
		c.misuse = append(c.misuse, fmt.Sprintf("%s on stream %#x (destroyed: %v): %v", fn, uintptr(s), c.destroyed[s], err))
	}
}

// misuses returns the calls check caught.
func (c *orderingRuntime) misuses() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.misuse...)
}

// recordsOnStream returns the number of event records made on s.
func (c *orderingRuntime) recordsOnStream(s cudart.Stream) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.recordsOn[s]
}

func (c *orderingRuntime) StreamDestroy(s cudart.Stream) error {
	err := c.Runtime.StreamDestroy(s)
	if err == nil {
		c.mu.Lock()
		c.destroyed[s] = true
		c.mu.Unlock()
	}
	return err
}

func (c *orderingRuntime) EventRecord(e cudart.Event, s cudart.Stream) error {
	c.records.Add(1)
	c.mu.Lock()
	c.recordsOn[s]++
	c.mu.Unlock()
	err := c.Runtime.EventRecord(e, s)
	c.check("cudaEventRecord", s, err)
	return err
}

func (c *orderingRuntime) StreamWaitEvent(s cudart.Stream, e cudart.Event) error {
	c.waits.Add(1)
	err := c.Runtime.StreamWaitEvent(s, e)
	c.check("cudaStreamWaitEvent", s, err)
	return err
}

func (c *orderingRuntime) DeviceSynchronize() error {
	c.deviceSyncs.Add(1)
	return c.Runtime.DeviceSynchronize()
}

func (c *orderingRuntime) StreamSynchronize(s cudart.Stream) error {
	c.streamSyncs.Add(1)
	err := c.Runtime.StreamSynchronize(s)
	c.check("cudaStreamSynchronize", s, err)
	return err
}

func (c *orderingRuntime) StreamQuery(s cudart.Stream) error {
	err := c.Runtime.StreamQuery(s)
	c.check("cudaStreamQuery", s, err)
	return err
}

func (c *orderingRuntime) StreamGetID(s cudart.Stream) (uint64, error) {
	c.streamIDs.Add(1)
	id, err := c.Runtime.StreamGetID(s)
	c.check("cudaStreamGetId", s, err)
	return id, err
}

// counts returns (records, waits, device syncs, stream syncs).
func (c *orderingRuntime) counts() [4]int64 {
	return [4]int64{c.records.Load(), c.waits.Load(), c.deviceSyncs.Load(), c.streamSyncs.Load()}
}

// subAllocator is what every sub-allocator offers besides Resource.
type subAllocator interface {
	Adaptor
	Close() error
}

// makers build each sub-allocator over an upstream on runtime r, sized for
// the generic tests.
type maker struct {
	name string
	make func(t testing.TB, r cudart.Runtime, up Resource) subAllocator
	// maxSize is the largest request the generic tests make.
	maxSize uintptr
}

var makers = []maker{
	{"pool", func(t testing.TB, r cudart.Runtime, up Resource) subAllocator {
		p, err := newPool(r, up, PoolOptions{})
		require.NoError(t, err)
		return p
	}, 256 << 10},
	{"arena", func(t testing.TB, r cudart.Runtime, up Resource) subAllocator {
		a, err := newArena(r, up, ArenaOptions{ArenaSize: 384 << 20})
		require.NoError(t, err)
		return a
	}, 3 << 20},
	{"fixed_size", func(t testing.TB, r cudart.Runtime, up Resource) subAllocator {
		f, err := newFixedSize(r, up, FixedSizeOptions{BlockSize: 64 << 10, BlocksToPreallocate: 32})
		require.NoError(t, err)
		return f
	}, 64 << 10},
	{"binning", func(t testing.TB, r cudart.Runtime, up Resource) subAllocator {
		b, err := newBinning(r, up, 8, 14)
		require.NoError(t, err)
		return b
	}, 256 << 10},
}
