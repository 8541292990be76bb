//go:build !cgo

package cudart

import "os"

// Getenv reads an environment variable. Without cgo there is no C library
// whose environment could differ from Go's, so it is os.Getenv.
func Getenv(name string) string { return os.Getenv(name) }
