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

// soakResources are the resources of the soak, each over a counting view
// of the device (what it holds from it) and under a limiting adaptor.
var soakResources = []struct {
	name string
	make func(tb testing.TB, up Resource) (Resource, func())
}{
	{"pool", func(tb testing.TB, up Resource) (Resource, func()) {
		p, err := NewPool(up, PoolOptions{})
		require.NoError(tb, err)
		return p, func() { _ = p.Close() }
	}},
	{"binning", func(tb testing.TB, up Resource) (Resource, func()) {
		p, err := NewPool(up, PoolOptions{})
		require.NoError(tb, err)
		b, err := NewBinning(p, 18, 22)
		require.NoError(tb, err)
		return b, func() { _ = b.Close(); _ = p.Close() }
	}},
	{"arena", func(tb testing.TB, up Resource) (Resource, func()) {
		a, err := NewArena(up, ArenaOptions{})
		require.NoError(tb, err)
		return a, func() { _ = a.Close() }
	}},
}

// TestSoakStreams: 16 goroutines, each on a stream of its own, allocate
// and free random sizes (mostly small, some up to 64 MiB) for a while,
// together holding up to a quarter of the device's memory, under a
// limiting adaptor of half of it. It measures what each resource holds
// over the peak live bytes, whether that keeps growing, and the requests
// that failed while the limit had room.
//
// In make test it runs the pool for 2 s and guards today's figures (goal:
// 2x; measured 1.57-1.87x on the simulated device over 2 s, 1.71-1.96x
// over 60 s, where it is not flat yet: 175-208 MiB at half-time, up to
// 330-347 MiB in the last quarter). It was 4.4-5.7x while small and
// large blocks shared chunks: small blocks left live in every chunk kept
// the large requests out of the free memory around them, and the pool
// grew beside it; before the home list and giving back before growing it
// kept growing, to 15x in 5 minutes.
// With -soak DURATION every resource runs that long and the figures are
// only reported (binning holds 5-6x, filling the simulated device, and
// fails requests the limit has room for; the arena fails requests it has
// room for): the GPU bundle's soak.
func TestSoakStreams(t *testing.T) {
	d := *soakDuration
	long := d != 0
	if !long {
		d = 2 * time.Second
		if testing.Short() || raceEnabled {
			d = 500 * time.Millisecond
		}
	}
	r0, err := rt()
	require.NoError(t, err)
	free, _, err := r0.MemGetInfo()
	require.NoError(t, err)
	limit := uintptr(free/2) &^ 255
	for _, sr := range soakResources {
		if !long && sr.name != "pool" {
			continue
		}
		t.Run(sr.name, func(t *testing.T) {
			up := newCountingUpstream(t)
			r, done := sr.make(t, up)
			defer done()
			lim, err := NewLimiting(r, limit, DefaultAlignment)
			require.NoError(t, err)
			res := runSoak(t, r0, lim, up, limit, d)
			t.Logf("%s: %s", sr.name, res)
			if long {
				return
			}
			// A loose bound: 2 s on a loaded CI machine of 2 cores vary a
			// lot (what the pool holds moved between 550 and 870 MiB over
			// runs; once it rose 1.25x from half-time to the last quarter).
			// What the short run guards is the frees (each is checked: a
			// block handed out twice fails its second free, as it did in
			// 1 run of 15 before ReleaseChunks counted locked lists only)
			// and the requests that fail with room.
			assert.Zero(t, res.failedWithRoom, "requests failed while the limit had room: %v", res.firstFailure)
			assert.LessOrEqual(t, res.ratio(), 2.5, "reserved over peak live (goal 2x)")
		})
	}
}

type soakResult struct {
	ops, failedWithRoom, failedFull int
	peakLive, peakReserved          uintptr
	midReserved, lateReserved       uintptr // at the end of the first half; the most in the last quarter
	firstFailure                    error
}

func (s soakResult) ratio() float64 { return float64(s.peakReserved) / float64(max(s.peakLive, 1)) }

func (s soakResult) String() string {
	return fmt.Sprintf("%d ops, peak live %d MiB, peak reserved %d MiB (%.2fx), reserved at half-time %d MiB, in the last quarter up to %d MiB; failed with room %d, at the limit %d",
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

func runSoak(t *testing.T, rt cudart.Runtime, r *Limiting, up *countingUpstream, limit uintptr, d time.Duration) soakResult {
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
		cur := up.current()
		mu.Lock()
		res.peakReserved = max(res.peakReserved, cur)
		if now.Before(half) {
			res.midReserved = cur
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
	res.peakReserved = max(res.peakReserved, up.current())
	return res
}

// current returns the bytes u holds from its inner resource.
func (u *countingUpstream) current() uintptr {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.bytes
}
