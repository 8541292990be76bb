package inflight

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCloseWaitsForCallsInFlight: goroutines enter and leave the gate,
// noting when they are inside; once Close returned nobody is inside and
// nobody gets in.
func TestCloseWaitsForCallsInFlight(t *testing.T) {
	for round := 0; round < 5; round++ {
		var g Gate
		var inside, after atomic.Int64
		var closed atomic.Bool
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					tk, ok := g.Enter()
					if !ok {
						return
					}
					inside.Add(1)
					if closed.Load() {
						after.Add(1) // inside after Close returned
					}
					for i := 0; i < 100; i++ {
						_ = i * i
					}
					inside.Add(-1)
					g.Exit(tk)
				}
			}()
		}
		time.Sleep(time.Millisecond)
		require.True(t, g.Close())
		closed.Store(true)
		assert.Zero(t, inside.Load(), "a call was inside after Close returned")
		wg.Wait()
		assert.Zero(t, after.Load(), "a call got in after Close returned")
		assert.False(t, g.Close(), "closed already")
		_, ok := g.Enter()
		assert.False(t, ok)
	}
}

// TestCloseWaitsForAHeldCall: Close does not return while a call stays in.
func TestCloseWaitsForAHeldCall(t *testing.T) {
	var g Gate
	tk, ok := g.Enter()
	require.True(t, ok)
	assert.True(t, g.Closed() == false)
	done := make(chan bool)
	go func() { done <- g.Close() }()
	select {
	case <-done:
		t.Fatal("Close returned with a call in flight")
	case <-time.After(20 * time.Millisecond):
	}
	assert.True(t, g.Closed())
	g.Exit(tk)
	assert.True(t, <-done)
}

func BenchmarkEnterExit(b *testing.B) {
	var g Gate
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			t, _ := g.Enter()
			g.Exit(t)
		}
	})
}
