//go:build cgo && unix

package cudart

import (
	"bufio"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeSource is compiled into the test binary, so that the fake tests also
// run from a copy of the binary away from the source tree.
//
//go:embed testdata/fake_cudart.c
var fakeSource []byte

// fakeLib is a build of testdata/fake_cudart.c: a libcudart stand-in that
// runs on the host, with a journal of the calls it received.
type fakeLib struct {
	path string // the shared library
	log  string // its journal ("" when built without one)
}

// fakeOption is a -D definition for the fake's build.
type fakeOption string

func fakeVersion(v int) fakeOption { return fakeOption(fmt.Sprintf("FAKE_RUNTIME_VERSION=%d", v)) }
func fakeDriver(v int) fakeOption  { return fakeOption(fmt.Sprintf("FAKE_DRIVER_VERSION=%d", v)) }
func fakeDevices(n int) fakeOption { return fakeOption(fmt.Sprintf("FAKE_DEVICE_COUNT=%d", n)) }
func fakeCountError(code int) fakeOption {
	return fakeOption(fmt.Sprintf("FAKE_DEVICE_COUNT_ERROR=%d", code))
}

const (
	fakeWithV2        fakeOption = "FAKE_HAVE_V2"
	fakeNoDriverEntry fakeOption = "FAKE_NO_DRIVER_ENTRY"
	fakeOmitSomeFns   fakeOption = "FAKE_OMIT_REQUIRED"
	fakeNoLog         fakeOption = "-nolog" // not a -D: build without a journal
)

// fakeCC finds the C compiler the fake is built with, or skips the test.
func fakeCC(tb testing.TB) string {
	tb.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	path, err := exec.LookPath(strings.Fields(cc)[0])
	if err != nil {
		tb.Skipf("no C compiler (%s) on PATH: cannot build the fake libcudart these tests load", cc)
	}
	return path
}

// buildFake compiles the fake libcudart with opts into a temporary folder.
func buildFake(tb testing.TB, opts ...fakeOption) fakeLib {
	tb.Helper()
	cc := fakeCC(tb)
	dir := tb.TempDir()
	src := filepath.Join(dir, "fake_cudart.c")
	require.NoError(tb, os.WriteFile(src, fakeSource, 0o644))
	lib := fakeLib{path: filepath.Join(dir, "libfakecudart.so"), log: filepath.Join(dir, "calls.log")}
	args := []string{"-shared", "-fPIC", "-Wall", "-o", lib.path}
	for _, o := range opts {
		switch {
		case o == fakeNoLog:
			lib.log = ""
			args = append(args, "-O2") // for benchmarks; else -O0 builds faster
		case strings.HasPrefix(string(o), "-"):
			args = append(args, string(o))
		default:
			args = append(args, "-D"+string(o))
		}
	}
	if lib.log != "" {
		args = append(args, fmt.Sprintf("-DFAKE_LOG=%q", lib.log))
	}
	args = append(args, src, "-lpthread")
	out, err := exec.Command(cc, args...).CombinedOutput()
	require.NoError(tb, err, "building the fake libcudart: %s %s\n%s", cc, strings.Join(args, " "), out)
	return lib
}

// openFake builds a fake and opens it with OpenCUDA.
func openFake(tb testing.TB, opts ...fakeOption) (*cudaRuntime, fakeLib) {
	tb.Helper()
	lib := buildFake(tb, opts...)
	rt, err := OpenCUDA(lib.path)
	require.NoError(tb, err)
	c, ok := rt.(*cudaRuntime)
	require.True(tb, ok, "OpenCUDA returned %T", rt)
	return c, lib
}

// calls returns the journal lines the fake wrote while f ran.
func (l fakeLib) calls(tb testing.TB, f func()) []string {
	tb.Helper()
	before := l.lines(tb)
	f()
	after := l.lines(tb)
	return after[len(before):]
}

func (l fakeLib) lines(tb testing.TB) []string {
	tb.Helper()
	if l.log == "" {
		tb.Fatal("this fake was built without a journal")
	}
	f, err := os.Open(l.log)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(tb, err)
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	require.NoError(tb, sc.Err())
	return lines
}

// callNames keeps the function name of each journal line.
func callNames(lines []string) []string {
	names := make([]string, len(lines))
	for i, l := range lines {
		names[i], _, _ = strings.Cut(l, " ")
	}
	return names
}
