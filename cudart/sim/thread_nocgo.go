//go:build !cgo

package sim

import "syscall"

// threadToken identifies the calling OS thread for the simulator's
// per-thread current device. Without cgo it is the thread id, which Linux
// may reuse for a new thread after one exits: the new thread then starts on
// the old one's device instead of device 0. A goroutine that is not locked to
// its thread (runtime.LockOSThread) may see another thread's device, exactly
// as with CUDA.
func threadToken() uint64 { return uint64(syscall.Gettid()) }

// simUniqueThreadTokens: thread ids may be reused by new threads.
const simUniqueThreadTokens = false
