package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
)

// TestBadHandles: every call that takes a stream, an event or a memory pool
// refuses one the simulator never made (forged), one it destroyed, and one
// of another kind, with CUDA's code for the kind (a pool: invalid value, as
// CUDA documents; a stream or event: invalid resource handle) and a message
// that names the handle and says which it is. On a GPU these are wild
// pointers; the simulator is where tests can see them.
func TestBadHandles(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 64 * mib})
	st, err := s.StreamCreate(0)
	require.NoError(t, err)
	ev, err := s.EventCreate(0)
	require.NoError(t, err)
	pool, err := s.MemPoolCreate(cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned, Location: cudart.DeviceLocation(0)})
	require.NoError(t, err)
	deadStream, err := s.StreamCreate(0)
	require.NoError(t, err)
	require.NoError(t, s.StreamDestroy(deadStream))
	deadEvent, err := s.EventCreate(0)
	require.NoError(t, err)
	require.NoError(t, s.EventDestroy(deadEvent))
	deadPool, err := s.MemPoolCreate(cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned, Location: cudart.DeviceLocation(0)})
	require.NoError(t, err)
	require.NoError(t, s.MemPoolDestroy(deadPool))
	d, err := s.Malloc(4096)
	require.NoError(t, err)
	m, err := s.MallocManaged(4096, cudart.MemAttachGlobal)
	require.NoError(t, err)

	type bad struct {
		what string
		h    uintptr
		says string
	}
	const forged = 0xdeadbeef
	badStreams := []bad{
		{"forged", forged, "stream 0xdeadbeef was never made by this simulated device: a forged handle"},
		{"another simulator's", 0x7f0000010000, "was never made by this simulated device"},
		{"destroyed", uintptr(deadStream), fmt.Sprintf("stream %#x was destroyed", uintptr(deadStream))},
		{"an event", uintptr(ev), fmt.Sprintf("%#x is an event, not a stream", uintptr(ev))},
		{"a destroyed pool", uintptr(deadPool), fmt.Sprintf("%#x was a memory pool (destroyed), never a stream", uintptr(deadPool))},
	}
	badEvents := []bad{
		{"forged", forged, "event 0xdeadbeef was never made by this simulated device"},
		{"null", 0, "event 0x0 was never made"},
		{"destroyed", uintptr(deadEvent), fmt.Sprintf("event %#x was destroyed", uintptr(deadEvent))},
		{"a stream", uintptr(st), fmt.Sprintf("%#x is a stream, not an event", uintptr(st))},
	}
	badPools := []bad{
		{"forged", forged, "memory pool 0xdeadbeef was never made by this simulated device"},
		{"null", 0, "memory pool 0x0 was never made"},
		{"destroyed", uintptr(deadPool), fmt.Sprintf("memory pool %#x was destroyed", uintptr(deadPool))},
		{"a stream", uintptr(st), fmt.Sprintf("%#x is a stream, not a memory pool", uintptr(st))},
	}

	streamCalls := map[string]func(cudart.Stream) error{
		"MallocAsync":            func(h cudart.Stream) error { _, err := s.MallocAsync(64, h); return err },
		"MallocAsync of 0 bytes": func(h cudart.Stream) error { _, err := s.MallocAsync(0, h); return err },
		"MallocFromPoolAsync":    func(h cudart.Stream) error { _, err := s.MallocFromPoolAsync(64, pool, h); return err },
		"FreeAsync":              func(h cudart.Stream) error { return s.FreeAsync(d, h) },
		"FreeAsync of null":      func(h cudart.Stream) error { return s.FreeAsync(0, h) },
		"StreamDestroy":          s.StreamDestroy,
		"StreamSynchronize":      s.StreamSynchronize,
		"StreamQuery":            s.StreamQuery,
		"StreamWaitEvent":        func(h cudart.Stream) error { return s.StreamWaitEvent(h, ev) },
		"StreamGetID":            func(h cudart.Stream) error { _, err := s.StreamGetID(h); return err },
		"EventRecord":            func(h cudart.Stream) error { return s.EventRecord(ev, h) },
		"MemcpyAsync":            func(h cudart.Stream) error { return s.MemcpyAsync(d, d+256, 256, cudart.MemcpyDeviceToDevice, h) },
		"MemcpyAsync of 0 bytes": func(h cudart.Stream) error { return s.MemcpyAsync(d, d, 0, cudart.MemcpyDefault, h) },
		"MemsetAsync":            func(h cudart.Stream) error { return s.MemsetAsync(d, 0, 256, h) },
		"MemPrefetchAsync":       func(h cudart.Stream) error { return s.MemPrefetchAsync(m, 4096, cudart.DeviceLocation(0), h) },
		"PauseStream":            s.PauseStream,
		"ResumeStream":           s.ResumeStream,
	}
	eventCalls := map[string]func(cudart.Event) error{
		"StreamWaitEvent":  func(h cudart.Event) error { return s.StreamWaitEvent(st, h) },
		"EventRecord":      func(h cudart.Event) error { return s.EventRecord(h, st) },
		"EventQuery":       s.EventQuery,
		"EventSynchronize": s.EventSynchronize,
		"EventDestroy":     s.EventDestroy,
	}
	poolCalls := map[string]func(cudart.MemPool) error{
		"MallocFromPoolAsync": func(h cudart.MemPool) error { _, err := s.MallocFromPoolAsync(64, h, st); return err },
		"MemPoolDestroy":      s.MemPoolDestroy,
		"MemPoolSetAttribute": func(h cudart.MemPool) error {
			return s.MemPoolSetAttribute(h, cudart.MemPoolAttrReleaseThreshold, 0)
		},
		"MemPoolGetAttribute": func(h cudart.MemPool) error {
			_, err := s.MemPoolGetAttribute(h, cudart.MemPoolAttrUsedMemCurrent)
			return err
		},
		"MemPoolTrimTo": func(h cudart.MemPool) error { return s.MemPoolTrimTo(h, 0) },
	}

	check := func(t *testing.T, err error, code cudart.ErrorCode, b bad) {
		t.Helper()
		requireCode(t, err, code)
		assert.Contains(t, err.Error(), b.says)
	}
	for name, call := range streamCalls {
		for _, b := range badStreams {
			t.Run(name+"/"+b.what, func(t *testing.T) {
				check(t, call(cudart.Stream(b.h)), cudart.ErrorInvalidResourceHandle, b)
			})
		}
	}
	for name, call := range eventCalls {
		for _, b := range badEvents {
			t.Run(name+"/"+b.what, func(t *testing.T) {
				check(t, call(cudart.Event(b.h)), cudart.ErrorInvalidResourceHandle, b)
			})
		}
	}
	for name, call := range poolCalls {
		for _, b := range badPools {
			t.Run(name+"/"+b.what, func(t *testing.T) {
				check(t, call(cudart.MemPool(b.h)), cudart.ErrorInvalidValue, b)
			})
		}
	}

	// The handles the simulator made, and the default streams, still work.
	for _, h := range []cudart.Stream{st, cudart.DefaultStream, cudart.LegacyDefaultStream, cudart.PerThreadDefaultStream} {
		require.NoError(t, s.EventRecord(ev, h), "stream %#x", uintptr(h))
		require.NoError(t, s.MemsetAsync(d, 1, 256, h), "stream %#x", uintptr(h))
		require.NoError(t, s.StreamSynchronize(h), "stream %#x", uintptr(h))
		_, err := s.StreamGetID(h)
		require.NoError(t, err, "stream %#x", uintptr(h))
	}
	require.NoError(t, s.EventSynchronize(ev))
	_, err = s.MemPoolGetAttribute(pool, cudart.MemPoolAttrUsedMemCurrent)
	require.NoError(t, err)
	require.NoError(t, s.Free(d))
	require.NoError(t, s.Free(m))
}

// TestHandleEncoding: handles are 16-byte aligned, distinct across kinds,
// and each kind's are recognised as made, and as that kind, only.
func TestHandleEncoding(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 16 * mib})
	seen := make(map[uintptr]handleKind)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < 100; i++ {
		for _, k := range []handleKind{streamHandle, eventHandle, poolHandle} {
			h := s.newHandle(k)
			require.Zero(t, h%16)
			_, dup := seen[h]
			require.False(t, dup, "%#x made twice", h)
			seen[h] = k
		}
	}
	for h, k := range seen {
		got, made := s.madeHandle(h)
		require.True(t, made, "%#x", h)
		require.Equal(t, k, got, "%#x", h)
		for _, off := range []uintptr{1, 8} {
			_, made = s.madeHandle(h + off)
			require.False(t, made, "%#x", h+off)
		}
	}
	for _, h := range []uintptr{0, 1, 2, handleBase, handleBase + 16, 0xdeadbeef, 1 << 47} {
		_, made := s.madeHandle(h)
		require.False(t, made, "%#x", h)
	}
}
