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

// clearEnv unsets the variables Open reads, for the test.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, v := range []string{EnvBackend, EnvLibrary} {
		t.Setenv(v, "")
	}
}

// testBackend is a backend the tests register: Open gives a new stubRuntime
// each time. (This package's tests cannot link the simulated device, whose
// package imports this one; cudart/sim tests it through Open.)
const testBackend Backend = "test-stub"

type stubRuntime struct {
	Runtime // nil: only Backend is called
}

func (s *stubRuntime) Backend() Backend { return testBackend }

func init() {
	RegisterBackend(testBackend, func() (Runtime, error) { return &stubRuntime{}, nil })
}

func TestRegisterBackend(t *testing.T) {
	clearEnv(t)
	rt, err := Open(Options{Backend: testBackend})
	require.NoError(t, err)
	assert.Equal(t, testBackend, rt.Backend())
	t.Setenv(EnvBackend, " TEST-Stub ")
	rt, err = Open(Options{})
	require.NoError(t, err)
	assert.Equal(t, testBackend, rt.Backend(), "the variable chooses it, in any case")

	open := func() (Runtime, error) { return nil, nil }
	assert.PanicsWithValue(t, `cudart: RegisterBackend("test-stub") called twice`, func() { RegisterBackend(testBackend, open) })
	assert.Panics(t, func() { RegisterBackend(BackendCUDA, open) })
	assert.Panics(t, func() { RegisterBackend("", open) })
	assert.Panics(t, func() { RegisterBackend("other", nil) })
}

// TestOpenSimulatedNotLinked: asking for the simulated device in a program
// that does not import cudart/sim is an error that says what to import,
// never a fall-back to CUDA.
func TestOpenSimulatedNotLinked(t *testing.T) {
	clearEnv(t)
	for _, opts := range []Options{{Backend: BackendSimulated}, {Backend: "sim"}} {
		rt, err := Open(opts)
		assert.Nil(t, rt)
		require.ErrorIs(t, err, ErrBackendUnavailable)
		assert.Contains(t, err.Error(), `the simulated backend is not linked into this program: import _ "github.com/rmmgo/rmmgo/cudart/sim"`)
	}
	t.Setenv(EnvBackend, "simulated")
	_, err := Open(Options{})
	assert.ErrorContains(t, err, "not linked")
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
		{"library that does not exist", nil, Options{Backend: BackendCUDA, LibraryPath: "/nonexistent/libcudart.so.13"}, EnvBackend + "=simulated"},
		{"default backend with a missing library", map[string]string{EnvLibrary: "/nonexistent/libcudart.so"}, Options{}, EnvBackend + "=simulated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
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
	clearEnv(t)
	t.Setenv(EnvBackend, string(testBackend))
	rt, err := Default()
	require.NoError(t, err)
	assert.Equal(t, testBackend, rt.Backend())
	again, err := Default()
	require.NoError(t, err)
	assert.Same(t, rt, again, "one Runtime per process")
	require.NoError(t, SetDefault(rt), "setting the same Runtime again is fine")
	err = SetDefault(&stubRuntime{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a test-stub runtime is already the default")
}

func TestDefaultRemembersFailure(t *testing.T) {
	isolateDefault(t)
	clearEnv(t)
	t.Setenv(EnvBackend, "bogus")
	_, err1 := Default()
	require.ErrorIs(t, err1, ErrBackendUnavailable)
	t.Setenv(EnvBackend, string(testBackend))
	_, err2 := Default()
	assert.Same(t, err1, err2, "the first failure is returned again")

	// SetDefault may still install a Runtime after a failure.
	s := &stubRuntime{}
	require.NoError(t, SetDefault(s))
	rt, err := Default()
	require.NoError(t, err)
	assert.Same(t, s, rt)
}

func TestSetDefault(t *testing.T) {
	isolateDefault(t)
	require.Error(t, SetDefault(nil))
	s := &stubRuntime{}
	require.NoError(t, SetDefault(s))
	rt, err := Default()
	require.NoError(t, err)
	assert.Same(t, s, rt)
	require.Error(t, SetDefault(&stubRuntime{}))
	rt, err = Default()
	require.NoError(t, err)
	assert.Same(t, s, rt, "a refused SetDefault changes nothing")
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
