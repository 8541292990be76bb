package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmmgo/rmmgo/internal/genfiles"
	"github.com/stretchr/testify/require"
)

// root is the module's root, from this package's folder.
var root = filepath.Join("..", "..", "..")

// TestGeneratedFilesAreCurrent fails when a checked-in file is not what
// the generator writes from internal/cabi now.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	files, err := generate(root)
	require.NoError(t, err)
	require.Len(t, files, 3)
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "%s is stale: run go generate ./internal/cabi", name)
	}
	require.NoError(t, genfiles.Compare(root, files, "go generate ./internal/cabi"))
}

// TestCompareFindsStaleFiles: -check fails on a file that differs, and
// the public header keeps what is written by hand around the enums.
func TestCompareFindsStaleFiles(t *testing.T) {
	files, err := generate(root)
	require.NoError(t, err)
	dir := t.TempDir()
	for _, d := range []string{"capi", "include", "python/rmmgo"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	require.NoError(t, genfiles.Write(dir, files))
	require.NoError(t, genfiles.Compare(dir, files, "go generate ./internal/cabi"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, headerFile), []byte("stale"), 0o644))
	err = genfiles.Compare(dir, files, "go generate ./internal/cabi")
	require.ErrorContains(t, err, headerFile)

	h := "before\ntypedef enum rmm_status {\n  OLD = 1\n} rmm_status;\nmiddle\n" +
		"typedef enum rmm_resource_kind {\n  OLD = 2\n} rmm_resource_kind;\nafter\n"
	out, err := writePublic([]byte(h))
	require.NoError(t, err)
	s := string(out)
	require.True(t, strings.HasPrefix(s, "before\n") && strings.HasSuffix(s, "after\n") && strings.Contains(s, "\nmiddle\n"))
	require.NotContains(t, s, "OLD")
	require.Contains(t, s, "RMM_ERROR_INTERNAL = 13 ")
	require.Contains(t, s, "RMM_RESOURCE_EXTERNAL = 60\n")
	_, err = writePublic([]byte("no enums"))
	require.Error(t, err)
}
