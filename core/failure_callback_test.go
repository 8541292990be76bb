package core

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFailureCallbackConformance(t *testing.T) {
	adaptorConformance(t, "failure_callback", func(up Resource) (Adaptor, error) {
		return NewFailureCallback(up, func(uintptr) bool { return false })
	})
	_, err := NewFailureCallback(newFake(), nil)
	assert.ErrorIs(t, err, ErrInvalidArgument, "nil callback")
}

func TestFailureCallbackRetries(t *testing.T) {
	up := newFake()
	var calls atomic.Int64
	var lastBytes atomic.Uintptr
	f, err := NewFailureCallback(up, func(bytes uintptr) bool {
		lastBytes.Store(bytes)
		return calls.Add(1) < 5 // retry four times, then give up
	})
	require.NoError(t, err)

	up.failNext(3) // three failures, then success
	p, err := f.Allocate(DefaultStream, 1234, DefaultAlignment)
	require.NoError(t, err)
	assert.NotZero(t, p)
	assert.Equal(t, int64(3), calls.Load(), "one call per failure")
	assert.Equal(t, uintptr(1234), lastBytes.Load(), "the callback gets the requested size")
	require.NoError(t, f.Deallocate(DefaultStream, p, 1234, DefaultAlignment))

	calls.Store(0)
	up.failNext(100)
	_, err = f.AllocateSync(10, DefaultAlignment)
	require.ErrorIs(t, err, ErrOutOfMemory, "the upstream's error when the callback gives up")
	assert.Equal(t, int64(5), calls.Load(), "retried while the callback said true")
}

func TestFailureCallbackFreesRoom(t *testing.T) {
	// The usual use: a cache that the callback empties.
	up := newFake()
	up.setCapacity(1 << 20)
	cache, err := up.Allocate(DefaultStream, 1<<20, DefaultAlignment)
	require.NoError(t, err)
	cached := true
	f, err := NewFailureCallback(up, func(uintptr) bool {
		if !cached {
			return false
		}
		cached = false
		return up.Deallocate(DefaultStream, cache, 1<<20, DefaultAlignment) == nil
	})
	require.NoError(t, err)
	p, err := f.Allocate(DefaultStream, 4096, DefaultAlignment)
	require.NoError(t, err, "the callback made room")
	_, err = f.Allocate(DefaultStream, 1<<20, DefaultAlignment)
	require.ErrorIs(t, err, ErrOutOfMemory, "nothing left to free")
	require.NoError(t, f.Deallocate(DefaultStream, p, 4096, DefaultAlignment))
}

func TestFailureCallbackOtherErrorsPassThrough(t *testing.T) {
	up := newFake()
	var calls atomic.Int64
	f, err := NewFailureCallback(up, func(uintptr) bool { calls.Add(1); return true })
	require.NoError(t, err)
	boom := errors.New("driver exploded")
	up.setFailErr(boom)
	_, err = f.Allocate(DefaultStream, 10, DefaultAlignment)
	require.ErrorIs(t, err, boom)
	assert.Zero(t, calls.Load(), "only out-of-memory calls the callback")
	_, err = f.Allocate(DefaultStream, 10, 3)
	require.ErrorIs(t, err, ErrBadAlignment)
	assert.Zero(t, calls.Load())
}

func TestFailureCallbackPanic(t *testing.T) {
	up := newFake()
	f, err := NewFailureCallback(up, func(uintptr) bool { panic("callback bug") })
	require.NoError(t, err)
	up.failNext(1)
	_, err = f.Allocate(DefaultStream, 10, DefaultAlignment)
	require.ErrorIs(t, err, ErrOutOfMemory)
	assert.Contains(t, err.Error(), "callback bug")
}

func TestFailureCallbackConcurrent(t *testing.T) {
	up := newFake()
	up.setCapacity(4 << 20)
	var calls atomic.Int64
	f, err := NewFailureCallback(up, func(uintptr) bool { return calls.Add(1)%2 == 1 })
	require.NoError(t, err)
	hammer(t, f, hammerOptions{sync: true, allowOOM: true})
	assert.Zero(t, up.liveCount())
}

// Empty a cache when memory runs out, then let the allocation try again.
func ExampleNewFailureCallback() {
	cuda, err := NewCuda()
	if err != nil {
		fmt.Println(err)
		return
	}
	limited, _ := NewLimiting(cuda, 1<<20, DefaultAlignment) // a 1 MiB device, for the example
	cache, _ := limited.AllocateSync(768<<10, DefaultAlignment)
	fc, _ := NewFailureCallback(limited, func(bytes uintptr) bool {
		if cache == 0 {
			return false // nothing left to free: give up
		}
		fmt.Printf("out of memory for %d bytes: emptying the cache\n", bytes)
		_ = limited.DeallocateSync(cache, 768<<10, DefaultAlignment)
		cache = 0
		return true // try again
	})
	p, err := fc.AllocateSync(512<<10, DefaultAlignment)
	fmt.Println("allocated:", err == nil)
	_, err = fc.AllocateSync(1<<20, DefaultAlignment)
	fmt.Println("then:", errors.Is(err, ErrOutOfMemory))
	_ = fc.DeallocateSync(p, 512<<10, DefaultAlignment)
	// Output:
	// out of memory for 524288 bytes: emptying the cache
	// allocated: true
	// then: true
}
