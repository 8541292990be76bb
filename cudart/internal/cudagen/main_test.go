package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmmgo/rmmgo/internal/genfiles"
	"github.com/stretchr/testify/require"
)

// cudartDir is the cudart folder, from this package's.
var cudartDir = filepath.Join("..", "..")

// TestGeneratedFilesAreCurrent fails when a checked-in file is not what
// the generator writes from internal/abi now.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	files, err := generate(cudartDir)
	require.NoError(t, err)
	require.Len(t, files, 3)
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(cudartDir, name))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "cudart/%s is stale: run go generate ./cudart", name)
	}
	require.NoError(t, genfiles.Compare(cudartDir, files, "go generate ./cudart"))
}

// TestCompareFindsStaleFiles: -check fails on a file that differs.
func TestCompareFindsStaleFiles(t *testing.T) {
	files, err := generate(cudartDir)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "check"), 0o755))
	require.NoError(t, genfiles.Write(dir, files))
	require.NoError(t, genfiles.Compare(dir, files, "go generate ./cudart"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, callsFile), []byte("stale"), 0o644))
	err = genfiles.Compare(dir, files, "go generate ./cudart")
	require.ErrorContains(t, err, callsFile)
	require.ErrorContains(t, err, "go generate ./cudart")
}

func TestVersionGuard(t *testing.T) {
	require.Equal(t, "", versionGuard(0, 0))
	require.Equal(t, "CUDART_VERSION >= 13000", versionGuard(13000, 0))
	require.Equal(t, "CUDART_VERSION < 13000", versionGuard(0, 13000))
	require.Equal(t, "CUDART_VERSION >= 12020 && CUDART_VERSION < 13000", versionGuard(12020, 13000))
}

func TestParseParam(t *testing.T) {
	good := []struct {
		in   string
		want param
	}{
		{"size_t size", param{decl: "size_t size", ctype: "size_t", name: "size"}},
		{" const  void *src ", param{decl: "const void *src", ctype: "const void *", name: "src"}},
		{"out void **devPtr", param{decl: "void **devPtr", ctype: "void **", name: "devPtr", dir: "out", value: "void *"}},
		{"out RMMGO_PTRATTR *a", param{decl: "RMMGO_PTRATTR *a", ctype: "RMMGO_PTRATTR *", name: "a", dir: "out", value: "RMMGO_PTRATTR"}},
		{"in const RMMGO_POOLPROPS *props", param{decl: "const RMMGO_POOLPROPS *props", ctype: "const RMMGO_POOLPROPS *", name: "props", dir: "in", value: "RMMGO_POOLPROPS"}},
		{"out(uint64_t) void *value", param{decl: "void *value", ctype: "void *", name: "value", dir: "out", value: "uint64_t"}},
	}
	for _, tt := range good {
		got, err := parseParam(tt.in)
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.want, got, tt.in)
	}
	bad := map[string]string{
		"size_t":                     "cannot read",
		"float x":                    "unknown C type",
		"out int x":                  "needs a pointer",
		"out void *x":                "say the type of the value",
		"out(int) int *x":            "for void * only",
		"(int) void *x":              "unknown C type",
		"out const int *x":           "cannot be const",
		"in RMMGO_STREAM *s":         "not by reference",
		"size_t tbl":                 "the trampolines use that name",
		"out(float) void *value":     "unknown C type",
		"out RMMGO_UNKNOWN *pointer": "unknown C type",
	}
	for in, want := range bad {
		_, err := parseParam(in)
		require.ErrorContains(t, err, want, in)
	}
}

// TestTrampolines checks the shapes of the generated C, one of each kind.
func TestTrampolines(t *testing.T) {
	types, err := parseFuncs()
	require.NoError(t, err)
	byName := make(map[string]*funcType)
	for _, ft := range types {
		byName[ft.name] = ft
	}
	tramp := func(name string) string {
		ft := byName[name]
		require.NotNil(t, ft, name)
		s, err := ft.trampoline()
		require.NoError(t, err)
		return s
	}
	// A status only, pointers and handles as uintptr_t, the error cleared.
	require.Contains(t, tramp("cudaFreeAsync"),
		"int32_t rmmgo_call_cudaFreeAsync(uintptr_t tbl, uintptr_t devPtr, uintptr_t stream) {\n"+
			"\treturn rmmgo_done(tbl, RMMGO_FN(tbl, cudaFreeAsync)((void *)devPtr, (RMMGO_STREAM)stream));")
	// A result: a zeroed local whose address is passed, returned as uintptr_t.
	s := tramp("cudaMalloc")
	require.Contains(t, s, "uintptr_t devPtr;\n\tint32_t err;\n} rmmgo_ret_cudaMalloc;")
	require.Contains(t, s, "memset(&devPtr, 0, sizeof devPtr);")
	require.Contains(t, s, "r.err = rmmgo_done(tbl, RMMGO_FN(tbl, cudaMalloc)(&devPtr, size));")
	require.Contains(t, s, "r.devPtr = (uintptr_t)devPtr;")
	// By reference: the value is the trampoline's argument.
	require.Contains(t, tramp("cudaMemPoolCreate"), "rmmgo_call_cudaMemPoolCreate(uintptr_t tbl, RMMGO_POOLPROPS props)")
	require.Contains(t, tramp("cudaMemPoolSetAttribute"), "(uintptr_t tbl, uintptr_t pool, int32_t attr, uint64_t value)")
	// Calls that keep the last error, and the driver's: no rmmgo_done.
	require.Contains(t, tramp("cudaPeekAtLastError"), "return RMMGO_FN(tbl, cudaPeekAtLastError)();")
	require.Contains(t, tramp("cudaRuntimeGetVersion"), "r.err = RMMGO_FN(tbl, cudaRuntimeGetVersion)(&runtimeVersion);")
	require.Contains(t, tramp("cuStreamGetId"), "r.err = RMMGO_FN(tbl, cuStreamGetId)((RMMGO_STREAM)hStream, &streamId);")
	// A result that is not a status is returned as is.
	require.Contains(t, tramp("cudaGetErrorName"), "const char *rmmgo_call_cudaGetErrorName(uintptr_t tbl, int32_t error) {")
	// Shapes that share a type share a trampoline and name every symbol.
	require.Contains(t, tramp("cudaMemPrefetchAsync_location"),
		"/* cudaMemPrefetchAsync (CUDA 13.0 and later); cudaMemPrefetchAsync_v2 (CUDA 12.2 until 13.0, may be missing) */")
}

// TestReadConstsRefusesGaps: every constant of types.go and errors.go is in
// abi.Consts, and every entry there is declared.
func TestReadConstsRefusesGaps(t *testing.T) {
	dir := t.TempDir()
	copyFile := func(name, extra string) {
		b, err := os.ReadFile(filepath.Join(cudartDir, name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), append(b, extra...), 0o644))
	}
	copyFile("errors.go", "")
	copyFile("types.go", "")
	consts, err := readConsts(dir)
	require.NoError(t, err)
	v, err := constValueOf(consts, "CPUDeviceID")
	require.NoError(t, err)
	require.EqualValues(t, -1, v)

	copyFile("types.go", "\nconst Unlisted = 7\n")
	_, err = readConsts(dir)
	require.ErrorContains(t, err, "abi.Consts lacks [Unlisted]")

	b, err := os.ReadFile(filepath.Join(cudartDir, "errors.go"))
	require.NoError(t, err)
	copyFile("types.go", "")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "errors.go"),
		[]byte(strings.Replace(string(b), "ErrorNotSupported                ErrorCode = 801", "", 1)), 0o644))
	_, err = readConsts(dir)
	require.ErrorContains(t, err, "abi.Consts lists ErrorNotSupported")
}

// TestCallsCompile compiles calls_generated.h as C11 with every warning an
// error, as a check beyond what cgo's build would report.
func TestCallsCompile(t *testing.T) {
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	path, err := exec.LookPath(cc)
	if err != nil {
		t.Skipf("no C compiler (%s)", cc)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "calls.c")
	require.NoError(t, os.WriteFile(src, []byte("#include \"calls_generated.h\"\nint main(void) { return rmmgo_slot_count > 0 ? 0 : 1; }\n"), 0o644))
	out, err := exec.Command(path, "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", cudartDir, "-o", filepath.Join(dir, "calls"), src).CombinedOutput()
	require.NoError(t, err, "%s", out)
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
	args = append(args, "-I", filepath.Join("testdata", "mockcuda"), "-I", cudartDir,
		"-o", exe, filepath.Join(cudartDir, "check", "decl_check.cpp"))
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
		"FAIL CUDA_ERROR_OUT_OF_MEMORY: CUDA has 3, cudart.ErrorMemoryAllocation is 2",
		"FAIL sizeof(CUmemAllocationProp): CUDA has 40, rmmgo declares 32",
		"FAIL cuMemMap: its type differs from cuda_abi.h's rmmgo_fn_cuMemMap",
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
	script, err := filepath.Abs(filepath.Join(cudartDir, "check", "run.sh"))
	require.NoError(t, err)
	cmd := exec.Command(sh, script, mock)
	cmd.Dir = t.TempDir() // the script finds its files from its own path
	cmd.Env = append(os.Environ(), "NVCC=none")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "decl_check: PASS")
}
