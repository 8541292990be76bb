//go:build cgo && unix

package cudart

// A small layer over dlopen/dlsym/dlclose, in the spirit of the dl package of
// NVIDIA's go-nvml: the real backend loads libcudart at run time, so that
// rmmgo builds and runs (on the simulated device) where CUDA is not
// installed.

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

// rmmgo_dl_addr_file names the file a loaded symbol comes from, or NULL.
static const char *rmmgo_dl_addr_file(void *sym) {
	Dl_info info;
	if (sym == NULL || dladdr(sym, &info) == 0) {
		return NULL;
	}
	return info.dli_fname;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// dlopen flags.
const (
	dlNow    = int(C.RTLD_NOW)    // resolve every symbol at load time
	dlLocal  = int(C.RTLD_LOCAL)  // keep the library's symbols out of the global scope
	dlNoLoad = int(C.RTLD_NOLOAD) // only find a library the process has already loaded
)

// dynLib is a shared library opened with dlopen.
type dynLib struct {
	name   string         // the name it was opened by
	handle unsafe.Pointer // from dlopen; nil once closed
}

// dlOpen opens the shared library name (a file name searched the usual way,
// or a path) with the given dlopen flags. A library the process has already
// loaded under the same soname is shared, not loaded twice.
func dlOpen(name string, flags int) (*dynLib, error) {
	if name == "" {
		return nil, errors.New("dlopen: empty library name")
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))

	// dlerror reports the last failure of the calling thread: keep the
	// goroutine on one thread from the call to the report.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	C.dlerror()
	h := C.dlopen(cname, C.int(flags))
	if h == nil {
		return nil, fmt.Errorf("dlopen %s: %s", name, dlErrorText())
	}
	return &dynLib{name: name, handle: h}, nil
}

// lookup returns the address of symbol sym in the library.
func (l *dynLib) lookup(sym string) (unsafe.Pointer, error) {
	if l.handle == nil {
		return nil, fmt.Errorf("dlsym %s: library %s is closed", sym, l.name)
	}
	csym := C.CString(sym)
	defer C.free(unsafe.Pointer(csym))

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	C.dlerror()
	p := C.dlsym(l.handle, csym)
	if msg := C.dlerror(); msg != nil {
		return nil, fmt.Errorf("dlsym %s: %s", sym, C.GoString(msg))
	}
	if p == nil {
		// A symbol whose value is NULL: no use to us as a function.
		return nil, fmt.Errorf("dlsym %s: symbol is NULL in %s", sym, l.name)
	}
	return p, nil
}

// fileOf names the file that holds the loaded symbol sym (the library's
// real path after the search), or "" if it cannot be told.
func fileOf(sym unsafe.Pointer) string {
	if f := C.rmmgo_dl_addr_file(sym); f != nil {
		return C.GoString(f)
	}
	return ""
}

// close drops this reference to the library; the library is unloaded when
// the last reference in the process goes.
func (l *dynLib) close() error {
	if l.handle == nil {
		return nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	C.dlerror()
	rc := C.dlclose(l.handle)
	l.handle = nil
	if rc != 0 {
		return fmt.Errorf("dlclose %s: %s", l.name, dlErrorText())
	}
	return nil
}

// dlErrorText reads and clears the calling thread's dlerror message. The
// caller holds its OS thread.
func dlErrorText() string {
	if msg := C.dlerror(); msg != nil {
		return C.GoString(msg)
	}
	return "unknown error"
}
