package cudart

import "github.com/rmmgo/rmmgo/cudart/internal/abi"

// The CUDA functions and constants this package uses are listed once, in
// internal/abi. go generate writes from that list the C side of the real
// backend (abi_funcs_generated.h, calls_generated.h) and the declaration
// check's list (check/decls_generated.h); a test fails when they are stale.
//
//go:generate go run ./internal/cudagen

// MinRuntimeVersion is the oldest CUDA runtime the real backend accepts, in
// cudaRuntimeGetVersion's encoding (12000 is CUDA 12.0).
const MinRuntimeVersion = abi.MinRuntimeVersion
