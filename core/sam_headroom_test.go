package core

import (
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
	"github.com/rmmgo/rmmgo/cudart/sim"
)

// adviceRuntime reports a chosen amount of free device memory and records
// the MemAdvise calls it forwards.
type adviceRuntime struct {
	cudart.Runtime
	free uint64

	mu     sync.Mutex
	advice []sim.Advice
}

func (a *adviceRuntime) MemGetInfo() (uint64, uint64, error) {
	_, total, err := a.Runtime.MemGetInfo()
	return a.free, total, err
}

func (a *adviceRuntime) MemAdvise(ptr, n uintptr, advice cudart.MemoryAdvise, loc cudart.MemLocation) error {
	a.mu.Lock()
	a.advice = append(a.advice, sim.Advice{Ptr: ptr, Count: n, Advice: advice, Location: loc})
	a.mu.Unlock()
	return a.Runtime.MemAdvise(ptr, n, advice, loc)
}

func TestSAMHeadroomSplit(t *testing.T) {
	const MiB = 1 << 20
	tests := []struct {
		name           string
		headroom       uintptr
		free           uint64
		bytes          uintptr
		device, onHost uintptr
	}{
		{"plenty of room", 64 * MiB, 512 * MiB, MiB, MiB, 0},
		{"no headroom", 0, 512 * MiB, 3*MiB + 17, 3*MiB + 0, 17},
		{"room for part", 10 * MiB, 10*MiB + 1000, 4096, 768, 4096 - 768},
		{"room below 256 bytes", 10 * MiB, 10*MiB + 100, 4096, 0, 4096},
		{"free below headroom", 64 * MiB, 32 * MiB, MiB, 0, MiB},
		{"free equals headroom", 64 * MiB, 64 * MiB, MiB, 0, MiB},
		{"small request rounds down", 0, 512 * MiB, 1000, 768, 232},
		{"tiny request all on host", 0, 512 * MiB, 100, 0, 100},
		{"huge headroom", math.MaxUint64 >> 1, 512 * MiB, MiB, 0, MiB},
	}
	base := pageableRuntime(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ar := &adviceRuntime{Runtime: base, free: tt.free}
			h, err := newSAMHeadroom(ar, tt.headroom)
			require.NoError(t, err)
			assert.Equal(t, tt.headroom, h.Headroom())
			assert.Equal(t, tt.device, h.deviceShare(tt.free, tt.bytes))

			p, err := h.AllocateSync(tt.bytes, DefaultAlignment)
			require.NoError(t, err)
			var want []sim.Advice
			if tt.device > 0 {
				want = append(want, sim.Advice{Ptr: p, Count: tt.device,
					Advice: cudart.MemAdviseSetPreferredLocation, Location: cudart.DeviceLocation(h.Device())})
			}
			if tt.onHost > 0 {
				want = append(want, sim.Advice{Ptr: p + tt.device, Count: tt.onHost,
					Advice: cudart.MemAdviseSetPreferredLocation, Location: cudart.HostLocation()})
			}
			assert.Equal(t, want, ar.advice)
			fillAndCheck(t, base, p, tt.bytes, 0xC3, DefaultStream)
			require.NoError(t, h.DeallocateSync(p, tt.bytes, DefaultAlignment))
		})
	}
}

func TestSAMHeadroomAdviceOnDevice(t *testing.T) {
	// The simulated device records the hints it accepted.
	r := pageableRuntime(t)
	dev := simOf(t, r)
	h, err := newSAMHeadroom(r, 0)
	require.NoError(t, err)
	p, err := h.AllocateSync(1<<20, DefaultAlignment)
	require.NoError(t, err)
	defer func() { require.NoError(t, h.DeallocateSync(p, 1<<20, DefaultAlignment)) }()
	calls := dev.MemAdviseCalls()
	require.NotEmpty(t, calls)
	// The whole request fits on the device: one hint, the latest.
	assert.Equal(t, sim.Advice{Ptr: p, Count: 1 << 20, Advice: cudart.MemAdviseSetPreferredLocation,
		Location: cudart.DeviceLocation(h.Device())}, calls[len(calls)-1])
}
