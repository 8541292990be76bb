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
	// EnvSimDevices is the simulated device count (default 2).
	EnvSimDevices = "RMMGO_SIM_DEVICES"
	// EnvSimMemory is each simulated device's capacity: bytes, or a number
	// with a unit such as "512MiB" or "2GiB" (default 1GiB).
	EnvSimMemory = "RMMGO_SIM_MEMORY"
	// EnvSimPageable, when "1", gives simulated devices pageable memory
	// access (needed by the system and SAM headroom resources).
	EnvSimPageable = "RMMGO_SIM_PAGEABLE"
)

// SimConfig describes the simulated machine.
type SimConfig struct {
	Devices              int    // number of devices; 0 means 2
	MemoryPerDevice      uint64 // capacity of each device in bytes; 0 means 1 GiB
	PageableMemoryAccess bool   // devices can use pageable host memory (HMM/ATS)
	NoConcurrentManaged  bool   // report no concurrent managed access
	NoMemoryPools        bool   // report no memory-pool (malloc-async) support
	RuntimeVersion       int    // reported runtime and driver version; 0 means 13000
}

// Options chooses a backend explicitly.
type Options struct {
	Backend     Backend   // BackendCUDA or BackendSimulated; "" reads EnvBackend, then BackendCUDA
	LibraryPath string    // explicit libcudart path for BackendCUDA; "" reads EnvLibrary
	Sim         SimConfig // for BackendSimulated; zero fields read the RMMGO_SIM_* variables
}

// Open makes a Runtime as opts says. It never falls back from one backend to
// another: when CUDA cannot be loaded or finds no device, the error says so
// and names the way to choose the simulated device.
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
	case BackendSimulated, "sim":
		cfg, err := simConfigFromEnv(opts.Sim)
		if err != nil {
			return nil, err
		}
		return NewSim(cfg), nil
	default:
		return nil, fmt.Errorf("%w: unknown backend %q (want %q or %q)", ErrBackendUnavailable, b, BackendCUDA, BackendSimulated)
	}
}

func simConfigFromEnv(cfg SimConfig) (SimConfig, error) {
	if cfg.Devices == 0 {
		if v := Getenv(EnvSimDevices); v != "" {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 {
				return cfg, fmt.Errorf("%w: %s=%q is not a positive device count", ErrBackendUnavailable, EnvSimDevices, v)
			}
			cfg.Devices = n
		}
	}
	if cfg.MemoryPerDevice == 0 {
		if v := Getenv(EnvSimMemory); v != "" {
			n, err := ParseBytes(v)
			if err != nil || n == 0 {
				return cfg, fmt.Errorf("%w: %s=%q is not a byte count", ErrBackendUnavailable, EnvSimMemory, v)
			}
			cfg.MemoryPerDevice = n
		}
	}
	if !cfg.PageableMemoryAccess && Getenv(EnvSimPageable) == "1" {
		cfg.PageableMemoryAccess = true
	}
	return cfg, nil
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
