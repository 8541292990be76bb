package main

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core"
)

// Lifetimes under concurrent use, through the exports: a reference handed
// out by a getter keeps its resource open, and a call racing the release of
// a resource's last handle finishes or fails with RMM_ERROR_INVALID_HANDLE.

// TestCurrentResourceReferenceKeepsItOpen: goroutines take the current
// resource with rmm_get_current_device_resource and allocate from it while
// the main goroutine sets a new pool current (the slot holding its only
// reference) and resets it, which closes the pool. A getter used to read the
// pool from the table, then find its handle dying and make a new handle for
// the pool being closed: allocations through it failed with "resource
// closed".
func TestCurrentResourceReferenceKeepsItOpen(t *testing.T) {
	cuda, err := core.NewCuda()
	require.NoError(t, err)
	var stop atomic.Bool
	var ops atomic.Int64
	var mu sync.Mutex
	var failures []string
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // the thread's message is the one read back
			defer runtime.UnlockOSThread()
			for !stop.Load() {
				mr := toHandle(0)
				if st := rmm_get_current_device_resource(&mr); st != statusSuccess {
					mu.Lock()
					failures = append(failures, "get: "+lastMessage())
					mu.Unlock()
					continue
				}
				var p unsafe.Pointer
				st := rmm_allocate(mr, nil, 4096, 256, &p)
				if st == statusSuccess {
					st = rmm_deallocate(mr, nil, p, 4096, 256)
				}
				if st != statusSuccess {
					mu.Lock()
					failures = append(failures, lastMessage())
					mu.Unlock()
				}
				ops.Add(1)
				if st := rmm_resource_release(mr); st != statusSuccess {
					mu.Lock()
					failures = append(failures, "release: "+lastMessage())
					mu.Unlock()
				}
			}
		}()
	}
	deadline := time.Now().Add(time.Second)
	rounds := 0
	for ; rounds < 2000 && time.Now().Before(deadline); rounds++ {
		pool, err := core.NewPool(cuda, core.PoolOptions{InitialSize: 1 << 20})
		require.NoError(t, err)
		e, err := reg.add(pool, true, 0, nil)
		require.NoError(t, err)
		require.Equal(t, statusSuccess, rmm_set_current_device_resource(toHandle(e.handle), nil), lastMessage())
		require.NoError(t, reg.release(e.handle)) // the slot holds the only reference
		for n := ops.Load(); ops.Load() < n+2; {
			runtime.Gosched()
		}
		require.Equal(t, statusSuccess, rmm_reset_current_device_resource(nil), lastMessage())
	}
	stop.Store(true)
	wg.Wait()
	assert.Empty(t, failures, "%d rounds, %d allocations", rounds, ops.Load())
}

// slowCloser is a resource whose Close waits until the test lets it go on.
type slowCloser struct {
	fakeResource
	closing, proceed chan struct{}
}

func (s *slowCloser) Close() error {
	close(s.closing)
	<-s.proceed
	return s.fakeResource.Close()
}

// TestNoNewHandleForAResourceBeingClosed: while the registry closes a
// resource whose last handle went, handleFor (the getters' path) refuses
// it rather than make a new handle for it. Before, the dying entry was out
// of the map before Close began, and handleFor made a fresh non-owning
// handle whose calls found the resource closed.
func TestNoNewHandleForAResourceBeingClosed(t *testing.T) {
	r := newRegistry()
	res := &slowCloser{closing: make(chan struct{}), proceed: make(chan struct{})}
	e, err := r.add(res, true, 0, nil)
	require.NoError(t, err)
	released := make(chan error, 1)
	go func() { released <- r.release(e.handle) }()
	<-res.closing
	_, err = r.handleFor(res)
	assert.ErrorIs(t, err, errInvalidHandle, "no new handle while it is being closed")
	close(res.proceed)
	require.NoError(t, <-released)
	assert.Equal(t, 0, r.live())

	// A resource the C API did not make is not closed: it gets a new
	// handle even while its old one goes.
	other := &slowCloser{closing: make(chan struct{}), proceed: make(chan struct{})}
	e, err = r.handleFor(other)
	require.NoError(t, err)
	require.NoError(t, r.release(e.handle))
	e2, err := r.handleFor(other)
	require.NoError(t, err)
	assert.NotEqual(t, e.handle, e2.handle)
	require.NoError(t, r.release(e2.handle))
	assert.Zero(t, other.closed.Load(), "never closed")
}
