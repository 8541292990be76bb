package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryEntryPointIsGated: a public function implemented in Go must be
// exported as rmmgo_api_<name> and reach C through a gate of fork.c, which
// refuses it in the child of a fork (where entering Go hangs: fork_test.c).
// An //export rmm_<name> would bypass the gate.
func TestEveryEntryPointIsGated(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fork, err := os.ReadFile("fork.c")
	if os.IsNotExist(err) {
		t.Skip("needs the sources (a test binary run elsewhere, as in the GPU bundle)")
	}
	require.NoError(t, err)
	exp := regexp.MustCompile(`(?m)^//export (rmm[a-z_]*)$`)
	n := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range exp.FindAllStringSubmatch(string(src), -1) {
			name := m[1]
			if strings.HasPrefix(name, "rmm_") {
				t.Errorf("%s: //export %s enters Go without the fork gate: export it as rmmgo_api_%s and add its gate to fork.c", f, name, name[len("rmm_"):])
				continue
			}
			if short, ok := strings.CutPrefix(name, "rmmgo_api_"); ok {
				n++
				gate := regexp.MustCompile(`(?s)rmm_status rmm_` + short + `\([^)]*\) \{\n  RMMGO_FORK_GATE\(rmm_` + short + `\);\n  return rmmgo_api_` + short + `\(`)
				assert.True(t, gate.Match(fork), "fork.c has no gate for rmm_%s", short)
			}
		}
	}
	assert.Greater(t, n, 40)
}
