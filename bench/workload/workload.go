package workload

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmmgo/rmmgo/core"
)

// Case is one of the standard workload cases.
type Case struct {
	Name           string
	NumAllocations int
	MaxSize        uintptr
}

// The standard cases.
var (
	Small  = Case{Name: "small", NumAllocations: 100_000, MaxSize: 4 << 10}
	Medium = Case{Name: "medium", NumAllocations: 20_000, MaxSize: 1 << 20}
	Large  = Case{Name: "large", NumAllocations: 2_000, MaxSize: 64 << 20}
)

// Cases lists the standard cases, smallest first.
var Cases = []Case{Small, Medium, Large}

// GPUMaxUsage is the bound on live bytes on the GPU machine: 16,000 MiB.
const GPUMaxUsage uintptr = 16_000 << 20

// AllocationProbability is the chance, in percent, that a step allocates
// while something is live.
const AllocationProbability = 73

// DefaultSeed is the seed of the first goroutine's plan; goroutine i uses
// DefaultSeed + i.
const DefaultSeed uint64 = 42

// step is the random draws of one step of the loop.
type step struct {
	size   uintptr
	chance uint8  // 0..99
	pick   uint32 // picks the allocation to free: pick * live >> 32
}

// Plan is one run of the workload, its random draws made in advance.
type Plan struct {
	Case     Case
	MaxUsage uintptr
	Seed     uint64
	steps    []step
}

// NewPlan draws the steps of one run of c bounded by maxUsage live bytes,
// from seed.
func NewPlan(c Case, maxUsage uintptr, seed uint64) *Plan {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	p := &Plan{Case: c, MaxUsage: maxUsage, Seed: seed, steps: make([]step, 2*c.NumAllocations)}
	for i := range p.steps {
		p.steps[i] = step{
			size:   uintptr(rng.Uint64N(uint64(c.MaxSize))) + 1,
			chance: uint8(rng.IntN(100)),
			pick:   rng.Uint32(),
		}
	}
	return p
}

// Result counts what a run did.
type Result struct {
	Ops          int     // allocations plus frees
	Allocs       int     // successful allocations
	Frees        int     // frees, the final ones included
	FailedAllocs int     // allocations that failed and freed instead
	PeakLive     uintptr // most bytes live at once (requested sizes)
}

// Add sums r and o, taking the larger peak (runs in parallel each count
// their own).
func (r Result) Add(o Result) Result {
	return Result{
		Ops:          r.Ops + o.Ops,
		Allocs:       r.Allocs + o.Allocs,
		Frees:        r.Frees + o.Frees,
		FailedAllocs: r.FailedAllocs + o.FailedAllocs,
		PeakLive:     r.PeakLive + o.PeakLive,
	}
}

type live struct{ ptr, size uintptr }

// Run runs the plan on r with every operation on stream s.
func (p *Plan) Run(r core.Resource, s core.Stream) (Result, error) {
	return p.RunSampled(r, s, 0, nil)
}

// RunSampled is Run calling sample every `every` operations (never when
// every is 0), for instance to track the peak memory a resource holds.
func (p *Plan) RunSampled(r core.Resource, s core.Stream, every int, sample func()) (Result, error) {
	var res Result
	allocs := make([]live, 0, p.Case.NumAllocations)
	var liveBytes uintptr
	made := 0
	countdown := every
	tick := func() {
		if every > 0 {
			if countdown--; countdown == 0 {
				countdown = every
				sample()
			}
		}
	}
	for _, st := range p.steps {
		doAlloc := true
		if len(allocs) > 0 {
			doAlloc = int(st.chance) < AllocationProbability && made < p.Case.NumAllocations && liveBytes+st.size < p.MaxUsage
		}
		if doAlloc {
			ptr, err := r.Allocate(s, st.size, core.DefaultAlignment)
			if err == nil {
				allocs = append(allocs, live{ptr, st.size})
				liveBytes += st.size
				res.PeakLive = max(res.PeakLive, liveBytes)
				made++
				res.Allocs++
				res.Ops++
				tick()
				continue
			}
			if !errors.Is(err, core.ErrOutOfMemory) && !errors.Is(err, core.ErrBadAlloc) {
				return res, fmt.Errorf("workload %s: allocating %d bytes: %w", p.Case.Name, st.size, err)
			}
			res.FailedAllocs++
		}
		if len(allocs) == 0 {
			continue
		}
		k := int(uint64(st.pick) * uint64(len(allocs)) >> 32)
		a := allocs[k]
		allocs[k] = allocs[len(allocs)-1]
		allocs = allocs[:len(allocs)-1]
		if err := r.Deallocate(s, a.ptr, a.size, core.DefaultAlignment); err != nil {
			return res, fmt.Errorf("workload %s: freeing %d bytes at %#x: %w", p.Case.Name, a.size, a.ptr, err)
		}
		liveBytes -= a.size
		res.Frees++
		res.Ops++
		tick()
	}
	for _, a := range allocs {
		if err := r.Deallocate(s, a.ptr, a.size, core.DefaultAlignment); err != nil {
			return res, fmt.Errorf("workload %s: freeing %d bytes at %#x: %w", p.Case.Name, a.size, a.ptr, err)
		}
		res.Frees++
		res.Ops++
	}
	return res, nil
}

// RunParallel runs each plan in its own goroutine, all on r, plan i on
// streams[i % len(streams)] (the default stream when streams is empty),
// and returns the summed result and the wall time from the common start to
// the last finish.
func RunParallel(r core.Resource, plans []*Plan, streams []core.Stream) (Result, time.Duration, error) {
	return RunParallelSampled(r, plans, streams, 0, nil)
}

// RunParallelSampled is RunParallel with each goroutine calling sample every
// `every` operations (see RunSampled); sample must be safe for concurrent
// use.
func RunParallelSampled(r core.Resource, plans []*Plan, streams []core.Stream, every int, sample func()) (Result, time.Duration, error) {
	var wg sync.WaitGroup
	results := make([]Result, len(plans))
	errs := make([]error, len(plans))
	start := make(chan struct{})
	for i, p := range plans {
		s := core.DefaultStream
		if len(streams) > 0 {
			s = streams[i%len(streams)]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = p.RunSampled(r, s, every, sample)
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	d := time.Since(t0)
	var sum Result
	for _, res := range results {
		sum = sum.Add(res)
	}
	return sum, d, errors.Join(errs...)
}

// Counting wraps a resource and counts the bytes it holds, for the memory
// efficiency figure (peak bytes reserved from an upstream over peak live
// bytes). It is safe for concurrent use; its cost is two atomic operations
// per call, which a sub-allocator's upstream sees rarely.
type Counting struct {
	Inner core.Resource
	cur   atomic.Int64
	peak  atomic.Int64
}

// NewCounting returns a Counting over inner.
func NewCounting(inner core.Resource) *Counting { return &Counting{Inner: inner} }

// Peak returns the most bytes held at once.
func (c *Counting) Peak() uintptr { return uintptr(c.peak.Load()) }

// Current returns the bytes held now.
func (c *Counting) Current() uintptr { return uintptr(c.cur.Load()) }

// count adds bytes to the bytes held and raises the peak to match.
func (c *Counting) count(bytes uintptr) {
	n := c.cur.Add(int64(bytes))
	for {
		pk := c.peak.Load()
		if n <= pk || c.peak.CompareAndSwap(pk, n) {
			return
		}
	}
}

// Allocate allocates from Inner and counts the bytes.
func (c *Counting) Allocate(s core.Stream, bytes, alignment uintptr) (uintptr, error) {
	p, err := c.Inner.Allocate(s, bytes, alignment)
	if err == nil && p != 0 {
		c.count(bytes)
	}
	return p, err
}

// Deallocate frees to Inner and uncounts the bytes.
func (c *Counting) Deallocate(s core.Stream, p, bytes, alignment uintptr) error {
	err := c.Inner.Deallocate(s, p, bytes, alignment)
	if err == nil && p != 0 {
		c.cur.Add(-int64(bytes))
	}
	return err
}

// AllocateSync is Allocate on the default stream through Inner's
// AllocateSync.
func (c *Counting) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	p, err := c.Inner.AllocateSync(bytes, alignment)
	if err == nil && p != 0 {
		c.count(bytes)
	}
	return p, err
}

// DeallocateSync frees through Inner's DeallocateSync.
func (c *Counting) DeallocateSync(p, bytes, alignment uintptr) error {
	err := c.Inner.DeallocateSync(p, bytes, alignment)
	if err == nil && p != 0 {
		c.cur.Add(-int64(bytes))
	}
	return err
}

// Properties reports Inner's properties.
func (c *Counting) Properties() core.Properties { return c.Inner.Properties() }

// Equal reports whether other is c.
func (c *Counting) Equal(other core.Resource) bool {
	o, ok := other.(*Counting)
	return ok && o == c
}

// Kind returns "counting".
func (c *Counting) Kind() string { return "counting" }

// Upstream returns Inner.
func (c *Counting) Upstream() core.Resource { return c.Inner }
