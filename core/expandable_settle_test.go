package core

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
)

// The growth rule "settle before grow" (Expandable.settle): when other
// streams hold free memory that the growing stream may not use yet, of at
// least the request and a trimSlack-th of what is mapped, the resource
// synchronizes the device, settles every stream's free memory and looks
// again before it maps more; it unmaps nothing.

// TestExpandableSettleBeforeGrow: stream A frees a large block without any
// synchronization; stream B then asks for half of it. The resource settles
// (one device synchronization, which waits for A's queued fill) and serves
// B from A's block instead of mapping more.
func TestExpandableSettleBeforeGrow(t *testing.T) {
	sm := simDevice(t)
	const big, half = 64 * mib, 32 * mib
	rt := newOrderingRuntime(t)
	e := newTestExpandable(t, withVM{rt, sm}, ExpandableOptions{MaximumSize: 256 * mib})
	a, b := newStream(t, rt), newStream(t, rt)
	x, err := e.Allocate(a, big, DefaultAlignment)
	require.NoError(t, err)
	require.NoError(t, sm.PauseStream(a))
	defer sm.ResumeStream(a)
	require.NoError(t, sm.MemsetAsync(x, 0xAA, big, a))
	require.NoError(t, e.Deallocate(a, x, big, DefaultAlignment))
	require.Less(t, e.h.UsableBy(b), uintptr(half), "A's block is not yet usable by B")

	mapped, growths, before := e.PoolSize(), e.growths.Load(), rt.counts()
	type result struct {
		p   uintptr
		err error
	}
	done := make(chan result, 1)
	go func() {
		p, err := e.Allocate(b, half, DefaultAlignment)
		done <- result{p, err}
	}()
	select {
	case res := <-done:
		t.Fatalf("B's allocation returned (%#x, %v) without waiting for A's queued fill: no device synchronization", res.p, res.err)
	case <-time.After(50 * time.Millisecond):
	}
	require.NoError(t, sm.ResumeStream(a))
	res := <-done
	require.NoError(t, res.err)
	y := res.p
	assert.Equal(t, x, y, "B is served from the block A freed, once settled")
	assert.Equal(t, growths, e.growths.Load(), "no growth")
	assert.Equal(t, mapped, e.PoolSize(), "nothing mapped, nothing unmapped")
	assert.Equal(t, uint64(1), e.settles.Load(), "one settle")
	assert.Zero(t, e.releases.Load(), "no give-back")
	after := rt.counts()
	assert.Equal(t, before[2]+1, after[2], "one device synchronization")
	assert.Equal(t, before[0], after[0], "no event record: the synchronization orders A's free")
	assert.Equal(t, before[1], after[1], "no stream wait")
	require.NoError(t, sm.MemsetAsync(y, 0xBB, half, b))
	require.NoError(t, expect(sm, y, half, 0xBB, b), "B's fill ran after A's")

	// Now settled, the rest of A's block serves B without another settle.
	z, err := e.Allocate(b, half, DefaultAlignment)
	require.NoError(t, err)
	assert.Equal(t, x+half, z)
	assert.Equal(t, uint64(1), e.settles.Load())
	assert.Equal(t, growths, e.growths.Load())
	require.NoError(t, e.Deallocate(b, y, half, DefaultAlignment))
	require.NoError(t, e.Deallocate(b, z, half, DefaultAlignment))
	assert.Empty(t, rt.misuses())
}

// TestExpandableSettleThreshold: unsettled free memory below the request
// and a trimSlack-th of what is mapped does not settle: the resource maps
// more without synchronizing, and the stream never waits for another's
// queued work.
func TestExpandableSettleThreshold(t *testing.T) {
	sm := simDevice(t)
	const big = 64 * mib
	rt := newOrderingRuntime(t)
	e := newTestExpandable(t, withVM{rt, sm}, ExpandableOptions{MaximumSize: 256 * mib})
	a, b := newStream(t, rt), newStream(t, rt)
	x, err := e.Allocate(a, big, DefaultAlignment)
	require.NoError(t, err)
	require.NoError(t, e.Deallocate(a, x, big, DefaultAlignment))

	growths, before := e.growths.Load(), rt.counts()
	// The whole block: it is the request, but not a trimSlack-th more.
	y, err := e.Allocate(b, big, DefaultAlignment)
	require.NoError(t, err)
	assert.NotEqual(t, x, y, "mapped anew")
	assert.Equal(t, growths+1, e.growths.Load())
	assert.Zero(t, e.settles.Load())
	after := rt.counts()
	assert.Equal(t, before[2:], after[2:], "no host synchronization")
	require.NoError(t, e.Deallocate(b, y, big, DefaultAlignment))
	assert.Empty(t, rt.misuses())
}

// TestExpandableSettleSingleStream: a workload on one stream never meets
// the condition (all its free memory is its own), so it never settles and
// never synchronizes while the resource can grow: traces and single-stream
// PyTorch runs behave as without the rule.
func TestExpandableSettleSingleStream(t *testing.T) {
	sm := simDevice(t)
	for _, tc := range []struct {
		name   string
		stream func(cudart.Runtime) Stream
	}{
		{"default", func(cudart.Runtime) Stream { return DefaultStream }},
		{"own", func(r cudart.Runtime) Stream { return newStream(t, r) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newOrderingRuntime(t)
			e := newTestExpandable(t, withVM{rt, sm}, ExpandableOptions{MaximumSize: 512 * mib})
			s := tc.stream(rt)
			before := rt.counts()
			rng := rand.New(rand.NewPCG(5, 6))
			_, err := randomWorkload(e, rng, raceScale(20000), 4*mib, []Stream{s}, 97, e.UsedBytes)
			require.NoError(t, err)
			assert.NotZero(t, e.growths.Load(), "the workload grows the resource")
			assert.Zero(t, e.settles.Load(), "a single stream never settles")
			after := rt.counts()
			assert.Equal(t, before[2]+int64(e.releases.Load()), after[2], "device synchronizations: the give-backs' only")
			assert.Equal(t, before[3], after[3], "no stream synchronization")
			assert.Zero(t, e.UsedBytes())
		})
	}
}
