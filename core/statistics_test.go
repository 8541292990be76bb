package core

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStatisticsConformance(t *testing.T) {
	adaptorConformance(t, "statistics", func(up Resource) (Adaptor, error) {
		return NewStatistics(up)
	})
}

func TestStatisticsCounters(t *testing.T) {
	up := newFake()
	st, err := NewStatistics(up)
	require.NoError(t, err)
	b, c := st.Counters()
	assert.Equal(t, Counter{}, b)
	assert.Equal(t, Counter{}, c)

	p1, err := st.Allocate(DefaultStream, 1000, DefaultAlignment)
	require.NoError(t, err)
	p2, err := st.AllocateSync(24, DefaultAlignment)
	require.NoError(t, err)
	b, c = st.Counters()
	assert.Equal(t, Counter{Value: 1024, Peak: 1024, Total: 1024}, b, "requested, unrounded bytes")
	assert.Equal(t, Counter{Value: 2, Peak: 2, Total: 2}, c)

	require.NoError(t, st.Deallocate(DefaultStream, p1, 1000, DefaultAlignment))
	b, c = st.Counters()
	assert.Equal(t, Counter{Value: 24, Peak: 1024, Total: 1024}, b)
	assert.Equal(t, Counter{Value: 1, Peak: 2, Total: 2}, c)

	// Zero bytes count one allocation, as in RMM, without an upstream call.
	z, err := st.Allocate(DefaultStream, 0, DefaultAlignment)
	require.NoError(t, err)
	_, c = st.Counters()
	assert.Equal(t, Counter{Value: 2, Peak: 2, Total: 3}, c)
	require.NoError(t, st.Deallocate(DefaultStream, z, 0, DefaultAlignment))
	require.NoError(t, st.Deallocate(DefaultStream, 0, 100, DefaultAlignment), "freeing nothing is a no-op")
	_, c = st.Counters()
	assert.Equal(t, Counter{Value: 1, Peak: 2, Total: 3}, c)

	// Failures count nothing.
	up.failNext(1)
	_, err = st.Allocate(DefaultStream, 500, DefaultAlignment)
	require.ErrorIs(t, err, ErrOutOfMemory)
	up.setFreeErr(ErrCUDA)
	require.Error(t, st.DeallocateSync(p2, 24, DefaultAlignment))
	up.setFreeErr(nil)
	b, c = st.Counters()
	assert.Equal(t, Counter{Value: 24, Peak: 1024, Total: 1024}, b)
	assert.Equal(t, Counter{Value: 1, Peak: 2, Total: 3}, c)
	require.NoError(t, st.DeallocateSync(p2, 24, DefaultAlignment))
	b, c = st.Counters()
	assert.Equal(t, Counter{Value: 0, Peak: 1024, Total: 1024}, b)
	assert.Equal(t, Counter{Value: 0, Peak: 2, Total: 3}, c)
}

func TestStatisticsPushPop(t *testing.T) {
	up := newFake()
	st, err := NewStatistics(up)
	require.NoError(t, err)
	alloc := func(n uintptr) uintptr {
		p, err := st.Allocate(DefaultStream, n, DefaultAlignment)
		require.NoError(t, err)
		return p
	}
	free := func(p, n uintptr) { require.NoError(t, st.Deallocate(DefaultStream, p, n, DefaultAlignment)) }

	_, _, err = st.PopCounters()
	require.ErrorIs(t, err, ErrOutOfRange, "popping the only level")
	assert.Equal(t, 1, st.Depth())

	a := alloc(100) // outer: value 100, peak 100, total 100
	b := alloc(200) // outer: value 300, peak 300, total 300
	free(b, 200)    // outer: value 100, peak 300
	top, topc := st.PushCounters()
	assert.Equal(t, Counter{Value: 100, Peak: 300, Total: 300}, top, "push returns the level it covers")
	assert.Equal(t, Counter{Value: 1, Peak: 2, Total: 2}, topc)
	assert.Equal(t, 2, st.Depth())
	bb, cc := st.Counters()
	assert.Equal(t, Counter{}, bb, "a new level starts at zero")
	assert.Equal(t, Counter{}, cc)

	c := alloc(1000) // inner: value 1000, peak 1000
	d := alloc(50)   // inner: value 1050, peak 1050
	free(c, 1000)    // inner: value 50
	free(a, 100)     // freed from before the push: inner value -50
	popped, poppedc, err := st.PopCounters()
	require.NoError(t, err)
	assert.Equal(t, Counter{Value: -50, Peak: 1050, Total: 1050}, popped)
	assert.Equal(t, Counter{Value: 0, Peak: 2, Total: 2}, poppedc)

	// Fold: peak = max(300, 100+1050) = 1150, value = 100-50 = 50, total = 300+1050.
	bb, cc = st.Counters()
	assert.Equal(t, Counter{Value: 50, Peak: 1150, Total: 1350}, bb)
	assert.Equal(t, Counter{Value: 1, Peak: 3, Total: 4}, cc)
	free(d, 50)

	// Several levels.
	st.PushCounters()
	st.PushCounters()
	e := alloc(10)
	_, _, err = st.PopCounters()
	require.NoError(t, err)
	_, _, err = st.PopCounters()
	require.NoError(t, err)
	_, _, err = st.PopCounters()
	require.ErrorIs(t, err, ErrOutOfRange)
	bb, _ = st.Counters()
	assert.Equal(t, int64(10), bb.Value)
	free(e, 10)
	assert.Zero(t, up.liveCount())
}

func TestStatisticsConcurrent(t *testing.T) {
	up := newFake()
	st, err := NewStatistics(up)
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	stop := make(chan struct{})
	go func() { // push and pop while the hammer runs
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			st.PushCounters()
			b, c := st.Counters()
			if b.Peak < b.Value || c.Peak < c.Value {
				t.Errorf("peak below value: %+v %+v", b, c)
			}
			if _, _, err := st.PopCounters(); err != nil {
				t.Error(err)
			}
		}
	}()
	n := hammer(t, st, hammerOptions{sync: true})
	close(stop)
	wg.Wait()
	b, c := st.Counters()
	assert.Zero(t, b.Value, "everything freed")
	assert.Zero(t, c.Value)
	assert.Equal(t, n, c.Total, "every allocation counted once")
	assert.Equal(t, 1, st.Depth())
}

// BenchmarkStatistics measures what the adaptor adds to an allocation and
// free: the fake upstream alone, then through statistics, from many
// goroutines at once.
func BenchmarkStatistics(b *testing.B) {
	run := func(b *testing.B, r Resource) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p, err := r.Allocate(DefaultStream, 1000, DefaultAlignment)
				if err != nil {
					b.Error(err)
					return
				}
				if err := r.Deallocate(DefaultStream, p, 1000, DefaultAlignment); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.Run("upstream", func(b *testing.B) { run(b, newFake()) })
	b.Run("statistics", func(b *testing.B) {
		st, err := NewStatistics(newFake())
		require.NoError(b, err)
		run(b, st)
	})
	b.Run("counters-only", func(b *testing.B) {
		// The adaptor's own cost: counting a zero-byte allocation and its
		// free never reaches the upstream.
		st, err := NewStatistics(newFake())
		require.NoError(b, err)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = st.Allocate(DefaultStream, 0, DefaultAlignment)
				_ = st.Deallocate(DefaultStream, 0, 0, DefaultAlignment)
			}
		})
	})
}

// Measure one scope's allocations with a level of counters of its own.
func ExampleStatistics_PushCounters() {
	cuda, err := NewCuda()
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := NewStatistics(cuda)
	if err != nil {
		fmt.Println(err)
		return
	}
	a, _ := st.AllocateSync(1000, DefaultAlignment)

	st.PushCounters() // the scope starts
	b, _ := st.AllocateSync(5000, DefaultAlignment)
	_ = st.DeallocateSync(b, 5000, DefaultAlignment)
	scope, _, _ := st.PopCounters() // the scope ends

	all, count := st.Counters()
	fmt.Printf("scope: peak %d B, total %d B\n", scope.Peak, scope.Total)
	fmt.Printf("all:   now %d B, peak %d B, %d allocations\n", all.Value, all.Peak, count.Total)
	_ = st.DeallocateSync(a, 1000, DefaultAlignment)
	// Output:
	// scope: peak 5000 B, total 5000 B
	// all:   now 1000 B, peak 6000 B, 2 allocations
}
