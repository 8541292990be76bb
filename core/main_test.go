package core

import (
	"fmt"
	"os"
	"testing"

	"github.com/rmmgo/rmmgo/cudart"
	"github.com/rmmgo/rmmgo/cudart/sim"
)

// TestMain chooses the backend for every test of package core. With
// RMMGO_BACKEND unset it installs a simulated machine explicitly (2 devices
// of 1 GiB with pageable memory access); otherwise it uses cudart.Default,
// which reads RMMGO_BACKEND (cuda or simulated) and the RMMGO_SIM_*
// variables, and stops at once with the reason when that fails.
func TestMain(m *testing.M) {
	if os.Getenv(cudart.EnvBackend) == "" {
		sim := sim.New(sim.Config{Devices: 2, MemoryPerDevice: 1 << 30, PageableMemoryAccess: true})
		if err := cudart.SetDefault(sim); err != nil {
			fmt.Fprintf(os.Stderr, "core tests: installing the simulated device: %v\n", err)
			os.Exit(2)
		}
	}
	r, err := cudart.Default()
	if err != nil {
		fmt.Fprintf(os.Stderr, "core tests: no CUDA runtime (%s=%q): %v\n", cudart.EnvBackend, os.Getenv(cudart.EnvBackend), err)
		os.Exit(2)
	}
	n, err := r.GetDeviceCount()
	if err != nil {
		fmt.Fprintf(os.Stderr, "core tests: counting devices on the %s backend: %v\n", r.Backend(), err)
		os.Exit(2)
	}
	rv, _ := r.RuntimeVersion()
	dv, _ := r.DriverVersion()
	fmt.Printf("core tests run on the %s backend: %d device(s), runtime %d, driver %d\n", r.Backend(), n, rv, dv)
	os.Exit(m.Run())
}
