package main

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core"
)

// fakeResource is a resource for registry tests: it allocates nothing and
// counts Close calls.
type fakeResource struct {
	name   string
	closed atomic.Int32
	panics bool
}

func (f *fakeResource) Allocate(s core.Stream, bytes, alignment uintptr) (uintptr, error) {
	if f.panics {
		var m map[string]int
		m["boom"] = 1 // a nil-map write: a real runtime panic
	}
	return 0x1000, nil
}
func (f *fakeResource) Deallocate(s core.Stream, ptr, bytes, alignment uintptr) error { return nil }
func (f *fakeResource) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	return f.Allocate(0, bytes, alignment)
}
func (f *fakeResource) DeallocateSync(ptr, bytes, alignment uintptr) error { return nil }
func (f *fakeResource) Properties() core.Properties                        { return core.DeviceAccessible }
func (f *fakeResource) Equal(o core.Resource) bool                         { return o == core.Resource(f) }
func (f *fakeResource) Kind() string                                       { return "fake" }
func (f *fakeResource) Close() error {
	if f.closed.Add(1) > 1 {
		return errors.New("closed twice")
	}
	return nil
}

func TestHandleEncoding(t *testing.T) {
	r := newRegistry()
	e, err := r.add(&fakeResource{}, true, 0, nil)
	require.NoError(t, err)
	h := e.handle
	assert.NotZero(t, h)
	assert.Equal(t, r.tag, h>>tagShift, "the tag is in the top bits")
	assert.GreaterOrEqual(t, h, uintptr(1)<<48, "a handle is never a plausible address")
	assert.Equal(t, uint32(1), e.index, "slot 0 is never used")
	got, ok := r.lookup(h)
	require.True(t, ok)
	assert.Same(t, e, got)
}

func TestLookupRefusesForgedHandles(t *testing.T) {
	r := newRegistry()
	e, err := r.add(&fakeResource{}, true, 0, nil)
	require.NoError(t, err)
	h := e.handle
	for name, forged := range map[string]uintptr{
		"zero":               0,
		"small integer":      0x1234,
		"all ones":           ^uintptr(0),
		"other tag":          h ^ 1<<50,
		"next generation":    h + 1<<indexBits,
		"index out of range": h + 5000,
		"next index":         h + 1,
		"index zero":         h &^ indexMask,
		"no tag":             h &^ (0xffff << tagShift),
	} {
		t.Run(name, func(t *testing.T) {
			_, ok := r.lookup(forged)
			assert.False(t, ok)
			_, err := r.get(forged)
			assert.ErrorIs(t, err, errInvalidHandle)
			assert.ErrorIs(t, r.retain(forged), errInvalidHandle)
			assert.ErrorIs(t, r.release(forged), errInvalidHandle)
		})
	}
	_, ok := r.lookup(h)
	assert.True(t, ok, "the real handle survives the attempts")
}

func TestReleasedHandleStaysDeadWhenTheSlotIsReused(t *testing.T) {
	r := newRegistry()
	f1 := &fakeResource{}
	e1, err := r.add(f1, true, 0, nil)
	require.NoError(t, err)
	old := e1.handle
	require.NoError(t, r.release(old))
	assert.Equal(t, int32(1), f1.closed.Load(), "the last release closes an owned resource")
	_, ok := r.lookup(old)
	assert.False(t, ok)
	assert.ErrorIs(t, r.release(old), errInvalidHandle, "releasing twice")

	e2, err := r.add(&fakeResource{}, true, 0, nil)
	require.NoError(t, err)
	assert.Equal(t, e1.index, e2.index, "the slot is reused")
	assert.NotEqual(t, old, e2.handle, "with a new generation")
	_, ok = r.lookup(old)
	assert.False(t, ok, "the old handle does not reach the new resource")
	_, ok = r.lookup(e2.handle)
	assert.True(t, ok)
}

func TestGenerationWrapsPastZero(t *testing.T) {
	r := newRegistry()
	e, err := r.add(&fakeResource{}, false, 0, nil)
	require.NoError(t, err)
	r.mu.Lock()
	r.gens[e.index] = genMask // the last generation
	r.mu.Unlock()
	require.NoError(t, r.release(e.handle))
	r.mu.Lock()
	assert.Equal(t, uint32(1), r.gens[e.index], "generation 0 is skipped")
	r.mu.Unlock()
}

func TestReferenceCounts(t *testing.T) {
	r := newRegistry()
	f := &fakeResource{}
	e, err := r.add(f, true, 0, nil)
	require.NoError(t, err)
	require.NoError(t, r.retain(e.handle))
	require.NoError(t, r.retain(e.handle))
	assert.Equal(t, int64(3), e.refs.Load())
	require.NoError(t, r.release(e.handle))
	require.NoError(t, r.release(e.handle))
	assert.Zero(t, f.closed.Load())
	require.NoError(t, r.release(e.handle))
	assert.Equal(t, int32(1), f.closed.Load())
	assert.ErrorIs(t, r.retain(e.handle), errInvalidHandle, "no resurrection")
	assert.Zero(t, r.live())
}

func TestNonOwnedResourcesAreNotClosed(t *testing.T) {
	r := newRegistry()
	f := &fakeResource{}
	e, err := r.handleFor(f)
	require.NoError(t, err)
	require.NoError(t, r.release(e.handle))
	assert.Zero(t, f.closed.Load(), "a resource the C API did not make is not closed by it")
}

func TestDependenciesAreReleasedAfterClose(t *testing.T) {
	r := newRegistry()
	up := &fakeResource{name: "up"}
	ue, err := r.add(up, true, 0, nil)
	require.NoError(t, err)
	require.True(t, ue.tryRetain()) // the adaptor's reference
	ad := &fakeResource{name: "adaptor"}
	ae, err := r.add(ad, true, 0, []*entry{ue})
	require.NoError(t, err)

	require.NoError(t, r.release(ue.handle), "the caller lets go of the upstream")
	_, ok := r.lookup(ue.handle)
	assert.True(t, ok, "the adaptor keeps it alive")
	assert.Zero(t, up.closed.Load())

	require.NoError(t, r.release(ae.handle))
	assert.Equal(t, int32(1), ad.closed.Load())
	assert.Equal(t, int32(1), up.closed.Load())
	_, ok = r.lookup(ue.handle)
	assert.False(t, ok)
	assert.Zero(t, r.live())
}

func TestOneHandlePerResource(t *testing.T) {
	r := newRegistry()
	f := &fakeResource{}
	e1, err := r.handleFor(f)
	require.NoError(t, err)
	e2, err := r.handleFor(f)
	require.NoError(t, err)
	assert.Same(t, e1, e2)
	assert.Equal(t, int64(2), e1.refs.Load())

	// A resource the C API made is found by handleFor too.
	g := &fakeResource{}
	eg, err := r.add(g, true, 0, nil)
	require.NoError(t, err)
	got, err := r.handleFor(g)
	require.NoError(t, err)
	assert.Same(t, eg, got)

	// Once every reference is gone, the next handle is a new one.
	require.NoError(t, r.release(e1.handle))
	require.NoError(t, r.release(e1.handle))
	e3, err := r.handleFor(f)
	require.NoError(t, err)
	assert.NotEqual(t, e1.handle, e3.handle)
}

// valueResource is a resource that cannot be a map key: a value type
// holding a slice.
type valueResource struct{ tags []string }

func (v valueResource) Allocate(s core.Stream, bytes, alignment uintptr) (uintptr, error) {
	return 0, nil
}
func (v valueResource) Deallocate(s core.Stream, ptr, bytes, alignment uintptr) error { return nil }
func (v valueResource) AllocateSync(bytes, alignment uintptr) (uintptr, error)        { return 0, nil }
func (v valueResource) DeallocateSync(ptr, bytes, alignment uintptr) error            { return nil }
func (v valueResource) Properties() core.Properties                                   { return 0 }
func (v valueResource) Equal(o core.Resource) bool                                    { return false }
func (v valueResource) Kind() string                                                  { return "value" }

func TestIncomparableResourcesGetHandles(t *testing.T) {
	r := newRegistry()
	v := valueResource{tags: []string{"x"}}
	e1, err := r.handleFor(v)
	require.NoError(t, err, "no panic from using it as a map key")
	e2, err := r.handleFor(v)
	require.NoError(t, err)
	assert.NotEqual(t, e1.handle, e2.handle, "without a key, each lookup makes a handle")
	require.NoError(t, r.release(e1.handle))
	require.NoError(t, r.release(e2.handle))
	assert.Zero(t, r.live())
}

func TestGrowthAcrossChunks(t *testing.T) {
	r := newRegistry()
	var entries []*entry
	for i := 0; i < 3*chunkSize+7; i++ {
		e, err := r.add(&fakeResource{}, true, 0, nil)
		require.NoError(t, err)
		entries = append(entries, e)
	}
	for _, e := range entries {
		got, ok := r.lookup(e.handle)
		require.True(t, ok)
		require.Same(t, e, got)
	}
	for _, e := range entries {
		require.NoError(t, r.release(e.handle))
	}
	assert.Zero(t, r.live())
}

// TestConcurrentUse runs creators, retainers, releasers and readers of
// stale handles at once (run it with -race): every lookup either fails or
// returns the entry the handle names, and every resource is closed once.
func TestConcurrentUse(t *testing.T) {
	r := newRegistry()
	const workers = 16
	const rounds = 400
	var stale sync.Map // handles already released
	var closedWrong atomic.Int32
	var wg sync.WaitGroup
	var all []*fakeResource
	var allMu sync.Mutex
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			var mine []*entry
			for i := 0; i < rounds; i++ {
				switch op := rng.IntN(4); {
				case op == 0 || len(mine) == 0:
					f := &fakeResource{}
					allMu.Lock()
					all = append(all, f)
					allMu.Unlock()
					e, err := r.add(f, true, 0, nil)
					if err != nil {
						t.Error(err)
						return
					}
					mine = append(mine, e)
				case op == 1:
					e := mine[rng.IntN(len(mine))]
					if err := r.retain(e.handle); err != nil {
						t.Error(err)
						return
					}
					if err := r.release(e.handle); err != nil {
						t.Error(err)
						return
					}
				case op == 2:
					k := rng.IntN(len(mine))
					e := mine[k]
					mine = append(mine[:k], mine[k+1:]...)
					if err := r.release(e.handle); err != nil {
						t.Error(err)
						return
					}
					stale.Store(e.handle, true)
				default:
					// Look up someone's stale handle: never a live entry.
					stale.Range(func(k, _ any) bool {
						if e, ok := r.lookup(k.(uintptr)); ok {
							t.Errorf("stale handle %#x found live (entry %#x)", k, e.handle)
						}
						return false
					})
				}
				for _, e := range mine {
					if got, ok := r.lookup(e.handle); !ok || got != e {
						t.Errorf("live handle %#x not found", e.handle)
						return
					}
				}
			}
			for _, e := range mine {
				if err := r.release(e.handle); err != nil {
					t.Error(err)
				}
			}
		}(w)
	}
	wg.Wait()
	for _, f := range all {
		if f.closed.Load() != 1 {
			closedWrong.Add(1)
		}
	}
	assert.Zero(t, closedWrong.Load(), "every resource closed exactly once")
	assert.Zero(t, r.live())
}

// TestConcurrentHandleFor: many goroutines asking for the handle of one
// resource get one handle.
func TestConcurrentHandleFor(t *testing.T) {
	r := newRegistry()
	f := &fakeResource{}
	var wg sync.WaitGroup
	handles := make([]uintptr, 32)
	for i := range handles {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			e, err := r.handleFor(f)
			if err != nil {
				t.Error(err)
				return
			}
			handles[i] = e.handle
		}(i)
	}
	wg.Wait()
	for _, h := range handles {
		assert.Equal(t, handles[0], h)
	}
	e, _ := r.lookup(handles[0])
	assert.Equal(t, int64(len(handles)), e.refs.Load())
}

func BenchmarkLookup(b *testing.B) {
	r := newRegistry()
	var hs []uintptr
	for i := 0; i < 64; i++ {
		e, err := r.add(&fakeResource{}, true, 0, nil)
		require.NoError(b, err)
		hs = append(hs, e.handle)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := r.lookup(hs[i&63]); !ok {
			b.Fatal("lookup failed")
		}
	}
}

func BenchmarkLookupParallel(b *testing.B) {
	r := newRegistry()
	e, err := r.add(&fakeResource{}, true, 0, nil)
	require.NoError(b, err)
	h := e.handle
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok := r.lookup(h); !ok {
				b.Fatal("lookup failed")
			}
		}
	})
}
