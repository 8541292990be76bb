package core

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
)

// soakDuration is how long each resource of TestSoakStreams runs: a few
// seconds in make test, minutes when asked (-soak 5m, the GPU bundle).
var soakDuration = flag.Duration("soak", 0, "TestSoakStreams: how long each resource runs (0: 2s, 0.5s under the race detector or -short)")

// soakShare is the part of the device's free memory that the soak's
// limiting adaptor allows: a half alone; less where several soaks share
// one GPU (the GPU bundle runs two resources per device at once).
var soakShare = flag.Float64("soak-share", 0.5, "TestSoakStreams: the limit as a part of the device's free memory")

// shortSoakLimit caps the limit of make test's short soak.
const shortSoakLimit = 512 << 20

// soakResources are the resources of the soak, each under a limiting
// adaptor of limit bytes. make returns the resource, what it holds from the device now
// (a counting view of the device below it, or the memory it maps) and its
// closer. bound is the reserved over peak live bytes that make test's short
// run may not pass.
var soakResources = []struct {
	name  string
	bound float64
	make  func(tb testing.TB, limit uintptr) (r Resource, reserved func() uintptr, done func())
}{
	// 1.48-1.79x over 2 s (16 runs on a loaded machine of 2 cores); the
	// bound is the goal.
	{"pool", 2, func(tb testing.TB, _ uintptr) (Resource, func() uintptr, func()) {
		up := newCountingUpstream(tb)
		p, err := NewPool(up, PoolOptions{})
		require.NoError(tb, err)
		return p, up.current, func() { _ = p.Close() }
	}},
	// Fixed-size bins of 256 KiB to 4 MiB (and hidden ones below) over a
	// pool: 2.56-2.92x over 2 s (4 runs; 2.7-3.7x in 21 runs with 32 MiB
	// bin chunks); the goal (2x) is not met.
	{"binning", 3.5, func(tb testing.TB, _ uintptr) (Resource, func() uintptr, func()) {
		up := newCountingUpstream(tb)
		p, err := NewPool(up, PoolOptions{})
		require.NoError(tb, err)
		b, err := NewBinning(p, 18, 22)
		require.NoError(tb, err)
		return b, up.current, func() { _ = b.Close(); _ = p.Close() }
	}},
	// Takes its global arena at once (the limit: by default half the free
	// memory, RMM's default size; -soak-share makes both smaller) and
	// never grows: what it holds over the peak live bytes is the limit over
	// how far the workers' live bytes reach, which is less in 2 s on a busy
	// machine: 2.36-3.08x (12 runs on an idle machine of 2 cores), 2.54-4.74x
	// (24 runs beside other work). No request failed with room in any, since
	// a reclaim and its retry have the global arena to themselves: that is
	// the guard; the bound only catches an arena that fails far more.
	{"arena", 6, func(tb testing.TB, limit uintptr) (Resource, func() uintptr, func()) {
		up := newCountingUpstream(tb)
		a, err := NewArena(up, ArenaOptions{ArenaSize: limit})
		require.NoError(tb, err)
		return a, up.current, func() { _ = a.Close() }
	}},
	// Maps device memory itself (no upstream): what it holds is what it
	// maps. 1.53-2.04x over 2 s (14 runs).
	{"expandable", 2.5, func(tb testing.TB, _ uintptr) (Resource, func() uintptr, func()) {
		e, err := NewExpandable(ExpandableOptions{})
		require.NoError(tb, err)
		return e, e.PoolSize, func() { _ = e.Close() }
	}},
}

// TestSoakStreams: 16 goroutines, each on a stream of its own, allocate
// and free random sizes (mostly small, some up to 64 MiB) for a while,
// together holding up to half the limit of a limiting adaptor over it (the
// limit: half of the device's free memory, or -soak-share of it). It
// measures what each resource holds over the peak live bytes (goal: 2x),
// whether that keeps growing (the most held in the first half against the
// most in the last quarter), and the requests that failed while the limit
// had room.
//
// In make test it runs every resource for 2 s under a limit of at most
// shortSoakLimit and guards each against its
// bound in soakResources (figures there and in docs/sub-allocators.md) and
// against any request failed with room. With -soak DURATION every resource
// runs that long and the figures are only reported: the GPU's soak.
func TestSoakStreams(t *testing.T) {
	d := *soakDuration
	long := d != 0
	brief := false // 0.5 s: the frees and failures are checked, not the bounds
	if !long {
		d = 2 * time.Second
		if testing.Short() || raceEnabled {
			d, brief = 500*time.Millisecond, true
		}
	}
	r0, err := rt()
	require.NoError(t, err)
	free, _, err := r0.MemGetInfo()
	require.NoError(t, err)
	require.True(t, *soakShare > 0 && *soakShare <= 1, "-soak-share %v: want a part in (0, 1]", *soakShare)
	limit := uintptr(float64(free)**soakShare) &^ 255
	if !long {
		// The short run's bounds hold once the live bytes reach their
		// level, which 2 s reach under 512 MiB (the simulated device's
		// default: half of 1 GiB) but not under half an H200: there the
		// pool held 2.06x and the arena, its size fixed at the limit,
		// 7.70x while the live bytes still rose (Run 32).
		limit = min(limit, shortSoakLimit)
	}
	for _, sr := range soakResources {
		t.Run(sr.name, func(t *testing.T) {
			r, reserved, done := sr.make(t, limit)
			defer done()
			lim, err := NewLimiting(r, limit, DefaultAlignment)
			require.NoError(t, err)
			res := runSoak(t, r0, lim, reserved, limit, d)
			t.Logf("%s: %s", sr.name, res)
			if e, ok := r.(*Expandable); ok {
				// Each give-back is a device synchronization and unmapping,
				// each growth a mapping, each settle a device
				// synchronization: what costs time on a GPU.
				t.Logf("%s: %d growths, %d give-backs, %d settles", sr.name, e.growths.Load(), e.releases.Load(), e.settles.Load())
			}
			if long {
				return
			}
			// What the short run guards is the frees (each is checked: a
			// block handed out twice fails its second free, as it did in
			// 1 run of 15 before ReleaseChunks counted locked lists only),
			// the requests that fail with room, and reserved over peak
			// live (goal 2x) against the resource's bound: in the 2 s run
			// only, as 0.5 s under the race detector (50,000 operations)
			// end before the live bytes reach their level (binning
			// 3.6-5.0x, expandable 2.0-2.7x, the pool 1.7-2.1x there).
			assert.Zero(t, res.failedWithRoom, "requests failed while the limit had room: %v", res.firstFailure)
			if !brief {
				assert.LessOrEqual(t, res.ratio(), sr.bound, "reserved over peak live (goal 2x)")
			}
		})
	}
}

type soakResult struct {
	ops, failedWithRoom, failedFull int
	peakLive, peakReserved          uintptr
	midReserved, lateReserved       uintptr // the most in the first half; the most in the last quarter
	firstFailure                    error
}

func (s soakResult) ratio() float64 { return float64(s.peakReserved) / float64(max(s.peakLive, 1)) }

func (s soakResult) String() string {
	return fmt.Sprintf("%d ops, peak live %d MiB, peak reserved %d MiB (%.2fx), reserved up to %d MiB in the first half, up to %d MiB in the last quarter; failed with room %d, at the limit %d",
		s.ops, s.peakLive>>20, s.peakReserved>>20, s.ratio(), s.midReserved>>20, s.lateReserved>>20, s.failedWithRoom, s.failedFull)
}

// soakSize draws a request size: 80 % up to 64 KiB, 18 % up to 4 MiB, 2 %
// up to 64 MiB, log-uniform within each.
func soakSize(rng *rand.Rand) uintptr {
	lo, hi := 8.0, 16.0 // log2 bounds
	switch x := rng.IntN(100); {
	case x >= 98:
		lo, hi = 22, 26
	case x >= 80:
		lo, hi = 16, 22
	}
	e := lo + rng.Float64()*(hi-lo)
	return uintptr(math.Exp2(e))
}

func runSoak(t *testing.T, rt cudart.Runtime, r *Limiting, reserved func() uintptr, limit uintptr, d time.Duration) soakResult {
	const workers = 16
	var (
		live        atomic.Int64
		peakLive    atomic.Int64
		ops         atomic.Int64
		mu          sync.Mutex
		res         soakResult
		stop        atomic.Bool
		wg          sync.WaitGroup
		perWorker   = limit / 2 / workers // together a quarter of the device
		deadline    = time.Now().Add(d)
		half, quart = time.Now().Add(d / 2), time.Now().Add(3 * d / 4)
	)
	for w := range workers {
		s, err := rt.StreamCreate(cudart.StreamFlagNonBlocking)
		require.NoError(t, err)
		defer func() { _ = rt.StreamSynchronize(s); _ = rt.StreamDestroy(s) }()
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			type blk struct{ p, n uintptr }
			var held []blk
			var mine uintptr
			for !stop.Load() {
				if n := soakSize(rng); mine+n <= perWorker && (len(held) == 0 || rng.IntN(2) == 0) {
					p, err := r.Allocate(s, n, DefaultAlignment)
					if err != nil {
						mu.Lock()
						if errors.Is(err, ErrOutOfMemory) && r.AllocatedBytes()+n+n/8 < limit {
							res.failedWithRoom++
							if res.firstFailure == nil {
								res.firstFailure = err
							}
						} else {
							res.failedFull++
						}
						mu.Unlock()
						continue
					}
					held = append(held, blk{p, n})
					mine += n
					if v := live.Add(int64(n)); v > peakLive.Load() {
						peakLive.Store(v) // a hint: races lose a little
					}
				} else if len(held) > 0 {
					i := rng.IntN(len(held))
					b := held[i]
					held[i] = held[len(held)-1]
					held = held[:len(held)-1]
					if err := r.Deallocate(s, b.p, b.n, DefaultAlignment); err != nil {
						t.Errorf("deallocate: %v", err)
						return
					}
					mine -= b.n
					live.Add(-int64(b.n))
				}
				ops.Add(1)
			}
			for _, b := range held {
				_ = r.Deallocate(s, b.p, b.n, DefaultAlignment)
				live.Add(-int64(b.n))
			}
		}()
	}
	for now := time.Now(); now.Before(deadline); now = time.Now() {
		time.Sleep(10 * time.Millisecond)
		cur := reserved()
		mu.Lock()
		res.peakReserved = max(res.peakReserved, cur)
		if now.Before(half) {
			res.midReserved = max(res.midReserved, cur)
		} else if !now.Before(quart) {
			res.lateReserved = max(res.lateReserved, cur)
		}
		mu.Unlock()
	}
	stop.Store(true)
	wg.Wait()
	runtime.KeepAlive(r)
	res.ops = int(ops.Load())
	res.peakLive = uintptr(peakLive.Load())
	res.peakReserved = max(res.peakReserved, reserved())
	return res
}

// current returns the bytes u holds from its inner resource.
func (u *countingUpstream) current() uintptr {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.bytes
}
