package cudart

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Environment variables that choose and configure the backend.
const (
	// EnvBackend chooses the backend: "cuda" (the default) or "simulated".
	EnvBackend = "RMMGO_BACKEND"
	// EnvLibrary names an explicit libcudart to load, tried before the
	// usual names (libcudart.so.13, libcudart.so.12, libcudart.so).
	EnvLibrary = "RMMGO_CUDART_LIBRARY"
)

// Options chooses a backend explicitly.
type Options struct {
	Backend     Backend // BackendCUDA or BackendSimulated; "" reads EnvBackend, then BackendCUDA
	LibraryPath string  // explicit libcudart path for BackendCUDA; "" reads EnvLibrary
}

// simPackage is the import path of the simulated backend, for messages.
const simPackage = "github.com/rmmgo/rmmgo/cudart/sim"

var (
	backendsMu sync.Mutex
	backends   = make(map[Backend]func() (Runtime, error))
)

// RegisterBackend makes a backend other than CUDA available to Open, and so
// to Default and RMMGO_BACKEND, under the name b; open makes its Runtime,
// configured from the environment. Package cudart/sim registers
// BackendSimulated when it is imported. RegisterBackend panics if b is
// empty or BackendCUDA, if open is nil, or if b is already registered.
func RegisterBackend(b Backend, open func() (Runtime, error)) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	switch _, dup := backends[b]; {
	case b == "" || b == BackendCUDA:
		panic(fmt.Sprintf("cudart: RegisterBackend(%q): not a name another backend may take", b))
	case open == nil:
		panic(fmt.Sprintf("cudart: RegisterBackend(%q) with no function", b))
	case dup:
		panic(fmt.Sprintf("cudart: RegisterBackend(%q) called twice", b))
	}
	backends[b] = open
}

func registeredBackend(b Backend) func() (Runtime, error) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	return backends[b]
}

// Open makes a Runtime as opts says. It never falls back from one backend to
// another: when CUDA cannot be loaded or finds no device, the error says so
// and names the way to choose the simulated device. The simulated device is
// in package cudart/sim: a program that asks for it must import that
// package (the C library, librmmgo.so, always does); otherwise Open says so.
func Open(opts Options) (Runtime, error) {
	b := opts.Backend
	if b == "" {
		b = Backend(strings.ToLower(strings.TrimSpace(Getenv(EnvBackend))))
	}
	if b == "" {
		b = BackendCUDA
	}
	switch b {
	case BackendCUDA:
		path := opts.LibraryPath
		if path == "" {
			path = Getenv(EnvLibrary)
		}
		rt, err := OpenCUDA(path)
		if err != nil {
			return nil, fmt.Errorf("%w: %w (to run without a GPU, choose the simulated device: %s=simulated)",
				ErrBackendUnavailable, err, EnvBackend)
		}
		return rt, nil
	case "sim":
		b = BackendSimulated
	}
	open := registeredBackend(b)
	switch {
	case open != nil:
		return open()
	case b == BackendSimulated:
		return nil, fmt.Errorf("%w: the simulated backend is not linked into this program: import _ %q "+
			"(package core links it, unless built with -tags rmmgo_nosim)", ErrBackendUnavailable, simPackage)
	default:
		return nil, fmt.Errorf("%w: unknown backend %q (want %q or %q)", ErrBackendUnavailable, b, BackendCUDA, BackendSimulated)
	}
}

// ParseBytes reads a byte count written as a number with an optional unit:
// B, kB, MB, GB, TB, PB (powers of 1000) or KiB, MiB, GiB, TiB, PiB (powers of
// 1024), case-insensitive, as RMM's Python package accepts them.
func ParseBytes(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	if num == "" {
		return 0, fmt.Errorf("could not parse %q as a byte count", s)
	}
	mult := map[string]float64{
		"": 1, "b": 1,
		"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "pb": 1e15,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40, "pib": 1 << 50,
	}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("could not parse %q as a byte count: unknown unit %q", s, unit)
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseUint(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("could not parse %q as a byte count: %w", s, err)
		}
		m := uint64(mult)
		if n != 0 && n*m/m != n {
			return 0, fmt.Errorf("could not parse %q as a byte count: too large", s)
		}
		return n * m, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("could not parse %q as a byte count: %w", s, err)
	}
	v := f * mult
	if v >= 1<<64 {
		return 0, fmt.Errorf("could not parse %q as a byte count: too large", s)
	}
	return uint64(v), nil
}

var (
	defaultMu   sync.Mutex
	defaultRT   Runtime
	defaultErr  error
	defaultFast atomic.Pointer[Runtime] // set once a Runtime is in place
)

// Default returns the process's Runtime, opening it on first use from the
// environment (EnvBackend and friends). Every caller in the process, through
// Go or the C ABI, shares it. A failure is remembered and returned again.
// After the first success it costs one atomic load.
func Default() (Runtime, error) {
	if p := defaultFast.Load(); p != nil {
		return *p, nil
	}
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if defaultRT == nil && defaultErr == nil {
		defaultRT, defaultErr = Open(Options{})
		if defaultErr == nil {
			rt := defaultRT
			defaultFast.Store(&rt)
		}
	}
	return defaultRT, defaultErr
}

// SetDefault installs rt as the process's Runtime. It is meant for program
// start-up and tests, before any resource is made; it fails once a Runtime
// is in place, unless that is rt itself.
func SetDefault(rt Runtime) error {
	if rt == nil {
		return fmt.Errorf("cudart: SetDefault(nil)")
	}
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if defaultRT != nil && defaultRT != rt {
		return fmt.Errorf("cudart: a %s runtime is already the default", defaultRT.Backend())
	}
	defaultRT, defaultErr = rt, nil
	defaultFast.Store(&rt)
	return nil
}
