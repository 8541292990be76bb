package streamorder

import (
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core/internal/errs"
	"github.com/rmmgo/rmmgo/core/internal/streamorder/ordertest"
	"github.com/rmmgo/rmmgo/cudart"
)

// testList is a list of free blocks known by their sequence numbers, each
// of 1 KiB: fresh ones and settled ones, as the fixed-size resource keeps
// them.
type testList struct {
	List
	fresh, settled []uint64
}

const blockSize = 1 << 10

// free files a block freed now on l's stream. l.Mu is held.
func (l *testList) free() uint64 {
	seq := l.St.Epoch.Load()
	l.fresh = append(l.fresh, seq)
	l.Free.Add(blockSize)
	return seq
}

type testEngine struct {
	Engine[testList, *testList]
	rt *ordertest.Runtime
}

// newTestEngine returns an engine with the given number of shards.
func newTestEngine(t *testing.T, shards int) *testEngine {
	t.Helper()
	e := &testEngine{rt: ordertest.New()}
	prev := runtime.GOMAXPROCS(shards)
	e.Init(Config[testList, *testList]{
		Kind:    "test",
		Runtime: e.rt,
		NewList: func() *testList { return new(testList) },
		SettleList: func(l *testList, cut uint64) {
			l.Cut = cut
			k := 0
			for _, seq := range l.fresh {
				if seq < cut {
					l.settled = append(l.settled, seq)
					l.Settled.Add(blockSize)
				} else {
					l.fresh[k] = seq
					k++
				}
			}
			l.fresh = l.fresh[:k]
		},
	})
	runtime.GOMAXPROCS(prev)
	t.Cleanup(func() {
		require.NoError(t, e.Close())
		assert.Zero(t, e.rt.LiveEvents(), "Close destroys every event")
		assert.Empty(t, e.rt.Misuses())
	})
	return e
}

// freeOn frees a block on stream s (looked up now) in shard 0.
func (e *testEngine) freeOn(t *testing.T, s cudart.Stream) (*Lists[testList], uint64) {
	t.Helper()
	sl, err := e.Lookup(s)
	require.NoError(t, err)
	l := e.List(sl, 0)
	l.Mu.Lock()
	seq := l.free()
	l.Mu.Unlock()
	return sl, seq
}

// TestLookup: the legacy default stream (0 and cudaStreamLegacy) has one
// set of lists; a created stream gets its own on first use and the same
// ones afterwards, beyond the small table too; a stream the runtime does
// not know is the caller's invalid argument.
func TestLookup(t *testing.T) {
	e := newTestEngine(t, 2)
	for _, s := range []cudart.Stream{cudart.DefaultStream, cudart.LegacyDefaultStream} {
		sl, err := e.Lookup(s)
		require.NoError(t, err)
		assert.Same(t, e.Default(), sl)
		assert.True(t, sl.St.Durable())
	}
	var streams []cudart.Stream
	seen := map[*Lists[testList]]bool{}
	for i := 0; i < 3*SmallStreams; i++ {
		s := e.rt.NewStream()
		streams = append(streams, s)
		sl, err := e.Lookup(s)
		require.NoError(t, err)
		assert.False(t, seen[sl], "stream %d has lists of its own", i)
		assert.False(t, sl.St.Durable())
		assert.Equal(t, s, sl.St.Handle)
		assert.Len(t, sl.Shards, 2)
		seen[sl] = true
	}
	for _, s := range streams {
		sl, err := e.Lookup(s)
		require.NoError(t, err)
		assert.True(t, seen[sl], "the same lists again")
	}
	_, err := e.Lookup(cudart.Stream(0xdead))
	require.Error(t, err)
	assert.True(t, errors.Is(err, errs.InvalidArgument), "%v", err)
	var ce *cudart.Error
	assert.True(t, errors.As(err, &ce), "the CUDA error travels along")
}

// TestLists: a stream's list in a shard is made once; every list has its
// own id and is listed once, in id order; DefaultShard is the default
// stream's list in the caller's shard once it was made.
func TestLists(t *testing.T) {
	e := newTestEngine(t, 1)
	assert.Nil(t, e.DefaultShard(), "not made yet")
	l0 := e.List(e.Default(), 0)
	assert.Same(t, l0, e.List(e.Default(), 0))
	assert.Same(t, l0, e.DefaultShard(), "one shard: every goroutine's")
	assert.Equal(t, uint32(0), e.Shard())
	sl, err := e.Lookup(e.rt.NewStream())
	require.NoError(t, err)
	l1 := e.List(sl, 0)
	assert.Same(t, sl.St, l1.St)
	ls := e.AllLists()
	require.Len(t, ls, 2)
	assert.Less(t, ls[0].ID, ls[1].ID)
	locked := e.LockAll()
	for _, l := range locked {
		assert.False(t, l.Mu.TryLock(), "LockAll holds every list")
	}
	UnlockAll(locked)
	for _, l := range locked {
		require.True(t, l.Mu.TryLock(), "UnlockAll released every list")
		l.Mu.Unlock()
	}
}

// TestSettle: another stream's want makes a stream settle at its next call,
// once: one record on that stream, its blocks freed so far become settled
// (and ordered), later ones stay fresh. The legacy default stream is never
// wanted (others record on it themselves).
func TestSettle(t *testing.T) {
	e := newTestEngine(t, 1)
	a := e.rt.NewStream()
	sl, seq := e.freeOn(t, a)
	l := e.List(sl, 0)
	assert.False(t, sl.St.Ordered(seq))
	assert.Equal(t, uintptr(blockSize), l.Fresh())

	e.MaybeSettle(sl, a)
	assert.Zero(t, e.rt.RecordsOn(a), "nobody wants a's memory")
	e.WantOthers(e.AllLists(), e.Default().St, true)
	e.MaybeSettle(sl, a)
	assert.Equal(t, 1, e.rt.RecordsOn(a), "one record, during a's call")
	assert.True(t, sl.St.Ordered(seq))
	assert.Equal(t, []uint64{seq}, l.settled)
	assert.Zero(t, l.Fresh())
	e.MaybeSettle(sl, a)
	assert.Equal(t, 1, e.rt.RecordsOn(a), "settled already")

	_, later := e.freeOn(t, a)
	assert.False(t, sl.St.Ordered(later), "freed after the record")
	assert.Equal(t, []uint64{later}, l.fresh)

	e.Want(e.Default().St)
	e.MaybeSettle(e.Default(), cudart.DefaultStream)
	assert.Zero(t, e.rt.RecordsOn(cudart.DefaultStream), "the default stream is never wanted")

	// SettleNow settles at once, but not a lone stream's growth.
	e.SettleNow(sl, a, true)
	assert.Equal(t, 1, e.rt.RecordsOn(a), "no other stream: nobody to share with")
	e.SettleNow(sl, a, false)
	assert.Equal(t, 2, e.rt.RecordsOn(a))
	assert.True(t, sl.St.Ordered(later))
}

// TestOrderAfter: a stream takes memory freed on the legacy default stream
// after one record there (made lazily) and one wait, and waits again only
// for frees a previous wait does not cover; memory freed on a created
// stream must be covered by that stream's own record first; after a device
// synchronization nothing needs ordering.
func TestOrderAfter(t *testing.T) {
	e := newTestEngine(t, 1)
	b := e.rt.NewStream()
	bl, err := e.Lookup(b)
	require.NoError(t, err)
	def, seq := e.freeOn(t, cudart.DefaultStream)
	assert.True(t, def.St.Ordered(seq), "the default stream is always ordered")

	require.NoError(t, e.OrderAfter(b, bl.St, def.St, seq))
	c := e.rt.Counts()
	assert.Equal(t, 1, e.rt.RecordsOn(cudart.DefaultStream))
	assert.Equal(t, 1, c.Waits)
	require.NoError(t, e.OrderAfter(b, bl.St, def.St, seq))
	assert.Equal(t, c, e.rt.Counts(), "covered by the first wait")
	_, later := e.freeOn(t, cudart.DefaultStream)
	require.NoError(t, e.OrderAfter(b, bl.St, def.St, later))
	assert.Equal(t, 2, e.rt.RecordsOn(cudart.DefaultStream), "a free after the record needs a new one")
	assert.Equal(t, 2, e.rt.Counts().Waits)
	require.NoError(t, e.OrderAfter(b, bl.St, bl.St, later), "a stream is ordered after itself")

	a := e.rt.NewStream()
	al, aseq := e.freeOn(t, a)
	err = e.OrderAfter(b, bl.St, al.St, aseq)
	assert.True(t, errors.Is(err, errs.BadAlloc), "taken before a record covered it: %v", err)
	assert.Zero(t, e.rt.RecordsOn(a), "never recorded on from another stream")
	_, err = e.Record(al.St, a)
	require.NoError(t, err)
	assert.NotZero(t, al.St.Event())
	require.NoError(t, e.OrderAfter(b, bl.St, al.St, aseq))
	assert.Equal(t, 3, e.rt.Counts().Waits)

	_, aseq2 := e.freeOn(t, a)
	require.NoError(t, e.Synchronize())
	assert.True(t, al.St.Ordered(aseq2), "the device was synchronized since")
	c = e.rt.Counts()
	require.NoError(t, e.OrderAfter(b, bl.St, al.St, aseq2))
	assert.Equal(t, c, e.rt.Counts(), "no record, no wait")
	assert.Equal(t, 1, c.Syncs)
	l := e.List(al, 0)
	assert.Zero(t, l.Fresh(), "the synchronization settled a's lists")

	e.rt.FailSync(true)
	assert.True(t, errors.Is(e.Synchronize(), errs.CUDA))
	e.rt.FailSync(false)
}

// TestSweep: once enough streams came, a sweep drops the streams whose
// lists hold nothing, forgetting their events, and keeps those that hold
// memory, have blocks in flight to other streams, or own the kept list; a
// list made for a dropped stream is retired at once.
func TestSweep(t *testing.T) {
	e := newTestEngine(t, 1)
	assert.False(t, e.NeedSweep())
	var gone []*Lists[testList]
	for i := 0; i < SmallStreams+2; i++ {
		s := e.rt.NewStream()
		sl, err := e.Lookup(s)
		require.NoError(t, err)
		e.List(sl, 0)
		_, err = e.Record(sl.St, s)
		require.NoError(t, err)
		gone = append(gone, sl)
	}
	holding, _ := e.freeOn(t, e.rt.NewStream())
	inflight, err := e.Lookup(e.rt.NewStream())
	require.NoError(t, err)
	e.List(inflight, 0)
	inflight.St.Inflight.Add(1)
	kept, err := e.Lookup(e.rt.NewStream())
	require.NoError(t, err)
	keep := e.List(kept, 0)
	events := e.rt.LiveEvents()
	require.Equal(t, SmallStreams+2, events)

	require.True(t, e.NeedSweep())
	ls := e.LockAll()
	assert.True(t, e.Sweep(ls, keep))
	UnlockAll(ls)
	assert.Zero(t, e.rt.LiveEvents(), "the dropped streams' events were destroyed")
	assert.Len(t, e.AllLists(), 3, "holding, in flight, kept")
	for _, sl := range gone {
		assert.True(t, e.List(sl, 0).Retired)
		assert.Zero(t, sl.St.Event())
	}
	for _, sl := range []*Lists[testList]{holding, inflight, kept} {
		assert.False(t, e.List(sl, 0).Retired)
	}
	assert.False(t, e.NeedSweep(), "not before more streams come")
	inflight.St.Inflight.Add(-1)
}

// TestNoteFreed: a list completes a batch after settleFrees frees and more
// than a sixteenth of the resource's size (at least 1 MiB).
func TestNoteFreed(t *testing.T) {
	for _, c := range []struct {
		size, n uintptr
		want    int // frees to complete the batch
	}{
		{1 << 20, 8 << 10, 129},          // at least 1 MiB: 129 frees of 8 KiB
		{64 << 20, 1 << 20, settleFrees}, // 4 MiB: passed after 5 frees, but 64 come first
		{1 << 30, 1 << 20, 65},           // 64 MiB: passed after 65 frees of 1 MiB
	} {
		var l List
		size := func() uintptr { return c.size }
		got := 0
		for i := 1; i <= 1000; i++ {
			if l.NoteFreed(c.n, size) {
				got = i
				break
			}
		}
		assert.Equal(t, c.want, got, "resource of %d bytes, frees of %d", c.size, c.n)
	}
}

// TestCloseStopsEvents: calls racing Close (a resource's Close does not wait
// for them) find the events destroyed: a record or a wait fails with
// errs.Closed, never touching a destroyed event, and no event is made that
// nobody would destroy.
func TestCloseStopsEvents(t *testing.T) {
	e := newTestEngine(t, 1)
	a, b := e.rt.NewStream(), e.rt.NewStream()
	al, aseq := e.freeOn(t, a)
	_, err := e.Record(al.St, a)
	require.NoError(t, err)
	bl, err := e.Lookup(b)
	require.NoError(t, err)
	def, dseq := e.freeOn(t, cudart.DefaultStream)
	require.NoError(t, e.Close())
	require.Zero(t, e.rt.LiveEvents())

	_, err = e.Record(al.St, a)
	assert.ErrorIs(t, err, errs.Closed)
	assert.ErrorIs(t, e.OrderAfter(b, bl.St, al.St, aseq), errs.Closed, "a's event was recorded, then destroyed")
	assert.ErrorIs(t, e.OrderAfter(b, bl.St, def.St, dseq), errs.Closed, "it would record on the default stream")
	e.Want(al.St)
	e.MaybeSettle(al, a)
	assert.Zero(t, e.rt.LiveEvents(), "no event is made after Close")
	assert.Empty(t, e.rt.Misuses())
}
