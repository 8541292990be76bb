package workload

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core"
)

// fake is a resource that hands out fresh addresses and checks frees, and
// refuses allocations once limit bytes are live (0: never).
type fake struct {
	mu         sync.Mutex
	next       uintptr
	live       map[uintptr]uintptr
	bytes      uintptr
	limit      uintptr
	peak       uintptr
	allocs     int
	frees      int
	badStreams int
}

func newFake() *fake { return &fake{next: 1 << 20, live: map[uintptr]uintptr{}} }

func (f *fake) Allocate(s core.Stream, n, a uintptr) (uintptr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s != core.DefaultStream {
		f.badStreams++
	}
	if f.limit != 0 && f.bytes+n > f.limit {
		return 0, fmt.Errorf("fake: %w", core.ErrOutOfMemory)
	}
	p := f.next
	f.next += (n + 255) &^ 255
	f.live[p] = n
	f.bytes += n
	f.peak = max(f.peak, f.bytes)
	f.allocs++
	return p, nil
}

func (f *fake) Deallocate(s core.Stream, p, n, a uintptr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.live[p] != n {
		return errors.New("fake: bad free")
	}
	delete(f.live, p)
	f.bytes -= n
	f.frees++
	return nil
}

func (f *fake) AllocateSync(n, a uintptr) (uintptr, error) {
	return f.Allocate(core.DefaultStream, n, a)
}
func (f *fake) DeallocateSync(p, n, a uintptr) error {
	return f.Deallocate(core.DefaultStream, p, n, a)
}
func (f *fake) Properties() core.Properties { return core.DeviceAccessible }
func (f *fake) Equal(o core.Resource) bool  { return o == core.Resource(f) }
func (f *fake) Kind() string                { return "fake" }

func TestPlanShape(t *testing.T) {
	c := Case{Name: "t", NumAllocations: 5000, MaxSize: 4096}
	p := NewPlan(c, 1<<30, DefaultSeed)
	require.Len(t, p.steps, 2*c.NumAllocations)
	var sum uintptr
	allocSteps := 0
	for _, s := range p.steps {
		require.GreaterOrEqual(t, s.size, uintptr(1))
		require.LessOrEqual(t, s.size, c.MaxSize)
		require.Less(t, s.chance, uint8(100))
		sum += s.size
		if s.chance < AllocationProbability {
			allocSteps++
		}
	}
	assert.InDelta(t, float64(c.MaxSize)/2, float64(sum)/float64(len(p.steps)), float64(c.MaxSize)/20, "sizes uniform in [1, max]")
	assert.InDelta(t, 0.73, float64(allocSteps)/float64(len(p.steps)), 0.02, "73 % allocation steps")
	assert.Equal(t, p.steps, NewPlan(c, 1<<30, DefaultSeed).steps, "a fixed seed gives the same plan")
	assert.NotEqual(t, p.steps, NewPlan(c, 1<<30, DefaultSeed+1).steps)

	f := newFake()
	res, err := p.Run(f, core.DefaultStream)
	require.NoError(t, err)
	assert.Empty(t, f.live, "everything is freed at the end")
	assert.Equal(t, res.Allocs, res.Frees)
	assert.Equal(t, res.Ops, res.Allocs+res.Frees)
	assert.LessOrEqual(t, res.Allocs, c.NumAllocations)
	assert.Greater(t, res.Allocs, c.NumAllocations*9/10, "nearly every allocation is made")
	assert.Equal(t, f.peak, res.PeakLive)
	assert.Zero(t, f.badStreams)
}

func TestPlanMaxUsageAndFailures(t *testing.T) {
	c := Case{Name: "t", NumAllocations: 4000, MaxSize: 1 << 20}
	const maxUsage = 8 << 20
	f := newFake()
	res, err := NewPlan(c, maxUsage, 7).Run(f, core.DefaultStream)
	require.NoError(t, err)
	assert.Less(t, res.PeakLive, uintptr(maxUsage+c.MaxSize), "live bytes stay under MaxUsage (the first allocation aside)")

	f = newFake()
	f.limit = 2 << 20
	res, err = NewPlan(c, 1<<40, 7).Run(f, core.DefaultStream)
	require.NoError(t, err, "out-of-memory failures free instead")
	assert.Positive(t, res.FailedAllocs)
	assert.Empty(t, f.live)
}

func TestRunParallel(t *testing.T) {
	f := newFake()
	plans := []*Plan{NewPlan(Small, 1<<30, 1), NewPlan(Small, 1<<30, 2), NewPlan(Small, 1<<30, 3)}
	for _, p := range plans {
		p.steps = p.steps[:2000]
	}
	samples := 0
	var mu sync.Mutex
	res, d, err := RunParallelSampled(f, plans, nil, 100, func() { mu.Lock(); samples++; mu.Unlock() })
	require.NoError(t, err)
	assert.Positive(t, d)
	assert.Equal(t, f.allocs, res.Allocs)
	assert.Equal(t, f.frees, res.Frees)
	assert.Empty(t, f.live)
	assert.Positive(t, samples)

	c := NewCounting(newFake())
	x, err := c.Allocate(core.DefaultStream, 1000, 256)
	require.NoError(t, err)
	y, err := c.Allocate(core.DefaultStream, 500, 256)
	require.NoError(t, err)
	require.NoError(t, c.Deallocate(core.DefaultStream, x, 1000, 256))
	assert.Equal(t, uintptr(1500), c.Peak())
	assert.Equal(t, uintptr(500), c.Current())
	require.NoError(t, c.Deallocate(core.DefaultStream, y, 500, 256))
	assert.Equal(t, "counting", c.Kind())
}
