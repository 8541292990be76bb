package core

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
	"github.com/rmmgo/rmmgo/cudart/sim"
)

func TestSystemWithoutPageableAccess(t *testing.T) {
	// A private simulated machine without pageable memory access stands in
	// for a GPU without HMM or ATS, on either backend.
	sim := newSimRuntime(t, sim.Config{PageableMemoryAccess: false})
	s, err := newSystem(sim)
	requireIs(t, err, ErrNotSupported)
	assert.Nil(t, s)
	assert.Contains(t, err.Error(), "cudaDevAttrPageableMemoryAccess")
	assert.Contains(t, err.Error(), "device 0")

	h, err := newSAMHeadroom(sim, 1<<20)
	requireIs(t, err, ErrNotSupported)
	assert.Nil(t, h)
	assert.Contains(t, err.Error(), "cudaDevAttrPageableMemoryAccess")
}

func TestSystemInstancesShareMemory(t *testing.T) {
	r := pageableRuntime(t)
	a, err := newSystem(r)
	require.NoError(t, err)
	b, err := newSystem(r)
	require.NoError(t, err)
	p, err := a.AllocateSync(1000, DefaultAlignment)
	require.NoError(t, err)
	fillAndCheck(t, r, p, 1000, 0xE1, DefaultStream)
	require.NoError(t, b.DeallocateSync(p, 1000, DefaultAlignment), "equal resources free each other's memory")
	err = a.DeallocateSync(p, 1000, DefaultAlignment)
	requireIs(t, err, ErrInvalidPointer)
	assert.False(t, systemHeap.has(p))
}

func TestSystemRejectsForeignMemory(t *testing.T) {
	// Device memory given to System never reaches the C heap's free.
	r := pageableRuntime(t)
	s, err := newSystem(r)
	require.NoError(t, err)
	c, err := newCuda(r)
	require.NoError(t, err)
	p, err := c.AllocateSync(4096, DefaultAlignment)
	require.NoError(t, err)
	requireIs(t, s.DeallocateSync(p, 4096, DefaultAlignment), ErrInvalidPointer)
	require.NoError(t, c.DeallocateSync(p, 4096, DefaultAlignment))
}

func TestSystemConcurrent(t *testing.T) {
	r := pageableRuntime(t)
	s, err := newSystem(r)
	require.NoError(t, err)
	const goroutines = 16
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				n := uintptr(1 + (g*131+i*17)%5000)
				p, err := s.Allocate(DefaultStream, n, DefaultAlignment)
				if err == nil && p%DefaultAlignment != 0 {
					err = fmt.Errorf("%#x is not aligned", p)
				}
				if err == nil && i%10 == 0 {
					err = fill(r, p, n, byte(g), DefaultStream)
				}
				if err == nil {
					err = s.Deallocate(DefaultStream, p, n, DefaultAlignment)
				}
				if err != nil {
					errs <- fmt.Errorf("goroutine %d: %w", g, err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// simOf returns r as a *sim.Runtime, or skips the test.
func simOf(t *testing.T, r cudart.Runtime) *sim.Runtime {
	t.Helper()
	sim, ok := r.(*sim.Runtime)
	if !ok {
		t.Skip("needs the simulated device's test controls")
	}
	return sim
}

func TestSystemDeallocateWaitsForStream(t *testing.T) {
	r := pageableRuntime(t)
	sim := simOf(t, r)
	s, err := newSystem(r)
	require.NoError(t, err)
	st := newStream(t, r)
	p, err := s.Allocate(st, 1<<16, DefaultAlignment)
	require.NoError(t, err)

	require.NoError(t, sim.PauseStream(st))
	require.NoError(t, r.MemsetAsync(p, 7, 1<<16, st)) // queued, not run
	done := make(chan error, 1)
	go func() { done <- s.Deallocate(st, p, 1<<16, DefaultAlignment) }()
	select {
	case err := <-done:
		t.Fatalf("Deallocate returned (%v) while work on its stream was pending", err)
	case <-time.After(50 * time.Millisecond):
	}
	// The free waits for the stream with the record taken: another free of
	// p is refused meanwhile, and the C heap has not seen either.
	requireIs(t, s.Deallocate(DefaultStream, p, 1<<16, DefaultAlignment), ErrInvalidPointer, "a second free while the first waits")
	require.NoError(t, sim.ResumeStream(st))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Deallocate did not return after the stream drained")
	}
	assert.False(t, systemHeap.has(p))
}

func TestSystemDeallocateBadStream(t *testing.T) {
	// When the stream cannot be synchronized the memory is kept, and can
	// be deallocated later.
	r := pageableRuntime(t)
	simOf(t, r)
	s, err := newSystem(r)
	require.NoError(t, err)
	p, err := s.AllocateSync(4096, DefaultAlignment)
	require.NoError(t, err)
	err = s.Deallocate(Stream(0xdead0000), p, 4096, DefaultAlignment)
	requireIs(t, err, ErrCUDA)
	assert.Contains(t, err.Error(), "not freed")
	assert.True(t, systemHeap.has(p))
	require.NoError(t, s.DeallocateSync(p, 4096, DefaultAlignment))
}

func BenchmarkSystemParallel(b *testing.B) {
	s, err := newSystem(pageableRuntime(b))
	require.NoError(b, err)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, err := s.Allocate(DefaultStream, 1024, DefaultAlignment)
			if err != nil {
				b.Error(err)
				return
			}
			if err := s.Deallocate(DefaultStream, p, 1024, DefaultAlignment); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
