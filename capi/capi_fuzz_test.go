package main

// FuzzCAPI runs programs of C API calls through the exported entry points,
// as C callers make them (on one locked OS thread, like a C thread): make
// base resources, sub-allocators and adaptors over live, released or forged
// handles, retain and release them, set and reset the current device
// resource, allocate and free on several streams, free twice, with a wrong
// size, an interior pointer or through an equal handle, destroy streams,
// and read the counters. A model of the handles and allocations says what
// each call must answer. Checked after every step: live allocations never
// overlap and keep their bytes; statistics, tracking, limiting and pool
// counters add up; a failed call sets a message. At the end, once every
// handle is released, the handles and what base resources have out are
// back where they were, and so is the device's free memory (exactly on the
// simulated device; on a GPU, within the driver's page).
//
// The seed corpus is in testdata/fuzz/FuzzCAPI; `go test` runs it and
// `make test-fuzz` fuzzes it for a few seconds. See docs/fuzzing.md.

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/rmmgo/rmmgo/core"
)

func FuzzCAPI(f *testing.F) {
	dir := f.TempDir()
	prog := func(b ...byte) []byte { return b }
	f.Add(prog())
	// A cuda resource, a pool over it, allocations on two streams, frees,
	// a double free, a wrong size, an interior pointer.
	f.Add(prog(0, 0, 2, 1, 0, 0, 0, 9, 0, 1, 2, 2, 10, 1, 9, 11, 2, 5, 1, 1, 6, 0, 7, 0, 8, 0, 4, 0))
	// Adaptors: statistics, tracking and limiting over a pool, logging
	// over them, through all of which the program allocates and frees.
	f.Add(prog(0, 0, 1, 0, 0, 1, 1, 8, 3, 1, 2, 9, 0, 1, 2, 5, 4, 1, 3, 6, 0,
		1, 4, 4, 1, 2, 6, 2, 1, 3, 1, 5, 0, 2, 3, 7, 1, 2, 4, 8, 0, 4, 3, 0, 5, 2, 6, 1, 12, 2))
	// Set the current device resource, release the handle, reset it; equal
	// handles free each other's memory; destroy a stream.
	f.Add(prog(0, 0, 0, 0, 13, 0, 2, 0, 5, 1, 12, 1, 14, 0, 15, 0, 7, 1, 4, 1, 3, 0, 4, 0))
	// A pool over cuda (served by the per-thread cache): free twice, a
	// wrong size, an interior pointer, through the pool's upstream.
	f.Add(prog(0, 0, 0, 1, 0, 0, 1, 2, 1, 6, 0, 6, 0, 2, 1, 6, 0, 7, 0, 0, 8, 0, 3, 19, 0, 0, 5, 0))
	// Issue 24: interior pointers off the grid, size 0 and alignment 3
	// through a pool, an arena, statistics and limiting over them, and
	// cuda (ops 148 = 8|0x80, 147 = 7|0x80, 67 = 7|0x40, 207 = 7|0xc0: op
	// is the byte mod 20, the flags its high bits).
	f.Add(prog(0, 0, 0, 1, 0, 0, 1, 1, 0, 1, 8, 1, 1, 8, 2,
		2, 1, 1, 0, 2, 2, 3, 1, 2, 3, 5, 0, 2, 0, 2, 0,
		148, 0, 0, 148, 1, 127, 148, 2, 254, 148, 3, 1,
		147, 0, 0, 67, 1, 0, 207, 2, 3, 147, 3, 0, 67, 4, 0, 4, 0, 4, 0))
	// Stale and forged handles.
	f.Add(prog(0, 1, 4, 0, 4, 0, 1, 0, 0, 3, 16, 0, 16, 3, 2, 0, 5, 1))
	f.Fuzz(func(t *testing.T, program []byte) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer watchdog(10 * time.Second)()
		warmDeviceOnce.Do(func() { warmDevice(t) })
		start, st := memFree()
		if st != testStatusSuccess {
			t.Fatal(lastMessage())
		}
		startHandles := reg.live()
		startBlocks, startBytes := core.BaseAllocations()
		s := &fzState{t: t, dir: dir, streams: []uintptr{0}}
		next := func() byte {
			if len(program) == 0 {
				return 0
			}
			b := program[0]
			program = program[1:]
			return b
		}
		stream := func(b byte) uintptr {
			v := s.streams[int(b)%len(s.streams)]
			return v // 0 also for a destroyed stream: the default one
		}
		trace := os.Getenv("RMMGO_FUZZ_TRACE") != ""
		for ; s.step < 200 && len(program) > 0; s.step++ {
			op := next()
			if trace {
				t.Logf("step %d: op %d (%#x), next %v\n%s", s.step, op%20, op, program[:min(3, len(program))], s.describe())
			}
			switch op % 20 {
			case 0: // a base resource
				if len(s.hs) < 12 {
					s.create(fzBases[int(next())%len(fzBases)], -1, next)
				}
			case 1: // a sub-allocator or adaptor over a live handle
				kind := fzOver[int(next())%len(fzOver)]
				if up := s.pick(next(), nil); up >= 0 && len(s.hs) < 12 {
					s.create(kind, up, next)
				}
			case 2, 3: // allocate
				i := s.pick(next(), nil)
				n := fzSizes[int(next())%len(fzSizes)]
				st := stream(next())
				if i >= 0 && op&0x80 != 0 {
					s.zero(i, n&1 != 0) // zero bytes: st unused
				} else if i >= 0 && len(s.allocs) < 40 {
					s.allocate(i, n, st, op&0x40 != 0)
				}
			case 4, 5: // free, perhaps on another stream
				if k := s.liveAlloc(next()); k >= 0 {
					a := s.allocs[k]
					st := a.stream
					if op&0x80 != 0 {
						st = stream(next())
					}
					s.free(k, st, a.n, op&0x40 != 0)
					s.check()
				}
			case 6: // free twice
				if k := s.liveAlloc(next()); k >= 0 {
					a := *s.allocs[k]
					s.free(k, a.stream, a.n, false)
					s.refuse("a second free", rmm_deallocate(toHandle(s.hs[a.via].h), toStream(a.stream), a.p, cSize(a.n), 256))
					s.check()
				}
			case 7: // a wrong size
				if k := s.liveAlloc(next()); k >= 0 {
					a := s.allocs[k]
					wrong := a.n + 2<<20 + 1 + uint64(next())
					if op&0x80 != 0 {
						wrong = 0 // issue 24: size 0 freed nothing and said yes
					}
					s.refuse(fmt.Sprintf("freeing %d bytes of %d", wrong, a.n), rmm_deallocate(toHandle(s.hs[a.via].h), toStream(a.stream), a.p, cSize(wrong), 256))
					if op&0x40 != 0 { // the right size, alignment 3
						s.expectStatus("freeing with alignment 3", rmm_deallocate(toHandle(s.hs[a.via].h), toStream(a.stream), a.p, cSize(a.n), 3), testStatusBadAlignment)
					}
					s.check()
				}
			case 8: // an interior pointer
				if k := s.liveAlloc(next()); k >= 0 && op&0x80 != 0 {
					// Issue 24: p+1..p+255 shared p's slot in a heap's index.
					a := s.allocs[k]
					off := 1 + uint64(next())%255
					s.refuse("an interior pointer off the grid", rmm_deallocate(toHandle(s.hs[a.via].h), toStream(a.stream), unsafe.Add(a.p, off), cSize(a.n), 256))
					s.check()
				} else if k >= 0 && s.allocs[k].n > 256 {
					a := s.allocs[k]
					off := 256 * (1 + uint64(next())%((a.n-1)/256))
					s.refuse("an interior pointer", rmm_deallocate(toHandle(s.hs[a.via].h), toStream(a.stream), unsafe.Add(a.p, off), cSize(a.n-off), 256))
					s.check()
				}
			case 9: // retain
				if i := s.pick(next(), nil); i >= 0 {
					s.expectStatus("rmm_resource_retain", rmm_resource_retain(toHandle(s.hs[i].h)), testStatusSuccess)
					s.hs[i].refs++
				}
			case 10, 11: // release one of the program's references
				if i := s.pick(next(), func(h *fzHandle) bool { return h.refs > 0 }); i >= 0 {
					s.release(i)
					s.check()
				}
			case 12: // create a stream, or destroy one
				if b := next(); b&1 == 0 && len(s.streams) < 4 {
					v, st := newStreamValue()
					s.expectStatus("rmm_stream_create", st, testStatusSuccess)
					s.streams = append(s.streams, v)
				} else if len(s.streams) > 1 {
					k := 1 + int(b>>1)%(len(s.streams)-1)
					v := s.streams[k]
					s.expectStatus("rmm_stream_destroy", rmm_stream_destroy(toStream(v)), testStatusSuccess)
					s.streams = append(s.streams[:k], s.streams[k+1:]...)
					for _, a := range s.allocs {
						if a.stream == v {
							a.stream = 0 // freed on the default stream from now on
						}
					}
				}
			case 13: // set the current device resource
				if i := s.pick(next(), nil); i >= 0 {
					prev := s.current()
					s.hs[i].current = true // the registry's new reference comes first
					var closing []int
					if prev >= 0 && prev != i {
						closing = s.prepareDropCurrent(prev)
					}
					s.expectStatus("rmm_set_current_device_resource", rmm_set_current_device_resource(toHandle(s.hs[i].h), nil), testStatusSuccess)
					if prev >= 0 && prev != i {
						s.hs[prev].current = false
						s.dropped(closing)
					}
					s.hs[i].current = true
				}
			case 14: // reset it
				prev := s.current()
				var closing []int
				if prev >= 0 {
					closing = s.prepareDropCurrent(prev)
				}
				s.expectStatus("rmm_reset_current_device_resource", rmm_reset_current_device_resource(nil), testStatusSuccess)
				if prev >= 0 {
					s.hs[prev].current = false
					s.dropped(closing)
				}
				s.check()
			case 15: // free through an equal handle, or through a pass-through adaptor over the handle and then the handle
				if k := s.liveAlloc(next()); k >= 0 {
					a := s.allocs[k]
					if op&0x80 != 0 {
						s.freeTwoWays(k, next())
						break
					}
					j := s.pick(next(), func(h *fzHandle) bool { return h.kind == s.hs[a.via].kind })
					if j < 0 {
						break
					}
					eq, st := isEqual(s.hs[a.via].h, s.hs[j].h)
					s.expectStatus("rmm_resource_is_equal", st, testStatusSuccess)
					if eq {
						s.verify(a)
						s.expectStatus("freeing through an equal handle", rmm_deallocate(toHandle(s.hs[j].h), toStream(a.stream), a.p, cSize(a.n), 256), testStatusSuccess)
						s.allocs = append(s.allocs[:k], s.allocs[k+1:]...)
						s.check()
					}
				}
			case 16: // stale and forged handles are refused
				v := s.stale(next())
				var p unsafe.Pointer
				s.expectStatus("rmm_allocate on a dead handle", rmm_allocate(toHandle(v), nil, 256, 256, &p), testStatusInvalidHandle, testStatusInvalidArg)
				s.expectStatus("rmm_resource_release of a dead handle", rmm_resource_release(toHandle(v)), testStatusInvalidHandle, testStatusInvalidArg)
				o := defaultTestOptions()
				o.upstream = v
				_, st := createWithOptions(kStatistics, o)
				s.expectStatus("a statistics adaptor over a dead handle", st, testStatusInvalidHandle, testStatusInvalidArg)
			case 17: // synchronize
				s.expectStatus("rmm_stream_synchronize", rmm_stream_synchronize(toStream(stream(next()))), testStatusSuccess)
			case 18: // the upstream of a handle, as a new reference, released
				if i := s.pick(next(), func(h *fzHandle) bool { return h.up >= 0 }); i >= 0 {
					v, st := outHandle(func(out *cResourceT) status { return rmm_resource_upstream(toHandle(s.hs[i].h), out) })
					s.expectStatus("rmm_resource_upstream", st, testStatusSuccess)
					if v != s.hs[s.hs[i].up].h {
						s.fatalf("the upstream of handle %d is %#x, not handle %d (%#x)", i, v, s.hs[i].up, s.hs[s.hs[i].up].h)
					}
					s.expectStatus("releasing the upstream's reference", rmm_resource_release(toHandle(v)), testStatusSuccess)
				}
			default: // memory of another resource, freed through one that is not equal to it
				if k := s.liveAlloc(next()); k >= 0 {
					a := s.allocs[k]
					j := s.pick(next(), func(h *fzHandle) bool { return h.up < 0 && !isSub(h.kind) })
					// Memory a base resource of j's kind holds for the
					// allocation's own handle is j's to free (equal
					// resources); a sub-allocator's block is never j's, not
					// even one that starts where its chunk does (lent).
					if j < 0 || !isSub(s.hs[a.owner].kind) && (s.through(a.via, j) || s.sharesBase(a.via, j)) {
						break
					}
					s.refuse("memory of an unrelated resource", rmm_deallocate(toHandle(s.hs[j].h), toStream(a.stream), a.p, cSize(a.n), 256))
					s.check()
				}
			}
		}
		// Free what base resources hold, reset the current resource,
		// release every reference, destroy the streams: the device must
		// have all its memory back.
		s.step = -1
		if prev := s.current(); prev >= 0 {
			closing := s.prepareDropCurrent(prev)
			s.expectStatus("rmm_reset_current_device_resource", rmm_reset_current_device_resource(nil), testStatusSuccess)
			s.hs[prev].current = false
			s.dropped(closing)
		}
		for i := len(s.hs) - 1; i >= 0; i-- {
			for s.hs[i].refs > 0 {
				s.release(i)
			}
		}
		for _, a := range s.allocs {
			s.fatalf("allocation [%p,+%d) through handle %d outlived every handle", a.p, a.n, a.via)
		}
		for _, v := range s.streams[1:] {
			s.expectStatus("rmm_stream_destroy", rmm_stream_destroy(toStream(v)), testStatusSuccess)
		}
		s.expectStatus("rmm_device_synchronize", rmm_device_synchronize(), testStatusSuccess)
		if n := reg.live(); n != startHandles {
			t.Fatalf("%d live handles before the program, %d after it released everything", startHandles, n)
		}
		if n, b := core.BaseAllocations(); n != startBlocks || b != startBytes {
			t.Fatalf("base resources had %d blocks (%d bytes) out before the program, %d (%d bytes) after it released everything",
				startBlocks, startBytes, n, b)
		}
		end, _ := memFree()
		if simulated() && end != start || end+driverSlack < start {
			t.Fatalf("the device had %d bytes free before the program, %d after it released everything", start, end)
		}
	})
}

// driverSlack is how much less free memory the CUDA driver may report after
// a program than before it, all its memory given back: it maps its own
// memory (managed memory's page tables, the context's lazy allocations) in
// 2 MiB pages, and releases some of it later, so that runs of one program
// in one process differ by a page either way (an H100, CUDA 13.0). The
// simulated device keeps nothing of its own: there the free memory must
// match exactly. Leaks of any size show in core.BaseAllocations.
const driverSlack = 2 << 20
