package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
)

// clearEnv unsets every variable cudart.Open and the simulator read.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, v := range []string{cudart.EnvBackend, cudart.EnvLibrary, EnvDevices, EnvMemory, EnvPageable} {
		t.Setenv(v, "")
	}
}

// open opens the simulated device through cudart.Open, as
// RMMGO_BACKEND=simulated does: importing this package registered it.
func open(t *testing.T, opts cudart.Options) *Runtime {
	t.Helper()
	rt, err := cudart.Open(opts)
	require.NoError(t, err)
	s, ok := rt.(*Runtime)
	require.True(t, ok, "Open gave a %T", rt)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestOpenSimulated(t *testing.T) {
	clearEnv(t)
	s := open(t, cudart.Options{Backend: cudart.BackendSimulated})
	assert.Equal(t, cudart.BackendSimulated, s.Backend())
	assert.Equal(t, Config{Devices: 2, MemoryPerDevice: 1 << 30, RuntimeVersion: 13000}, s.Config(), "the defaults")
	// "sim" is accepted too.
	s = open(t, cudart.Options{Backend: "sim"})
	assert.Equal(t, cudart.BackendSimulated, s.Backend())
}

func TestOpenFromEnvironment(t *testing.T) {
	clearEnv(t)
	t.Setenv(cudart.EnvBackend, " Simulated ")
	t.Setenv(EnvDevices, "3")
	t.Setenv(EnvMemory, "512MiB")
	t.Setenv(EnvPageable, "1")
	s := open(t, cudart.Options{})
	assert.Equal(t, Config{Devices: 3, MemoryPerDevice: 512 << 20, PageableMemoryAccess: true, RuntimeVersion: 13000}, s.Config())
	v, err := s.DeviceGetAttribute(cudart.DevAttrPageableMemoryAccess, 2)
	require.NoError(t, err)
	assert.Equal(t, 1, v)
	_, total, err := s.MemGetInfo()
	require.NoError(t, err)
	assert.Equal(t, uint64(512<<20), total)

	t.Setenv(EnvPageable, "yes")
	assert.False(t, open(t, cudart.Options{}).Config().PageableMemoryAccess, `only "1" turns pageable access on`)
}

func TestOpenEnvironmentErrors(t *testing.T) {
	tests := []struct {
		name, variable, value string
	}{
		{"zero devices", EnvDevices, "0"},
		{"negative devices", EnvDevices, "-2"},
		{"devices not a number", EnvDevices, "two"},
		{"memory unit", EnvMemory, "12 furlongs"},
		{"zero memory", EnvMemory, "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv(cudart.EnvBackend, "simulated")
			t.Setenv(tt.variable, tt.value)
			rt, err := cudart.Open(cudart.Options{})
			require.Error(t, err)
			assert.Nil(t, rt)
			assert.ErrorIs(t, err, cudart.ErrBackendUnavailable)
			assert.Contains(t, err.Error(), tt.variable)
		})
	}
}
