package asyncpath

/*
#include <stdint.h>
*/
import "C"

import (
	"errors"
	"runtime/cgo"

	"github.com/rmmgo/rmmgo/cudart"
)

// The runtime calls of a state whose runtime is not the CUDA runtime (the
// simulated device, a test's wrapper): the C side calls back into Go. Each
// returns the CUDA error code of the failure, 0 on success.

// errUnknown is cudaErrorUnknown, for a failure that carries no CUDA code.
const errUnknown = 999

// codeOf is err's CUDA error code.
func codeOf(err error) C.int {
	var ce *cudart.Error
	if errors.As(err, &ce) && ce.Code != 0 {
		return C.int(ce.Code)
	}
	return errUnknown
}

//export rmmgo_ap_go_get_device
func rmmgo_ap_go_get_device(h C.uintptr_t, dev *C.int) (code C.int) {
	defer func() {
		if recover() != nil {
			code = errUnknown
		}
	}()
	d, err := cgo.Handle(h).Value().(cudart.Runtime).GetDevice()
	if err != nil {
		return codeOf(err)
	}
	*dev = C.int(d)
	return 0
}

//export rmmgo_ap_go_malloc
func rmmgo_ap_go_malloc(h C.uintptr_t, size C.size_t, pool, stream C.uintptr_t, p *C.uintptr_t) (code C.int) {
	defer func() {
		if recover() != nil {
			code = errUnknown
		}
	}()
	q, err := cgo.Handle(h).Value().(cudart.Runtime).MallocFromPoolAsync(uintptr(size), cudart.MemPool(pool), cudart.Stream(stream))
	if err != nil {
		return codeOf(err)
	}
	*p = C.uintptr_t(q)
	return 0
}

//export rmmgo_ap_go_free
func rmmgo_ap_go_free(h C.uintptr_t, ptr, stream C.uintptr_t) (code C.int) {
	defer func() {
		if recover() != nil {
			code = errUnknown
		}
	}()
	if err := cgo.Handle(h).Value().(cudart.Runtime).FreeAsync(uintptr(ptr), cudart.Stream(stream)); err != nil {
		return codeOf(err)
	}
	return 0
}
