package cudart

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// isolateDefault clears the process's default Runtime for one test and
// puts the previous one back afterwards.
func isolateDefault(t *testing.T) {
	t.Helper()
	defaultMu.Lock()
	rt, err, fast := defaultRT, defaultErr, defaultFast.Load()
	defaultRT, defaultErr = nil, nil
	defaultFast.Store(nil)
	defaultMu.Unlock()
	t.Cleanup(func() {
		defaultMu.Lock()
		defaultRT, defaultErr = rt, err
		defaultFast.Store(fast)
		defaultMu.Unlock()
	})
}

// clearSimEnv unsets every variable Open reads, for the test.
func clearSimEnv(t *testing.T) {
	t.Helper()
	for _, v := range []string{EnvBackend, EnvLibrary, EnvSimDevices, EnvSimMemory, EnvSimPageable} {
		t.Setenv(v, "")
	}
}

func openSim(t *testing.T, opts Options) *Sim {
	t.Helper()
	rt, err := Open(opts)
	require.NoError(t, err)
	s, ok := rt.(*Sim)
	require.True(t, ok, "Open gave a %T", rt)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestOpenSimulated(t *testing.T) {
	clearSimEnv(t)
	s := openSim(t, Options{Backend: BackendSimulated, Sim: SimConfig{Devices: 3, MemoryPerDevice: 64 << 20}})
	assert.Equal(t, BackendSimulated, s.Backend())
	n, err := s.GetDeviceCount()
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	_, total, err := s.MemGetInfo()
	require.NoError(t, err)
	assert.Equal(t, uint64(64<<20), total)

	// "sim" is accepted too, and defaults apply.
	s = openSim(t, Options{Backend: "sim"})
	assert.Equal(t, SimConfig{Devices: 2, MemoryPerDevice: 1 << 30, RuntimeVersion: 13000}, s.Config())
}

func TestOpenFromEnvironment(t *testing.T) {
	clearSimEnv(t)
	t.Setenv(EnvBackend, " Simulated ")
	t.Setenv(EnvSimDevices, "3")
	t.Setenv(EnvSimMemory, "512MiB")
	t.Setenv(EnvSimPageable, "1")
	s := openSim(t, Options{})
	assert.Equal(t, SimConfig{Devices: 3, MemoryPerDevice: 512 << 20, PageableMemoryAccess: true, RuntimeVersion: 13000}, s.Config())
	v, err := s.DeviceGetAttribute(DevAttrPageableMemoryAccess, 2)
	require.NoError(t, err)
	assert.Equal(t, 1, v)

	// Options win over the environment.
	s = openSim(t, Options{Backend: BackendSimulated, Sim: SimConfig{Devices: 1, MemoryPerDevice: 1 << 20}})
	assert.Equal(t, 1, s.Config().Devices)
	assert.Equal(t, uint64(1<<20), s.Config().MemoryPerDevice)
	assert.True(t, s.Config().PageableMemoryAccess, "a false option cannot turn the variable off")

	t.Setenv(EnvSimPageable, "yes")
	assert.False(t, openSim(t, Options{}).Config().PageableMemoryAccess, `only "1" turns pageable access on`)
}

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		opts     Options
		contains string
	}{
		{"unknown backend option", nil, Options{Backend: "opencl"}, `unknown backend "opencl"`},
		{"unknown backend variable", map[string]string{EnvBackend: "metal"}, Options{}, `unknown backend "metal"`},
		{"zero devices", map[string]string{EnvBackend: "simulated", EnvSimDevices: "0"}, Options{}, EnvSimDevices},
		{"negative devices", map[string]string{EnvBackend: "simulated", EnvSimDevices: "-2"}, Options{}, EnvSimDevices},
		{"devices not a number", map[string]string{EnvBackend: "simulated", EnvSimDevices: "two"}, Options{}, EnvSimDevices},
		{"memory unit", map[string]string{EnvBackend: "simulated", EnvSimMemory: "12 furlongs"}, Options{}, EnvSimMemory},
		{"zero memory", map[string]string{EnvBackend: "simulated", EnvSimMemory: "0"}, Options{}, EnvSimMemory},
		{"library that does not exist", nil, Options{Backend: BackendCUDA, LibraryPath: "/nonexistent/libcudart.so.13"}, EnvBackend + "=simulated"},
		{"default backend with a missing library", map[string]string{EnvLibrary: "/nonexistent/libcudart.so"}, Options{}, EnvBackend + "=simulated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearSimEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			rt, err := Open(tt.opts)
			require.Error(t, err)
			assert.Nil(t, rt)
			assert.ErrorIs(t, err, ErrBackendUnavailable)
			assert.Contains(t, err.Error(), tt.contains)
		})
	}
}

func TestDefault(t *testing.T) {
	isolateDefault(t)
	clearSimEnv(t)
	t.Setenv(EnvBackend, "simulated")
	t.Setenv(EnvSimMemory, "1MiB")
	rt, err := Default()
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.(*Sim).Close() })
	assert.Equal(t, BackendSimulated, rt.Backend())
	again, err := Default()
	require.NoError(t, err)
	assert.Same(t, rt.(*Sim), again.(*Sim), "one Runtime per process")
	require.NoError(t, SetDefault(rt), "setting the same Runtime again is fine")
	other := newTestSim(t, SimConfig{MemoryPerDevice: 1 << 20})
	err = SetDefault(other)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "already the default")
}

func TestDefaultRemembersFailure(t *testing.T) {
	isolateDefault(t)
	clearSimEnv(t)
	t.Setenv(EnvBackend, "bogus")
	_, err1 := Default()
	require.ErrorIs(t, err1, ErrBackendUnavailable)
	t.Setenv(EnvBackend, "simulated")
	_, err2 := Default()
	assert.Same(t, err1, err2, "the first failure is returned again")

	// SetDefault may still install a Runtime after a failure.
	s := newTestSim(t, SimConfig{MemoryPerDevice: 1 << 20})
	require.NoError(t, SetDefault(s))
	rt, err := Default()
	require.NoError(t, err)
	assert.Same(t, s, rt.(*Sim))
}

func TestSetDefault(t *testing.T) {
	isolateDefault(t)
	require.Error(t, SetDefault(nil))
	s := newTestSim(t, SimConfig{MemoryPerDevice: 1 << 20})
	require.NoError(t, SetDefault(s))
	rt, err := Default()
	require.NoError(t, err)
	assert.Same(t, s, rt.(*Sim))
	require.Error(t, SetDefault(newTestSim(t, SimConfig{MemoryPerDevice: 1 << 20})))
	rt, err = Default()
	require.NoError(t, err)
	assert.Same(t, s, rt.(*Sim), "a refused SetDefault changes nothing")
}

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true},
		{"1", 1, true},
		{"1024", 1024, true},
		{"1B", 1, true},
		{"1b", 1, true},
		{"1kB", 1000, true},
		{"1KB", 1000, true},
		{"1KiB", 1024, true},
		{"1kib", 1024, true},
		{"2MB", 2e6, true},
		{"2MiB", 2 << 20, true},
		{"3GB", 3e9, true},
		{"3GiB", 3 << 30, true},
		{"1TB", 1e12, true},
		{"1TiB", 1 << 40, true},
		{"1PB", 1e15, true},
		{"1PiB", 1 << 50, true},
		{"1.5GiB", 3 << 29, true},
		{"1.5kB", 1500, true},
		{"0.5", 0, true},
		{"1.", 1, true},
		{" 2 GiB ", 2 << 30, true},
		{"18446744073709551615", 1<<64 - 1, true},
		{"18446744073709551616", 0, false},
		{"16384PiB", 0, false},
		{"20000.0PiB", 0, false},
		{"", 0, false},
		{"GiB", 0, false},
		{"-1", 0, false},
		{"2k", 0, false},
		{"1e3", 0, false},
		{"1.2.3", 0, false},
		{".", 0, false},
		{"12 furlongs", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseBytes(tt.in)
		if !tt.ok {
			assert.Error(t, err, "%q", tt.in)
			continue
		}
		if assert.NoError(t, err, "%q", tt.in) {
			assert.Equal(t, tt.want, got, "%q", tt.in)
		}
	}
	_, err := ParseBytes("2k")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `could not parse "2k"`)
	assert.False(t, errors.Is(err, ErrBackendUnavailable))
}
