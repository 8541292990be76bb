//go:build cgo

package cudart

/*
#include <stdlib.h>
*/
import "C"

import "unsafe"

// Getenv reads an environment variable through C's getenv. Inside
// librmmgo.so, Go's os.Getenv sees only the environment the process started
// with; a host program that sets a variable later (Python's os.environ, C's
// setenv) is seen only through the C library. rmmgo reads its variables
// (RMMGO_BACKEND, RMM_LOG_FILE, ...) with this function.
func Getenv(name string) string {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	v := C.getenv(cs)
	if v == nil {
		return ""
	}
	return C.GoString(v)
}
