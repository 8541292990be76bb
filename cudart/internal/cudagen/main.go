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
	"flag"
	"fmt"
	"os"

	"github.com/rmmgo/rmmgo/internal/genfiles"
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
			err = genfiles.Compare(*dir, files, "go generate ./cudart")
		} else {
			err = genfiles.Write(*dir, files)
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
