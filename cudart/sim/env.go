package sim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rmmgo/rmmgo/cudart"
)

// Environment variables that configure the simulated device when it is
// chosen by RMMGO_BACKEND=simulated (cudart.Default, cudart.Open).
const (
	// EnvDevices is the simulated device count (default 2).
	EnvDevices = "RMMGO_SIM_DEVICES"
	// EnvMemory is each simulated device's capacity: bytes, or a number
	// with a unit such as "512MiB" or "2GiB" (default 1GiB).
	EnvMemory = "RMMGO_SIM_MEMORY"
	// EnvPageable, when "1", gives simulated devices pageable memory access
	// (needed by the system and SAM headroom resources).
	EnvPageable = "RMMGO_SIM_PAGEABLE"
)

// Importing this package makes the simulated device available to
// cudart.Open, and so to cudart.Default and RMMGO_BACKEND=simulated.
func init() {
	cudart.RegisterBackend(cudart.BackendSimulated, func() (cudart.Runtime, error) {
		cfg, err := configFromEnv()
		if err != nil {
			return nil, err
		}
		return New(cfg), nil
	})
}

// configFromEnv reads the RMMGO_SIM_* variables; those not set leave New's
// defaults.
func configFromEnv() (Config, error) {
	var cfg Config
	if v := cudart.Getenv(EnvDevices); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return cfg, fmt.Errorf("%w: %s=%q is not a positive device count", cudart.ErrBackendUnavailable, EnvDevices, v)
		}
		cfg.Devices = n
	}
	if v := cudart.Getenv(EnvMemory); v != "" {
		n, err := cudart.ParseBytes(v)
		if err != nil || n == 0 {
			return cfg, fmt.Errorf("%w: %s=%q is not a byte count", cudart.ErrBackendUnavailable, EnvMemory, v)
		}
		cfg.MemoryPerDevice = n
	}
	cfg.PageableMemoryAccess = cudart.Getenv(EnvPageable) == "1"
	return cfg, nil
}
