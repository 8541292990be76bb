package core

// Fuzz tests of the sub-allocators (pool, arena, fixed_size, binning). Each
// input is a program for a small interpreter: allocate, free (on the
// allocating stream or another), free twice, free with a wrong size, with a
// size of the same class, an interior pointer or a pointer from elsewhere,
// synchronize, release. After every step the interpreter checks that live
// blocks are aligned and never overlap, that their bytes hold what was
// written into them (a block handed out twice is overwritten by its second
// owner), and, for the pool, that the bytes in use add up; after Close,
// that the simulated device has every byte and allocation back.
//
// The seed corpus is in testdata/fuzz/Fuzz<Name>; `go test` runs it, and
// `make test-fuzz` fuzzes each target for a few seconds. See
// docs/fuzzing.md.

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"testing"
	"time"
	"unsafe"

	"github.com/rmmgo/rmmgo/core/internal/addr"
	"github.com/rmmgo/rmmgo/cudart"
	"github.com/rmmgo/rmmgo/cudart/sim"
)

// fuzzMachine is the private simulated device a fuzz target's runs share,
// with two streams of its own besides the default and per-thread ones.
type fuzzMachine struct {
	sim     *sim.Runtime
	streams []Stream
}

func newFuzzMachine(f *testing.F) *fuzzMachine {
	dev := newSimRuntime(f, sim.Config{Devices: 1, MemoryPerDevice: 256 << 20})
	m := &fuzzMachine{sim: dev, streams: []Stream{DefaultStream, 0, 0, cudart.PerThreadDefaultStream}}
	for i := 1; i <= 2; i++ {
		s, err := dev.StreamCreate(cudart.StreamFlagNonBlocking)
		if err != nil {
			f.Fatal(err)
		}
		m.streams[i] = s
	}
	f.Cleanup(func() {
		for _, s := range m.streams[1:3] {
			_ = dev.StreamSynchronize(s)
			_ = dev.StreamDestroy(s)
		}
	})
	return m
}

// fuzzSubject is one sub-allocator under test and what the interpreter must
// know of its rules.
type fuzzSubject struct {
	r Resource
	// wrongSize returns a size the resource must refuse for a block of
	// bytes (pick varies it).
	wrongSize func(bytes uintptr, pick byte) uintptr
	// sameClass returns a size the resource must accept for a block of
	// bytes, as RMM's rules allow (the same 256-byte class; any size up to
	// the block for fixed-size blocks).
	sameClass func(bytes uintptr, pick byte) uintptr
	// used returns the bytes the resource counts as handed out, if it can
	// say.
	used func() (uintptr, bool)
	// release gives idle memory back to the upstream, if the resource can.
	release func() error
	close   func() error
}

// sizeClass256 is sameClass for resources that round to 256 bytes.
func sizeClass256(bytes uintptr, pick byte) uintptr {
	lo := addr.AlignDown(bytes-1, DefaultAlignment) + 1
	return lo + uintptr(pick)%(addr.AlignDown(bytes-1, DefaultAlignment)+DefaultAlignment-lo+1)
}

// otherClass256 is wrongSize for resources that round to 256 bytes.
func otherClass256(bytes uintptr, pick byte) uintptr {
	return bytes + DefaultAlignment*(1+uintptr(pick%4))
}

// fuzzSizes are the sizes the programs allocate: around 256, the 256 KiB
// line between the arena's superblocks and its global heap, 1 MiB, and
// beyond a fixed-size block.
var fuzzSizes = [...]uintptr{1, 8, 255, 256, 257, 1000, 4096, 5000, 65536, 100 << 10, 256 << 10, 256<<10 + 1, 1 << 20, 1<<20 + 17, 3 << 20}

// fuzzProgram runs program against the subject s makes on machine m.
func fuzzProgram(t *testing.T, m *fuzzMachine, program []byte, build func(cuda *Cuda, cfg byte) (fuzzSubject, error)) {
	const maxSteps, maxLive = 256, 48
	defer watchdog(10 * time.Second)()
	sim := m.sim
	startUsed, startLive := sim.UsedBytes(0), sim.LiveAllocations(0)
	cuda, err := newCuda(sim)
	if err != nil {
		t.Fatal(err)
	}
	var cfg byte
	if len(program) > 0 {
		cfg, program = program[0], program[1:]
	}
	s, err := build(cuda, cfg)
	if err != nil {
		if errors.Is(err, ErrOutOfMemory) || errors.Is(err, ErrInvalidArgument) {
			return
		}
		t.Fatalf("making the resource (config %#x): %v", cfg, err)
	}
	r := s.r

	type block struct {
		p, n uintptr
		s    Stream
		tag  byte
	}
	var live []block
	var tag byte
	next := func() byte {
		if len(program) == 0 {
			return 0
		}
		b := program[0]
		program = program[1:]
		return b
	}

	// Streams 1 and 2 may be paused: work queued on them waits, and so does
	// work on any stream told to wait for them. A block freed on a paused
	// stream may be reused by another stream only behind that stream's
	// work. A call that blocks (a synchronization inside the resource, or
	// ours) for more than pauseLimit resumes every stream.
	const pauseLimit = 20 * time.Millisecond
	var paused []Stream
	guard := func(fn func() error) error {
		if len(paused) == 0 {
			return fn()
		}
		keys := append([]Stream(nil), paused...)
		fired := make(chan struct{})
		tm := time.AfterFunc(pauseLimit, func() {
			for _, st := range keys {
				_ = sim.ResumeStream(st)
			}
			close(fired)
		})
		err := fn()
		if !tm.Stop() {
			<-fired
			paused = nil
		}
		return err
	}
	sync := func(st Stream) {
		t.Helper()
		if err := guard(func() error { return sim.StreamSynchronize(st) }); err != nil {
			t.Fatal(err)
		}
	}

	// The bytes of a block are checked when it is freed, in stream order:
	// its first and last 64 bytes are copied out on its stream then, and
	// compared once no stream is paused. If the resource let another
	// stream reuse the block before the copy ran, the copy holds that
	// stream's bytes.
	type pendingCheck struct {
		buf  []byte
		tag  byte
		what string
	}
	var pending []pendingCheck
	checkLater := func(step int, b block) {
		t.Helper()
		for _, off := range edges(b.n) {
			buf := make([]byte, off.n)
			for i := range buf {
				buf[i] = ^b.tag
			}
			if err := sim.MemcpyAsync(uintptr(unsafe.Pointer(&buf[0])), b.p+off.at, off.n, cudart.MemcpyDefault, b.s); err != nil {
				t.Fatalf("step %d: copying out of [%#x,+%d): %v", step, b.p, b.n, err)
			}
			pending = append(pending, pendingCheck{buf, b.tag, fmt.Sprintf("step %d: block [%#x,+%d) of stream %#x, bytes %d..%d", step, b.p, b.n, b.s, off.at, off.at+off.n)})
		}
	}
	settle := func() {
		t.Helper()
		if len(paused) > 0 || len(pending) == 0 {
			return
		}
		if err := guard(sim.DeviceSynchronize); err != nil {
			t.Fatal(err)
		}
		for _, c := range pending {
			for i, v := range c.buf {
				if v != c.tag {
					t.Fatalf("%s: byte %d is %#x, want %#x (handed out twice, or reused before its stream's work ran?)", c.what, i, v, c.tag)
				}
			}
		}
		pending = pending[:0]
	}

	check := func(step int, what string) {
		t.Helper()
		sorted := append([]block(nil), live...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i].p < sorted[j].p })
		var sum uintptr
		for i, b := range sorted {
			if i > 0 && sorted[i-1].p+sorted[i-1].n > b.p {
				t.Fatalf("step %d (%s): live blocks [%#x,+%d) and [%#x,+%d) overlap", step, what, sorted[i-1].p, sorted[i-1].n, b.p, b.n)
			}
			sum += AlignUpUnchecked(b.n, DefaultAlignment)
		}
		if s.used != nil {
			if got, ok := s.used(); ok && got != sum {
				t.Fatalf("step %d (%s): the resource counts %d bytes in use, the live blocks add up to %d", step, what, got, sum)
			}
		}
	}
	// mark writes the block's tag at its first and last 64 bytes, in order
	// on its stream.
	mark := func(b block) {
		t.Helper()
		for _, off := range edges(b.n) {
			if err := sim.MemsetAsync(b.p+off.at, int(b.tag), off.n, b.s); err != nil {
				t.Fatalf("memset of a block of %d bytes at %#x: %v", b.n, b.p, err)
			}
		}
	}
	// mustRefuse runs a free the resource must refuse.
	mustRefuse := func(step int, what string, free func() error) {
		t.Helper()
		err := guard(free)
		if err == nil {
			t.Fatalf("step %d: %s was accepted", step, what)
		}
		if !errors.Is(err, ErrInvalidPointer) && !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("step %d: %s: want an error wrapping ErrInvalidPointer or ErrInvalidArgument, got %v", step, what, err)
		}
	}
	isPaused := func(st Stream) bool {
		for _, p := range paused {
			if p == st {
				return true
			}
		}
		return false
	}
	free := func(step int, i int, st Stream, bytes uintptr, syncFree bool) {
		t.Helper()
		b := live[i]
		checkLater(step, b)
		var err error
		if syncFree && !isPaused(b.s) {
			// DeallocateSync vouches that no work uses the memory: wait
			// for the block's stream first.
			sync(b.s)
			err = guard(func() error { return r.DeallocateSync(b.p, bytes, DefaultAlignment) })
		} else {
			if st != b.s {
				// Freeing on another stream: that stream must first wait
				// for the work on the block's own.
				ev, err := sim.EventCreate(cudart.EventFlagDisableTiming)
				if err == nil {
					err = sim.EventRecord(ev, b.s)
				}
				if err == nil {
					err = sim.StreamWaitEvent(st, ev)
				}
				if err == nil {
					err = sim.EventDestroy(ev)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			err = guard(func() error { return r.Deallocate(st, b.p, bytes, DefaultAlignment) })
		}
		if err != nil {
			t.Fatalf("step %d: freeing [%#x,+%d) with %d bytes on stream %#x (sync %v): %v", step, b.p, b.n, bytes, st, syncFree, err)
		}
		live = append(live[:i], live[i+1:]...)
	}

	for step := 0; step < maxSteps && len(program) > 0; step++ {
		op := next()
		switch op % 16 {
		case 0, 1, 2, 3, 4: // allocate
			if len(live) >= maxLive {
				continue
			}
			n := fuzzSizes[int(next())%len(fuzzSizes)]
			if op&0x80 != 0 { // an odd size near it
				n += uintptr(next())
			}
			st := m.streams[int(next())%len(m.streams)]
			var p uintptr
			var err error
			if op&fSync != 0 {
				err = guard(func() (err error) { p, err = r.AllocateSync(n, DefaultAlignment); return err })
				st = DefaultStream
			} else {
				err = guard(func() (err error) { p, err = r.Allocate(st, n, DefaultAlignment); return err })
			}
			if err != nil {
				if errors.Is(err, ErrOutOfMemory) {
					continue
				}
				t.Fatalf("step %d: allocating %d bytes on stream %#x: %v", step, n, st, err)
			}
			if p == 0 || p%DefaultAlignment != 0 {
				t.Fatalf("step %d: allocating %d bytes gave %#x, not 256-byte aligned", step, n, p)
			}
			tag++
			b := block{p: p, n: n, s: st, tag: tag}
			live = append(live, b)
			check(step, "allocate")
			mark(b)
		case 5, 6, 7: // free, on its stream or another, with its size or one of its class
			if len(live) == 0 {
				continue
			}
			i := int(next()) % len(live)
			st, bytes := live[i].s, live[i].n
			if op&fOther != 0 {
				st = m.streams[int(next())%len(m.streams)]
			}
			if op&fClass != 0 {
				bytes = s.sameClass(bytes, next())
			}
			free(step, i, st, bytes, op&fSync != 0)
			check(step, "free")
		case 8: // free twice: the second is refused
			if len(live) == 0 {
				continue
			}
			i := int(next()) % len(live)
			b := live[i]
			free(step, i, b.s, b.n, false)
			st := m.streams[int(next())%len(m.streams)]
			mustRefuse(step, fmt.Sprintf("freeing [%#x,+%d) again", b.p, b.n), func() error { return r.Deallocate(st, b.p, b.n, DefaultAlignment) })
			check(step, "double free")
		case 9: // a wrong size is refused
			if len(live) == 0 {
				continue
			}
			b := live[int(next())%len(live)]
			bytes := s.wrongSize(b.n, next())
			if op&fZero != 0 {
				bytes = 0 // issue 24: size 0 freed nothing and said yes
			}
			mustRefuse(step, fmt.Sprintf("freeing [%#x,+%d) with %d bytes", b.p, b.n, bytes), func() error { return r.Deallocate(b.s, b.p, bytes, DefaultAlignment) })
			if op&fAlign3 != 0 {
				if err := r.Deallocate(b.s, b.p, b.n, 3); !errors.Is(err, ErrBadAlignment) {
					t.Fatalf("step %d: freeing [%#x,+%d) with alignment 3: want ErrBadAlignment, got %v", step, b.p, b.n, err)
				}
			}
			check(step, "wrong size")
		case 10: // an interior pointer is refused
			if len(live) == 0 {
				continue
			}
			b := live[int(next())%len(live)]
			if op&fOffGrid != 0 {
				// Issue 24: p+1..p+255 shared p's slot in the heap's index.
				off := 1 + uintptr(next())%(DefaultAlignment-1)
				mustRefuse(step, fmt.Sprintf("freeing %#x inside [%#x,+%d)", b.p+off, b.p, b.n),
					func() error { return r.Deallocate(b.s, b.p+off, b.n, DefaultAlignment) })
				check(step, "interior free off the grid")
				continue
			}
			if b.n <= DefaultAlignment {
				continue
			}
			k := 1 + uintptr(next())%((b.n-1)/DefaultAlignment)
			mustRefuse(step, fmt.Sprintf("freeing %#x inside [%#x,+%d)", b.p+k*DefaultAlignment, b.p, b.n),
				func() error {
					return r.Deallocate(b.s, b.p+k*DefaultAlignment, b.n-k*DefaultAlignment, DefaultAlignment)
				})
			check(step, "interior free")
		case 11: // memory from elsewhere is refused
			n := fuzzSizes[int(next())%8]
			p, err := cuda.Allocate(DefaultStream, n, DefaultAlignment)
			if err != nil {
				continue
			}
			mustRefuse(step, fmt.Sprintf("freeing cuda memory [%#x,+%d)", p, n), func() error { return r.Deallocate(DefaultStream, p, n, DefaultAlignment) })
			if err := cuda.Deallocate(DefaultStream, p, n, DefaultAlignment); err != nil {
				t.Fatalf("step %d: cuda refused its own memory: %v", step, err)
			}
			check(step, "foreign free")
		case 12: // synchronize a stream or the device
			if b := next(); b%5 == 4 {
				if err := guard(sim.DeviceSynchronize); err != nil {
					t.Fatal(err)
				}
			} else {
				sync(m.streams[int(b)%len(m.streams)])
			}
		case 13: // give idle memory back
			if s.release != nil {
				if err := guard(s.release); err != nil {
					t.Fatalf("step %d: release: %v", step, err)
				}
				check(step, "release")
			}
		case 15: // pause stream 1 or 2, or resume it
			st := m.streams[1+int(next())%2]
			if isPaused(st) {
				if err := sim.ResumeStream(st); err != nil {
					t.Fatal(err)
				}
				for k, p := range paused {
					if p == st {
						paused = append(paused[:k], paused[k+1:]...)
						break
					}
				}
			} else {
				if err := sim.PauseStream(st); err != nil {
					t.Fatal(err)
				}
				paused = append(paused, st)
			}
		default: // free the oldest block
			if len(live) > 0 {
				free(step, 0, live[0].s, live[0].n, false)
				check(step, "free oldest")
			}
		}
		settle()
	}
	for _, st := range paused {
		if err := sim.ResumeStream(st); err != nil {
			t.Fatal(err)
		}
	}
	paused = nil
	settle()
	for _, b := range live {
		checkLater(-1, b)
	}
	settle()
	// Close with what is left live, or after freeing it, as the program's
	// first byte says.
	if cfg&1 == 0 {
		for len(live) > 0 {
			free(-1, 0, live[0].s, live[0].n, false)
		}
		check(-1, "free all")
	}
	if err := s.close(); err != nil {
		t.Fatalf("closing: %v", err)
	}
	if err := sim.DeviceSynchronize(); err != nil {
		t.Fatal(err)
	}
	settle()
	if used, n := sim.UsedBytes(0), sim.LiveAllocations(0); used != startUsed || n != startLive {
		t.Fatalf("after Close the device has %d bytes in %d allocations in use, %d in %d before the resource was made",
			used, n, startUsed, startLive)
	}
}

// watchdog crashes the process with every goroutine's stack when the
// program runs longer than limit (a hang: the fuzzer has no timeout of its
// own, and a crash keeps the input); call the function it returns when the
// program is done.
func watchdog(limit time.Duration) func() {
	t := time.AfterFunc(limit, func() {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		panic(fmt.Sprintf("the program ran for more than %v: hung?\n%s", limit, buf[:n]))
	})
	return func() { t.Stop() }
}

// edges are the first and last (up to) 64 bytes of a block of n bytes.
func edges(n uintptr) []struct{ at, n uintptr } {
	k := min(n, 64)
	if n <= 128 {
		return []struct{ at, n uintptr }{{0, n}}
	}
	return []struct{ at, n uintptr }{{0, k}, {n - k, k}}
}

// AlignUpUnchecked is AlignUp for sizes that cannot overflow.
func AlignUpUnchecked(n, a uintptr) uintptr { return (n + a - 1) &^ (a - 1) }

// The interpreter's operations (the low four bits of an op byte) and flags
// (its high bits), for writing seed programs.
const (
	opAlloc      = 0  // size index, [extra bytes if fOdd], stream index
	opFree       = 5  // block index, [stream index if fOther], [size pick if fClass]
	opDouble     = 8  // block index, stream index
	opWrong      = 9  // block index, pick
	opInterior   = 10 // block index, pick
	opForeign    = 11 // size index
	opSync       = 12 // stream index (4: the device)
	opRelease    = 13
	opFreeOldest = 14
	opPause      = 15 // stream 1 or 2 (pause it, or resume it)

	fOdd   = 0x80 // opAlloc: add a byte to the size
	fSync  = 0x40 // opAlloc, opFree: the Sync call
	fOther = 0x80 // opFree: on a stream given next
	fClass = 0x20 // opFree: with another size of the same class

	fZero    = 0x80 // opWrong: size 0 instead
	fAlign3  = 0x40 // opWrong: then the right size with alignment 3
	fOffGrid = 0x80 // opInterior: an offset 1..255 from the block's start
)

// fuzzSeeds adds the programs every target starts from. A program's first
// byte configures the resource (bit 0: close with blocks still live).
func fuzzSeeds(f *testing.F) {
	prog := func(b ...byte) []byte { return b }
	f.Add(prog(0))
	// Allocate on two streams, free both, close with nothing live.
	f.Add(prog(0, opAlloc, 6, 1, opAlloc, 13, 2, opFree, 0, opFree, 0))
	// The refusals: a wrong size, an interior pointer, a double free,
	// memory from elsewhere.
	f.Add(prog(2, opAlloc, 6, 1, opAlloc, 9, 2, opAlloc, 13, 0,
		opWrong, 0, 3, opWrong, 1, 200, opWrong, 2, 7,
		opInterior, 1, 5, opInterior, 2, 1,
		opDouble, 0, 2, opForeign, 6, opDouble, 0, 0, opFreeOldest))
	// Issue 24: interior pointers off the 256-byte grid, size 0, alignment 3.
	f.Add(prog(2, opAlloc, 6, 1, opAlloc, 13, 2, opAlloc, 3, 0,
		opInterior|fOffGrid, 0, 0, opInterior|fOffGrid, 1, 127, opInterior|fOffGrid, 2, 254,
		opWrong|fZero, 0, 0, opWrong|fAlign3, 1, 9, opWrong|fZero|fAlign3, 2, 1,
		opAlloc, 6, 1, opAlloc, 13, 2, opFreeOldest, opFreeOldest))
	// Sizes of a class, frees on other streams, odd sizes, syncs, release.
	f.Add(prog(4, opAlloc|fOdd, 3, 7, 1, opAlloc|fOdd, 5, 9, 2, opAlloc, 10, 3, opAlloc, 11, 0,
		opFree|fOther|fClass, 0, 2, 77, opSync, 1, opFree|fOther, 1, 0, opSync, 4, opRelease,
		opFree|fClass, 0, 200, opAlloc, 12, 1, opAlloc, 14, 2))
	// The Sync calls; close with blocks live.
	f.Add(prog(3, opAlloc|fSync, 6, 0, opAlloc|fSync, 1, 0, opAlloc, 8, 3,
		opFree|fSync, 0, opAlloc, 2, 1, opRelease, opFreeOldest))
	// A paused stream: blocks freed on it may be reused by other streams
	// only behind its work; a sync allocation waits (and resumes it).
	f.Add(prog(0, opPause, 0, opAlloc, 6, 1, opAlloc, 6, 1, opFree, 0, opAlloc, 6, 2, opAlloc, 6, 0,
		opFree|fOther, 0, 2, opAlloc, 6, 3, opAlloc|fSync, 6, 0, opPause, 1, opAlloc, 13, 2, opFree, 0,
		opAlloc, 13, 1, opPause, 1, opPause, 0, opFreeOldest, opFreeOldest))
	// Many blocks of one size: fixed-size blocks from several chunks.
	many := prog(0x11)
	for i := 0; i < 40; i++ {
		many = append(many, opAlloc, 4, byte(i%4))
	}
	for i := 0; i < 20; i++ {
		many = append(many, opFree|fOther, byte(i*7), byte(i%3))
	}
	f.Add(many)
}

func FuzzPool(f *testing.F) {
	m := newFuzzMachine(f)
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, program []byte) {
		fuzzProgram(t, m, program, func(cuda *Cuda, cfg byte) (fuzzSubject, error) {
			opts := PoolOptions{MaximumSize: 32 << 20}
			if cfg&2 != 0 {
				opts.InitialSize = 1 << 20
			}
			p, err := newPool(m.sim, cuda, opts)
			if err != nil {
				return fuzzSubject{}, err
			}
			return fuzzSubject{
				r: p, wrongSize: otherClass256, sameClass: sizeClass256,
				used:    func() (uintptr, bool) { return p.UsedBytes(), true },
				release: p.Release, close: p.Close,
			}, nil
		})
	})
}

func FuzzArena(f *testing.F) {
	m := newFuzzMachine(f)
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, program []byte) {
		fuzzProgram(t, m, program, func(cuda *Cuda, cfg byte) (fuzzSubject, error) {
			size := uintptr(8 << 20)
			if cfg&2 != 0 {
				size = 2 << 20
			}
			a, err := newArena(m.sim, cuda, ArenaOptions{ArenaSize: size})
			if err != nil {
				return fuzzSubject{}, err
			}
			return fuzzSubject{r: a, wrongSize: otherClass256, sameClass: sizeClass256, close: a.Close}, nil
		})
	})
}

func FuzzFixedSize(f *testing.F) {
	m := newFuzzMachine(f)
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, program []byte) {
		fuzzProgram(t, m, program, func(cuda *Cuda, cfg byte) (fuzzSubject, error) {
			block := [...]uintptr{256, 1024, 4096, 65536, 1 << 20}[int(cfg>>1)%5]
			per := [...]int{1, 3, 16}[int(cfg>>4)%3]
			fs, err := newFixedSize(m.sim, cuda, FixedSizeOptions{BlockSize: block, BlocksToPreallocate: per})
			if err != nil {
				return fuzzSubject{}, err
			}
			return fuzzSubject{
				r: fs,
				// RMM's rule: any size that fits the block maps to it.
				sameClass: func(_ uintptr, pick byte) uintptr { return 1 + uintptr(pick)*block/256%block },
				wrongSize: func(_ uintptr, pick byte) uintptr { return block + 1 + uintptr(pick) },
				close:     fs.Close,
			}, nil
		})
	})
}

func FuzzBinning(f *testing.F) {
	m := newFuzzMachine(f)
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, program []byte) {
		fuzzProgram(t, m, program, func(cuda *Cuda, cfg byte) (fuzzSubject, error) {
			pool, err := newPool(m.sim, cuda, PoolOptions{MaximumSize: 64 << 20})
			if err != nil {
				return fuzzSubject{}, err
			}
			// Bins of 256 B .. 2 KiB up to 64 KiB (each preallocates 128
			// blocks from the pool).
			minExp := 8 + int(cfg>>1)%4
			maxExp := minExp + int(cfg>>3)%6
			b, err := newBinning(m.sim, pool, minExp, maxExp)
			if err != nil {
				return fuzzSubject{}, errors.Join(err, pool.Close())
			}
			maxBin := uintptr(1) << maxExp
			// sizes are the bins, the hidden ones below 2^minExp too.
			var sizes []uintptr
			for _, bn := range b.bins.Load().bins {
				sizes = append(sizes, bn.size)
			}
			// binOf is the bin a size goes to; 0 past the last bin (the pool).
			binOf := func(n uintptr) uintptr {
				for _, s := range sizes {
					if n <= s {
						return s
					}
				}
				return 0
			}
			return fuzzSubject{
				r: b,
				sameClass: func(n uintptr, pick byte) uintptr {
					bin := binOf(n)
					if bin == 0 {
						return sizeClass256(n, pick)
					}
					lo := uintptr(1)
					for _, s := range sizes {
						if s < bin {
							lo = s + 1
						}
					}
					return lo + uintptr(pick)%(bin-lo+1)
				},
				wrongSize: func(n uintptr, pick byte) uintptr {
					if bin := binOf(n); bin != 0 {
						return bin + 1 + uintptr(pick)%256 // the next bin, or the pool
					}
					return otherClass256(max(n, maxBin), pick)
				},
				close: func() error { return errors.Join(b.Close(), pool.Close()) },
			}, nil
		})
	})
}
