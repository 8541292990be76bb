//go:build linux

package sim

import (
	"os"
	"syscall"
	"unsafe"
)

// hostMapped reports whether every page of [p, p+n) is mapped in this
// process, so that a copy or fill of host memory outside the simulator's
// ranges fails with cudaErrorInvalidValue instead of faulting the process
// (issue 24: DeviceBuffer(ptr=0xdeadbeef00, size=16) killed Python with Go's
// "fatal error: fault"). mincore(2) fails with ENOMEM for a range with an
// unmapped page; it reads no memory and costs one system call per 16 MiB.
// It cannot tell read-only pages: a write to mapped read-only host memory
// still faults, as it would on a GPU's host.
func hostMapped(p, n uintptr) bool {
	if n == 0 {
		return true
	}
	page := uintptr(os.Getpagesize())
	start := p &^ (page - 1)
	end := p + n
	var vec [4096]byte
	for start < end {
		chunk := (end - start + page - 1) / page
		if chunk > uintptr(len(vec)) {
			chunk = uintptr(len(vec))
		}
		_, _, errno := syscall.Syscall(syscall.SYS_MINCORE, start, chunk*page, uintptr(unsafe.Pointer(&vec[0])))
		if errno == syscall.ENOMEM {
			return false
		}
		// Any other error (EAGAIN: the kernel was short of memory) does not
		// say the range is unmapped: let the copy go ahead, as before.
		start += chunk * page
	}
	return true
}
