//go:build linux

package sim

import (
	"syscall"
	"unsafe"
)

// hostAccessible reports whether the n bytes at p are mapped, readable
// memory of this process. The simulator copies and fills host memory with
// plain Go copies, so a foreign pointer that maps nothing (a pointer a
// caller made up, or one freed long ago) killed the process with a fault
// Go cannot recover from; on a real GPU a foreign pointer must be valid,
// but the simulator reports it as CUDA reports an invalid value. The kernel
// is asked: process_vm_readv of the process itself reads one byte of each
// page and fails (EFAULT) where one is not readable; where that call is
// not allowed, mincore says whether every page is mapped.
func hostAccessible(p, n uintptr) bool {
	if n == 0 {
		return true
	}
	const page = 4096
	if p+n < p {
		return false
	}
	first, last := p&^(page-1), (p+n-1)&^(page-1)
	pages := (last-first)/page + 1
	type iovec struct{ base, len uintptr }
	var buf [256]byte
	var remote [len(buf)]iovec
	if sysProcessVMReadv == 0 {
		return hostMapped(first, pages*page)
	}
	pid := uintptr(syscall.Getpid())
	for i := uintptr(0); i < pages; {
		k := 0
		for ; k < len(remote) && i < pages; k, i = k+1, i+1 {
			a := first + i*page
			if a < p {
				a = p
			}
			remote[k] = iovec{a, 1}
		}
		local := iovec{uintptr(unsafe.Pointer(&buf[0])), uintptr(k)}
		r, _, e := syscall.Syscall6(sysProcessVMReadv, pid, uintptr(unsafe.Pointer(&local)), 1,
			uintptr(unsafe.Pointer(&remote[0])), uintptr(k), 0)
		if e == syscall.ENOSYS || e == syscall.EPERM {
			return hostMapped(first, pages*page)
		}
		if e != 0 || r != uintptr(k) {
			return false
		}
	}
	return true
}

// hostMapped reports whether every page of [p, p+n) (p page-aligned) is
// mapped (mincore fails with ENOMEM otherwise).
func hostMapped(p, n uintptr) bool {
	vec := make([]byte, (n+4095)/4096)
	_, _, e := syscall.Syscall(syscall.SYS_MINCORE, p, n, uintptr(unsafe.Pointer(&vec[0])))
	return e == 0
}
