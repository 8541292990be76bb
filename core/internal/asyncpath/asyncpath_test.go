package asyncpath

import (
	"math/rand"
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

// newSim is a simulated device with a memory pool on device 0, both gone
// when the test ends.
func newSim(t *testing.T) (*sim.Runtime, cudart.MemPool) {
	t.Helper()
	r := sim.New(sim.Config{Devices: 2})
	t.Cleanup(func() { _ = r.Close() })
	pool, err := r.MemPoolCreate(cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned, Location: cudart.DeviceLocation(0)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.MemPoolDestroy(pool) })
	return r, pool
}

// TestTable: records are found, taken only with their pool and size, and
// put back; many of them grow and shrink the shards without losing one.
func TestTable(t *testing.T) {
	const pool, other = cudart.MemPool(0x1000), cudart.MemPool(0x2000)
	base := uintptr(0x7f0000000000)
	n0 := Count()
	require.True(t, Record(base, 100, pool, true))
	assert.True(t, Has(base))

	e, r := Take(base, 100, other)
	assert.Equal(t, Foreign, r)
	assert.Equal(t, pool, e.Pool)
	e, r = Take(base, 101, pool)
	assert.Equal(t, SizeMismatch, r)
	assert.EqualValues(t, 100, e.Size)
	_, r = Take(base+256, 100, pool)
	assert.Equal(t, NotRecorded, r)
	assert.True(t, Has(base), "refused takes leave the record")

	e, r = Take(base, 100, pool)
	require.Equal(t, OK, r)
	assert.Equal(t, Entry{Size: 100, Pool: pool, Owned: true}, e)
	assert.False(t, Has(base))
	_, r = Take(base, 100, pool)
	assert.Equal(t, NotRecorded, r, "a second take: a double free")
	require.True(t, Restore(base, e))
	_, r = Take(base, 100, pool)
	assert.Equal(t, OK, r)

	// 20,000 records over two pools, half of them owned: the shards grow;
	// takeOwned takes exactly the owned ones of one pool; taking the rest
	// shrinks them again.
	const n = 20000
	for i := 0; i < n; i++ {
		p := base + uintptr(i)*256
		require.True(t, Record(p, uintptr(i+1), []cudart.MemPool{pool, other}[i%2], i%4 < 2))
	}
	assert.Equal(t, n0+n, Count())
	owned, complete := TakeOwned(pool)
	require.True(t, complete)
	assert.Len(t, owned, n/4)
	for _, p := range owned {
		i := int((p - base) / 256)
		assert.True(t, i%2 == 0 && i%4 < 2, "block %d is pool's and owned", i)
		assert.False(t, Has(p))
	}
	for i := 0; i < n; i++ {
		p := base + uintptr(i)*256
		if i%2 == 0 && i%4 < 2 {
			continue
		}
		_, r := Take(p, uintptr(i+1), []cudart.MemPool{pool, other}[i%2])
		require.Equal(t, OK, r, "block %d", i)
	}
	assert.Equal(t, n0, Count())
}

// TestTableConcurrent: goroutines record and take disjoint pointers at
// once; every record is found and taken exactly once.
func TestTableConcurrent(t *testing.T) {
	const pool = cudart.MemPool(0x3000)
	n0 := Count()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			base := uintptr(0x7e0000000000) + uintptr(g)<<32
			var live []uintptr
			for i := 0; i < 5000; i++ {
				if len(live) == 0 || rng.Intn(3) > 0 {
					p := base + uintptr(i)*256
					if !Record(p, 256, pool, false) {
						t.Error("no host memory")
						return
					}
					live = append(live, p)
					continue
				}
				k := rng.Intn(len(live))
				if _, r := Take(live[k], 256, pool); r != OK {
					t.Errorf("take %#x: %d", live[k], r)
				}
				live[k] = live[len(live)-1]
				live = live[:len(live)-1]
			}
			for _, p := range live {
				if _, r := Take(p, 256, pool); r != OK {
					t.Errorf("take %#x: %d", p, r)
				}
			}
		}(g)
	}
	wg.Wait()
	assert.Equal(t, n0, Count())
}

// TestStateCalls: an allocation is recorded with its size and pool, a free
// takes the record, and what the record refuses never reaches the runtime.
func TestStateCalls(t *testing.T) {
	r, pool := newSim(t)
	s, err := NewState(r, pool, 0, true)
	require.NoError(t, err)
	defer s.Release()
	p, res, _ := s.Allocate(1000, 0)
	require.Equal(t, OK, res)
	assert.True(t, Has(p))
	e, _ := Take(p, 1000, pool)
	assert.Equal(t, Entry{Size: 1000, Pool: pool, Owned: true}, e)
	require.True(t, Restore(p, e))

	res, detail := s.Deallocate(0, p, 999)
	assert.Equal(t, SizeMismatch, res)
	assert.EqualValues(t, 1000, detail)
	res, _ = s.Deallocate(0, p+256, 1000)
	assert.Equal(t, NotRecorded, res)
	used, err := r.MemPoolGetAttribute(pool, cudart.MemPoolAttrUsedMemCurrent)
	require.NoError(t, err)
	assert.NotZero(t, used, "the refused frees freed nothing")

	res, _ = s.Deallocate(0, p, 1000)
	require.Equal(t, OK, res)
	assert.False(t, Has(p))
	res, _ = s.Deallocate(0, p, 1000)
	assert.Equal(t, NotRecorded, res, "a double free")

	// A view of the same pool frees the owner's blocks; a state of another
	// pool does not.
	view, err := NewState(r, pool, 0, false)
	require.NoError(t, err)
	defer view.Release()
	p, res, _ = s.Allocate(512, 0)
	require.Equal(t, OK, res)
	pool2, err := r.MemPoolCreate(cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned, Location: cudart.DeviceLocation(0)})
	require.NoError(t, err)
	defer func() { assert.NoError(t, r.MemPoolDestroy(pool2)) }()
	s2, err := NewState(r, pool2, 0, true)
	require.NoError(t, err)
	defer s2.Release()
	res, detail = s2.Deallocate(0, p, 512)
	assert.Equal(t, Foreign, res)
	assert.EqualValues(t, pool, detail)
	res, _ = view.Deallocate(0, p, 512)
	assert.Equal(t, OK, res)
}

// TestStateDevice: an allocation with another device current is refused
// before the pool is asked, and says which device is current.
func TestStateDevice(t *testing.T) {
	r, pool := newSim(t)
	s, err := NewState(r, pool, 0, true)
	require.NoError(t, err)
	defer s.Release()
	onDevice(t, r, 1, func() {
		p, res, detail := s.Allocate(256, 0)
		assert.Equal(t, WrongDevice, res)
		assert.EqualValues(t, 1, detail)
		assert.Zero(t, p)
	})
	used, err := r.MemPoolGetAttribute(pool, cudart.MemPoolAttrUsedMemCurrent)
	require.NoError(t, err)
	assert.Zero(t, used)
}

// onDevice runs fn on a thread with device dev current.
func onDevice(t *testing.T, r cudart.Runtime, dev int, fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The thread is left with dev current: it ends with the goroutine.
		runtime.LockOSThread()
		require.NoError(t, r.SetDevice(dev))
		fn()
	}()
	<-done
}

// TestStateRuntimeErrors: a failed CUDA call is reported with its code and
// leaves no record; a failed free puts the record back.
func TestStateRuntimeErrors(t *testing.T) {
	r, pool := newSim(t)
	s, err := NewState(r, pool, 0, true)
	require.NoError(t, err)
	defer s.Release()
	_, res, detail := s.Allocate(4<<30, 0) // more than the device has
	assert.Equal(t, CUDA, res)
	assert.EqualValues(t, cudart.ErrorMemoryAllocation, detail)

	p, res, _ := s.Allocate(256, 0)
	require.Equal(t, OK, res)
	res, detail = s.Deallocate(0xdeadbeef, p, 256) // a stream the simulated device does not know
	assert.Equal(t, CUDA, res)
	assert.NotZero(t, detail)
	assert.True(t, Has(p), "the record is back")
	res, _ = s.Deallocate(0, p, 256)
	assert.Equal(t, OK, res)
}

// blockingRuntime stops the next MallocFromPoolAsync until released.
type blockingRuntime struct {
	cudart.Runtime
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
	nested  func() Result // called inside MallocFromPoolAsync, when set
	got     Result
}

func (b *blockingRuntime) MallocFromPoolAsync(n uintptr, p cudart.MemPool, s cudart.Stream) (uintptr, error) {
	if b.nested != nil {
		b.got = b.nested()
	}
	if b.armed.Swap(false) {
		close(b.entered)
		<-b.release
	}
	return b.Runtime.MallocFromPoolAsync(n, p, s)
}

// TestStateCloseWaits: Close does not return while a call is inside the
// state; the call finishes and its block is recorded; calls after Close are
// refused as Stale, and so are calls with the generation after the state
// was given back and reused.
func TestStateCloseWaits(t *testing.T) {
	r, pool := newSim(t)
	b := &blockingRuntime{Runtime: r, entered: make(chan struct{}), release: make(chan struct{})}
	s, err := NewState(b, pool, 0, true)
	require.NoError(t, err)
	b.armed.Store(true)
	type result struct {
		p   uintptr
		res Result
	}
	done := make(chan result, 1)
	go func() {
		p, res, _ := s.Allocate(256, 0)
		done <- result{p, res}
	}()
	<-b.entered
	closed := make(chan bool, 1)
	go func() { closed <- s.Close() }()
	select {
	case <-closed:
		t.Fatal("Close returned with a call inside")
	case <-time.After(20 * time.Millisecond):
	}
	close(b.release)
	got := <-done
	require.Equal(t, OK, got.res, "the call began before Close")
	assert.True(t, <-closed)
	assert.False(t, s.Close(), "closed already")
	owned, _ := TakeOwned(pool)
	assert.Equal(t, []uintptr{got.p}, owned, "the racing call's block is recorded for Close to give back")
	require.NoError(t, r.FreeAsync(got.p, 0))

	_, res, _ := s.Allocate(256, 0)
	assert.Equal(t, Stale, res)
	addr, gen := s.Addr()
	s.Release()
	s.Release() // does nothing

	// The state is reused with the next generation: the old one stays
	// refused, the new one works.
	s2, err := NewState(r, pool, 0, false)
	require.NoError(t, err)
	defer s2.Release()
	addr2, gen2 := s2.Addr()
	if addr2 == addr {
		assert.Equal(t, gen+1, gen2)
	}
	_, res, _ = s.Allocate(256, 0)
	assert.Equal(t, Stale, res)
	res, _ = s.Deallocate(0, 0x1000, 256)
	assert.Equal(t, Stale, res)
	p, res, _ := s2.Allocate(256, 0)
	require.Equal(t, OK, res)
	res, _ = s2.Deallocate(0, p, 256)
	assert.Equal(t, OK, res)
}

// TestStateNestedCall: a call made from inside another on the same thread
// (a runtime that calls back into a resource) is not served by the C path:
// Busy, and the Go side takes its slow path.
func TestStateNestedCall(t *testing.T) {
	r, pool := newSim(t)
	b := &blockingRuntime{Runtime: r}
	s, err := NewState(b, pool, 0, true)
	require.NoError(t, err)
	defer s.Release()
	b.nested = func() Result {
		_, res, _ := s.Allocate(256, 0)
		return res
	}
	p, res, _ := s.Allocate(256, 0)
	require.Equal(t, OK, res)
	assert.Equal(t, Busy, b.got)
	b.nested = nil
	res, _ = s.Deallocate(0, p, 256)
	assert.Equal(t, OK, res)
}

// TestStateCloseUnderLoad: goroutines allocate and free while the state
// closes; every call succeeds or is Stale, and after Close no call is
// inside and every block that was recorded can be given back.
func TestStateCloseUnderLoad(t *testing.T) {
	r, pool := newSim(t)
	for round := 0; round < 5; round++ {
		s, err := NewState(r, pool, 0, true)
		require.NoError(t, err)
		var wg sync.WaitGroup
		var after atomic.Int64
		var closed atomic.Bool
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					began := closed.Load() // Close had returned when the call began
					p, res, _ := s.Allocate(4096, 0)
					if res == Stale {
						return
					}
					if res != OK {
						t.Errorf("allocate: %d", res)
						return
					}
					if began {
						after.Add(1)
					}
					switch res, _ := s.Deallocate(0, p, 4096); res {
					case OK:
					case Stale:
						return // Close gives it back
					default:
						t.Errorf("deallocate: %d", res)
					}
				}
			}()
		}
		time.Sleep(2 * time.Millisecond)
		s.Close()
		closed.Store(true)
		wg.Wait()
		assert.Zero(t, after.Load(), "a call that began after Close returned succeeded")
		owned, _ := TakeOwned(pool)
		for _, p := range owned {
			require.NoError(t, r.FreeAsync(p, 0))
		}
		s.Release()
		require.NoError(t, r.StreamSynchronize(0))
		used, err := r.MemPoolGetAttribute(pool, cudart.MemPoolAttrUsedMemCurrent)
		require.NoError(t, err)
		assert.Zero(t, used, "round %d", round)
	}
}

// countingRuntime counts GetDevice calls.
type countingRuntime struct {
	cudart.Runtime
	getDevice atomic.Int64
}

func (c *countingRuntime) GetDevice() (int, error) {
	c.getDevice.Add(1)
	return c.Runtime.GetDevice()
}

// TestStateDeviceCheckCost: an allocation asks for the current device once
// when the process sees several devices, and not at all when it sees one
// (that device is always current).
func TestStateDeviceCheckCost(t *testing.T) {
	for _, devices := range []int{1, 2} {
		s1 := sim.New(sim.Config{Devices: devices})
		defer s1.Close()
		r := &countingRuntime{Runtime: s1}
		pool, err := r.MemPoolCreate(cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned, Location: cudart.DeviceLocation(0)})
		require.NoError(t, err)
		s, err := NewState(r, pool, 0, true)
		require.NoError(t, err)
		p, res, _ := s.Allocate(256, 0)
		require.Equal(t, OK, res)
		res, _ = s.Deallocate(0, p, 256)
		require.Equal(t, OK, res)
		want := int64(1)
		if devices == 1 {
			want = 0
		}
		assert.Equal(t, want, r.getDevice.Load(), "%d device(s)", devices)
		s.Release()
		require.NoError(t, r.MemPoolDestroy(pool))
	}
}
