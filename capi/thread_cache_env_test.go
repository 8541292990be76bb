package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestThreadCacheVariable: RMMGO_THREAD_CACHE turns the per-thread cache off
// with 0, off, false or no; leaves it on unset, empty, or with 1, on, true or
// yes; and any other value leaves it on and says so on stderr, once. Each
// value runs in a process of its own (the variable is read once): this test
// binary again, running TestThreadCacheVariableChild.
func TestThreadCacheVariable(t *testing.T) {
	for _, tc := range []struct {
		value string
		on    bool
		warns bool
	}{
		{"0", false, false}, {"off", false, false}, {"FALSE", false, false}, {"no", false, false},
		{"", true, false}, {"1", true, false}, {"on", true, false}, {"True", true, false}, {"yes", true, false},
		{"bogus", true, true}, {"2", true, true},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestThreadCacheVariableChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "RMMGO_TEST_THREAD_CACHE_CHILD=1", "RMMGO_THREAD_CACHE="+tc.value)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "RMMGO_THREAD_CACHE=%q: %s%s", tc.value, out, stderr.String())
		assert.Contains(t, string(out), fmt.Sprintf("thread cache on: %v\n", tc.on), "RMMGO_THREAD_CACHE=%q", tc.value)
		warnings := strings.Count(stderr.String(), "rmmgo: RMMGO_THREAD_CACHE=")
		if tc.warns {
			assert.Equal(t, 1, warnings, "RMMGO_THREAD_CACHE=%q: one warning, got:\n%s", tc.value, stderr.String())
			assert.Contains(t, stderr.String(), fmt.Sprintf("RMMGO_THREAD_CACHE=%q is neither", tc.value))
			assert.Contains(t, stderr.String(), "the per-thread cache stays on")
		} else {
			assert.Zero(t, warnings, "RMMGO_THREAD_CACHE=%q: no warning, got:\n%s", tc.value, stderr.String())
		}
	}
}

// TestThreadCacheVariableChild is TestThreadCacheVariable's other process.
func TestThreadCacheVariableChild(t *testing.T) {
	if os.Getenv("RMMGO_TEST_THREAD_CACHE_CHILD") != "1" {
		t.Skip("run by TestThreadCacheVariable")
	}
	on := tcEnabled()
	_ = tcEnabled() // read once: no second warning
	fmt.Printf("thread cache on: %v\n", on)
}
