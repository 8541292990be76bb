package core

import (
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestThreadSafeConformance(t *testing.T) {
	adaptorConformance(t, "thread_safe", func(up Resource) (Adaptor, error) {
		return NewThreadSafe(up)
	})
}

// exclusiveResource records whether two calls were ever inside it at once.
type exclusiveResource struct {
	*fakeResource
	inside, overlaps, calls atomic.Int64
}

func (e *exclusiveResource) enter() func() {
	e.calls.Add(1)
	if e.inside.Add(1) > 1 {
		e.overlaps.Add(1)
	}
	runtime.Gosched() // give another caller the chance to come in
	return func() { e.inside.Add(-1) }
}

func (e *exclusiveResource) Allocate(s Stream, n, a uintptr) (uintptr, error) {
	defer e.enter()()
	return e.fakeResource.Allocate(s, n, a)
}

func (e *exclusiveResource) AllocateSync(n, a uintptr) (uintptr, error) {
	defer e.enter()()
	return e.fakeResource.AllocateSync(n, a)
}

func (e *exclusiveResource) Deallocate(s Stream, p, n, a uintptr) error {
	defer e.enter()()
	return e.fakeResource.Deallocate(s, p, n, a)
}

func (e *exclusiveResource) DeallocateSync(p, n, a uintptr) error {
	defer e.enter()()
	return e.fakeResource.DeallocateSync(p, n, a)
}

func TestThreadSafeSerializes(t *testing.T) {
	// Without the adaptor the detector sees overlapping calls (so it works)...
	bare := &exclusiveResource{fakeResource: newFake()}
	hammer(t, bare, hammerOptions{sync: true})
	if runtime.GOMAXPROCS(0) > 1 {
		assert.Positive(t, bare.overlaps.Load(), "the detector sees concurrent calls")
	}

	// ...and with it, none.
	up := &exclusiveResource{fakeResource: newFake()}
	ts, err := NewThreadSafe(up)
	require.NoError(t, err)
	n := hammer(t, ts, hammerOptions{sync: true})
	assert.Positive(t, n)
	assert.Zero(t, up.overlaps.Load(), "no two upstream calls at once")
	assert.Equal(t, 2*n, up.calls.Load(), "every call reached the upstream")
	assert.Zero(t, up.liveCount())
}
