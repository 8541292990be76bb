package main

/*
#include "capi_internal.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/cudart"
)

// The streams the library makes (rmm_stream_create*), and the contract for
// them (include/rmmgo.h, "Streams"):
//
//   - After rmm_stream_destroy, every call that names the stream fails with
//     RMM_ERROR_INVALID_ARGUMENT ("... was destroyed"), and CUDA is never
//     asked about it. On a GPU a destroyed stream's handle is a dangling
//     pointer that the driver dereferences (cuStreamGetId crashed on it),
//     so the check has to come first.
//   - A stream the library did not make (cudaStreamCreate, CuPy's,
//     PyTorch's) must be valid, as in CUDA itself: the library passes it on.
//
// To tell a destroyed stream from a new one for certain, rmm_stream_destroy
// does not destroy a stream the library made: it retires it. The stream
// stays alive in CUDA, parked, so CUDA cannot hand its handle to another
// stream (cudaStreamCreate by the program, CuPy, ...), and its handle stays
// in the retired set, which every call checks. rmm_stream_create reuses a
// parked stream of the same device and flags before it asks CUDA for a new
// one; the handle is then live again (as it would be if CUDA had reused it).
// So the parked streams are at most the most streams of one device and
// flags the program had at once; past maxParked, the oldest parked stream is
// destroyed for real and forgotten (a later use of its handle is the
// program's bug, undefined as in CUDA).
//
// Work still queued on a retired stream completes as it would after
// cudaStreamDestroy; blocks the thread caches kept for the stream go back to
// their resources on it before it is retired.
//
// The checks cost one atomic load while no stream is retired. The C cache
// checks a stream once per thread and retirement (rmmgo_go_stream_live,
// rmmgo_stream_retired), not on every call.

// maxParked bounds the retired streams kept alive.
const maxParked = 4096

type streamClass struct {
	device int
	flags  uint32
}

type streamTable struct {
	nretired atomic.Int64 // len(retired), for a look without the lock

	mu     sync.RWMutex
	made   map[core.Stream]streamClass // live streams the library made
	gone   map[core.Stream]uint64      // retired (parked) streams, with their retirement number
	parked map[streamClass][]core.Stream
	order  []retiredStream // retirements, oldest first (entries go stale when reused)
	seq    uint64
}

type retiredStream struct {
	s   core.Stream
	seq uint64
}

var streams = &streamTable{
	made:   map[core.Stream]streamClass{},
	gone:   map[core.Stream]uint64{},
	parked: map[streamClass][]core.Stream{},
}

// retired reports whether s is a stream rmm_stream_destroy retired.
func (t *streamTable) retired(s core.Stream) bool {
	if t.nretired.Load() == 0 {
		return false
	}
	t.mu.RLock()
	_, ok := t.gone[s]
	t.mu.RUnlock()
	return ok
}

// check is the error of a call naming s when s was retired.
func (t *streamTable) check(s core.Stream) error {
	if t.retired(s) {
		return fmt.Errorf("%w: stream %#x was destroyed by rmm_stream_destroy", core.ErrInvalidArgument, uintptr(s))
	}
	return nil
}

// create returns a stream of the current device with flags: a parked one,
// or a new one from CUDA.
func (t *streamTable) create(r cudart.Runtime, flags uint32) (core.Stream, error) {
	dev, err := r.GetDevice()
	if err != nil {
		return 0, err
	}
	c := streamClass{dev, flags}
	t.mu.Lock()
	if p := t.parked[c]; len(p) > 0 {
		s := p[len(p)-1]
		t.parked[c] = p[:len(p)-1]
		delete(t.gone, s)
		t.nretired.Store(int64(len(t.gone)))
		t.made[s] = c
		t.mu.Unlock()
		return s, nil
	}
	t.mu.Unlock()
	s, err := r.StreamCreate(flags)
	if err != nil {
		return 0, err
	}
	t.mu.Lock()
	t.made[s] = c
	t.mu.Unlock()
	return s, nil
}

// destroy retires s when the library made it (after the thread caches gave
// back what they kept for it), and destroys any other stream in CUDA.
func (t *streamTable) destroy(r cudart.Runtime, s core.Stream) error {
	t.mu.RLock()
	_, dead := t.gone[s]
	c, ours := t.made[s]
	t.mu.RUnlock()
	if dead {
		return t.check(s)
	}
	// Blocks cached under the stream go back to their resources on it
	// while it is alive.
	tcFlushStream(s)
	if !ours {
		if err := r.StreamDestroy(s); err != nil {
			return fmt.Errorf("%w: %w", core.ErrCUDA, err)
		}
		return nil
	}
	var evict []core.Stream
	t.mu.Lock()
	if _, still := t.made[s]; !still {
		t.mu.Unlock()
		return t.check(s) // destroyed by another thread meanwhile
	}
	delete(t.made, s)
	t.seq++
	t.gone[s] = t.seq
	t.parked[c] = append(t.parked[c], s)
	t.order = append(t.order, retiredStream{s, t.seq})
	for len(t.gone) > maxParked && len(t.order) > 0 {
		o := t.order[0]
		t.order = t.order[1:]
		if seq, ok := t.gone[o.s]; !ok || seq != o.seq {
			continue // reused since
		}
		delete(t.gone, o.s)
		for k, p := range t.parked {
			for i, x := range p {
				if x == o.s {
					t.parked[k] = append(p[:i], p[i+1:]...)
					break
				}
			}
		}
		evict = append(evict, o.s)
	}
	if len(t.order) > 2*len(t.gone)+64 {
		// Drop the stale entries of streams reused since.
		kept := t.order[:0]
		for _, o := range t.order {
			if seq, ok := t.gone[o.s]; ok && seq == o.seq {
				kept = append(kept, o)
			}
		}
		t.order = kept
	}
	t.nretired.Store(int64(len(t.gone)))
	t.mu.Unlock()
	C.rmmgo_stream_retired() // threads check their streams again
	var first error
	for _, x := range evict {
		if err := r.StreamDestroy(x); err != nil && first == nil {
			first = fmt.Errorf("%w: destroying a stream retired long ago: %w", core.ErrCUDA, err)
		}
	}
	return first
}

// parkedCount reports the retired streams kept alive (for tests).
func (t *streamTable) parkedCount() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.gone)
}
