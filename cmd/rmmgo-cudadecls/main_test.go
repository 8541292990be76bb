package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var checkedIn = filepath.Join("..", "..", "cudart", "check", "decls_generated.h")

// TestGeneratedHeaderIsCurrent fails when the checked-in header no longer
// matches package cudart's declarations.
func TestGeneratedHeaderIsCurrent(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, writeHeader(&buf))
	got, err := os.ReadFile(checkedIn)
	require.NoError(t, err)
	require.Equal(t, buf.String(), string(got),
		"%s is stale: run go run ./cmd/rmmgo-cudadecls > cudart/check/decls_generated.h", checkedIn)
}

func TestVersionGuard(t *testing.T) {
	require.Equal(t, "", versionGuard(0, 0))
	require.Equal(t, "CUDART_VERSION >= 13000", versionGuard(13000, 0))
	require.Equal(t, "CUDART_VERSION < 13000", versionGuard(0, 13000))
	require.Equal(t, "CUDART_VERSION >= 12020 && CUDART_VERSION < 13000", versionGuard(12020, 13000))
}

// cxx finds a C++ compiler, or skips the test.
func cxx(t *testing.T) string {
	t.Helper()
	name := os.Getenv("CXX")
	if name == "" {
		name = "c++"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("no C++ compiler (%s): cannot build the declaration check", name)
	}
	return path
}

// runDeclCheck builds cudart/check/decl_check.cpp against the mock CUDA
// headers in testdata with the given -D flags and runs it.
func runDeclCheck(t *testing.T, defines ...string) (string, error) {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "decl_check")
	args := []string{"-std=c++17", "-Wall"}
	for _, d := range defines {
		args = append(args, "-D"+d)
	}
	args = append(args, "-I", filepath.Join("testdata", "mockcuda"), "-I", filepath.Join("..", "..", "cudart"),
		"-o", exe, filepath.Join("..", "..", "cudart", "check", "decl_check.cpp"))
	out, err := exec.Command(cxx(t), args...).CombinedOutput()
	require.NoError(t, err, "building decl_check: %s", out)
	out, err = exec.Command(exe).CombinedOutput()
	return string(out), err
}

// TestDeclCheckPasses runs the declaration check against mock headers
// shaped like CUDA 13.0, 12.4 and 12.0. It tests the checker, not CUDA: the
// real proof is run.sh against the real headers on a GPU machine.
func TestDeclCheckPasses(t *testing.T) {
	for _, version := range []string{"13000", "12040", "12000"} {
		t.Run(version, func(t *testing.T) {
			out, err := runDeclCheck(t, "MOCK_CUDART_VERSION="+version)
			require.NoError(t, err, out)
			require.Contains(t, out, "(CUDART_VERSION "+version+")")
			require.Regexp(t, `decl_check: all \d+ checks passed`, out)
			require.NotContains(t, out, "FAIL")
		})
	}
}

// TestDeclCheckCatchesMismatches breaks one thing of each kind in the mock
// headers and expects the check to report each and fail.
func TestDeclCheckCatchesMismatches(t *testing.T) {
	out, err := runDeclCheck(t, "MOCK_BREAK")
	require.Error(t, err, out)
	for _, want := range []string{
		"FAIL cudaDevAttrPageableMemoryAccess: CUDA has 87, cudart.DevAttrPageableMemoryAccess is 88",
		"FAIL offsetof(struct cudaMemPoolProps, maxSize): CUDA has 32, rmmgo declares 24",
		"FAIL sizeof(struct cudaPointerAttributes): CUDA's is 104 bytes, rmmgo's only 88",
		"FAIL cudaMalloc: the header renames it to cudaMalloc_v3",
		"FAIL cudaMemAdvise: its type differs from cuda_abi.h's rmmgo_fn_cudaMemAdvise_location",
		"checks FAILED",
	} {
		require.Contains(t, out, want)
	}
}

// TestDeclCheckScript runs cudart/check/run.sh as the lead does, without
// nvcc, against the mock headers.
func TestDeclCheckScript(t *testing.T) {
	cxx(t)
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	mock, err := filepath.Abs(filepath.Join("testdata", "mockcuda"))
	require.NoError(t, err)
	script, err := filepath.Abs(filepath.Join("..", "..", "cudart", "check", "run.sh"))
	require.NoError(t, err)
	cmd := exec.Command(sh, script, mock)
	cmd.Dir = t.TempDir() // the script finds its files from its own path
	cmd.Env = append(os.Environ(), "NVCC=none")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "decl_check: PASS")
}
