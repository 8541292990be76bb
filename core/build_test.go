package core

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCoreLinksTheSimulatedDevice: a program that imports core alone has
// the simulated device (RMMGO_BACKEND=simulated works with no import of its
// own), and -tags rmmgo_nosim leaves it out. Asked of the go tool, so
// skipped where there is none (the GPU bundle runs compiled tests).
// The README test (tests/readme) runs such a program.
func TestCoreLinksTheSimulatedDevice(t *testing.T) {
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	const simPkg = "github.com/rmmgo/rmmgo/cudart/sim"
	deps := func(tags ...string) []string {
		args := append([]string{"list", "-deps"}, tags...)
		out, err := exec.Command(gotool, append(args, "github.com/rmmgo/rmmgo/core")...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		return strings.Fields(string(out))
	}
	assert.True(t, slices.Contains(deps(), simPkg), "core does not link %s", simPkg)
	assert.False(t, slices.Contains(deps("-tags", "rmmgo_nosim"), simPkg), "-tags rmmgo_nosim still links %s", simPkg)
}

// TestBuildWithoutCgoSaysCgoIsNeeded: CGO_ENABLED=0 fails with an error that
// names the cause (core/internal/asyncpath/cgo_required.go), not only
// "undefined: asyncpath.CFuncs".
func TestBuildWithoutCgoSaysCgoIsNeeded(t *testing.T) {
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	cmd := exec.Command(gotool, "build", "-o", os.DevNull, "github.com/rmmgo/rmmgo/core")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "core built without cgo: %s", out)
	first, _, _ := strings.Cut(strings.TrimPrefix(string(out), "# github.com/rmmgo/rmmgo/core/internal/asyncpath\n"), "\n")
	assert.Contains(t, first, "rmmgo_needs_cgo__build_with_CGO_ENABLED_1", "the first error names the cause:\n%s", out)
}
