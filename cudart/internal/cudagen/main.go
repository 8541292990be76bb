// Command cudagen writes package cudart's C files from the declarations in
// cudart/internal/abi. go generate runs it in the cudart folder:
//
//	//go:generate go run ./internal/cudagen
//
// It writes three files, all from the same list:
//
//   - abi_funcs_generated.h: the function-pointer type of every function
//     cudart calls (rmmgo_fn_<Type>), which cuda_abi.h includes;
//   - calls_generated.h: the function table and one C trampoline per
//     function type (rmmgo_call_<Type>), which cgo calls;
//   - check/decls_generated.h: the list the declaration check
//     (check/decl_check.cpp) compiles against the real CUDA headers, of
//     every function and every constant with the value cudart's source
//     gives it (read from types.go and errors.go, where it is defined).
//
// With -check it writes nothing and fails if a file differs from what it
// would write. A test in this package does the same.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Outputs, relative to the cudart folder.
const (
	funcsFile = "abi_funcs_generated.h"
	callsFile = "calls_generated.h"
	checkFile = "check/decls_generated.h"
)

func main() {
	dir := flag.String("dir", ".", "the cudart folder")
	check := flag.Bool("check", false, "write nothing; fail if a generated file is not current")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: cudagen [-dir cudart] [-check]")
		os.Exit(2)
	}
	files, err := generate(*dir)
	if err == nil {
		if *check {
			err = compare(*dir, files)
		} else {
			err = write(*dir, files)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cudagen:", err)
		os.Exit(1)
	}
}

// generate returns every generated file, by path relative to dir.
func generate(dir string) (map[string][]byte, error) {
	funcs, err := parseFuncs()
	if err != nil {
		return nil, err
	}
	consts, err := readConsts(dir)
	if err != nil {
		return nil, err
	}
	calls, err := writeCalls(funcs, consts)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		funcsFile: writeFuncTypes(funcs),
		callsFile: calls,
		checkFile: writeCheck(consts),
	}, nil
}

func write(dir string, files map[string][]byte) error {
	for _, name := range sortedKeys(files) {
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// compare fails unless every file in dir is as generated.
func compare(dir string, files map[string][]byte) error {
	var stale []string
	for _, name := range sortedKeys(files) {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, files[name]) {
			stale = append(stale, name)
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("not current: %v; run go generate ./cudart", stale)
	}
	return nil
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
