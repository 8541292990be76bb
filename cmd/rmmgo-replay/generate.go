package main

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/core/eventlog"
)

// genConfig describes a synthetic workload.
type genConfig struct {
	Events   int    // rows to write
	Threads  int    // logged threads
	Seed     uint64 // random seed: the same seed gives the same log
	PeakLive uint64 // the live bytes the workload rises to, twice
}

type genAlloc struct {
	ptr, size uintptr
	stream    core.Stream
	leak      bool // never freed
}

// generate makes a synthetic multi-threaded event log: live memory rises
// to PeakLive, falls back, and rises again, while each thread allocates a
// mixture of small (256 B to 64 KiB), medium (to 4 MiB) and large (to
// PeakLive/8) blocks and frees at random, mostly its own allocations and
// sometimes another thread's. Most threads allocate on a stream of their
// own, the others on the default stream. One small allocation in 200 is
// never freed (a leak the replay reports).
func generate(cfg genConfig) []eventlog.Event {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	threads := max(1, cfg.Threads)
	tids := make([]uint64, threads)
	streams := make([]core.Stream, threads)
	for k := range tids {
		tids[k] = uint64(41000 + 7*k)
		if k%4 != 3 {
			streams[k] = core.Stream(0x5581a0c3e010 + 0x240*uintptr(k))
		}
	}
	owned := make([][]genAlloc, threads)
	var liveBytes uint64
	nextPtr := uintptr(0x7f3a40000000)
	clock := 9 * time.Hour
	large := max(4<<20, cfg.PeakLive/8)
	logUniform := func(lo, hi uint64) uintptr {
		if hi <= lo {
			return uintptr(lo)
		}
		v := math.Exp(math.Log(float64(lo)) + rng.Float64()*(math.Log(float64(hi))-math.Log(float64(lo))))
		return uintptr(v)
	}
	size := func() uintptr {
		switch r := rng.Float64(); {
		case r < 0.70:
			return logUniform(256, 64<<10)
		case r < 0.95:
			return logUniform(64<<10, 4<<20)
		default:
			return logUniform(4<<20, large)
		}
	}
	events := make([]eventlog.Event, 0, cfg.Events)
	for len(events) < cfg.Events {
		t := float64(len(events)) / float64(max(1, cfg.Events))
		target := float64(cfg.PeakLive) * 0.5 * (1 - math.Cos(4*math.Pi*t))
		k := rng.IntN(threads)
		clock += time.Duration(1+rng.IntN(40)) * time.Microsecond
		e := eventlog.Event{Thread: tids[k], Time: clock}

		// Pick what to free: this thread's, or sometimes another's.
		from := k
		if rng.IntN(10) == 0 {
			from = rng.IntN(threads)
		}
		if len(owned[from]) > 0 && (float64(liveBytes) >= target || rng.IntN(10) == 0) {
			j := rng.IntN(len(owned[from]))
			if a := owned[from][j]; !a.leak {
				owned[from][j] = owned[from][len(owned[from])-1]
				owned[from] = owned[from][:len(owned[from])-1]
				liveBytes -= uint64(a.size)
				e.Action, e.Pointer, e.Size, e.Stream = eventlog.ActionFree, a.ptr, a.size, a.stream
				events = append(events, e)
				continue
			}
		}
		n := size()
		if float64(liveBytes+uint64(n)) > float64(cfg.PeakLive)*1.02 {
			n = 256 // stay near the peak
		}
		a := genAlloc{ptr: nextPtr, size: n, stream: streams[k], leak: n < 64<<10 && rng.IntN(200) == 0}
		nextPtr += (n + 0x1ff) &^ 0xff
		owned[k] = append(owned[k], a)
		liveBytes += uint64(n)
		e.Action, e.Pointer, e.Size, e.Stream = eventlog.ActionAllocate, a.ptr, a.size, a.stream
		events = append(events, e)
	}
	return events
}
