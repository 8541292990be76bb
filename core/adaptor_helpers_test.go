package core

// Test helpers for the adaptor tests:
//
//	newFake()                 a fake upstream resource (no CUDA): disjoint,
//	                          256-aligned addresses that are reused after
//	                          free, an optional capacity, error injection,
//	                          call counters; Deallocate checks pointer and size
//	hammer(t, r, opts)        16 goroutines allocating and freeing through r,
//	                          checking alignment, overlap and errors
//	adaptorConformance(t, ...) the checks every adaptor must pass

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core/eventlog"
	"github.com/rmmgo/rmmgo/core/internal/addr"
)

type fakeBlock struct {
	addr, capacity uintptr
}

type fakeAlloc struct {
	size, capacity uintptr
	stream         Stream
}

// fakeResource is an upstream for adaptor tests that needs no backend.
type fakeResource struct {
	props Properties

	mu       sync.Mutex
	next     uintptr
	live     map[uintptr]fakeAlloc
	free     []fakeBlock
	capacity uintptr // 0: unlimited
	used     uintptr
	failOOM  int   // the next failOOM allocations fail with ErrOutOfMemory
	failErr  error // when set, every allocation fails with it
	freeErr  error // when set, every deallocation fails with it

	allocs, allocSyncs, deallocs, deallocSyncs atomic.Int64
	lastStream                                 atomic.Uintptr
}

func newFake() *fakeResource {
	return &fakeResource{props: DeviceAccessible, next: 1 << 32, live: make(map[uintptr]fakeAlloc)}
}

func (f *fakeResource) Properties() Properties { return f.props }
func (f *fakeResource) Kind() string           { return "fake" }
func (f *fakeResource) Equal(o Resource) bool  { x, ok := o.(*fakeResource); return ok && x == f }

func (f *fakeResource) Allocate(s Stream, bytes, alignment uintptr) (uintptr, error) {
	f.allocs.Add(1)
	f.lastStream.Store(uintptr(s))
	return f.allocate(s, bytes, alignment)
}

func (f *fakeResource) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	f.allocSyncs.Add(1)
	return f.allocate(DefaultStream, bytes, alignment)
}

func (f *fakeResource) allocate(s Stream, bytes, alignment uintptr) (uintptr, error) {
	if err := checkAlignment("fake", alignment, DefaultAlignment); err != nil {
		return 0, err
	}
	if bytes == 0 {
		return 0, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failErr != nil {
		return 0, f.failErr
	}
	if f.failOOM > 0 {
		f.failOOM--
		return 0, fmt.Errorf("fake: %w: injected", ErrOutOfMemory)
	}
	need, ok := addr.AlignUp(bytes, DefaultAlignment)
	if !ok || (f.capacity != 0 && f.used+need > f.capacity) || need > 1<<40 {
		return 0, fmt.Errorf("fake: %w: %d bytes with %d of %d used", ErrOutOfMemory, bytes, f.used, f.capacity)
	}
	var p, capacity uintptr
	for i, b := range f.free {
		if b.capacity >= need {
			p, capacity = b.addr, b.capacity
			f.free = append(f.free[:i], f.free[i+1:]...)
			break
		}
	}
	if p == 0 {
		p, capacity = f.next, need
		f.next += need + DefaultAlignment // a gap, so that overruns show
	}
	f.used += need
	f.live[p] = fakeAlloc{size: bytes, capacity: capacity, stream: s}
	return p, nil
}

func (f *fakeResource) Deallocate(s Stream, ptr, bytes, alignment uintptr) error {
	f.deallocs.Add(1)
	f.lastStream.Store(uintptr(s))
	return f.deallocate(ptr, bytes)
}

func (f *fakeResource) DeallocateSync(ptr, bytes, alignment uintptr) error {
	f.deallocSyncs.Add(1)
	return f.deallocate(ptr, bytes)
}

func (f *fakeResource) deallocate(ptr, bytes uintptr) error {
	if ptr == 0 {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.freeErr != nil {
		return f.freeErr
	}
	a, ok := f.live[ptr]
	if !ok {
		return fmt.Errorf("fake: %w: %#x", ErrInvalidPointer, ptr)
	}
	if a.size != bytes {
		return fmt.Errorf("fake: %w: %#x has %d bytes, not %d", ErrInvalidPointer, ptr, a.size, bytes)
	}
	delete(f.live, ptr)
	need, _ := addr.AlignUp(a.size, DefaultAlignment)
	f.used -= need
	f.free = append(f.free, fakeBlock{ptr, a.capacity})
	return nil
}

func (f *fakeResource) liveCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.live)
}

func (f *fakeResource) setCapacity(c uintptr) {
	f.mu.Lock()
	f.capacity = c
	f.mu.Unlock()
}

func (f *fakeResource) failNext(n int) {
	f.mu.Lock()
	f.failOOM = n
	f.mu.Unlock()
}

func (f *fakeResource) setFailErr(err error) {
	f.mu.Lock()
	f.failErr = err
	f.mu.Unlock()
}

func (f *fakeResource) setFreeErr(err error) {
	f.mu.Lock()
	f.freeErr = err
	f.mu.Unlock()
}

// hammerOptions configures hammer.
type hammerOptions struct {
	goroutines int       // default 16
	iterations int       // per goroutine; default 300
	sizes      []uintptr // sizes to choose from; default a spread up to 1 MiB
	alignment  uintptr   // default DefaultAlignment; checked on every pointer
	expect     uintptr   // a larger alignment every pointer must have; 0: none
	sync       bool      // use AllocateSync/DeallocateSync half of the time
	streams    []Stream  // streams to choose from; default the default stream
	allowOOM   bool      // out-of-memory errors are expected and not failures
}

// hammer allocates and frees through r from many goroutines at once. It
// checks that every pointer is aligned and that no two live allocations
// overlap, and frees everything before it returns. It returns the number of
// successful allocations.
func hammer(t *testing.T, r Resource, o hammerOptions) int64 {
	t.Helper()
	if o.goroutines == 0 {
		o.goroutines = 16
	}
	if o.iterations == 0 {
		o.iterations = 300
	}
	if len(o.sizes) == 0 {
		o.sizes = []uintptr{1, 100, 256, 257, 1000, 4096, 10000, 65536, 1 << 20}
	}
	if o.alignment == 0 {
		o.alignment = DefaultAlignment
	}
	if len(o.streams) == 0 {
		o.streams = []Stream{DefaultStream}
	}
	type span struct{ p, n uintptr }
	var (
		mu     sync.Mutex
		spans  = map[uintptr]uintptr{}
		okAll  atomic.Int64
		errsMu sync.Mutex
		errs   []error
	)
	fail := func(err error) {
		errsMu.Lock()
		if len(errs) < 10 {
			errs = append(errs, err)
		}
		errsMu.Unlock()
	}
	claim := func(p, n uintptr) error {
		mu.Lock()
		defer mu.Unlock()
		for q, m := range spans {
			if p < q+m && q < p+n {
				return fmt.Errorf("allocation [%#x,+%d) overlaps live [%#x,+%d)", p, n, q, m)
			}
		}
		spans[p] = n
		return nil
	}
	release := func(p uintptr) {
		mu.Lock()
		delete(spans, p)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for g := 0; g < o.goroutines; g++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 7))
			type held struct {
				p, n uintptr
				s    Stream
				sync bool
			}
			var mine []held
			free := func(h held) {
				release(h.p)
				var err error
				if h.sync {
					err = r.DeallocateSync(h.p, h.n, o.alignment)
				} else {
					err = r.Deallocate(h.s, h.p, h.n, o.alignment)
				}
				if err != nil {
					fail(fmt.Errorf("deallocate %#x (%d bytes): %w", h.p, h.n, err))
				}
			}
			for i := 0; i < o.iterations; i++ {
				if len(mine) > 0 && (len(mine) >= 8 || rng.IntN(2) == 0) {
					k := rng.IntN(len(mine))
					h := mine[k]
					mine = append(mine[:k], mine[k+1:]...)
					free(h)
					continue
				}
				h := held{n: o.sizes[rng.IntN(len(o.sizes))], s: o.streams[rng.IntN(len(o.streams))]}
				h.sync = o.sync && rng.IntN(2) == 0
				var err error
				if h.sync {
					h.p, err = r.AllocateSync(h.n, o.alignment)
				} else {
					h.p, err = r.Allocate(h.s, h.n, o.alignment)
				}
				if err != nil {
					if !(o.allowOOM && errors.Is(err, ErrOutOfMemory)) {
						fail(fmt.Errorf("allocate %d bytes: %w", h.n, err))
					}
					continue
				}
				okAll.Add(1)
				if h.p == 0 || h.p%o.alignment != 0 || h.p%DefaultAlignment != 0 || (o.expect != 0 && h.p%o.expect != 0) {
					fail(fmt.Errorf("allocate %d bytes gave %#x, not aligned to %d", h.n, h.p, o.alignment))
				}
				if err := claim(h.p, h.n); err != nil {
					fail(err)
				}
				mine = append(mine, h)
			}
			for _, h := range mine {
				free(h)
			}
		}(uint64(g) + 1)
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	return okAll.Load()
}

// adaptorConformance checks what every adaptor must do, given a
// constructor over an upstream: nil upstream rejected with
// ErrInvalidArgument, Upstream(), Properties carried, Equal by identity,
// Kind, the zero-byte rule, upstream errors passed on, and 16 goroutines.
func adaptorConformance(t *testing.T, kind string, make func(up Resource) (Adaptor, error)) {
	t.Helper()
	t.Run("nil upstream", func(t *testing.T) {
		_, err := make(nil)
		require.ErrorIs(t, err, ErrInvalidArgument)
		var typedNil *fakeResource
		_, err = make(typedNil)
		require.ErrorIs(t, err, ErrInvalidArgument)
	})
	t.Run("identity", func(t *testing.T) {
		for _, props := range []Properties{DeviceAccessible, DeviceAccessible | HostAccessible} {
			up := newFake()
			up.props = props
			a, err := make(up)
			require.NoError(t, err)
			assert.Equal(t, kind, a.Kind())
			assert.Same(t, up, a.Upstream().(*fakeResource))
			assert.Equal(t, props, a.Properties(), "properties are the upstream's")
			assert.True(t, a.Equal(a))
			b, err := make(up)
			require.NoError(t, err)
			assert.False(t, a.Equal(b), "two adaptors over one upstream are different resources")
			assert.False(t, a.Equal(up), "an adaptor is not its upstream")
			var _ Resource = a
		}
	})
	t.Run("zero bytes", func(t *testing.T) {
		up := newFake()
		a, err := make(up)
		require.NoError(t, err)
		p, err := a.Allocate(DefaultStream, 0, DefaultAlignment)
		require.NoError(t, err)
		assert.Zero(t, p)
		p, err = a.AllocateSync(0, DefaultAlignment)
		require.NoError(t, err)
		assert.Zero(t, p)
		require.NoError(t, a.Deallocate(DefaultStream, 0, 0, DefaultAlignment))
		require.NoError(t, a.DeallocateSync(0, 0, DefaultAlignment))
		assert.Zero(t, up.allocs.Load()+up.allocSyncs.Load(), "no upstream allocation for 0 bytes")
		assert.Zero(t, up.deallocs.Load()+up.deallocSyncs.Load(), "no upstream deallocation for 0")
		_, err = a.Allocate(DefaultStream, 0, 3)
		assert.ErrorIs(t, err, ErrBadAlignment, "a bad alignment is reported even for zero bytes")
	})
	t.Run("allocate and free", func(t *testing.T) {
		up := newFake()
		a, err := make(up)
		require.NoError(t, err)
		s := Stream(0x1234)
		p, err := a.Allocate(s, 1000, DefaultAlignment)
		require.NoError(t, err)
		require.NotZero(t, p)
		assert.Equal(t, uintptr(s), up.lastStream.Load(), "the stream reaches the upstream")
		require.NoError(t, a.Deallocate(s, p, 1000, DefaultAlignment))
		p, err = a.AllocateSync(3000, DefaultAlignment)
		require.NoError(t, err)
		assert.Equal(t, int64(1), up.allocSyncs.Load(), "AllocateSync uses the upstream's AllocateSync")
		require.NoError(t, a.DeallocateSync(p, 3000, DefaultAlignment))
		assert.Equal(t, int64(1), up.deallocSyncs.Load(), "DeallocateSync uses the upstream's DeallocateSync")
		assert.Zero(t, up.liveCount())
	})
	t.Run("upstream errors", func(t *testing.T) {
		up := newFake()
		a, err := make(up)
		require.NoError(t, err)
		up.setCapacity(4096)
		_, err = a.Allocate(DefaultStream, 1<<20, DefaultAlignment)
		require.ErrorIs(t, err, ErrOutOfMemory)
		_, err = a.AllocateSync(1<<20, DefaultAlignment)
		require.ErrorIs(t, err, ErrOutOfMemory)
		_, err = a.Allocate(DefaultStream, 100, 3)
		require.ErrorIs(t, err, ErrBadAlignment)
		p, err := a.Allocate(DefaultStream, 100, DefaultAlignment)
		require.NoError(t, err)
		up.setFreeErr(fmt.Errorf("fake: %w: injected", ErrCUDA))
		require.ErrorIs(t, a.Deallocate(DefaultStream, p, 100, DefaultAlignment), ErrCUDA)
		up.setFreeErr(nil)
		require.NoError(t, a.Deallocate(DefaultStream, p, 100, DefaultAlignment), "a failed free can be retried")
		assert.Zero(t, up.liveCount())
	})
	t.Run("16 goroutines", func(t *testing.T) {
		up := newFake()
		a, err := make(up)
		require.NoError(t, err)
		n := hammer(t, a, hammerOptions{sync: true, streams: []Stream{0, 0x1, 0x77}})
		assert.Positive(t, n)
		assert.Zero(t, up.liveCount(), "everything freed reaches the upstream")
	})
}

// TestAdaptorStackOnDevice stacks every adaptor over real resources of the
// backend the tests run on (the simulated device, or the GPU with
// RMMGO_BACKEND=cuda) and has 16 goroutines write and read back every
// allocation through it, each on its own stream.
func TestAdaptorStackOnDevice(t *testing.T) {
	r := testRuntime(t)
	bases := []struct {
		name string
		make func(t *testing.T) Resource
	}{
		{"cuda", func(t *testing.T) Resource { c, err := NewCuda(); require.NoError(t, err); return c }},
		{"managed", func(t *testing.T) Resource { m, err := NewManaged(); require.NoError(t, err); return m }},
		{"pool", func(t *testing.T) Resource {
			c, err := NewCuda()
			require.NoError(t, err)
			p, err := NewPool(c, PoolOptions{InitialSize: 64 << 20})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, p.Close()) })
			return p
		}},
	}
	for _, b := range bases {
		t.Run(b.name, func(t *testing.T) {
			base := b.make(t)
			fc, err := NewFailureCallback(base, func(uintptr) bool { return false })
			require.NoError(t, err)
			al, err := NewAligned(fc, 4096, 64<<10)
			require.NoError(t, err)
			pf, err := NewPrefetch(al)
			require.NoError(t, err)
			var logBuf syncBuffer
			lg, err := NewLogging(pf, LoggingOptions{Writer: &logBuf})
			require.NoError(t, err)
			lim, err := NewLimiting(lg, 512<<20, DefaultAlignment)
			require.NoError(t, err)
			st, err := NewStatistics(lim)
			require.NoError(t, err)
			tr, err := NewTracking(st, true)
			require.NoError(t, err)
			top, err := NewThreadSafe(tr)
			require.NoError(t, err)
			assert.Equal(t, base.Properties(), top.Properties(), "properties travel up the stack")

			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for g := 0; g < 16; g++ {
				s := newStream(t, r)
				wg.Add(1)
				go func(g int, s Stream) {
					defer wg.Done()
					for i, n := range []uintptr{1, 1000, 64 << 10, 100 << 10, 1 << 20} {
						p, err := top.Allocate(s, n, DefaultAlignment)
						if err != nil {
							errs <- err
							return
						}
						if n >= 64<<10 && p%4096 != 0 {
							errs <- fmt.Errorf("%d bytes at %#x: not 4096-aligned", n, p)
						}
						if err := fill(r, p, n, byte(g*8+i), s); err != nil {
							errs <- err
						}
						if err := top.Deallocate(s, p, n, DefaultAlignment); err != nil {
							errs <- err
						}
					}
				}(g, s)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			bytes, count := st.Counters()
			assert.Zero(t, bytes.Value)
			assert.Equal(t, int64(16*5), count.Total)
			assert.Zero(t, tr.OutstandingCount())
			assert.Zero(t, lim.AllocatedBytes())
			require.NoError(t, lg.Close())
			events, err := eventlog.Read(strings.NewReader(logBuf.String()))
			require.NoError(t, err)
			assert.Len(t, events, 2*16*5)
		})
	}
}

// nullResource hands out fresh addresses from an atomic counter and frees
// nothing: an upstream that costs next to nothing, to measure adaptors.
type nullResource struct{ next atomic.Uintptr }

func (n *nullResource) Allocate(_ Stream, bytes, _ uintptr) (uintptr, error) {
	sz, _ := addr.AlignUp(bytes, DefaultAlignment)
	return n.next.Add(sz) - sz + 1<<40, nil
}
func (n *nullResource) AllocateSync(bytes, a uintptr) (uintptr, error) {
	return n.Allocate(DefaultStream, bytes, a)
}
func (n *nullResource) Deallocate(Stream, uintptr, uintptr, uintptr) error { return nil }
func (n *nullResource) DeallocateSync(uintptr, uintptr, uintptr) error     { return nil }
func (n *nullResource) Properties() Properties                             { return DeviceAccessible }
func (n *nullResource) Equal(o Resource) bool                              { return o == Resource(n) }
func (n *nullResource) Kind() string                                       { return "null" }

// BenchmarkAdaptorOverhead measures what each adaptor adds to an allocation
// and its free, over an upstream that costs next to nothing, from as many
// goroutines as -cpu says.
func BenchmarkAdaptorOverhead(b *testing.B) {
	adaptors := []struct {
		name string
		make func(up Resource) (Resource, error)
	}{
		{"none", func(up Resource) (Resource, error) { return up, nil }},
		{"aligned-passthrough", func(up Resource) (Resource, error) { return NewAligned(up, 4096, 1<<20) }},
		{"aligned-4096", func(up Resource) (Resource, error) { return NewAligned(up, 4096, 0) }},
		{"failure_callback", func(up Resource) (Resource, error) {
			return NewFailureCallback(up, func(uintptr) bool { return false })
		}},
		{"limiting", func(up Resource) (Resource, error) { return NewLimiting(up, 1<<50, DefaultAlignment) }},
		{"logging", func(up Resource) (Resource, error) {
			return NewLogging(up, LoggingOptions{Writer: io.Discard})
		}},
		{"prefetch-no-concurrent-managed", func(up Resource) (Resource, error) {
			return newPrefetch(up, &prefetchRuntime{concurrent: false}), nil
		}},
		{"statistics", func(up Resource) (Resource, error) { return NewStatistics(up) }},
		{"thread_safe", func(up Resource) (Resource, error) { return NewThreadSafe(up) }},
		{"tracking", func(up Resource) (Resource, error) { return NewTracking(up, false) }},
		{"tracking-stacks", func(up Resource) (Resource, error) { return NewTracking(up, true) }},
	}
	for _, a := range adaptors {
		b.Run(a.name, func(b *testing.B) {
			r, err := a.make(&nullResource{})
			require.NoError(b, err)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p, err := r.Allocate(DefaultStream, 1000, DefaultAlignment)
					if err != nil {
						b.Error(err)
						return
					}
					if err := r.Deallocate(DefaultStream, p, 1000, DefaultAlignment); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
