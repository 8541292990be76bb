//go:build !cgo || !unix

package cudart

import "errors"

// OpenCUDA needs cgo and dlopen, to load libcudart at run time; this build
// has neither. The simulated device works without them.
func OpenCUDA(path string) (Runtime, error) {
	return nil, errors.New("cudart: this build cannot load the CUDA runtime: it needs cgo (CGO_ENABLED=1) on a Unix system")
}

// StreamGetIDFuncs: this build has no CUDA runtime to call from C.
func StreamGetIDFuncs(r Runtime) (getID, getLastError uintptr) { return 0, 0 }

// GetDeviceFuncs: this build has no CUDA runtime to call from C.
func GetDeviceFuncs(r Runtime) (getDevice, getLastError uintptr) { return 0, 0 }

// PoolAsyncFuncs: this build has no CUDA runtime to call from C.
func PoolAsyncFuncs(r Runtime) (mallocFromPoolAsync, freeAsync uintptr) { return 0, 0 }
