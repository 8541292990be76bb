package core

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// callbackOver makes a Callback whose functions allocate from up.
func callbackOver(up Resource) (*Callback, error) {
	return NewCallback(
		func(bytes uintptr, s Stream) (uintptr, error) { return up.Allocate(s, bytes, DefaultAlignment) },
		func(ptr, bytes uintptr, s Stream) error { return up.Deallocate(s, ptr, bytes, DefaultAlignment) },
	)
}

func TestCallbackBasics(t *testing.T) {
	_, err := NewCallback(nil, func(uintptr, uintptr, Stream) error { return nil })
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = NewCallback(func(uintptr, Stream) (uintptr, error) { return 0, nil }, nil)
	require.ErrorIs(t, err, ErrInvalidArgument)

	up := newFake()
	up.props = DeviceAccessible | HostAccessible
	c, err := callbackOver(up)
	require.NoError(t, err)
	assert.Equal(t, "callback", c.Kind())
	assert.Equal(t, DeviceAccessible, c.Properties(), "callback memory is device accessible, whatever the functions do")
	assert.True(t, c.Equal(c))
	c2, err := callbackOver(up)
	require.NoError(t, err)
	assert.False(t, c.Equal(c2))
	assert.False(t, c.Equal(up))
	_, isAdaptor := any(c).(Adaptor)
	assert.False(t, isAdaptor, "a callback resource has no upstream")

	s := Stream(0x42)
	p, err := c.Allocate(s, 1000, DefaultAlignment)
	require.NoError(t, err)
	assert.NotZero(t, p)
	assert.Equal(t, uintptr(s), up.lastStream.Load(), "the functions get the stream")
	require.NoError(t, c.Deallocate(s, p, 1000, DefaultAlignment))
	p, err = c.AllocateSync(10, 64)
	require.NoError(t, err)
	assert.Zero(t, up.lastStream.Load(), "AllocateSync passes the default stream")
	require.NoError(t, c.DeallocateSync(p, 10, 64))
	assert.Zero(t, up.liveCount())
}

func TestCallbackZeroAndAlignment(t *testing.T) {
	var calls atomic.Int64
	c, err := NewCallback(
		func(uintptr, Stream) (uintptr, error) { calls.Add(1); return 1 << 20, nil },
		func(uintptr, uintptr, Stream) error { calls.Add(1); return nil },
	)
	require.NoError(t, err)
	p, err := c.Allocate(DefaultStream, 0, DefaultAlignment)
	require.NoError(t, err)
	assert.Zero(t, p)
	require.NoError(t, c.Deallocate(DefaultStream, 0, 0, DefaultAlignment))
	assert.Zero(t, calls.Load(), "zero bytes call nothing")
	for _, a := range []uintptr{0, 3, 512} {
		_, err = c.Allocate(DefaultStream, 10, a)
		assert.ErrorIs(t, err, ErrBadAlignment, "alignment %d", a)
		_, err = c.Allocate(DefaultStream, 0, a)
		assert.ErrorIs(t, err, ErrBadAlignment, "alignment %d, zero bytes", a)
	}
	assert.Zero(t, calls.Load())
}

func TestCallbackErrors(t *testing.T) {
	userErr := errors.New("user says no")
	var freed atomic.Uintptr
	tests := []struct {
		name  string
		alloc AllocateFunc
		want  error
	}{
		{"nil pointer is out of memory", func(uintptr, Stream) (uintptr, error) { return 0, nil }, ErrOutOfMemory},
		{"user error is wrapped", func(uintptr, Stream) (uintptr, error) { return 0, userErr }, userErr},
		{"panic is recovered", func(uintptr, Stream) (uintptr, error) { panic("boom") }, ErrBadAlloc},
		{"panic with error is recovered", func(uintptr, Stream) (uintptr, error) { panic(userErr) }, ErrBadAlloc},
		{"misaligned pointer is given back", func(uintptr, Stream) (uintptr, error) { return 0x1010, nil }, ErrBadAlloc},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			freed.Store(0)
			c, err := NewCallback(tc.alloc, func(p, _ uintptr, _ Stream) error { freed.Store(p); return nil })
			require.NoError(t, err)
			p, err := c.Allocate(DefaultStream, 100, DefaultAlignment)
			require.ErrorIs(t, err, tc.want)
			assert.Zero(t, p)
			if tc.name == "misaligned pointer is given back" {
				assert.Equal(t, uintptr(0x1010), freed.Load())
			}
		})
	}

	c, err := NewCallback(
		func(uintptr, Stream) (uintptr, error) { return 1 << 20, nil },
		func(uintptr, uintptr, Stream) error { panic("free boom") },
	)
	require.NoError(t, err)
	err = c.Deallocate(DefaultStream, 1<<20, 10, DefaultAlignment)
	require.ErrorIs(t, err, ErrBadAlloc)
	assert.Contains(t, err.Error(), "free boom")

	c, err = NewCallback(
		func(uintptr, Stream) (uintptr, error) { return 1 << 20, nil },
		func(uintptr, uintptr, Stream) error { return userErr },
	)
	require.NoError(t, err)
	require.ErrorIs(t, c.DeallocateSync(1<<20, 10, DefaultAlignment), userErr)
}

func TestCallbackConcurrent(t *testing.T) {
	up := newFake()
	c, err := callbackOver(up)
	require.NoError(t, err)
	hammer(t, c, hammerOptions{sync: true, streams: []Stream{0, 5}})
	assert.Zero(t, up.liveCount())
}

// TestCallbackOnDevice serves a Callback from a real resource and uses the
// memory on the backend the tests run on.
func TestCallbackOnDevice(t *testing.T) {
	r := testRuntime(t)
	base, err := NewCuda()
	require.NoError(t, err)
	c, err := callbackOver(base)
	require.NoError(t, err)
	s := newStream(t, r)
	p, err := c.Allocate(s, 3000, DefaultAlignment)
	require.NoError(t, err)
	fillAndCheck(t, r, p, 3000, 7, s)
	require.NoError(t, c.Deallocate(s, p, 3000, DefaultAlignment))
}
