//go:build !cgo

package asyncpath

// rmmgo needs cgo: it loads the CUDA runtime with dlopen and keeps the C
// path of the pool-based resources in C. Built with CGO_ENABLED=0, Go would
// otherwise report only "undefined: asyncpath.CFuncs" from package core;
// this names the cause instead, in the first error of the build.
var _ = rmmgo_needs_cgo__build_with_CGO_ENABLED_1_and_a_C_compiler_such_as_gcc
