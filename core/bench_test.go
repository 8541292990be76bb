package core_test

// Benchmarks of the sub-allocators on the random-allocations workload
// (bench/workload), beside cudaMalloc and cudaMallocAsync.
//
//	go test ./core -run '^$' -bench RandomAllocations -count 5
//
// Each sub-benchmark is case/resource/goroutines. ns/op is the time per
// operation (an allocation or a free), Mops/s the aggregate rate over all
// goroutines, and efficiency (one goroutine only) the peak bytes the
// resource held from its upstream over the peak live bytes (for the arena:
// the peak bytes of its global arena lent out, sampled every 64
// operations; for expandable: the peak bytes of device memory it mapped). Pool and binning grow from nothing (InitialSize 0) so that
// efficiency means something; binning has fixed-size bins of 256 B to
// 1 MiB over a pool. Each sub-benchmark makes its resource and runs the
// workload once untimed, so that the timed runs find it grown to what the
// workload needs, as bench/random_allocations.c times its (pool grown
// beforehand, repetitions on one resource): ns/op is the allocator's, not
// the upstream's cudaMalloc calls during growth. On the simulated device
// the figures only show that the code runs; the GPU figures are in
// docs/benchmarks.md.

import (
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/rmmgo/rmmgo/bench/workload"
	"github.com/rmmgo/rmmgo/core"
	"github.com/rmmgo/rmmgo/cudart"
)

// benchResource makes one resource under test and reports how much it
// holds from its upstream.
type benchResource struct {
	name string
	// fits reports whether the resource can serve the case at all.
	fits func(c workload.Case) bool
	// make returns the resource, a function sampling the bytes it holds
	// (nil when efficiency is not reported) and a clean-up.
	make func(b *testing.B, c workload.Case, maxUsage uintptr) (core.Resource, func() uintptr, func())
}

func all(workload.Case) bool { return true }

func mustCuda(b *testing.B) *core.Cuda {
	b.Helper()
	c, err := core.NewCuda()
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func closeOrFail(b *testing.B, c io.Closer) {
	if err := c.Close(); err != nil {
		b.Errorf("Close: %v", err)
	}
}

var benchResources = []benchResource{
	{"pool", all, func(b *testing.B, c workload.Case, maxUsage uintptr) (core.Resource, func() uintptr, func()) {
		up := workload.NewCounting(mustCuda(b))
		p, err := core.NewPool(up, core.PoolOptions{})
		if err != nil {
			b.Fatal(err)
		}
		return p, up.Peak, func() { closeOrFail(b, p) }
	}},
	{"binning", all, func(b *testing.B, c workload.Case, maxUsage uintptr) (core.Resource, func() uintptr, func()) {
		up := workload.NewCounting(mustCuda(b))
		p, err := core.NewPool(up, core.PoolOptions{})
		if err != nil {
			b.Fatal(err)
		}
		bn, err := core.NewBinning(p, 8, 20)
		if err != nil {
			b.Fatal(err)
		}
		return bn, up.Peak, func() { closeOrFail(b, bn); closeOrFail(b, p) }
	}},
	{"fixed_size", func(c workload.Case) bool { return c.MaxSize <= 1<<20 }, func(b *testing.B, c workload.Case, maxUsage uintptr) (core.Resource, func() uintptr, func()) {
		up := workload.NewCounting(mustCuda(b))
		f, err := core.NewFixedSize(up, core.FixedSizeOptions{BlockSize: c.MaxSize})
		if err != nil {
			b.Fatal(err)
		}
		return f, up.Peak, func() { closeOrFail(b, f) }
	}},
	{"arena", all, func(b *testing.B, c workload.Case, maxUsage uintptr) (core.Resource, func() uintptr, func()) {
		size := arenaSizeFor(b, maxUsage)
		a, err := core.NewArena(mustCuda(b), core.ArenaOptions{ArenaSize: size})
		if err != nil {
			b.Fatal(err)
		}
		var peak uintptr
		sample := func() uintptr {
			peak = max(peak, core.ArenaLentBytes(a))
			return peak
		}
		return a, sample, func() { closeOrFail(b, a) }
	}},
	{"expandable", all, func(b *testing.B, c workload.Case, maxUsage uintptr) (core.Resource, func() uintptr, func()) {
		e, err := core.NewExpandable(core.ExpandableOptions{})
		if err != nil {
			b.Skipf("expandable: %v", err)
		}
		return e, e.PeakPoolSize, func() { closeOrFail(b, e) }
	}},
	{"cuda_async", all, func(b *testing.B, c workload.Case, maxUsage uintptr) (core.Resource, func() uintptr, func()) {
		a, err := core.NewCudaAsync(core.CudaAsyncOptions{})
		if err != nil {
			b.Skipf("cuda_async: %v", err)
		}
		return a, nil, func() { closeOrFail(b, a) }
	}},
	{"cuda", all, func(b *testing.B, c workload.Case, maxUsage uintptr) (core.Resource, func() uintptr, func()) {
		return mustCuda(b), nil, func() {}
	}},
}

// maxUsageFor bounds the live bytes of the whole run: 16,000 MiB on the GPU
// machine, a quarter of the free memory where that is less (the simulated
// device), shared by the goroutines.
func maxUsageFor(b *testing.B, goroutines int) uintptr {
	r, err := cudart.Default()
	if err != nil {
		b.Fatal(err)
	}
	free, _, err := r.MemGetInfo()
	if err != nil {
		b.Fatal(err)
	}
	u := min(workload.GPUMaxUsage, uintptr(free/4))
	return u / uintptr(goroutines)
}

// arenaSizeFor sizes the arena for a run bounded by maxUsage per goroutine:
// twice the bound, within half the free memory.
func arenaSizeFor(b *testing.B, total uintptr) uintptr {
	r, _ := cudart.Default()
	free, _, err := r.MemGetInfo()
	if err != nil {
		b.Fatal(err)
	}
	return min(2*total, uintptr(free/2)) &^ 255
}

func BenchmarkRandomAllocations(b *testing.B) {
	for _, c := range workload.Cases {
		for _, br := range benchResources {
			if !br.fits(c) {
				continue
			}
			for _, g := range []int{1, 4, 16} {
				b.Run(fmt.Sprintf("%s/%s/goroutines=%d", c.Name, br.name, g), func(b *testing.B) {
					benchRandom(b, c, br, g)
				})
			}
		}
	}
}

// BenchmarkRandomAllocationsOnStreams is BenchmarkRandomAllocations for the
// sub-allocators with each goroutine on a created stream of its own: the
// path of streams other than the legacy default one (known by
// cudaStreamGetId on every call, and settled when another stream wants
// their memory), small and medium cases.
func BenchmarkRandomAllocationsOnStreams(b *testing.B) {
	for _, c := range []workload.Case{workload.Small, workload.Medium} {
		for _, br := range benchResources {
			if !br.fits(c) || br.name == "cuda" || br.name == "cuda_async" {
				continue
			}
			for _, g := range []int{1, 4} {
				b.Run(fmt.Sprintf("%s/%s/goroutines=%d", c.Name, br.name, g), func(b *testing.B) {
					benchRandomOn(b, c, br, g, benchStreams(b, g))
				})
			}
		}
	}
}

// benchStreams creates n streams, destroyed when the benchmark ends.
func benchStreams(b *testing.B, n int) []core.Stream {
	r, err := cudart.Default()
	if err != nil {
		b.Fatal(err)
	}
	ss := make([]core.Stream, n)
	for i := range ss {
		if ss[i], err = r.StreamCreate(cudart.StreamFlagNonBlocking); err != nil {
			b.Fatal(err)
		}
		s := ss[i]
		b.Cleanup(func() { _ = r.StreamSynchronize(s); _ = r.StreamDestroy(s) })
	}
	return ss
}

func benchRandom(b *testing.B, c workload.Case, br benchResource, goroutines int) {
	benchRandomOn(b, c, br, goroutines, nil)
}

// benchRandomOn runs the workload with goroutine i on streams[i] (the
// default stream when streams is nil).
func benchRandomOn(b *testing.B, c workload.Case, br benchResource, goroutines int, streams []core.Stream) {
	maxUsage := maxUsageFor(b, goroutines)
	r, held, done := br.make(b, c, maxUsage*uintptr(goroutines))
	defer done()
	plans := make([]*workload.Plan, goroutines)
	for i := range plans {
		plans[i] = workload.NewPlan(c, maxUsage, workload.DefaultSeed+uint64(i))
	}
	var sample func()
	every := 0
	if br.name == "arena" {
		var mu sync.Mutex
		every, sample = 64, func() { mu.Lock(); held(); mu.Unlock() }
	}
	// One untimed run first, as bench/random_allocations.c's resources
	// are warm when it times them: the resource grows to what the
	// workload needs (efficiency reports that growth), and the timed runs
	// measure the allocator, not the upstream's cudaMalloc calls or the
	// first touch of the metadata pages.
	res, _, err := workload.RunParallelSampled(r, plans, streams, every, sample)
	if err != nil {
		b.Fatal(err)
	}
	peakLive := res.PeakLive
	var ops int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, _, err := workload.RunParallelSampled(r, plans, streams, every, sample)
		if err != nil {
			b.Fatal(err)
		}
		ops += res.Ops
		peakLive = max(peakLive, res.PeakLive)
		if res.FailedAllocs > 0 {
			b.Logf("%d allocations failed (the workload freed instead)", res.FailedAllocs)
		}
	}
	b.StopTimer()
	elapsed := float64(b.Elapsed().Nanoseconds())
	b.ReportMetric(elapsed/float64(ops), "ns/op")
	b.ReportMetric(float64(ops)/elapsed*1e3, "Mops/s")
	// Efficiency only for one goroutine: with more, the peaks of the
	// goroutines need not coincide, and their sum overstates the peak.
	if held != nil && peakLive > 0 && goroutines == 1 {
		b.ReportMetric(float64(held())/float64(peakLive), "efficiency")
	}
}

// BenchmarkLiveAllocations measures one allocation plus one free (ns/op is
// per operation, half of that pair) with n allocations live, random sizes
// up to 512 bytes, freeing a random live one: the figure must stay flat
// from a thousand to a million live allocations (no linear scans; what
// grows is cache misses on the larger metadata).
func BenchmarkLiveAllocations(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000, 1_000_000} {
		for _, name := range []string{"pool", "arena", "binning"} {
			b.Run(fmt.Sprintf("%s/live=%d", name, n), func(b *testing.B) { benchLive(b, name, n) })
		}
	}
}

func benchLive(b *testing.B, name string, n int) {
	const maxSize = 512
	var r core.Resource
	var done func()
	switch name {
	case "pool":
		p, err := core.NewPool(mustCuda(b), core.PoolOptions{InitialSize: uintptr(n) * maxSize &^ 255})
		if err != nil {
			b.Skip(err)
		}
		r, done = p, func() { closeOrFail(b, p) }
	case "arena":
		a, err := core.NewArena(mustCuda(b), core.ArenaOptions{ArenaSize: uintptr(n)*maxSize*2 + 16<<20})
		if err != nil {
			b.Skip(err)
		}
		r, done = a, func() { closeOrFail(b, a) }
	case "binning":
		p, err := core.NewPool(mustCuda(b), core.PoolOptions{InitialSize: uintptr(n) * maxSize &^ 255})
		if err != nil {
			b.Skip(err)
		}
		bn, err := core.NewBinning(p, 8, 9)
		if err != nil {
			b.Skip(err)
		}
		r, done = bn, func() { closeOrFail(b, bn); closeOrFail(b, p) }
	}
	defer done()
	type a struct{ p, n uintptr }
	live := make([]a, n)
	rng := uint64(88172645463325252)
	next := func() uint64 { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng }
	for i := range live {
		sz := uintptr(next()%maxSize) + 1
		p, err := r.Allocate(core.DefaultStream, sz, 256)
		if err != nil {
			b.Fatal(err)
		}
		live[i] = a{p, sz}
	}
	// Pre-draw sizes and victims so that the loop times the allocator.
	const draws = 1 << 16
	sizes := make([]uintptr, draws)
	victims := make([]int, draws)
	for i := range sizes {
		sizes[i] = uintptr(next()%maxSize) + 1
		victims[i] = int(next() % uint64(n))
	}
	// The loop reads the entry of a random live allocation: with a million
	// of them (16 MiB) that read misses the cache, a miss of the benchmark,
	// not of the allocator, on which the free then waits. So the loop
	// touches the entry it will free lookAhead iterations later, and that
	// miss overlaps the allocator's work.
	const lookAhead = 8
	var touched uintptr
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := victims[i&(draws-1)]
		touched += live[victims[(i+lookAhead)&(draws-1)]].n
		if err := r.Deallocate(core.DefaultStream, live[k].p, live[k].n, 256); err != nil {
			b.Fatal(err)
		}
		sz := sizes[i&(draws-1)]
		p, err := r.Allocate(core.DefaultStream, sz, 256)
		if err != nil {
			b.Fatal(err)
		}
		live[k] = a{p, sz}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/op")
	if touched == 0 {
		b.Fatal("no live allocation had a size") // (keeps the touches)
	}
	for _, x := range live {
		if err := r.Deallocate(core.DefaultStream, x.p, x.n, 256); err != nil {
			b.Fatal(err)
		}
	}
}
