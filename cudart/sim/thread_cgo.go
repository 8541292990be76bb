//go:build cgo

package sim

/*
#include <stdint.h>

// Each OS thread gets a token on first use that no other thread, live or
// dead, ever gets: unlike a thread id, it is never reused, so a new thread
// never inherits the current device of a thread that has exited.
static __thread uint64_t rmmgo_sim_token;
static uint64_t rmmgo_sim_tokens;

static uint64_t rmmgo_sim_thread_token(void) {
	if (rmmgo_sim_token == 0) {
		rmmgo_sim_token = __atomic_add_fetch(&rmmgo_sim_tokens, 1, __ATOMIC_RELAXED);
	}
	return rmmgo_sim_token;
}
*/
import "C"

// threadToken identifies the calling OS thread for the simulator's
// per-thread current device. A goroutine that is not locked to its thread
// (runtime.LockOSThread) may see another thread's device, exactly as with
// CUDA.
func threadToken() uint64 { return uint64(C.rmmgo_sim_thread_token()) }

// simUniqueThreadTokens: a new thread never inherits an old thread's device.
const simUniqueThreadTokens = true
