package core

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
)

// resetAllDevices restores every device's initial resource when the test
// ends, so that tests leave the process-wide table as they found it.
func resetAllDevices(t *testing.T) {
	t.Helper()
	n, err := testRuntime(t).GetDeviceCount()
	require.NoError(t, err)
	t.Cleanup(func() {
		for dev := 0; dev < n; dev++ {
			_, err := ResetPerDeviceResource(dev)
			assert.NoError(t, err)
		}
	})
}

func TestPerDeviceInitialResource(t *testing.T) {
	r := testRuntime(t)
	resetAllDevices(t)
	n, err := r.GetDeviceCount()
	require.NoError(t, err)
	before, err := r.GetDevice()
	require.NoError(t, err)
	for dev := 0; dev < n; dev++ {
		for _, dev2 := range []int{dev, dev} { // first use, then again
			mr, err := PerDeviceResource(dev2)
			require.NoError(t, err)
			c, ok := mr.(*Cuda)
			require.True(t, ok, "device %d's initial resource is %T, want *Cuda", dev2, mr)
			assert.Equal(t, dev2, c.Device())
			assert.Equal(t, "cuda", mr.Kind())
		}
	}
	after, err := r.GetDevice()
	require.NoError(t, err)
	assert.Equal(t, before, after, "making another device's resource must not switch the current device")

	mr1, err := PerDeviceResource(0)
	require.NoError(t, err)
	mr2, err := PerDeviceResource(0)
	require.NoError(t, err)
	assert.Same(t, mr1, mr2, "the initial resource is made once")
}

func TestPerDeviceSetReset(t *testing.T) {
	r := testRuntime(t)
	requireDevices(t, r, 2)
	resetAllDevices(t)
	withDevice(t, r, 1, func() {
		initial, err := CurrentDeviceResource()
		require.NoError(t, err)
		assert.Equal(t, 1, initial.(*Cuda).Device())

		m, err := NewManaged()
		require.NoError(t, err)
		prev, err := SetCurrentDeviceResource(m)
		require.NoError(t, err)
		assert.Same(t, initial, prev)

		got, err := PerDeviceResource(1)
		require.NoError(t, err)
		assert.Same(t, m, got)
		got, err = CurrentDeviceResource()
		require.NoError(t, err)
		assert.Same(t, m, got)
		other, err := PerDeviceResource(0)
		require.NoError(t, err)
		assert.IsType(t, &Cuda{}, other, "device 0 is untouched")

		// The current resource allocates on its device.
		p, err := got.AllocateSync(1<<20, DefaultAlignment)
		require.NoError(t, err)
		fillAndCheck(t, r, p, 1<<20, 0x31, DefaultStream)
		require.NoError(t, got.DeallocateSync(p, 1<<20, DefaultAlignment))

		prev, err = ResetCurrentDeviceResource()
		require.NoError(t, err)
		assert.Same(t, m, prev)
		got, err = CurrentDeviceResource()
		require.NoError(t, err)
		assert.Same(t, initial, got, "reset restores the initial resource")
	})

	// By device id, from device 0.
	withDevice(t, r, 0, func() {
		c, err := NewCuda()
		require.NoError(t, err)
		prev, err := SetPerDeviceResource(0, c)
		require.NoError(t, err)
		assert.IsType(t, &Cuda{}, prev)
		got, err := CurrentDeviceResource()
		require.NoError(t, err)
		assert.Same(t, c, got)
		prev, err = ResetPerDeviceResource(0)
		require.NoError(t, err)
		assert.Same(t, c, prev)
		// Reset twice: the previous is the initial resource.
		initial, err := PerDeviceResource(0)
		require.NoError(t, err)
		prev, err = ResetPerDeviceResource(0)
		require.NoError(t, err)
		assert.Same(t, initial, prev)
	})
}

func TestPerDeviceSetBeforeFirstGet(t *testing.T) {
	// Setting a never-used device returns its initial *Cuda resource.
	r := testRuntime(t)
	resetAllDevices(t)
	n, err := r.GetDeviceCount()
	require.NoError(t, err)
	dev := n - 1
	var m Resource
	withDevice(t, r, dev, func() {
		m, err = NewManaged()
		require.NoError(t, err)
	})
	prev, err := SetPerDeviceResource(dev, m)
	require.NoError(t, err)
	c, ok := prev.(*Cuda)
	require.True(t, ok, "got %T", prev)
	assert.Equal(t, dev, c.Device())
}

func TestPerDeviceInvalidArguments(t *testing.T) {
	r := testRuntime(t)
	resetAllDevices(t)
	n, err := r.GetDeviceCount()
	require.NoError(t, err)
	c, err := NewCuda()
	require.NoError(t, err)
	for _, dev := range []int{-1, n, n + 100, -1 << 31} {
		t.Run(fmt.Sprint(dev), func(t *testing.T) {
			_, err := PerDeviceResource(dev)
			requireIs(t, err, ErrInvalidArgument)
			assert.Contains(t, err.Error(), fmt.Sprintf("device %d does not exist", dev))
			_, err = SetPerDeviceResource(dev, c)
			requireIs(t, err, ErrInvalidArgument)
			_, err = ResetPerDeviceResource(dev)
			requireIs(t, err, ErrInvalidArgument)
		})
	}
	var nilCuda *Cuda
	for _, mr := range []Resource{nil, nilCuda} {
		_, err = SetPerDeviceResource(0, mr)
		requireIs(t, err, ErrInvalidArgument)
		_, err = SetCurrentDeviceResource(mr)
		requireIs(t, err, ErrInvalidArgument)
	}
	got, err := PerDeviceResource(0)
	require.NoError(t, err)
	assert.IsType(t, &Cuda{}, got, "failed calls change nothing")
}

func TestPerDeviceConcurrent(t *testing.T) {
	r := testRuntime(t)
	resetAllDevices(t)
	n, err := r.GetDeviceCount()
	require.NoError(t, err)
	const goroutines = 16
	const rounds = 200
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			dev := g % n
			mine := newCudaFor(r, dev) // a distinct resource per goroutine
			for i := 0; i < rounds; i++ {
				var err error
				switch i % 4 {
				case 0:
					var prev Resource
					prev, err = SetPerDeviceResource(dev, mine)
					if err == nil && prev == nil {
						err = fmt.Errorf("set returned no previous resource")
					}
				case 1:
					var got Resource
					got, err = PerDeviceResource(dev)
					if err == nil && got.Kind() != "cuda" {
						err = fmt.Errorf("got a %s resource", got.Kind())
					}
				case 2:
					_, err = ResetPerDeviceResource(dev)
				case 3:
					_, err = CurrentDeviceResource()
				}
				if err != nil {
					errs <- fmt.Errorf("goroutine %d round %d: %w", g, i, err)
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
	for dev := 0; dev < n; dev++ {
		_, err := ResetPerDeviceResource(dev)
		require.NoError(t, err)
		got, err := PerDeviceResource(dev)
		require.NoError(t, err)
		assert.Equal(t, dev, got.(*Cuda).Device())
	}
}

func TestPerDeviceWrongDevice(t *testing.T) {
	// Device 1's resource is used with device 1 current (RMM's rule).
	r := testRuntime(t)
	requireDevices(t, r, 2)
	resetAllDevices(t)
	mr, err := PerDeviceResource(1)
	require.NoError(t, err)
	withDevice(t, r, 0, func() {
		_, err := mr.AllocateSync(4096, DefaultAlignment)
		requireIs(t, err, ErrWrongDevice)
	})
	withDevice(t, r, 1, func() {
		p, err := mr.AllocateSync(4096, DefaultAlignment)
		require.NoError(t, err)
		attrs, err := r.PointerGetAttributes(p)
		require.NoError(t, err)
		assert.Equal(t, cudart.MemoryTypeDevice, attrs.Type)
		assert.Equal(t, 1, attrs.Device, "device 1's memory")
		fillAndCheck(t, r, p, 4096, 0x17, DefaultStream)
		require.NoError(t, mr.DeallocateSync(p, 4096, DefaultAlignment))
	})
}

func BenchmarkCurrentDeviceResource(b *testing.B) {
	if _, err := CurrentDeviceResource(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := CurrentDeviceResource(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// A resource belongs to the device it was made on: setting it as another
// device's resource is refused (it was accepted, and every allocation
// through the slot then failed or used the wrong device).
func TestPerDeviceRefusesAnotherDevicesResource(t *testing.T) {
	r := testRuntime(t)
	requireDevices(t, r, 2)
	resetAllDevices(t)
	var pool *Pool
	var stats *Statistics
	var pinned *PinnedHost
	withDevice(t, r, 1, func() {
		c, err := NewCuda()
		require.NoError(t, err)
		pool, err = NewPool(c, PoolOptions{InitialSize: 0})
		require.NoError(t, err)
		stats, err = NewStatistics(pool)
		require.NoError(t, err)
		pinned, err = NewPinnedHost()
		require.NoError(t, err)
	})
	defer pool.Close()
	for _, res := range []Resource{pool, stats} {
		_, err := SetPerDeviceResource(0, res)
		requireIs(t, err, ErrWrongDevice, res.Kind())
		assert.Contains(t, err.Error(), "belongs to device 1")
		withDevice(t, r, 0, func() {
			_, err = SetCurrentDeviceResource(res)
			requireIs(t, err, ErrWrongDevice, res.Kind())
		})
	}
	got, err := PerDeviceResource(0)
	require.NoError(t, err)
	assert.IsType(t, &Cuda{}, got, "failed calls change nothing")

	// Its own device takes it; pinned host memory serves any device.
	_, err = SetPerDeviceResource(1, stats)
	require.NoError(t, err)
	_, err = SetPerDeviceResource(0, pinned)
	require.NoError(t, err)
}
