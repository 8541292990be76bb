package core

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
	"github.com/rmmgo/rmmgo/cudart/sim"
)

// prefetchRuntime is a cudart.Runtime that answers the calls Prefetch makes
// and records the prefetches. Other calls panic (the embedded nil).
type prefetchRuntime struct {
	cudart.Runtime
	device      int
	concurrent  bool
	prefetchErr error

	attrCalls atomic.Int64
	mu        sync.Mutex
	calls     []prefetchCall
}

type prefetchCall struct {
	ptr, n uintptr
	loc    cudart.MemLocation
	s      Stream
}

func (r *prefetchRuntime) GetDevice() (int, error) { return r.device, nil }

func (r *prefetchRuntime) GetDeviceCount() (int, error) { return 2, nil }

func (r *prefetchRuntime) DeviceGetAttribute(attr cudart.DeviceAttr, dev int) (int, error) {
	r.attrCalls.Add(1)
	if attr != cudart.DevAttrConcurrentManagedAccess {
		return 0, cudart.ErrInvalidValue
	}
	if r.concurrent {
		return 1, nil
	}
	return 0, nil
}

func (r *prefetchRuntime) MemPrefetchAsync(ptr, n uintptr, loc cudart.MemLocation, s Stream) error {
	r.mu.Lock()
	r.calls = append(r.calls, prefetchCall{ptr, n, loc, s})
	r.mu.Unlock()
	return r.prefetchErr
}

func (r *prefetchRuntime) callCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func TestPrefetchConformance(t *testing.T) {
	_, err := NewPrefetch(nil)
	require.ErrorIs(t, err, ErrInvalidArgument)
	adaptorConformance(t, "prefetch", func(up Resource) (Adaptor, error) {
		if err := checkUpstream(kindPrefetch, up); err != nil {
			return nil, err
		}
		return newPrefetch(up, &prefetchRuntime{concurrent: true}), nil
	})
}

func TestPrefetchCalls(t *testing.T) {
	up := newFake()
	r := &prefetchRuntime{device: 1, concurrent: true}
	p := newPrefetch(up, r)
	s := Stream(0x99)
	ptr, err := p.Allocate(s, 5000, DefaultAlignment)
	require.NoError(t, err)
	require.Equal(t, 1, r.callCount())
	assert.Equal(t, prefetchCall{ptr, 5000, cudart.DeviceLocation(1), s}, r.calls[0],
		"prefetch of the requested bytes to the current device on the allocating stream")
	q, err := p.AllocateSync(10, DefaultAlignment)
	require.NoError(t, err)
	require.Equal(t, 2, r.callCount())
	assert.Equal(t, DefaultStream, r.calls[1].s)
	assert.Equal(t, int64(1), r.attrCalls.Load(), "the device attribute is read once")
	require.NoError(t, p.Deallocate(s, ptr, 5000, DefaultAlignment))
	require.NoError(t, p.DeallocateSync(q, 10, DefaultAlignment))
	assert.Equal(t, 2, r.callCount(), "deallocation prefetches nothing")
	assert.Zero(t, up.liveCount())
}

func TestPrefetchNoConcurrentManagedAccess(t *testing.T) {
	up := newFake()
	r := &prefetchRuntime{concurrent: false}
	p := newPrefetch(up, r)
	for i := 0; i < 10; i++ {
		ptr, err := p.Allocate(DefaultStream, 100, DefaultAlignment)
		require.NoError(t, err)
		require.NoError(t, p.Deallocate(DefaultStream, ptr, 100, DefaultAlignment))
	}
	assert.Zero(t, r.callCount(), "no prefetch without concurrent managed access")
	assert.Equal(t, int64(1), r.attrCalls.Load())
}

func TestPrefetchErrors(t *testing.T) {
	up := newFake()
	r := &prefetchRuntime{concurrent: true, prefetchErr: cudart.NewError("cudaMemPrefetchAsync", cudart.ErrorInvalidValue, "invalid argument")}
	p := newPrefetch(up, r)
	ptr, err := p.Allocate(DefaultStream, 100, DefaultAlignment)
	require.NoError(t, err, "non-managed memory (cudaErrorInvalidValue) is not an error")
	require.NoError(t, p.Deallocate(DefaultStream, ptr, 100, DefaultAlignment))

	r.prefetchErr = cudart.NewError("cudaMemPrefetchAsync", cudart.ErrorIllegalAddress, "an illegal memory access was encountered")
	_, err = p.Allocate(DefaultStream, 100, DefaultAlignment)
	require.ErrorIs(t, err, ErrCUDA)
	require.ErrorIs(t, err, &cudart.Error{Code: cudart.ErrorIllegalAddress})
	_, err = p.AllocateSync(100, DefaultAlignment)
	require.ErrorIs(t, err, ErrCUDA)
	assert.Zero(t, up.liveCount(), "memory whose prefetch failed is given back")
}

func TestPrefetchConcurrent(t *testing.T) {
	up := newFake()
	r := &prefetchRuntime{concurrent: true}
	p := newPrefetch(up, r)
	n := hammer(t, p, hammerOptions{sync: true, streams: []Stream{0, 3}})
	assert.Equal(t, int(n), r.callCount(), "one prefetch per allocation")
	assert.Zero(t, up.liveCount())
}

// TestPrefetchOnDevice prefetches real managed memory, and shows that device
// and pinned host memory (which cannot be prefetched) allocate without
// error, on the backend the tests run on.
func TestPrefetchOnDevice(t *testing.T) {
	r := testRuntime(t)
	m, err := NewManaged()
	require.NoError(t, err)
	c, err := NewCuda()
	require.NoError(t, err)
	h, err := NewPinnedHost()
	require.NoError(t, err)
	for _, up := range []Resource{m, c, h} {
		t.Run(up.Kind(), func(t *testing.T) {
			p, err := NewPrefetch(up)
			require.NoError(t, err)
			s := newStream(t, r)
			ptr, err := p.Allocate(s, 1<<20, DefaultAlignment)
			require.NoError(t, err)
			if sim, ok := r.(*sim.Runtime); ok && up.Kind() == "managed" {
				require.NoError(t, r.StreamSynchronize(s))
				info, ok := sim.ManagedInfo(ptr)
				require.True(t, ok)
				dev, err := r.GetDevice()
				require.NoError(t, err)
				assert.Equal(t, cudart.DeviceLocation(dev), info.LastPrefetch, "the managed memory was prefetched to the current device")
			}
			fillAndCheck(t, r, ptr, 1<<20, 0x5a, s)
			require.NoError(t, p.Deallocate(s, ptr, 1<<20, DefaultAlignment))
			ptr, err = p.AllocateSync(4096, DefaultAlignment)
			require.NoError(t, err)
			fillAndCheck(t, r, ptr, 4096, 0xa5, DefaultStream)
			require.NoError(t, p.DeallocateSync(ptr, 4096, DefaultAlignment))
		})
	}
}

// TestPrefetchMemoryCalls checks PrefetchMemory's arguments and rules on a
// recording runtime.
func TestPrefetchMemoryCalls(t *testing.T) {
	r := &prefetchRuntime{concurrent: true}
	s := Stream(0x77)
	require.NoError(t, prefetchMemory(r, 0x1000, 512, 1, s))
	require.NoError(t, prefetchMemory(r, 0x1000, 512, HostDevice, s))
	require.Equal(t, []prefetchCall{{0x1000, 512, cudart.DeviceLocation(1), s}, {0x1000, 512, cudart.HostLocation(), s}}, r.calls)
	requireIs(t, prefetchMemory(r, 0x1000, 512, 2, s), ErrInvalidArgument, "device 2")
	requireIs(t, prefetchMemory(r, 0x1000, 512, -2, s), ErrInvalidArgument)
	require.NoError(t, prefetchMemory(r, 0, 512, 0, s), "nothing to prefetch")
	require.NoError(t, prefetchMemory(r, 0x1000, 0, 0, s))
	assert.Equal(t, 2, r.callCount())

	r.concurrent = false
	require.NoError(t, prefetchMemory(r, 0x1000, 512, 0, s))
	assert.Equal(t, 2, r.callCount(), "no concurrent managed access: nothing to do")
	r.concurrent = true
	r.prefetchErr = cudart.NewError("cudaMemPrefetchAsync", cudart.ErrorInvalidValue, "invalid argument")
	require.NoError(t, prefetchMemory(r, 0x1000, 512, 0, s), "memory that is not managed")
	r.prefetchErr = cudart.NewError("cudaMemPrefetchAsync", cudart.ErrorIllegalAddress, "an illegal memory access was encountered")
	require.ErrorIs(t, prefetchMemory(r, 0x1000, 512, 0, s), ErrCUDA)
}

// TestPrefetchMemoryOnDevice prefetches managed memory to the device and
// back to the host, and device memory (a no-op), on the tests' backend.
func TestPrefetchMemoryOnDevice(t *testing.T) {
	r := testRuntime(t)
	dev, err := r.GetDevice()
	require.NoError(t, err)
	m, err := NewManaged()
	require.NoError(t, err)
	c, err := NewCuda()
	require.NoError(t, err)
	s := newStream(t, r)
	ptr, err := m.Allocate(s, 1<<20, DefaultAlignment)
	require.NoError(t, err)
	defer m.Deallocate(s, ptr, 1<<20, DefaultAlignment)
	sim, _ := r.(*sim.Runtime)
	for _, d := range []int{dev, HostDevice} {
		require.NoError(t, PrefetchMemory(ptr, 1<<20, d, s))
		require.NoError(t, r.StreamSynchronize(s))
		if sim != nil {
			info, ok := sim.ManagedInfo(ptr)
			require.True(t, ok)
			want := cudart.HostLocation()
			if d != HostDevice {
				want = cudart.DeviceLocation(d)
			}
			assert.Equal(t, want, info.LastPrefetch)
		}
	}
	fillAndCheck(t, r, ptr, 1<<20, 0x3c, s)
	q, err := c.Allocate(s, 4096, DefaultAlignment)
	require.NoError(t, err)
	require.NoError(t, PrefetchMemory(q, 4096, dev, s), "device memory: nothing to do")
	require.NoError(t, c.Deallocate(s, q, 4096, DefaultAlignment))
	n, err := r.GetDeviceCount()
	require.NoError(t, err)
	requireIs(t, PrefetchMemory(ptr, 1<<20, n, s), ErrInvalidArgument)
}
