package core_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/bench/workload"
	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/cudart"
)

// fragResource is a resource under the fragmentation workload, with the
// peak bytes it held from the device.
type fragResource struct {
	name string
	make func(tb testing.TB, capBytes uintptr) (core.Resource, func() uintptr, func())
}

var fragResources = []fragResource{
	{"pool", func(tb testing.TB, capBytes uintptr) (core.Resource, func() uintptr, func()) {
		c, err := core.NewCuda()
		require.NoError(tb, err)
		up := workload.NewCounting(c)
		p, err := core.NewPool(up, core.PoolOptions{InitialSize: 0, MaximumSize: capBytes})
		require.NoError(tb, err)
		return p, up.Peak, func() { _ = p.Close() }
	}},
	{"expandable", func(tb testing.TB, capBytes uintptr) (core.Resource, func() uintptr, func()) {
		e, err := core.NewExpandable(core.ExpandableOptions{MaximumSize: capBytes})
		require.NoError(tb, err)
		return e, e.PeakPoolSize, func() { _ = e.Close() }
	}},
	// Keeping nothing it does not use: free granules go back before any
	// growth (one device synchronization each time).
	{"expandable_release", func(tb testing.TB, capBytes uintptr) (core.Resource, func() uintptr, func()) {
		e, err := core.NewExpandable(core.ExpandableOptions{MaximumSize: capBytes, ReleaseThreshold: core.DefaultAlignment})
		require.NoError(tb, err)
		return e, e.PeakPoolSize, func() { _ = e.Close() }
	}},
}

// TestFragmentationWorkload: under a cap of 256 MiB every resource serves
// every big request the cap has room for (the pool by giving back wholly
// free chunks before it grows), and the expandable resource with a release
// threshold holds little more than what is live.
//
// The workload runs on one goroutine; with one P its frees all land in one
// shard's lists, so the figures measure placement, not how the scheduler
// (the race detector's above all) moves the goroutine between Ps.
func TestFragmentationWorkload(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const capBytes = 256 << 20
	f := workload.FragmentationFor(capBytes)
	got := map[string]workload.FragResult{}
	eff := map[string]float64{}
	for _, fr := range fragResources {
		r, peak, done := fr.make(t, capBytes)
		res, err := f.Run(r, core.DefaultStream)
		require.NoError(t, err, fr.name)
		got[fr.name], eff[fr.name] = res, float64(peak())/float64(res.PeakLive)
		done()
		t.Logf("%s: %d of %d big requests served, %d failed with room; reserved/live %.2f", fr.name, res.BigServed, res.Big, res.BigWithRoom, eff[fr.name])
	}
	assert.Zero(t, got["pool"].BigWithRoom, "the pool fails no request the cap has room for")
	assert.Equal(t, got["expandable"].Big, got["expandable"].BigServed)
	assert.Equal(t, got["expandable_release"].Big, got["expandable_release"].BigServed)
	assert.Less(t, eff["expandable_release"], eff["expandable"])
	assert.Less(t, eff["expandable_release"], 1.35, "granules pinned by small blocks aside, reserved is live")
	// Small and large blocks in chunks of their own: 1.10 (1.66
	// when small blocks shared the large ones' chunks).
	assert.Less(t, eff["pool"], 1.2, "the pool's small blocks pin no large chunk")
}

// BenchmarkFragmentation runs the fragmentation workload (bench/README.md)
// under a cap of a quarter of the free device memory, at most 8 GiB: ns/op
// per allocation or free, the big requests served and failed with room per
// run, and the peak bytes held from the device over the peak live bytes.
func BenchmarkFragmentation(b *testing.B) {
	for _, fr := range fragResources {
		b.Run(fr.name, func(b *testing.B) {
			free, _ := deviceFree(b)
			capBytes := min(uintptr(8<<30), uintptr(free/4)) &^ (2<<20 - 1)
			f := workload.FragmentationFor(capBytes)
			r, peak, done := fr.make(b, capBytes)
			defer done()
			var res workload.FragResult
			var peakLive uintptr
			ops := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var err error
				if res, err = f.Run(r, core.DefaultStream); err != nil {
					b.Fatal(err)
				}
				ops += res.Ops
				peakLive = max(peakLive, res.PeakLive)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(ops), "ns/op")
			b.ReportMetric(float64(res.BigServed), "big-served")
			b.ReportMetric(float64(res.BigWithRoom), "big-failed-with-room")
			b.ReportMetric(float64(peak())/float64(peakLive), "efficiency")
		})
	}
}

func deviceFree(tb testing.TB) (uint64, error) {
	r, err := cudart.Default()
	if err != nil {
		tb.Fatal(err)
	}
	free, _, err := r.MemGetInfo()
	if err != nil {
		tb.Fatal(fmt.Errorf("MemGetInfo: %w", err))
	}
	return free, nil
}
