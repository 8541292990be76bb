package sim

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
)

// blocked asserts that nothing arrives on done for a while: the call the
// channel reports on is still blocked.
func blocked(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s returned (%v) while the stream was paused", what, err)
	case <-time.After(30 * time.Millisecond):
	}
}

func TestSimStreamOrdering(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 16 * mib})
	s1, err := s.StreamCreate(cudart.StreamFlagDefault)
	require.NoError(t, err)
	s2, err := s.StreamCreate(cudart.StreamFlagNonBlocking)
	require.NoError(t, err)
	s3, err := s.StreamCreate(cudart.StreamFlagDefault)
	require.NoError(t, err)
	ev, err := s.EventCreate(cudart.EventFlagDisableTiming)
	require.NoError(t, err)
	d, err := s.Malloc(4096)
	require.NoError(t, err)
	require.NoError(t, s.Memset(d, 0, 4096))
	mem := bytesAt(d, 4096)

	require.NoError(t, s.PauseStream(s1))
	require.NoError(t, s.StreamQuery(s1), "a paused stream with nothing queued is idle")
	require.NoError(t, s.MemsetAsync(d, 7, 4096, s1))
	require.NoError(t, s.EventRecord(ev, s1))
	require.NoError(t, s.StreamWaitEvent(s2, ev))
	require.NoError(t, s.MemsetAsync(d, 9, 16, s2)) // must land after s1's fill

	assert.Zero(t, mem[0], "queued work ran on a paused stream")
	requireCode(t, s.StreamQuery(s1), cudart.ErrorNotReady)
	requireCode(t, s.EventQuery(ev), cudart.ErrorNotReady)
	requireCode(t, s.StreamQuery(s2), cudart.ErrorNotReady)
	assert.ErrorIs(t, s.StreamQuery(s2), cudart.ErrNotReady)

	// Other streams are not held.
	require.NoError(t, s.MemsetAsync(d+4000, 3, 1, s3))
	assert.Equal(t, byte(3), mem[4000])
	require.NoError(t, s.StreamQuery(s3))

	// Synchronizing with the held streams blocks until another goroutine
	// resumes the paused one.
	syncS2 := make(chan error, 1)
	go func() { syncS2 <- s.StreamSynchronize(s2) }()
	syncEv := make(chan error, 1)
	go func() { syncEv <- s.EventSynchronize(ev) }()
	syncDev := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		syncDev <- s.DeviceSynchronize()
	}()
	blocked(t, syncS2, "StreamSynchronize")
	blocked(t, syncEv, "EventSynchronize")
	blocked(t, syncDev, "DeviceSynchronize")
	assert.Zero(t, mem[0])

	require.NoError(t, s.ResumeStream(s1))
	require.NoError(t, <-syncS2)
	require.NoError(t, <-syncEv)
	require.NoError(t, <-syncDev)
	assert.Equal(t, byte(9), mem[0], "s2's fill ran after s1's")
	assert.Equal(t, byte(9), mem[15])
	assert.Equal(t, byte(7), mem[16])
	assert.Equal(t, byte(7), mem[4000], "s1's fill, released last, ran over s3's")
	require.NoError(t, s.EventQuery(ev))
	require.NoError(t, s.StreamQuery(s1))
	require.NoError(t, s.StreamQuery(s2))

	for _, st := range []cudart.Stream{s1, s2, s3} {
		require.NoError(t, s.StreamDestroy(st))
	}
	require.NoError(t, s.EventDestroy(ev))
	require.NoError(t, s.Free(d))
}

func TestSimEventSemantics(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 16 * mib})
	ev, err := s.EventCreate(cudart.EventFlagDefault)
	require.NoError(t, err)
	require.NoError(t, s.EventQuery(ev), "an event never recorded is complete")
	require.NoError(t, s.EventSynchronize(ev))

	paused, err := s.StreamCreate(0)
	require.NoError(t, err)
	other, err := s.StreamCreate(0)
	require.NoError(t, err)
	require.NoError(t, s.StreamWaitEvent(other, ev), "waiting on an event never recorded is a no-op")
	require.NoError(t, s.StreamQuery(other))

	require.NoError(t, s.PauseStream(paused))
	require.NoError(t, s.EventRecord(ev, paused))
	requireCode(t, s.EventQuery(ev), cudart.ErrorNotReady)
	// A later record on a running stream replaces it: the event is complete.
	require.NoError(t, s.EventRecord(ev, other))
	require.NoError(t, s.EventQuery(ev))
	// A wait captures the record current at the time of the call.
	require.NoError(t, s.EventRecord(ev, paused))
	require.NoError(t, s.StreamWaitEvent(other, ev))
	require.NoError(t, s.EventRecord(ev, cudart.DefaultStream))
	require.NoError(t, s.EventQuery(ev))
	requireCode(t, s.StreamQuery(other), cudart.ErrorNotReady, "other waits on the record on the paused stream")
	require.NoError(t, s.ResumeStream(paused))
	require.NoError(t, s.StreamQuery(other))

	// Waits chain across streams: a waits on b, b waits on the paused c.
	a, err := s.StreamCreate(0)
	require.NoError(t, err)
	b, err := s.StreamCreate(0)
	require.NoError(t, err)
	c, err := s.StreamCreate(0)
	require.NoError(t, err)
	evC, err := s.EventCreate(0)
	require.NoError(t, err)
	evB, err := s.EventCreate(0)
	require.NoError(t, err)
	require.NoError(t, s.PauseStream(c))
	require.NoError(t, s.EventRecord(evC, c))
	require.NoError(t, s.StreamWaitEvent(b, evC))
	require.NoError(t, s.EventRecord(evB, b))
	require.NoError(t, s.StreamWaitEvent(a, evB))
	// Destroying an event does not release the streams that wait on it.
	require.NoError(t, s.EventDestroy(evB))
	for _, st := range []cudart.Stream{a, b, c} {
		requireCode(t, s.StreamQuery(st), cudart.ErrorNotReady)
	}
	require.NoError(t, s.ResumeStream(c))
	for _, st := range []cudart.Stream{a, b, c} {
		require.NoError(t, s.StreamQuery(st))
	}
}

func TestSimSyncCopyWaitsForDefaultStream(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 16 * mib})
	d, err := s.Malloc(64)
	require.NoError(t, err)
	host, hostAddr := hostBuf(64)
	require.NoError(t, s.PauseStream(cudart.DefaultStream))
	require.NoError(t, s.MemsetAsync(d, 5, 64, cudart.DefaultStream))
	done := make(chan error, 1)
	go func() { done <- s.Memcpy(hostAddr, d, 64, cudart.MemcpyDeviceToHost) }()
	blocked(t, done, "Memcpy")
	require.NoError(t, s.ResumeStream(cudart.DefaultStream))
	require.NoError(t, <-done)
	assert.Equal(t, byte(5), host[63], "the copy ran after the queued fill")
	require.NoError(t, s.Free(d))
}

func TestSimStreamIDs(t *testing.T) {
	s := newTestSim(t, Config{})
	id0, err := s.StreamGetID(cudart.DefaultStream)
	require.NoError(t, err)
	idLegacy, err := s.StreamGetID(cudart.LegacyDefaultStream)
	require.NoError(t, err)
	idPT, err := s.StreamGetID(cudart.PerThreadDefaultStream)
	require.NoError(t, err)
	assert.Equal(t, id0, idLegacy)
	assert.NotEqual(t, id0, idPT)
	ids := map[uint64]bool{id0: true, idPT: true}
	for i := 0; i < 10; i++ {
		st, err := s.StreamCreate(0)
		require.NoError(t, err)
		id, err := s.StreamGetID(st)
		require.NoError(t, err)
		assert.False(t, ids[id], "id %d reused", id)
		ids[id] = true
		require.NoError(t, s.StreamDestroy(st))
	}
	// Each device has its own default stream.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	require.NoError(t, s.SetDevice(1))
	id1, err := s.StreamGetID(cudart.DefaultStream)
	require.NoError(t, s.SetDevice(0))
	require.NoError(t, err)
	assert.NotEqual(t, id0, id1)
}

func TestSimInvalidHandles(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 16 * mib})
	dead, err := s.StreamCreate(0)
	require.NoError(t, err)
	require.NoError(t, s.StreamDestroy(dead))
	deadEv, err := s.EventCreate(0)
	require.NoError(t, err)
	require.NoError(t, s.EventDestroy(deadEv))
	live, err := s.StreamCreate(0)
	require.NoError(t, err)
	ev, err := s.EventCreate(0)
	require.NoError(t, err)
	d, err := s.Malloc(64)
	require.NoError(t, err)
	bogus := cudart.Stream(0xdead0)

	tests := []struct {
		name string
		err  error
	}{
		{"StreamDestroy twice", s.StreamDestroy(dead)},
		{"StreamDestroy default", s.StreamDestroy(cudart.DefaultStream)},
		{"StreamDestroy legacy", s.StreamDestroy(cudart.LegacyDefaultStream)},
		{"StreamDestroy per-thread", s.StreamDestroy(cudart.PerThreadDefaultStream)},
		{"StreamSynchronize destroyed", s.StreamSynchronize(dead)},
		{"StreamQuery unknown", s.StreamQuery(bogus)},
		{"StreamWaitEvent destroyed stream", s.StreamWaitEvent(dead, ev)},
		{"StreamWaitEvent destroyed event", s.StreamWaitEvent(live, deadEv)},
		{"EventRecord destroyed event", s.EventRecord(deadEv, live)},
		{"EventRecord destroyed stream", s.EventRecord(ev, dead)},
		{"EventQuery destroyed", s.EventQuery(deadEv)},
		{"EventSynchronize destroyed", s.EventSynchronize(deadEv)},
		{"EventDestroy twice", s.EventDestroy(deadEv)},
		{"EventQuery stream handle", s.EventQuery(cudart.Event(live))},
		{"MemcpyAsync destroyed stream", s.MemcpyAsync(d, d, 1, cudart.MemcpyDeviceToDevice, dead)},
		{"MemsetAsync unknown stream", s.MemsetAsync(d, 0, 1, bogus)},
		{"FreeAsync unknown stream", s.FreeAsync(d, bogus)},
		{"MemPrefetchAsync unknown stream", s.MemPrefetchAsync(d, 1, cudart.HostLocation(), bogus)},
		{"PauseStream destroyed", s.PauseStream(dead)},
		{"ResumeStream unknown", s.ResumeStream(bogus)},
	}
	_, err = s.StreamGetID(dead)
	tests = append(tests, struct {
		name string
		err  error
	}{"StreamGetID destroyed", err})
	_, err = s.MallocAsync(64, bogus)
	tests = append(tests, struct {
		name string
		err  error
	}{"MallocAsync unknown stream", err})
	for _, tt := range tests {
		requireCode(t, tt.err, cudart.ErrorInvalidResourceHandle, tt.name)
		assert.ErrorIs(t, tt.err, cudart.ErrInvalidResource, tt.name)
	}

	_, err = s.StreamCreate(2)
	requireCode(t, err, cudart.ErrorInvalidValue)
	for _, flags := range []uint32{8, 4, 4 | cudart.EventFlagBlockingSync} {
		_, err = s.EventCreate(flags)
		requireCode(t, err, cudart.ErrorInvalidValue, "event flags %d", flags)
	}
	e, err := s.EventCreate(4 | cudart.EventFlagDisableTiming | cudart.EventFlagBlockingSync)
	require.NoError(t, err)
	require.NoError(t, s.EventDestroy(e))
	require.NoError(t, s.Free(d))
}

func TestSimStreamDestroyedWhilePaused(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 16 * mib})
	st, err := s.StreamCreate(0)
	require.NoError(t, err)
	d, err := s.Malloc(64)
	require.NoError(t, err)
	require.NoError(t, s.Memset(d, 0, 64))
	require.NoError(t, s.PauseStream(st))
	require.NoError(t, s.MemsetAsync(d, 1, 64, st))
	require.NoError(t, s.StreamDestroy(st))
	requireCode(t, s.StreamQuery(st), cudart.ErrorInvalidResourceHandle, "the handle is gone at once")
	assert.Zero(t, bytesAt(d, 1)[0])
	// Its work still completes, once resumed.
	require.NoError(t, s.ResumeStream(st))
	assert.Equal(t, byte(1), bytesAt(d, 1)[0])
	requireCode(t, s.ResumeStream(st), cudart.ErrorInvalidResourceHandle, "gone once drained")
	require.NoError(t, s.Free(d))
}

func TestSimDefaultStreamsPerDevice(t *testing.T) {
	s := newTestSim(t, Config{MemoryPerDevice: 16 * mib})
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d, err := s.Malloc(64)
	require.NoError(t, err)
	// Pausing device 0's default stream does not hold device 1's.
	require.NoError(t, s.PauseStream(cudart.DefaultStream))
	require.NoError(t, s.MemsetAsync(d, 1, 1, cudart.DefaultStream))
	require.NoError(t, s.SetDevice(1))
	require.NoError(t, s.MemsetAsync(d+1, 2, 1, cudart.LegacyDefaultStream))
	require.NoError(t, s.StreamQuery(cudart.DefaultStream))
	require.NoError(t, s.DeviceSynchronize(), "device 1 has nothing queued")
	require.NoError(t, s.SetDevice(0))
	requireCode(t, s.StreamQuery(cudart.LegacyDefaultStream), cudart.ErrorNotReady)
	require.NoError(t, s.StreamQuery(cudart.PerThreadDefaultStream))
	assert.Equal(t, byte(2), bytesAt(d, 2)[1], "device 1's default stream ran")
	assert.NotEqual(t, byte(1), bytesAt(d, 2)[0], "device 0's default stream is held")
	require.NoError(t, s.ResumeStream(cudart.LegacyDefaultStream))
	assert.Equal(t, byte(1), bytesAt(d, 1)[0])
	require.NoError(t, s.Free(d))
}
