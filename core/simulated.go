//go:build !rmmgo_nosim

package core

// Every program that uses core links the simulated device (package
// cudart/sim), so that RMMGO_BACKEND=simulated works with nothing more, as
// it does from C and Python: a Go user who reads "no GPU? set
// RMMGO_BACKEND=simulated" expects the variable alone to be enough. It
// costs about 170 KB of binary and no dependency beyond cudart. Build with
// -tags rmmgo_nosim to leave it out; RMMGO_BACKEND=simulated then says what
// to import.
import _ "github.com/rmmgo/rmmgo/cudart/sim"
