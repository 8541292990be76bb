package core

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core/internal/addr"
	"github.com/rmmgo/rmmgo/core/internal/streamorder"
	"github.com/rmmgo/rmmgo/cudart"
)

func TestArenaOptions(t *testing.T) {
	up := newCountingUpstream(t)
	_, err := NewArena(up, ArenaOptions{ArenaSize: 1<<20 - 256})
	requireIs(t, err, ErrInvalidArgument, "smaller than a superblock")
	_, err = NewArena(nil, ArenaOptions{})
	requireIs(t, err, ErrInvalidArgument)
	assert.Zero(t, up.calls)

	a, err := NewArena(up, ArenaOptions{ArenaSize: 3<<20 + 100})
	require.NoError(t, err)
	assert.Equal(t, uintptr(3<<20), a.ArenaSize(), "aligned down to 256")
	assert.Equal(t, []uintptr{3 << 20}, up.sizes, "the global arena is taken at once")
	require.NoError(t, a.Close())

	free, _, err := testRuntime(t).MemGetInfo()
	require.NoError(t, err)
	a, err = NewArena(up, ArenaOptions{ArenaSize: SizeDefault})
	require.NoError(t, err)
	want := addr.AlignDown(uintptr(free/2), 256)
	assert.InDelta(t, float64(want), float64(a.ArenaSize()), float64(want)/10, "half the free memory")
	require.NoError(t, a.Close())
	assert.Zero(t, up.liveCount())

	up.setFail(true)
	_, err = NewArena(up, ArenaOptions{ArenaSize: 4 << 20})
	requireIs(t, err, ErrOutOfMemory)
}

// TestArenaSuperblocks: small allocations come from superblocks, which go
// back to the global arena when wholly free (one kept per arena).
func TestArenaSuperblocks(t *testing.T) {
	up := newCountingUpstream(t)
	a := oneShard(t, func() (*Arena, error) { return NewArena(up, ArenaOptions{ArenaSize: 64 << 20}) })
	defer a.Close()
	var live []uintptr
	for i := 0; i < 100; i++ {
		x, err := a.Allocate(DefaultStream, 100<<10, 256)
		require.NoError(t, err)
		live = append(live, x)
	}
	lent := ArenaLentBytes(a)
	assert.Equal(t, uintptr(10<<20), lent, "ten 100 KiB allocations per 1 MiB superblock")
	big, err := a.Allocate(DefaultStream, 3<<20, 256)
	require.NoError(t, err, "more than a superblock: from the global arena")
	assert.Equal(t, lent+3<<20, ArenaLentBytes(a))
	require.NoError(t, a.Deallocate(DefaultStream, big, 3<<20, 256))
	for _, x := range live {
		require.NoError(t, a.Deallocate(DefaultStream, x, 100<<10, 256))
	}
	assert.Equal(t, uintptr(1<<20), ArenaLentBytes(a), "one wholly free superblock kept")
	requireIs(t, a.Deallocate(DefaultStream, live[0], 100<<10, 256), ErrInvalidPointer)
}

// TestArenaExhaustion: an arena with no room fails with ErrOutOfMemory,
// writes the dump when asked, and works again after frees.
func TestArenaExhaustion(t *testing.T) {
	dir := t.TempDir()
	wd, err := os.Getwd()
	require.NoError(t, err)
	require.NoError(t, os.Chdir(dir))
	t.Cleanup(func() { _ = os.Chdir(wd) })

	up := newCountingUpstream(t)
	a := oneShard(t, func() (*Arena, error) { return NewArena(up, ArenaOptions{ArenaSize: 4 << 20, DumpLogOnFailure: true}) })
	defer a.Close()
	x, err := a.Allocate(DefaultStream, 2<<20, 256)
	require.NoError(t, err)
	var small []uintptr
	for {
		y, err := a.Allocate(DefaultStream, 256<<10, 256)
		if err != nil {
			requireIs(t, err, ErrOutOfMemory)
			assert.Contains(t, err.Error(), "No room in arena.")
			break
		}
		small = append(small, y)
		require.Less(t, len(small), 100)
	}
	assert.Len(t, small, 8, "2 MiB left: two superblocks of four")
	dump, err := os.ReadFile(filepath.Join(dir, ArenaDumpFile))
	require.NoError(t, err, "the dump was written")
	assert.Contains(t, string(dump), "no room in arena")
	assert.Contains(t, string(dump), "superblocks lent: 2")

	require.NoError(t, a.Deallocate(DefaultStream, x, 2<<20, 256))
	for _, y := range small {
		require.NoError(t, a.Deallocate(DefaultStream, y, 256<<10, 256))
	}
	z, err := a.Allocate(DefaultStream, 3<<20, 256)
	require.NoError(t, err, "usable again after frees")
	require.NoError(t, a.Deallocate(DefaultStream, z, 3<<20, 256))
}

// TestArenaReclaim: memory freed on another stream than its arena's waits
// in that arena; when the arena has no room left it is taken back (after
// one device synchronization) and serves another stream.
func TestArenaReclaim(t *testing.T) {
	r0 := testRuntime(t)
	rt := newOrderingRuntime(t)
	up := newCountingUpstream(t)
	a, err := newArena(rt, up, ArenaOptions{ArenaSize: 2 << 20})
	require.NoError(t, err)
	defer a.Close()
	sa, sb, sc := newStream(t, r0), newStream(t, r0), newStream(t, r0)
	const size = smallLimit
	var live []uintptr
	for {
		x, err := a.Allocate(sa, size, 256)
		if err != nil {
			requireIs(t, err, ErrOutOfMemory)
			break
		}
		live = append(live, x)
	}
	require.NotEmpty(t, live)
	for _, x := range live {
		require.NoError(t, a.Deallocate(sb, x, size, 256))
	}
	requireIs(t, a.Deallocate(sb, live[0], size, 256), ErrInvalidPointer, "a double free on another stream")
	before := rt.counts()
	z, err := a.Allocate(sc, 2<<20, 256)
	require.NoError(t, err, "the queued frees came back")
	assert.Equal(t, before[2]+1, rt.counts()[2], "one device synchronization")
	require.NoError(t, a.Deallocate(sc, z, 2<<20, 256))
}

// TestArenaCrossStreamFree: a block freed on stream B into stream A's
// arena is reused by A only after A waits for a record of B's event, made
// during a later call on B (A never touches B's handle); until then A takes
// other memory, without host synchronization.
func TestArenaCrossStreamFree(t *testing.T) {
	sim := simDevice(t)
	rt := newOrderingRuntime(t)
	up := newCountingUpstream(t)
	a := oneShard(t, func() (*Arena, error) { return newArena(rt, up, ArenaOptions{ArenaSize: 8 << 20}) })
	defer a.Close()
	sa, sb := newStream(t, sim), newStream(t, sim)
	const size = smallLimit
	const perSuperblock = superblockSize / size
	alloc := func() uintptr {
		t.Helper()
		x, err := a.Allocate(sa, size, 256)
		require.NoError(t, err)
		return x
	}
	var xs []uintptr // one full superblock
	for i := 0; i < perSuperblock; i++ {
		xs = append(xs, alloc())
	}
	require.NoError(t, sim.PauseStream(sb))
	defer sim.ResumeStream(sb) // before Close, which synchronizes
	require.NoError(t, sim.MemsetAsync(xs[1], 0xAA, size, sb))
	require.NoError(t, a.Deallocate(sb, xs[1], size, 256))

	before := rt.counts()
	ys := []uintptr{alloc()}
	assert.NotEqual(t, xs[1], ys[0], "nothing orders A after B yet: a new superblock")
	assert.Zero(t, rt.recordsOnStream(sb), "A never records on B")
	require.NoError(t, a.Deallocate(sb, xs[2], size, 256))
	assert.Equal(t, 1, rt.recordsOnStream(sb), "B's next call records B's event (A asked)")
	for i := 1; i < perSuperblock; i++ {
		ys = append(ys, alloc()) // fill the second superblock
	}
	mid := rt.counts()
	y := alloc()
	require.Equal(t, xs[1], y, "A's arena takes back the blocks freed on B")
	after := rt.counts()
	assert.Equal(t, mid[0], after[0], "no further record")
	assert.Equal(t, mid[1]+1, after[1], "one wait on A")
	assert.Equal(t, before[2:], after[2:], "no host synchronization")
	z := alloc()
	assert.Equal(t, xs[2], z, "the second block freed on B came back with the first")
	assert.Equal(t, after, rt.counts(), "covered by the same wait")
	require.NoError(t, sim.MemsetAsync(y, 0xCC, size, sa))
	require.NoError(t, sim.ResumeStream(sb))
	require.NoError(t, expect(sim, y, size, 0xCC, sa))
	for _, x := range append(append(ys, y, z), xs[0], xs[3]) {
		require.NoError(t, a.Deallocate(sa, x, size, 256))
	}
	assert.Empty(t, rt.misuses())
}

// TestSuperblockBitmaps checks the superblock's first fit, frees and run
// bookkeeping against a plain model.
func TestSuperblockBitmaps(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	sb := &superblock{free: superblockUnits}
	var model [superblockUnits]bool
	type alloc struct{ i, u int }
	var live []alloc
	runAt := func(i int) int { // the free run around unit i in the model
		lo, hi := i, i
		for lo > 0 && !model[lo-1] {
			lo--
		}
		for hi < superblockUnits && !model[hi] {
			hi++
		}
		return hi - lo
	}
	for step := 0; step < 20000; step++ {
		if len(live) == 0 || rng.IntN(2) == 0 {
			u := 1 + rng.IntN(200)
			want := -1
			for i := 0; i+u <= superblockUnits && want < 0; i++ {
				ok := true
				for k := i; k < i+u; k++ {
					if model[k] {
						ok = false
						break
					}
				}
				if ok {
					want = i
				}
			}
			got, _ := sb.alloc(u)
			require.Equal(t, want, got, "first fit of %d units", u)
			if got >= 0 {
				for k := got; k < got+u; k++ {
					model[k] = true
				}
				live = append(live, alloc{got, u})
				require.True(t, sb.valid(got, u))
			}
		} else {
			k := rng.IntN(len(live))
			a := live[k]
			live[k] = live[len(live)-1]
			live = live[:len(live)-1]
			setBits(sb.startMap(), a.i, 1, false)
			for j := a.i; j < a.i+a.u; j++ {
				model[j] = false
			}
			require.Equal(t, runAt(a.i), sb.release(a.i, a.u))
		}
	}
}

// TestArenaSiblingShards: a stream's lists in several shards (one per P
// that allocated on it) share its superblocks: a list that is full takes
// room from the stream's idle lists before a new superblock, moving the
// superblock it found (unless frees from other streams wait in it), so a
// goroutine that moves between Ps does not leave a partly used superblock
// in each; at exhaustion it takes room from any of them.
func TestArenaSiblingShards(t *testing.T) {
	r0 := testRuntime(t)
	up := newCountingUpstream(t)
	prev := runtime.GOMAXPROCS(4)
	a, err := NewArena(up, ArenaOptions{ArenaSize: 4 * superblockSize})
	runtime.GOMAXPROCS(prev)
	require.NoError(t, err)
	defer a.Close()
	require.Len(t, a.eng.Default().Shards, 4)

	const size = 250 << 10 // four to a superblock
	u := size >> unitShift
	sl, err := a.eng.Lookup(DefaultStream)
	require.NoError(t, err)
	// alloc allocates as a goroutine on P i would.
	alloc := func(i uint32) (uintptr, error) {
		l := a.eng.List(sl, i)
		l.Mu.Lock()
		p := l.allocLocal(u)
		l.Mu.Unlock()
		if p != 0 {
			return p, nil
		}
		return a.allocateSlow(DefaultStream, sl, l, u)
	}
	sbsOf := func(i uint32) int {
		l := a.eng.List(sl, i)
		l.Mu.Lock()
		defer l.Mu.Unlock()
		return len(l.sbs)
	}

	x, err := alloc(0)
	require.NoError(t, err)
	l1 := a.eng.List(sl, 1)
	assert.Zero(t, a.steal(sl, l1, u, true), "P 0's list served an allocation since anyone looked: left alone")
	y := a.steal(sl, l1, u, true)
	require.NotZero(t, y, "no allocation since the last look: idle, so P 1 takes room there")
	assert.Equal(t, uintptr(superblockSize), ArenaLentBytes(a), "P 1 used P 0's superblock")
	assert.Equal(t, x+size, y)
	assert.Equal(t, []int{0, 1}, []int{sbsOf(0), sbsOf(1)}, "the superblock moved to P 1's list")
	require.NoError(t, a.Deallocate(DefaultStream, x, size, 256), "freed through its new list")

	// A superblock where a free from another stream waits stays put.
	other := newStream(t, r0)
	require.NoError(t, a.Deallocate(other, y, size, 256))
	z, err := alloc(2)
	require.NoError(t, err)
	assert.Equal(t, uintptr(superblockSize), ArenaLentBytes(a))
	assert.Equal(t, []int{1, 0}, []int{sbsOf(1), sbsOf(2)}, "not moved: its queue belongs to P 1's list")

	// Allocations from every P fill the arena before it runs out.
	live := []uintptr{z}
	for len(live) < 15 {
		p, err := alloc(uint32(len(live) % 4))
		require.NoError(t, err, "allocation %d: room left in the stream's superblocks", len(live))
		live = append(live, p)
	}
	assert.Equal(t, uintptr(4*superblockSize), ArenaLentBytes(a))
	p, err := alloc(3)
	require.NoError(t, err, "the block freed on the other stream, after a synchronization")
	assert.Equal(t, y, p)
	live = append(live, p)
	_, err = alloc(0)
	requireIs(t, err, ErrOutOfMemory, "every superblock full")
	for _, p := range live {
		require.NoError(t, a.Deallocate(DefaultStream, p, size, 256))
	}
	p, err = a.Allocate(DefaultStream, 3*superblockSize, 256)
	require.NoError(t, err, "all of it back")
	require.NoError(t, a.Deallocate(DefaultStream, p, 3*superblockSize, 256))
}

// TestArenaStreamChurn: a program that makes stream after stream, each
// allocating and freeing a little before it is destroyed, leaves the arena
// no larger: the arena runs out of superblocks (each stream's arena keeps
// one), takes them back, and drops the lists of the streams that hold
// nothing.
func TestArenaStreamChurn(t *testing.T) {
	r0 := testRuntime(t)
	up := newCountingUpstream(t)
	a := oneShard(t, func() (*Arena, error) { return NewArena(up, ArenaOptions{ArenaSize: 8 * superblockSize}) })
	defer a.Close()
	for i := 0; i < 200; i++ {
		s, err := r0.StreamCreate(cudart.StreamFlagNonBlocking)
		require.NoError(t, err)
		p, err := a.Allocate(s, 100<<10, 256)
		require.NoError(t, err, "stream %d", i)
		require.NoError(t, a.Deallocate(s, p, 100<<10, 256))
		require.NoError(t, r0.StreamSynchronize(s))
		require.NoError(t, r0.StreamDestroy(s))
	}
	assert.Less(t, len(a.eng.AllLists()), 40, "the lists of destroyed streams were dropped")
	p, err := a.Allocate(DefaultStream, 6*superblockSize, 256)
	require.NoError(t, err, "the superblocks came back")
	require.NoError(t, a.Deallocate(DefaultStream, p, 6*superblockSize, 256))
}

// TestArenaSweepKeepsStreamsWithQueuedFrees: a free made on stream S into a
// superblock of another stream's list waits in that list until drained, and
// drain waits on S's event. The sweep must not forget S (destroying that
// event) while such a free is queued, even when S's own lists hold nothing.
// Seen once under -race in CI as "waiting on another stream's event: ...
// event 0x0 does not exist".
func TestArenaSweepKeepsStreamsWithQueuedFrees(t *testing.T) {
	r0 := testRuntime(t)
	up := newCountingUpstream(t)
	a := oneShard(t, func() (*Arena, error) { return NewArena(up, ArenaOptions{ArenaSize: 8 * superblockSize}) })
	defer a.Close()
	owner, freer := newStream(t, r0), newStream(t, r0)
	p, err := a.Allocate(owner, 100<<10, 256)
	require.NoError(t, err)
	// The freeing stream has a list of its own, which holds nothing once
	// reclaim gives its wholly free superblock back (too few streams yet for
	// reclaim's own sweep to drop it).
	q, err := a.Allocate(freer, 100<<10, 256)
	require.NoError(t, err)
	require.NoError(t, a.Deallocate(freer, q, 100<<10, 256))
	a.quiesce()
	_, err = a.reclaim(nil, 0)
	a.unquiesce()
	require.NoError(t, err)
	require.NoError(t, a.Deallocate(freer, p, 100<<10, 256)) // queued in owner's list
	sl, err := a.eng.Lookup(freer)
	require.NoError(t, err)
	st := sl.St
	_, err = a.eng.Record(st, freer) // the record that covers the free
	require.NoError(t, err)
	// Enough streams for the sweep to run.
	for i := 0; i < 2*streamorder.SmallStreams; i++ {
		_, err := a.eng.Lookup(newStream(t, r0))
		require.NoError(t, err)
	}
	ls := a.eng.LockAll()
	a.eng.Sweep(ls, nil)
	streamorder.UnlockAll(ls)
	ev := st.Event()
	assert.NotZero(t, ev, "the freeing stream's event outlives its queued free")

	osl, err := a.eng.Lookup(owner)
	require.NoError(t, err)
	l := a.eng.List(osl, 0)
	l.Mu.Lock()
	err = a.drain(l, owner, true)
	n := len(l.remote)
	l.Mu.Unlock()
	require.NoError(t, err)
	assert.Zero(t, n, "the queued free was taken back")
	assert.Zero(t, st.Inflight.Load())
}
