package main

// What FuzzCAPI (capi_fuzz_test.go) needs of the device and the clock: the
// backend, a device warmed up before the first program measures its free
// memory, and a watchdog that fails a program that hangs.

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/rmmgo/rmmgo/cudart"
)

// simulated reports whether the tests run on the simulated device.
func simulated() bool {
	r, err := cudart.Default()
	return err == nil && r.Backend() == cudart.BackendSimulated
}

var warmDeviceOnce sync.Once

// warmDevice makes the CUDA driver take, before the first program measures
// the free memory, what it takes once per process on first use: every base
// kind allocates a small and a large block, written on the device, on the
// default stream and on a created one, and a pool over managed memory does
// the same (the first managed memory a GPU touched took 126 MiB of device
// memory that the driver kept after everything was freed).
func warmDevice(t *testing.T) {
	sv, st := newStreamValue()
	if st != testStatusSuccess {
		t.Fatal(lastMessage())
	}
	use := func(h uintptr) {
		for _, stream := range []uintptr{0, sv} {
			for _, n := range []uint64{4096, 3 << 20} {
				var p unsafe.Pointer
				if rmm_allocate(toHandle(h), toStream(stream), cSize(n), 256, &p) != testStatusSuccess {
					t.Fatalf("warming the device up: %s", lastMessage())
				}
				_ = rmm_memset(p, 1, cSize(n), toStream(stream))
				_ = rmm_stream_synchronize(toStream(stream))
				_ = rmm_deallocate(toHandle(h), toStream(stream), p, cSize(n), 256)
			}
		}
	}
	for _, kind := range fzBases {
		h, st := createPlain(kind)
		if st != testStatusSuccess {
			continue // not supported here: no program makes it either
		}
		use(h)
		if kind == kManaged {
			o := defaultTestOptions()
			o.upstream = h
			if p, st := createWithOptions(kPool, o); st == testStatusSuccess {
				use(p)
				_ = rmm_resource_release(toHandle(p))
			}
		}
		_ = rmm_resource_release(toHandle(h))
	}
	_ = rmm_stream_destroy(toStream(sv))
	_ = rmm_device_synchronize()
}

func watchdog(limit time.Duration) func() {
	t := time.AfterFunc(limit, func() {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		panic(fmt.Sprintf("the program ran for more than %v: hung?\n%s", limit, buf[:n]))
	})
	return func() { t.Stop() }
}
