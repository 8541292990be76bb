package sim

import "github.com/rmmgo/rmmgo/cudart"

// Handles. On a GPU, streams, events and memory pools are pointers to the
// driver's objects: a forged handle, or one used after it was destroyed, is
// a wild pointer that CUDA may dereference and crash on. The simulator
// knows every handle it made, and reports any other as an error that names
// the handle and says what is wrong with it, so that tests catch on the
// simulator what would crash a GPU run.
//
// A handle encodes its kind and a sequence number per kind:
// handleBase + (seq*4 + kind)*16. Handles are 16-byte aligned and small, far
// from any Go heap address, and each is made once: a handle the simulator
// could have made but holds no more was destroyed.

type handleKind uintptr

const (
	streamHandle handleKind = 1 + iota
	eventHandle
	poolHandle
)

func (k handleKind) String() string {
	switch k {
	case streamHandle:
		return "stream"
	case eventHandle:
		return "event"
	case poolHandle:
		return "memory pool"
	}
	return "handle"
}

// a is k with its article: "a stream", "an event".
func (k handleKind) a() string {
	if k == eventHandle {
		return "an " + k.String()
	}
	return "a " + k.String()
}

const handleBase = 0x10000

// newHandle makes a handle of kind k; s.mu held.
func (s *Runtime) newHandle(k handleKind) uintptr {
	s.handleSeq[k]++
	return handleBase + (s.handleSeq[k]*4+uintptr(k))*16
}

// madeHandle reports the kind of h if the simulator made it (it may have
// been destroyed since); s.mu held.
func (s *Runtime) madeHandle(h uintptr) (handleKind, bool) {
	if h < handleBase || (h-handleBase)%16 != 0 {
		return 0, false
	}
	v := (h - handleBase) / 16
	k, seq := handleKind(v%4), v/4
	if k < streamHandle || k > poolHandle || seq == 0 || seq > s.handleSeq[k] {
		return 0, false
	}
	return k, true
}

// liveHandle reports whether h is a live handle of kind k; s.mu held.
func (s *Runtime) liveHandle(h uintptr, k handleKind) bool {
	switch k {
	case streamHandle:
		q, ok := s.streams[cudart.Stream(h)]
		return ok && !q.destroyed
	case eventHandle:
		_, ok := s.events[cudart.Event(h)]
		return ok
	case poolHandle:
		_, ok := s.pools[cudart.MemPool(h)]
		return ok
	}
	return false
}

// badHandle is the error of a call fn that was given h, which is not a live
// handle of kind want: code is what CUDA reports for it where it can tell.
// The message names h and says whether the simulator never made it (forged,
// or another device's), made it as another kind, or destroyed it. s.mu held.
func (s *Runtime) badHandle(fn string, code cudart.ErrorCode, want handleKind, h uintptr) error {
	k, made := s.madeHandle(h)
	switch {
	case !made:
		return simErr(fn, code, "%s %#x was never made by this simulated device: a forged handle, or another device's (on a GPU, CUDA could dereference it and crash)", want, h)
	case k != want && s.liveHandle(h, k):
		return simErr(fn, code, "%#x is %s, not %s", h, k.a(), want.a())
	case k != want:
		return simErr(fn, code, "%#x was %s (destroyed), never %s", h, k.a(), want.a())
	}
	return simErr(fn, code, "%s %#x was destroyed (on a GPU, using it could crash)", want, h)
}
