package core

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
	"github.com/rmmgo/rmmgo/cudart/sim"
)

const mib = 1 << 20

// newTestExpandable makes an expandable resource on runtime r (which must
// offer virtual memory management, or be paired with it), closed when the
// test ends.
func newTestExpandable(t testing.TB, r cudart.Runtime, opts ExpandableOptions) *Expandable {
	t.Helper()
	e, err := newExpandable(r, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// withVM pairs a runtime wrapper (which passes on only cudart.Runtime) with
// the virtual memory of the runtime it wraps.
type withVM struct {
	cudart.Runtime
	cudart.VirtualMemory
}

// checkNoLeak checks that a closed expandable resource left nothing on the
// simulated device: no reservation, no physical memory, no fault.
func checkNoLeak(t testing.TB, s *sim.Runtime) {
	t.Helper()
	st := s.VirtualMemory()
	assert.Zero(t, st.Reservations, "reservations left")
	assert.Zero(t, st.Handles, "physical memory left")
	assert.Empty(t, st.Faults, "copies or fills that found their memory unmapped")
}

func TestExpandableBasics(t *testing.T) {
	s := newSimRuntime(t, sim.Config{Devices: 2, MemoryPerDevice: 256 * mib})
	e := newTestExpandable(t, s, ExpandableOptions{})
	assert.Equal(t, "expandable", e.Kind())
	assert.Equal(t, DeviceAccessible, e.Properties())
	assert.True(t, e.Equal(e))
	assert.False(t, e.Equal(newTestExpandable(t, s, ExpandableOptions{})))
	assert.Equal(t, 0, e.Device())
	assert.EqualValues(t, 2*mib, e.Granularity())
	assert.EqualValues(t, 256*mib, e.MaximumSize(), "the device's memory")
	assert.EqualValues(t, 1024*mib, e.ReservedSize(), "four times the maximum")
	assert.Zero(t, e.PoolSize(), "nothing mapped until used")
	assert.Zero(t, s.UsedBytes(0))

	p, err := e.Allocate(DefaultStream, 0, DefaultAlignment)
	require.NoError(t, err)
	assert.Zero(t, p)
	require.NoError(t, e.Deallocate(DefaultStream, 0, 0, DefaultAlignment))
	for _, a := range []uintptr{0, 3, 512} {
		_, err := e.Allocate(DefaultStream, 100, a)
		requireIs(t, err, ErrBadAlignment, "alignment ", a)
	}
	p, err = e.Allocate(DefaultStream, 1000, 64)
	require.NoError(t, err)
	assert.Zero(t, p%DefaultAlignment)
	assert.EqualValues(t, 1024, e.UsedBytes())
	assert.EqualValues(t, 2*mib, e.PoolSize(), "one granule")
	assert.EqualValues(t, 2*mib, s.UsedBytes(0), "the device counts what is mapped")
	fillAndCheck(t, s, p, 1000, 0x3c, DefaultStream)

	// Bad frees.
	requireIs(t, e.Deallocate(DefaultStream, 0x12340000, 1000, DefaultAlignment), ErrInvalidPointer, "never handed out")
	requireIs(t, e.Deallocate(DefaultStream, p+256, 1000, DefaultAlignment), ErrInvalidPointer, "interior")
	requireIs(t, e.Deallocate(DefaultStream, p+4*mib, 1000, DefaultAlignment), ErrInvalidPointer, "unmapped")
	requireIs(t, e.Deallocate(DefaultStream, p, 5000, DefaultAlignment), ErrInvalidArgument, "wrong size")
	require.NoError(t, e.Deallocate(DefaultStream, p, 1000, DefaultAlignment))
	requireIs(t, e.Deallocate(DefaultStream, p, 1000, DefaultAlignment), ErrInvalidPointer, "double free")
	assert.Zero(t, e.UsedBytes())

	q, err := e.AllocateSync(5000, DefaultAlignment)
	require.NoError(t, err)
	require.NoError(t, e.DeallocateSync(q, 5000, DefaultAlignment))

	require.NoError(t, e.Close())
	require.NoError(t, e.Close(), "closing twice is fine")
	_, err = e.Allocate(DefaultStream, 100, DefaultAlignment)
	requireIs(t, err, ErrClosed)
	requireIs(t, e.Release(), ErrClosed)
	requireIs(t, e.Deallocate(DefaultStream, q, 5000, DefaultAlignment), ErrClosed)
}

func TestExpandableOptions(t *testing.T) {
	s := newSimRuntime(t, sim.Config{Devices: 2, MemoryPerDevice: 64 * mib})
	for _, c := range []struct {
		opts ExpandableOptions
		want error
		text string
	}{
		{ExpandableOptions{MaximumSize: 1000}, ErrInvalidArgument, "multiple of 256"},
		{ExpandableOptions{ReleaseThreshold: 100}, ErrInvalidArgument, "multiple of 256"},
		{ExpandableOptions{MaximumSize: mib}, ErrInvalidArgument, "smaller than the device's granularity"},
		{ExpandableOptions{MaximumSize: 8 * mib, ReservedSize: 4 * mib}, ErrInvalidArgument, "smaller than the maximum size"},
		{ExpandableOptions{PeerDevices: []int{2}}, ErrInvalidArgument, "peer device 2"},
		{ExpandableOptions{PeerDevices: []int{0}}, ErrInvalidArgument, "peer device 0"},
	} {
		_, err := newExpandable(s, c.opts)
		requireIs(t, err, c.want, fmt.Sprintf("%+v", c.opts))
		assert.ErrorContains(t, err, c.text)
	}
	e := newTestExpandable(t, s, ExpandableOptions{MaximumSize: 5 * mib, ReleaseThreshold: SizeDefault, ReservedSize: 7 * mib, PeerDevices: []int{1, 1}})
	assert.EqualValues(t, 4*mib, e.MaximumSize(), "whole granules")
	assert.EqualValues(t, 8*mib, e.ReservedSize(), "rounded up to a granule")
	assert.Len(t, e.access, 2, "its own device and one peer")

	_, err := newExpandable(newSimRuntime(t, sim.Config{NoVirtualMemory: true}), ExpandableOptions{})
	requireIs(t, err, ErrNotSupported)
	assert.ErrorContains(t, err, "CUDA_ERROR_NOT_SUPPORTED")
	_, err = newExpandable(struct{ cudart.Runtime }{s}, ExpandableOptions{})
	requireIs(t, err, cudart.ErrNotSupported, "a runtime without virtual memory management")
}

// TestExpandableFragmentation is the case the resource exists for (issue
// 18): a maximum of 512 MiB, 100 blocks of 4 MiB, every other one freed,
// then one block of 150 MiB. 200 MiB are free but no 150 MiB of them in
// one piece: the pool refuses; the expandable resource gives back the
// freed granules and maps 150 MiB at the end of its range, without moving
// the blocks still live. Runs on the GPU too.
func TestExpandableFragmentation(t *testing.T) {
	r := testRuntime(t)
	const block, n, big, maxSize = 4 * mib, 100, 150 * mib, 512 * mib
	s := DefaultStream
	scenario := func(t *testing.T, res Resource) (live []uintptr, bigErr error) {
		var all []uintptr
		for i := 0; i < n; i++ {
			p, err := res.Allocate(s, block, DefaultAlignment)
			require.NoError(t, err, "block %d", i)
			all = append(all, p)
		}
		for i, p := range all {
			if i%2 == 1 {
				require.NoError(t, res.Deallocate(s, p, block, DefaultAlignment))
			} else {
				live = append(live, p)
				// Mark both ends of each live block.
				require.NoError(t, r.MemsetAsync(p, i%251, 4096, s))
				require.NoError(t, r.MemsetAsync(p+block-4096, i%251, 4096, s))
			}
		}
		p, err := res.Allocate(s, big, DefaultAlignment)
		if err == nil {
			fillAndCheck(t, r, p, 64<<10, 0xee, s)
			fillAndCheck(t, r, p+big-64<<10, 64<<10, 0xef, s)
			for i, q := range live {
				require.NoError(t, expect(r, q, 4096, byte((2*i)%251), s), "live block %d moved or lost its data", 2*i)
				require.NoError(t, expect(r, q+block-4096, 4096, byte((2*i)%251), s))
			}
			live = append(live, p)
		}
		return live, err
	}

	t.Run("pool", func(t *testing.T) {
		cuda, err := NewCuda()
		require.NoError(t, err)
		pool, err := NewPool(cuda, PoolOptions{InitialSize: 0, MaximumSize: maxSize})
		require.NoError(t, err)
		defer pool.Close()
		_, err = scenario(t, pool)
		// 200 MiB free in 4 MiB pieces: the pool gives back the chunks
		// that are wholly free before it grows, and the maximum has room.
		require.NoError(t, err, "the pool gives its free chunks back and serves 150 MiB")
		assert.LessOrEqual(t, pool.PoolSize(), uintptr(maxSize))
	})
	t.Run("expandable", func(t *testing.T) {
		e, err := NewExpandable(ExpandableOptions{MaximumSize: maxSize})
		require.NoError(t, err)
		defer e.Close()
		live, err := scenario(t, e)
		require.NoError(t, err, "the expandable resource serves 150 MiB")
		g := e.Granularity()
		assert.LessOrEqual(t, e.PoolSize(), uintptr(maxSize))
		assert.EqualValues(t, 50*block+big, e.UsedBytes())
		// The freed blocks' granules went back: what is mapped is what is
		// live, up to a granule at each end of the big block.
		assert.LessOrEqual(t, e.PoolSize(), 50*block+big+2*g, "mapped %d MiB", e.PoolSize()>>20)
		for i, p := range live[:len(live)-1] {
			require.NoError(t, e.Deallocate(s, p, block, DefaultAlignment), "block %d", i)
		}
		require.NoError(t, e.Release())
		assert.LessOrEqual(t, e.PoolSize(), big+2*g, "only the big block's granules stay mapped")
		require.NoError(t, e.Deallocate(s, live[len(live)-1], big, DefaultAlignment))
		require.NoError(t, e.Release())
		assert.Zero(t, e.PoolSize())
	})
}

// TestExpandableGrowth: memory is mapped as needed, next to the free memory
// that comes closest, so that free space stays in one piece; a little
// ahead of need as the resource grows.
func TestExpandableGrowth(t *testing.T) {
	s := newSimRuntime(t, sim.Config{Devices: 1, MemoryPerDevice: 512 * mib})
	// One shard: the free memory a new granule extends is that of the
	// caller's list, and with several shards a goroutine that moved to
	// another P between the two calls finds the 1 MiB in another list (the
	// growth then maps the whole request; it failed so on a 16-core host).
	e := oneShard(t, func() (*Expandable, error) { return newExpandable(s, ExpandableOptions{}) })
	t.Cleanup(func() { _ = e.Close() })
	g := e.Granularity()
	// 3 MiB: two granules, 1 MiB left free at the end.
	a, err := e.Allocate(DefaultStream, 3*mib, DefaultAlignment)
	require.NoError(t, err)
	assert.EqualValues(t, 2*g, e.PoolSize())
	// 2 MiB more: the 1 MiB left plus one granule more, contiguous.
	b, err := e.Allocate(DefaultStream, 2*mib, DefaultAlignment)
	require.NoError(t, err)
	assert.Equal(t, a+3*mib, b, "the new granule extends the free memory before it")
	assert.EqualValues(t, 3*g, e.PoolSize())
	assert.EqualValues(t, e.PoolSize(), uintptr(s.UsedBytes(0)))
	// Free everything: one free block of 6 MiB serves 6 MiB with no growth.
	require.NoError(t, e.Deallocate(DefaultStream, a, 3*mib, DefaultAlignment))
	require.NoError(t, e.Deallocate(DefaultStream, b, 2*mib, DefaultAlignment))
	c, err := e.Allocate(DefaultStream, 6*mib, DefaultAlignment)
	require.NoError(t, err)
	assert.Equal(t, a, c)
	assert.EqualValues(t, 3*g, e.PoolSize())
	require.NoError(t, e.Deallocate(DefaultStream, c, 6*mib, DefaultAlignment))

	// Many small requests: growth maps a sixteenth ahead, so it happens
	// far less often than once per granule, and maps little more than
	// needed.
	var ps []uintptr
	for i := 0; i < 2000; i++ {
		p, err := e.Allocate(DefaultStream, 100<<10, DefaultAlignment)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	live := uintptr(2000 * (100 << 10))
	assert.LessOrEqual(t, e.PoolSize(), live+live/8+g, "mapped %d MiB for %d MiB live", e.PoolSize()>>20, live>>20)
	for _, p := range ps {
		require.NoError(t, e.Deallocate(DefaultStream, p, 100<<10, DefaultAlignment))
	}
	// Release gives everything back.
	require.NoError(t, e.Release())
	assert.Zero(t, e.PoolSize())
	assert.Zero(t, s.UsedBytes(0))
	assert.Zero(t, e.UsedBytes())
	require.NoError(t, e.Close())
	checkNoLeak(t, s)
}

// TestExpandableReleaseKeepsLiveData: Release unmaps wholly free granules
// only; every live block keeps its memory and contents, and the freed
// memory is mapped again on demand.
func TestExpandableReleaseKeepsLiveData(t *testing.T) {
	s := newSimRuntime(t, sim.Config{Devices: 1, MemoryPerDevice: 512 * mib})
	e := newTestExpandable(t, s, ExpandableOptions{})
	rng := rand.New(rand.NewPCG(5, 6))
	type blk struct {
		p, n uintptr
		v    byte
	}
	var live []blk
	for i := 0; i < 150; i++ {
		n := uintptr(rng.IntN(3*mib) + 1)
		p, err := e.Allocate(DefaultStream, n, DefaultAlignment)
		require.NoError(t, err)
		v := byte(i)
		require.NoError(t, s.Memset(p, int(v), n))
		live = append(live, blk{p, n, v})
	}
	for i := 0; i < len(live); {
		if rng.IntN(3) != 0 {
			require.NoError(t, e.Deallocate(DefaultStream, live[i].p, live[i].n, DefaultAlignment))
			live = append(live[:i], live[i+1:]...)
			continue
		}
		i++
	}
	before := e.PoolSize()
	require.NoError(t, e.Release())
	after := e.PoolSize()
	assert.Less(t, after, before, "free granules went back")
	assert.GreaterOrEqual(t, after, e.UsedBytes())
	assert.EqualValues(t, after, uintptr(s.UsedBytes(0)))
	for _, b := range live {
		require.NoError(t, expect(s, b.p, b.n, b.v, DefaultStream))
	}
	// Allocate again into the released range: mapped on demand.
	for i := 0; i < 100; i++ {
		n := uintptr(rng.IntN(2*mib) + 1)
		p, err := e.Allocate(DefaultStream, n, DefaultAlignment)
		require.NoError(t, err)
		fillAndCheck(t, s, p, n, 0x5a, DefaultStream)
		live = append(live, blk{p, n, 0x5a})
	}
	for _, b := range live {
		require.NoError(t, expect(s, b.p, b.n, b.v, DefaultStream))
		require.NoError(t, e.Deallocate(DefaultStream, b.p, b.n, DefaultAlignment))
	}
	require.NoError(t, e.Close())
	checkNoLeak(t, s)
}

// TestExpandableThreshold: above its release threshold the resource gives
// back free granules before it maps more (one device synchronization);
// without one it keeps them and never synchronizes.
func TestExpandableThreshold(t *testing.T) {
	s := newSimRuntime(t, sim.Config{Devices: 1, MemoryPerDevice: 512 * mib})
	for _, threshold := range []uintptr{0, 16 * mib} {
		t.Run(fmt.Sprintf("threshold=%d", threshold), func(t *testing.T) {
			rt := &syncCountingRuntime{Runtime: s}
			e := newTestExpandable(t, withVM{rt, s}, ExpandableOptions{ReleaseThreshold: threshold})
			// 64 blocks of 1 MiB; every other one freed: 32 MiB free in 1 MiB
			// pieces, no granule wholly free... then the even ones too, but
			// the last, so that 62 MiB are wholly free.
			var ps []uintptr
			for i := 0; i < 64; i++ {
				p, err := e.Allocate(DefaultStream, mib, DefaultAlignment)
				require.NoError(t, err)
				ps = append(ps, p)
			}
			for _, p := range ps[:63] {
				require.NoError(t, e.Deallocate(DefaultStream, p, mib, DefaultAlignment))
			}
			mapped := e.PoolSize()
			syncs := rt.syncs.Load()
			// A request no free block holds.
			big, err := e.Allocate(DefaultStream, 100*mib, DefaultAlignment)
			require.NoError(t, err)
			if threshold == 0 {
				assert.Equal(t, syncs, rt.syncs.Load(), "no synchronization")
				assert.GreaterOrEqual(t, e.PoolSize(), mapped+100*mib-2*mib, "kept the free granules and mapped more")
			} else {
				assert.Equal(t, syncs+1, rt.syncs.Load(), "one synchronization to give granules back")
				assert.LessOrEqual(t, e.PoolSize(), 100*mib+2*e.Granularity(), "mapped %d MiB", e.PoolSize()>>20)
			}
			require.NoError(t, e.Deallocate(DefaultStream, big, 100*mib, DefaultAlignment))
			require.NoError(t, e.Deallocate(DefaultStream, ps[63], mib, DefaultAlignment))
		})
	}
}

// syncCountingRuntime counts device synchronizations.
type syncCountingRuntime struct {
	cudart.Runtime
	syncs atomic.Int64
}

func (c *syncCountingRuntime) DeviceSynchronize() error {
	c.syncs.Add(1)
	return c.Runtime.DeviceSynchronize()
}

// TestExpandableOutOfMemory: at the maximum size, and at the device's
// capacity, a request fails with ErrOutOfMemory after the resource gave
// back what it could; it maps nothing it does not use, and works on.
func TestExpandableOutOfMemory(t *testing.T) {
	s := newSimRuntime(t, sim.Config{Devices: 1, MemoryPerDevice: 64 * mib})
	t.Run("maximum", func(t *testing.T) {
		e := newTestExpandable(t, s, ExpandableOptions{MaximumSize: 16 * mib})
		a, err := e.Allocate(DefaultStream, 10*mib, DefaultAlignment)
		require.NoError(t, err)
		b, err := e.Allocate(DefaultStream, 6*mib, DefaultAlignment)
		require.NoError(t, err)
		_, err = e.Allocate(DefaultStream, 256, DefaultAlignment)
		requireIs(t, err, ErrOutOfMemory)
		assert.ErrorContains(t, err, "Maximum pool size exceeded (failed to allocate 256.000000 B)")
		_, err = e.Allocate(DefaultStream, 17*mib, DefaultAlignment)
		requireIs(t, err, ErrOutOfMemory, "more than the maximum")
		assert.EqualValues(t, 16*mib, e.PoolSize())
		// Freeing b makes room at once.
		require.NoError(t, e.Deallocate(DefaultStream, b, 6*mib, DefaultAlignment))
		c, err := e.Allocate(DefaultStream, 5*mib, DefaultAlignment)
		require.NoError(t, err)
		require.NoError(t, e.Deallocate(DefaultStream, a, 10*mib, DefaultAlignment))
		require.NoError(t, e.Deallocate(DefaultStream, c, 5*mib, DefaultAlignment))
		require.NoError(t, e.Close())
	})
	t.Run("more than the device has", func(t *testing.T) {
		// Physical memory comes one granule at a time, so the driver never
		// sees a request larger than the device (CUDA calls that an invalid
		// value, not out of memory): within the default maximum (the
		// device's memory) the maximum refuses it, past a larger maximum
		// the device runs out.
		for _, max := range []uintptr{0, 256 * mib} {
			e := newTestExpandable(t, s, ExpandableOptions{MaximumSize: max})
			_, err := e.Allocate(DefaultStream, 100*mib, DefaultAlignment)
			requireIs(t, err, ErrOutOfMemory, "maximum ", max)
			assert.Zero(t, e.PoolSize(), "maximum %d: nothing stays mapped", max)
			require.NoError(t, e.Close())
		}
		assert.Zero(t, s.UsedBytes(0))
	})
	t.Run("device", func(t *testing.T) {
		e := newTestExpandable(t, s, ExpandableOptions{})
		hog, err := s.Malloc(40 * mib)
		require.NoError(t, err)
		a, err := e.Allocate(DefaultStream, 20*mib, DefaultAlignment)
		require.NoError(t, err)
		_, err = e.Allocate(DefaultStream, 8*mib, DefaultAlignment)
		requireIs(t, err, ErrOutOfMemory)
		requireIs(t, err, cudart.ErrMemoryAllocation, "the driver's out of memory is wrapped")
		assert.ErrorContains(t, err, "device 0 has no memory")
		assert.EqualValues(t, 20*mib, e.PoolSize(), "the granules of the failed growth were given back")
		assert.EqualValues(t, 60*mib, s.UsedBytes(0))
		// The device refusing the first granule.
		require.NoError(t, s.Free(hog))
		s.InjectAllocFailures(1)
		_, err = e.Allocate(DefaultStream, 8*mib, DefaultAlignment)
		requireIs(t, err, ErrOutOfMemory)
		assert.ErrorContains(t, err, "injected failure")
		assert.EqualValues(t, 20*mib, e.PoolSize())
		b, err := e.Allocate(DefaultStream, 8*mib, DefaultAlignment)
		require.NoError(t, err, "and then not")
		require.NoError(t, e.Deallocate(DefaultStream, b, 8*mib, DefaultAlignment))
		require.NoError(t, e.Deallocate(DefaultStream, a, 20*mib, DefaultAlignment))
		require.NoError(t, e.Release())
		assert.EqualValues(t, e.PoolSize(), uintptr(s.UsedBytes(0)), "no granule leaked")
		require.NoError(t, e.Close())
	})
	checkNoLeak(t, s)
}

// TestExpandablePeerAccess: PeerDevices get access to the memory; others
// do not (the simulated device refuses their copies and fills).
func TestExpandablePeerAccess(t *testing.T) {
	s := newSimRuntime(t, sim.Config{Devices: 3, MemoryPerDevice: 64 * mib})
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	e := newTestExpandable(t, s, ExpandableOptions{PeerDevices: []int{1}})
	p, err := e.Allocate(DefaultStream, mib, DefaultAlignment)
	require.NoError(t, err)
	require.NoError(t, s.SetDevice(1))
	require.NoError(t, s.Memset(p, 7, mib), "a peer device may write")
	require.NoError(t, s.SetDevice(2))
	requireIs(t, s.Memset(p, 7, mib), cudart.ErrInvalidValue, "device 2 has no access")
	require.NoError(t, s.SetDevice(0))
	fillAndCheck(t, s, p, mib, 9, DefaultStream)
	f, err := s.MemGetAccess(cudart.DeviceLocation(1), p)
	require.NoError(t, err)
	assert.Equal(t, cudart.MemAccessFlagsProtReadWrite, f)
	require.NoError(t, e.Deallocate(DefaultStream, p, mib, DefaultAlignment))
}

// The stream-ordering tests of the sub-allocators (suballoc_test.go), for
// the expandable resource: the same engine must give the same guarantees.

func TestExpandableCrossStreamReuse(t *testing.T) {
	sm := simDevice(t)
	const size = 4 * mib
	rt := newOrderingRuntime(t)
	e := newTestExpandable(t, withVM{rt, sm}, ExpandableOptions{MaximumSize: size})
	a, b := DefaultStream, newStream(t, sm)
	x, err := e.Allocate(a, size, DefaultAlignment)
	require.NoError(t, err)
	require.NoError(t, sm.PauseStream(a))
	defer sm.ResumeStream(a)
	require.NoError(t, sm.MemsetAsync(x, 0xAA, size, a))
	require.NoError(t, e.Deallocate(a, x, size, DefaultAlignment))

	before := rt.counts()
	y, err := e.Allocate(b, size, DefaultAlignment)
	require.NoError(t, err)
	require.Equal(t, x, y, "the only block is the one freed on A")
	after := rt.counts()
	assert.Equal(t, before[0]+1, after[0], "one event record on A")
	assert.Equal(t, before[1]+1, after[1], "one wait on B")
	assert.Equal(t, before[2:], after[2:], "no host synchronization")
	require.Error(t, sm.StreamQuery(b), "B must wait for A, which is paused")
	require.NoError(t, sm.MemsetAsync(y, 0xBB, size, b))
	require.NoError(t, sm.ResumeStream(a))
	require.NoError(t, expect(sm, y, size, 0xBB, b), "B's fill ran after A's")
	require.NoError(t, e.Deallocate(b, y, size, DefaultAlignment))
	assert.Empty(t, rt.misuses())
}

func TestExpandableSettledReuse(t *testing.T) {
	sm := simDevice(t)
	const size, extra, held = 4 * mib, 64 << 10, 96 * mib
	rt := newOrderingRuntime(t)
	e := newTestExpandable(t, withVM{rt, sm}, ExpandableOptions{MaximumSize: held + 2*size + 2*mib})
	a, err := sm.StreamCreate(cudart.StreamFlagDefault)
	require.NoError(t, err)
	b := newStream(t, sm)
	// A block B holds throughout, so that what A frees stays below the
	// request and a trimSlack-th of what is mapped: B does not settle
	// (TestExpandableSettleBeforeGrow is the case where it does).
	h, err := e.Allocate(b, held, DefaultAlignment)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Deallocate(b, h, held, DefaultAlignment)) }()
	x, err := e.Allocate(a, size, DefaultAlignment)
	require.NoError(t, err)
	w, err := e.Allocate(a, extra, DefaultAlignment)
	require.NoError(t, err)
	require.NoError(t, sm.PauseStream(a))
	defer sm.ResumeStream(a)
	require.NoError(t, sm.MemsetAsync(x, 0xAA, size, a))
	require.NoError(t, e.Deallocate(a, x, size, DefaultAlignment))

	before := rt.counts()
	onA := rt.recordsOnStream(a)
	z, err := e.Allocate(b, size, DefaultAlignment)
	require.NoError(t, err, "B maps more instead of waiting for A")
	assert.NotEqual(t, x, z)
	mid := rt.counts()
	assert.Equal(t, before[2:], mid[2:], "no host synchronization")
	assert.Equal(t, onA, rt.recordsOnStream(a), "B never records on A")

	require.NoError(t, e.Deallocate(a, w, extra, DefaultAlignment))
	assert.Equal(t, onA+1, rt.recordsOnStream(a), "A's next call records A's event")
	require.NoError(t, rt.StreamDestroy(a))

	before = rt.counts()
	y, err := e.Allocate(b, size, DefaultAlignment)
	require.NoError(t, err)
	assert.Equal(t, x, y, "the block freed on A, now settled")
	after := rt.counts()
	assert.Equal(t, before[1]+1, after[1], "one wait on B")
	assert.Equal(t, before[2:], after[2:], "no host synchronization")
	require.NoError(t, sm.MemsetAsync(y, 0xBB, size, b))
	require.NoError(t, sm.ResumeStream(a))
	require.NoError(t, expect(sm, y, size, 0xBB, b), "B's fill ran after A's")
	require.NoError(t, e.Deallocate(b, y, size, DefaultAlignment))
	require.NoError(t, e.Deallocate(b, z, size, DefaultAlignment))
	assert.Empty(t, rt.misuses())
}

// TestExpandableDestroyedStream: memory freed on a stream that is then
// destroyed with its work queued is reused at the maximum only after a
// device synchronization, which waits for that work; here the resource
// gives the granules back and maps them again, and no queued fill ever
// touches unmapped memory.
func TestExpandableDestroyedStream(t *testing.T) {
	sm := simDevice(t)
	const size = 4 * mib
	rt := newOrderingRuntime(t)
	e := newTestExpandable(t, withVM{rt, sm}, ExpandableOptions{MaximumSize: size})
	a, err := sm.StreamCreate(cudart.StreamFlagDefault)
	require.NoError(t, err)
	b := newStream(t, sm)
	x, err := e.Allocate(a, size, DefaultAlignment)
	require.NoError(t, err)
	require.NoError(t, sm.PauseStream(a))
	defer sm.ResumeStream(a)
	require.NoError(t, sm.MemsetAsync(x, 0xAA, size, a))
	require.NoError(t, e.Deallocate(a, x, size, DefaultAlignment))
	require.NoError(t, rt.StreamDestroy(a))
	faults := len(sm.VirtualMemory().Faults)

	before := rt.counts()
	type result struct {
		p   uintptr
		err error
	}
	done := make(chan result, 1)
	go func() {
		p, err := e.Allocate(b, size, DefaultAlignment)
		done <- result{p, err}
	}()
	select {
	case res := <-done:
		t.Fatalf("the allocation returned (%#x, %v) while the destroyed stream's work is pending", res.p, res.err)
	case <-time.After(50 * time.Millisecond):
	}
	require.NoError(t, sm.ResumeStream(a))
	res := <-done
	require.NoError(t, res.err)
	assert.Equal(t, x, res.p, "the same range, mapped again")
	assert.Equal(t, before[2]+1, rt.counts()[2], "one device synchronization")
	assert.Zero(t, rt.recordsOnStream(a))
	assert.Len(t, sm.VirtualMemory().Faults, faults, "A's fill ran before the unmap")
	require.NoError(t, sm.MemsetAsync(res.p, 0xBB, size, b))
	require.NoError(t, expect(sm, res.p, size, 0xBB, b))
	require.NoError(t, e.Deallocate(b, res.p, size, DefaultAlignment))
	assert.Empty(t, rt.misuses())
}

// TestExpandableNoHostSync: the random workload over several streams,
// cross-stream frees included, never synchronizes a stream while the
// resource can grow, and synchronizes the device only to settle other
// streams' free memory before a growth (settle: where those hold at least
// the request and a thirty-second of what is mapped unsettled), never to
// give memory back.
func TestExpandableNoHostSync(t *testing.T) {
	sm := simDevice(t)
	rt := newOrderingRuntime(t)
	e := newTestExpandable(t, withVM{rt, sm}, ExpandableOptions{MaximumSize: 512 * mib})
	streams := []Stream{DefaultStream, newStream(t, rt), newStream(t, rt)}
	before := rt.counts()
	rng := rand.New(rand.NewPCG(3, 4))
	_, err := randomWorkload(e, rng, raceScale(20000), 128<<10, streams, 97, e.UsedBytes)
	require.NoError(t, err)
	after := rt.counts()
	assert.Zero(t, e.releases.Load(), "no give-back")
	assert.Equal(t, before[2]+int64(e.settles.Load()), after[2], "device synchronizations: the settles' only")
	assert.Equal(t, before[3], after[3], "no stream synchronization")
	assert.Zero(t, e.UsedBytes())
	t.Logf("%d event records, %d waits and %d settles for %d operations; mapped %d MiB", after[0]-before[0], after[1]-before[1], e.settles.Load(), raceScale(20000), e.PoolSize()>>20)
}

// TestExpandableConcurrent: 16 goroutines on their own streams or the
// default one allocate, fill, check and free, while another gives free
// granules back; no block is ever live twice and every pattern reads back
// (run with -race).
func TestExpandableConcurrent(t *testing.T) {
	sm := simDevice(t)
	e := newTestExpandable(t, sm, ExpandableOptions{MaximumSize: 256 * mib})
	const goroutines = 16
	live := &liveSet{m: map[uintptr]uintptr{}}
	var wg sync.WaitGroup
	errs := make([]error, goroutines)
	steps := raceScale(400)
	for g := 0; g < goroutines; g++ {
		s := DefaultStream
		if g%2 == 1 {
			s = newStream(t, sm)
		}
		wg.Add(1)
		go func(g int, s Stream) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 11))
			var mine []span
			for i := 0; i < steps; i++ {
				if len(mine) > 0 && (rng.IntN(2) == 0 || len(mine) > 8) {
					j := rng.IntN(len(mine))
					b := mine[j]
					live.remove(b.ptr)
					if err := e.Deallocate(s, b.ptr, b.size, DefaultAlignment); err != nil {
						errs[g] = err
						return
					}
					mine = append(mine[:j], mine[j+1:]...)
					continue
				}
				n := uintptr(rng.IntN(2*mib) + 1)
				p, err := e.Allocate(s, n, DefaultAlignment)
				if err != nil {
					errs[g] = err
					return
				}
				if err := live.add(p, n); err != nil {
					errs[g] = err
					return
				}
				if err := fill(sm, p, min(n, 4096), byte(g), s); err != nil {
					errs[g] = err
					return
				}
				mine = append(mine, span{p, n, s})
			}
			for _, b := range mine {
				live.remove(b.ptr)
				if err := e.Deallocate(s, b.ptr, b.size, DefaultAlignment); err != nil {
					errs[g] = err
				}
			}
		}(g, s)
	}
	stop := make(chan struct{})
	released := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				released <- nil
				return
			default:
			}
			if err := e.Release(); err != nil {
				released <- err
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	close(stop)
	require.NoError(t, <-released)
	for g, err := range errs {
		require.NoError(t, err, "goroutine %d", g)
	}
	assert.Zero(t, e.UsedBytes())
	require.NoError(t, e.Release())
	assert.Zero(t, e.PoolSize())
	assert.Empty(t, sm.VirtualMemory().Faults)
}

func ExampleNewExpandable() {
	e, err := NewExpandable(ExpandableOptions{MaximumSize: 512 << 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	p, err := e.Allocate(DefaultStream, 3<<20, DefaultAlignment)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.UsedBytes(), e.PoolSize())
	_ = e.Deallocate(DefaultStream, p, 3<<20, DefaultAlignment)
	_ = e.Release()
	fmt.Println(e.UsedBytes(), e.PoolSize())
	// Output:
	// 3145728 4194304
	// 0 0
}

// TestExpandableMoreRanges: when live blocks leave no room in one piece
// for a request that the maximum allows, the resource reserves another
// address range rather than fail; Close frees them all.
func TestExpandableMoreRanges(t *testing.T) {
	s := newSimRuntime(t, sim.Config{Devices: 1, MemoryPerDevice: 64 * mib})
	e := newTestExpandable(t, s, ExpandableOptions{MaximumSize: 8 * mib, ReservedSize: 8 * mib})
	var ps []uintptr
	for i := 0; i < 4; i++ {
		p, err := e.Allocate(DefaultStream, 2*mib, DefaultAlignment)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	require.NoError(t, e.Deallocate(DefaultStream, ps[1], 2*mib, DefaultAlignment))
	require.NoError(t, e.Deallocate(DefaultStream, ps[3], 2*mib, DefaultAlignment))
	require.NoError(t, e.Release())
	assert.EqualValues(t, 4*mib, e.PoolSize())
	// 4 MiB: the maximum allows it, the first range has two 2 MiB holes.
	q, err := e.Allocate(DefaultStream, 4*mib, DefaultAlignment)
	require.NoError(t, err)
	assert.EqualValues(t, 16*mib, e.ReservedSize(), "a second range")
	assert.EqualValues(t, 8*mib, e.PoolSize())
	fillAndCheck(t, s, q, 4*mib, 0x42, DefaultStream)
	require.NoError(t, e.Deallocate(DefaultStream, q, 4*mib, DefaultAlignment))
	require.NoError(t, e.Deallocate(DefaultStream, ps[0], 2*mib, DefaultAlignment))
	require.NoError(t, e.Deallocate(DefaultStream, ps[2], 2*mib, DefaultAlignment))
	require.NoError(t, e.Close())
	checkNoLeak(t, s)
}

// A resource that holds a lot maps large growths in handles of several
// granules (VMM calls cost per handle), gives back only handles whose every
// granule is free, keeps the rest as free memory that still serves
// requests, and leaves nothing behind.
func TestExpandableLargeHandles(t *testing.T) {
	s := newSimRuntime(t, sim.Config{Devices: 1, MemoryPerDevice: 16 << 30})
	e, err := newExpandable(s, ExpandableOptions{})
	require.NoError(t, err)
	g := e.Granularity()
	st := DefaultStream

	// 8 GiB mapped: from here a growth's handles are the largest,
	// handleGranules granules.
	base, err := e.Allocate(st, 8<<30, DefaultAlignment)
	require.NoError(t, err)
	h0 := s.VirtualMemory().Handles
	assert.LessOrEqual(t, h0, int((8<<30)/g), "a handle per granule at most")

	// A 512 MiB growth: 512 MiB / (handleGranules granules) handles, not
	// 256 of a granule.
	big, err := e.Allocate(st, 512*mib, DefaultAlignment)
	require.NoError(t, err)
	grew := s.VirtualMemory().Handles - h0
	want := int(512 * mib / (handleGranules * g))
	require.Less(t, want, 256)
	assert.LessOrEqual(t, grew, want+1, "512 MiB mapped in %d handles", grew)
	assert.GreaterOrEqual(t, grew, want)

	// Free the big block but keep 1 MiB live at its start, in the first
	// handle: giving back frees every handle but the one the live block
	// shares, whose free granules serve requests again.
	require.NoError(t, e.Deallocate(st, big, 512*mib, DefaultAlignment))
	keep, err := e.Allocate(st, 1*mib, DefaultAlignment)
	require.NoError(t, err)
	require.NoError(t, e.Deallocate(st, base, 8<<30, DefaultAlignment))
	require.NoError(t, e.Release())
	mapped := e.PoolSize()
	assert.LessOrEqual(t, mapped, uintptr(handleGranules)*g, "only the live block's handle stays mapped: %d MiB", mapped>>20)
	assert.GreaterOrEqual(t, mapped, uintptr(1*mib))
	assert.Equal(t, int(mapped/(handleGranules*g))+boolInt(mapped%(handleGranules*g) != 0), s.VirtualMemory().Handles)
	// What stays mapped beside the live block is free memory again.
	p, err := e.Allocate(st, mapped-2*mib, DefaultAlignment)
	require.NoError(t, err, "the kept handle's free granules serve a request")
	assert.Equal(t, mapped, e.PoolSize(), "without mapping more")
	fillAndCheck(t, s, p, 64<<10, 0x5a, st)
	require.NoError(t, e.Deallocate(st, p, mapped-2*mib, DefaultAlignment))
	require.NoError(t, e.Deallocate(st, keep, 1*mib, DefaultAlignment))
	require.NoError(t, e.Release())
	assert.Zero(t, e.PoolSize())
	assert.Zero(t, s.VirtualMemory().Handles)
	require.NoError(t, e.Close())
	checkNoLeak(t, s)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestExpandableLeastAtLimit: at the device's limit, a growth maps where
// the request needs the fewest granules, next to the free memory that is
// already there, not in the lowest hole where it fits; and the free memory
// beside a hole still counts after free granules were given back.
func TestExpandableLeastAtLimit(t *testing.T) {
	s := newSimRuntime(t, sim.Config{Devices: 1, MemoryPerDevice: 64 * mib})
	e := newTestExpandable(t, s, ExpandableOptions{})
	st := DefaultStream
	alloc := func(n uintptr) uintptr {
		t.Helper()
		p, err := e.Allocate(st, n, DefaultAlignment)
		require.NoError(t, err)
		return p
	}
	// [x 2 MiB][h 4 MiB][y 2 MiB][z 1 MiB, 1 MiB free after it]
	x, h, y, z := alloc(2*mib), alloc(4*mib), alloc(2*mib), alloc(1*mib)
	require.Equal(t, []uintptr{x + 2*mib, x + 6*mib, x + 8*mib}, []uintptr{h, y, z}, "packed in address order")
	require.EqualValues(t, 10*mib, e.PoolSize())
	// Giving h back leaves a 4 MiB hole low in the range; z's granule
	// stays, half free, at the end of what is mapped.
	require.NoError(t, e.Deallocate(st, h, 4*mib, DefaultAlignment))
	require.NoError(t, e.Release())
	require.EqualValues(t, 6*mib, e.PoolSize())
	// The device keeps one granule free. 3 MiB: the low hole needs two
	// granules; after z's free MiB one does.
	hog, err := s.Malloc(64*mib - 6*mib - 2*mib)
	require.NoError(t, err)
	p := alloc(3 * mib)
	assert.Equal(t, z+1*mib, p, "served after z, not in the low hole")
	assert.EqualValues(t, 8*mib, e.PoolSize())
	fillAndCheck(t, s, p, 3*mib, 0x3c, st)
	fillAndCheck(t, s, z, 1*mib, 0x3d, st)
	for _, b := range []struct{ p, n uintptr }{{p, 3 * mib}, {x, 2 * mib}, {y, 2 * mib}, {z, 1 * mib}} {
		require.NoError(t, e.Deallocate(st, b.p, b.n, DefaultAlignment))
	}
	require.NoError(t, e.Release())
	assert.Zero(t, e.PoolSize())
	require.NoError(t, s.Free(hog))
	require.NoError(t, e.Close())
	checkNoLeak(t, s)
}

// TestExpandableDeviceLimitNoMapAhead: a growth that maps ahead (a
// sixty-fourth of what is mapped) and that the device refuses maps only
// what the request needs, rather than fail with the device's last
// granules free.
func TestExpandableDeviceLimitNoMapAhead(t *testing.T) {
	s := newSimRuntime(t, sim.Config{Devices: 1, MemoryPerDevice: 512 * mib})
	e := newTestExpandable(t, s, ExpandableOptions{})
	st := DefaultStream
	big, err := e.Allocate(st, 400*mib, DefaultAlignment)
	require.NoError(t, err)
	// The device keeps 2 MiB free; a growth now maps ahead 8 MiB.
	hog, err := s.Malloc(512*mib - 400*mib - 2*mib)
	require.NoError(t, err)
	growths := e.growths.Load()
	p, err := e.Allocate(st, 1*mib, DefaultAlignment)
	require.NoError(t, err, "the device's last granule holds the request")
	assert.EqualValues(t, 402*mib, e.PoolSize())
	assert.Equal(t, growths+1, e.growths.Load())
	fillAndCheck(t, s, p, 1*mib, 0x77, st)
	require.NoError(t, e.Deallocate(st, p, 1*mib, DefaultAlignment))
	require.NoError(t, e.Deallocate(st, big, 400*mib, DefaultAlignment))
	require.NoError(t, s.Free(hog))
	require.NoError(t, e.Close())
	checkNoLeak(t, s)
}

// TestExpandableHeadroom: a growth maps ahead only while the device keeps a
// headroomShare-th of its memory free besides; nearer the limit it maps
// what the request needs, leaving the rest to memory taken behind the
// allocator's back (cublasCreate failed on an H200 when mapping ahead had
// taken the device's last gigabytes, Run 33).
func TestExpandableHeadroom(t *testing.T) {
	const total = 1024 * mib
	headroom := uintptr(total / headroomShare) // 16 MiB
	for _, tc := range []struct {
		name      string
		free      uintptr // device memory free before the growth
		wantGrown uintptr
	}{
		{"room: maps ahead", 64 * mib, 14 * mib}, // 896 MiB / mapAhead
		{"one granule short of room: maps the request", headroom + 14*mib - 2*mib, 2 * mib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSimRuntime(t, sim.Config{Devices: 1, MemoryPerDevice: total})
			e := newTestExpandable(t, s, ExpandableOptions{})
			st := DefaultStream
			big, err := e.Allocate(st, 896*mib, DefaultAlignment)
			require.NoError(t, err)
			require.EqualValues(t, 896*mib, e.PoolSize())
			hog := leaveFree(t, s, tc.free)
			p, err := e.Allocate(st, 1*mib, DefaultAlignment)
			require.NoError(t, err)
			assert.EqualValues(t, 896*mib+tc.wantGrown, e.PoolSize())
			after, _, err := s.MemGetInfo()
			require.NoError(t, err)
			assert.EqualValues(t, uint64(tc.free-tc.wantGrown), after)
			fillAndCheck(t, s, p, 1*mib, 0x5a, st)
			require.NoError(t, e.Deallocate(st, p, 1*mib, DefaultAlignment))
			require.NoError(t, e.Deallocate(st, big, 896*mib, DefaultAlignment))
			require.NoError(t, s.Free(hog))
			require.NoError(t, e.Close())
			checkNoLeak(t, s)
		})
	}
}

// leaveFree takes the simulated device's memory but n bytes, and returns
// the allocation that holds it.
func leaveFree(t *testing.T, s *sim.Runtime, n uintptr) uintptr {
	t.Helper()
	free, _, err := s.MemGetInfo()
	require.NoError(t, err)
	hog, err := s.Malloc(uintptr(free) - n)
	require.NoError(t, err)
	return hog
}

// TestExpandableHeadroomGivesBack: a growth that would leave the device
// less than its headroom free first gives the resource's wholly free
// granules back, so that the device keeps room for what the CUDA libraries
// take behind the allocator's back.
func TestExpandableHeadroomGivesBack(t *testing.T) {
	const total = 1024 * mib
	headroom := uint64(total / headroomShare) // 16 MiB
	s := newSimRuntime(t, sim.Config{Devices: 1, MemoryPerDevice: total})
	e := newTestExpandable(t, s, ExpandableOptions{})
	st := DefaultStream
	x, err := e.Allocate(st, 64*mib, DefaultAlignment)
	require.NoError(t, err)
	y, err := e.Allocate(st, 448*mib, DefaultAlignment)
	require.NoError(t, err)
	require.NoError(t, e.Deallocate(st, x, 64*mib, DefaultAlignment))
	held := e.PoolSize()
	// 100 MiB do not fit in x's 64 free MiB. The device has room for them,
	// not for them and its headroom.
	hog := leaveFree(t, s, 100*mib+8*mib)
	p, err := e.Allocate(st, 100*mib, DefaultAlignment)
	require.NoError(t, err)
	after, _, err := s.MemGetInfo()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, after, headroom, "the device keeps its headroom")
	assert.Less(t, e.PoolSize(), held+100*mib, "x's granules were given back")
	fillAndCheck(t, s, p, 100*mib, 0x6b, st)
	require.NoError(t, e.Deallocate(st, p, 100*mib, DefaultAlignment))
	require.NoError(t, e.Deallocate(st, y, 448*mib, DefaultAlignment))
	require.NoError(t, s.Free(hog))
	require.NoError(t, e.Close())
	checkNoLeak(t, s)
}
