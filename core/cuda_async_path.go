package core

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/core/internal/asyncpath"
	"github.com/rmmgo/rmmgo/core/internal/inflight"
	"github.com/rmmgo/rmmgo/cudart"
	"github.com/rmmgo/rmmgo/internal/fastpath"
)

// What the pool-based resources (CudaAsync, CudaAsyncManaged,
// CudaAsyncView) share: their pool, their C state, and their Allocate and
// Deallocate.
//
// An allocation or a free of theirs is written once, in C
// (core/internal/asyncpath): the gate Close waits for, the device check,
// the CUDA call and the record in asyncLive. The C ABI's rmm_allocate and
// rmm_deallocate run it with no Go on the path (CPath); Allocate and
// Deallocate here run the same code through one cgo call. When it does not
// succeed (a wrong device, a CUDA error, a free its record refuses), the
// call runs again on the slow path below, in Go, which reports what is
// wrong with the runtime's own error.

// poolCore is the state of a pool-based resource.
type poolCore struct {
	base
	kind  string
	owned bool           // it owns the pool: Close gives back its blocks and destroys it
	pool  atomic.Uintptr // the cudart.MemPool; 0 once closed
	state *asyncpath.State
	// calls counts the calls on the slow path, which Close waits for (the
	// C path has its own gate, in the state).
	calls inflight.Gate
}

// init sets up c for kind over pool (made or wrapped on b's device) and
// makes its C state; on failure nothing is left to release.
func (c *poolCore) init(kind string, b base, pool cudart.MemPool, owned bool) error {
	c.base, c.kind, c.owned = b, kind, owned
	s, err := asyncpath.NewState(b.rt, pool, b.dev, owned)
	if err != nil {
		return fmt.Errorf("%s: %w: %w", kind, ErrOutOfMemory, err)
	}
	c.state = s
	c.pool.Store(uintptr(pool))
	return nil
}

func (c *poolCore) asyncPool() cudart.MemPool { return cudart.MemPool(c.pool.Load()) }

// CPath returns the resource's C state and the C functions that serve it
// (fastpath.CPathResource).
func (c *poolCore) CPath() fastpath.CPath {
	a, g := c.state.Addr()
	alloc, dealloc := asyncpath.CFuncs()
	return fastpath.CPath{State: a, Gen: g, Allocate: alloc, Deallocate: dealloc}
}

// allocate is Allocate: the C path, then the slow path when that did not
// succeed.
func (c *poolCore) allocate(stream Stream, bytes, alignment uintptr) (uintptr, error) {
	if !requestOK(bytes, alignment) {
		return 0, rejectRequest(c.kind, bytes, alignment) // zero bytes need no pool, even after Close
	}
	p, r, _ := c.state.Allocate(bytes, stream)
	switch r {
	case asyncpath.OK:
		return p, nil
	case asyncpath.Stale:
		return 0, errClosed(c.kind)
	}
	return c.allocateSlow(stream, bytes)
}

// allocateSlow allocates in Go, counted in so that Close waits for it, and
// records the block (as owned when c owns the pool).
func (c *poolCore) allocateSlow(stream Stream, bytes uintptr) (uintptr, error) {
	t, ok := c.calls.Enter()
	if !ok {
		return 0, errClosed(c.kind)
	}
	defer c.calls.Exit(t)
	pool := c.asyncPool()
	if pool == 0 {
		return 0, errClosed(c.kind)
	}
	if err := c.checkDevice(c.kind); err != nil {
		return 0, err
	}
	p, err := c.rt.MallocFromPoolAsync(bytes, pool, stream)
	if err != nil {
		return 0, allocError(c.kind, bytes, err)
	}
	if p == 0 {
		return 0, fmt.Errorf("%s: %w: cudaMallocFromPoolAsync returned no memory and no error for %d bytes", c.kind, ErrCUDA, bytes)
	}
	if !asyncLive.add(p, bytes, pool, c.owned) {
		if ferr := c.rt.FreeAsync(p, stream); ferr != nil {
			return 0, fmt.Errorf("%s: %w: no host memory to record the allocation (and freeing it failed: %v)", c.kind, ErrOutOfMemory, ferr)
		}
		return 0, fmt.Errorf("%s: %w: no host memory to record the allocation", c.kind, ErrOutOfMemory)
	}
	return p, nil
}

// allocateSync allocates on the default stream and waits for it, so the
// memory is ready for any use; Close waits for the whole call.
func (c *poolCore) allocateSync(bytes, alignment uintptr) (uintptr, error) {
	if !requestOK(bytes, alignment) {
		return 0, rejectRequest(c.kind, bytes, alignment)
	}
	t, ok := c.calls.Enter()
	if !ok {
		return 0, errClosed(c.kind)
	}
	defer c.calls.Exit(t)
	p, err := c.allocate(DefaultStream, bytes, alignment)
	if err != nil {
		return 0, err
	}
	if err := c.rt.StreamSynchronize(DefaultStream); err != nil {
		err = cudaError(c.kind+": synchronizing the default stream after allocating", err)
		if ferr := c.deallocate(DefaultStream, p, bytes); ferr != nil {
			return 0, fmt.Errorf("%w (and freeing the memory failed: %v)", err, ferr)
		}
		return 0, err
	}
	return p, nil
}

// deallocate is Deallocate: ptr, allocated with bytes from the pool, goes
// back in stream order on stream when its record says so (live_table.go).
// ptr 0 is a no-op. After Close it fails with ErrClosed (for an owner:
// Close gave every block back).
func (c *poolCore) deallocate(stream Stream, ptr, bytes uintptr) error {
	if ptr == 0 {
		return nil
	}
	switch r, _ := c.state.Deallocate(stream, ptr, bytes); r {
	case asyncpath.OK:
		return nil
	case asyncpath.Stale:
		return errClosed(c.kind)
	}
	return c.deallocateSlow(stream, ptr, bytes)
}

// deallocateSlow frees in Go, counted in like allocateSlow; a refused or
// failed free leaves the record as it was.
func (c *poolCore) deallocateSlow(stream Stream, ptr, bytes uintptr) error {
	t, ok := c.calls.Enter()
	if !ok {
		return errClosed(c.kind)
	}
	defer c.calls.Exit(t)
	pool := c.asyncPool()
	if pool == 0 {
		return errClosed(c.kind)
	}
	e, err := asyncLive.take(c.kind, ptr, bytes, pool)
	if err != nil {
		return err
	}
	if err := c.rt.FreeAsync(ptr, stream); err != nil {
		asyncLive.restore(ptr, e)
		return freeError(c.kind, ptr, err)
	}
	return nil
}

// close destroys an owner's pool once: it lets no new call in and waits for
// those in flight (both paths), synchronizes the device (work queued on the
// blocks still out may still run, and frees queued on any stream must have
// run), frees the blocks the resource handed out that nobody freed and
// waits for those frees, then destroys the pool (which the driver then
// releases at once) and gives the C state back.
func (c *poolCore) close() error {
	if !c.calls.Close() {
		return nil
	}
	c.state.Close()
	pool := cudart.MemPool(c.pool.Swap(0))
	if pool == 0 {
		return nil
	}
	defer c.state.Release()
	var errs []error
	live, complete := asyncLive.takeOwned(pool)
	if !complete {
		errs = append(errs, fmt.Errorf("%s: %w: no host memory to list the blocks still outstanding: some were not given back", c.kind, ErrOutOfMemory))
	}
	// Synchronize the device first, whatever is outstanding: work queued on
	// the blocks still live may use them, and the frees callers queued on
	// any stream must have run (and the driver must know they ran) before
	// the pool goes. Destroyed with frees pending, a pool is only marked for
	// destruction and released later by the driver; on an H100, pools so
	// released under threads that went on allocating from a new pool
	// crashed cudaMallocFromPoolAsync (the stress program's current
	// scenario). A pool destroyed after the synchronization is released at
	// once.
	if err := c.rt.DeviceSynchronize(); err != nil {
		errs = append(errs, cudaError(c.kind+": synchronizing before destroying the memory pool", err))
	}
	if len(live) > 0 {
		for _, p := range live {
			if err := c.rt.FreeAsync(p, DefaultStream); err != nil {
				errs = append(errs, freeError(c.kind, p, err))
			}
		}
		if err := c.rt.StreamSynchronize(DefaultStream); err != nil {
			errs = append(errs, cudaError(c.kind+": synchronizing after freeing the blocks still outstanding", err))
		}
	}
	if err := c.rt.MemPoolDestroy(pool); err != nil {
		errs = append(errs, cudaError(c.kind+": destroying the memory pool", err))
	}
	return errors.Join(errs...)
}
