package heap

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core/internal/errs"
	"github.com/rmmgo/rmmgo/core/internal/streamorder/ordertest"
	"github.com/rmmgo/rmmgo/cudart"
)

// testHeap is a Heap over made-up addresses (the heap never touches its
// memory) and the stand-in runtime, growing as the pool does: by the
// request or the heap's size, whichever is larger, up to max.
type testHeap struct {
	*Heap
	rt *ordertest.Runtime

	mu    sync.Mutex
	next  uintptr // where the next chunk starts
	max   uintptr // 0: no bound
	grows int
}

// newTestHeap returns a heap with a first chunk of initial bytes (none for
// 0) that grows up to max bytes (0: without bound; growth off for
// noGrowth), with or without magazines.
func newTestHeap(t testing.TB, initial, max uintptr, mags bool) *testHeap {
	t.Helper()
	h := &testHeap{Heap: new(Heap), rt: ordertest.New(), next: 0x7f00_0000_0000, max: max}
	h.Init("test", h.rt, h.grow, mags)
	if initial > 0 {
		h.AddChunk(h.take(initial), initial)
	}
	t.Cleanup(func() {
		require.NoError(t, h.Close())
		require.Empty(t, h.rt.Misuses())
		require.Zero(t, h.rt.LiveEvents(), "Close destroys every event")
	})
	return h
}

// take returns an address for a chunk of n bytes, 1 MiB aligned, never
// adjacent to the previous one.
func (h *testHeap) take(n uintptr) uintptr {
	base := h.next
	h.next += (n + 2<<20) &^ (1<<20 - 1)
	return base
}

func (h *testHeap) grow(s cudart.Stream, size uintptr) (uintptr, uintptr, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := max(size, h.Size())
	if h.max != 0 {
		if h.Size()+size > h.max {
			return 0, 0, fmt.Errorf("test upstream: %w: %d bytes", errs.OutOfMemory, size)
		}
		n = min(n, h.max-h.Size())
	}
	h.grows++
	return h.take(n), n, nil
}

func (h *testHeap) growths() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.grows
}

// used returns the bytes handed out (blocks in magazines are free).
func (h *testHeap) used() uintptr { return h.Size() - h.FreeBytes() }

// up256 rounds n up to 256 bytes.
func up256(n uintptr) uintptr { return (n + 255) &^ 255 }

// liveSet is the blocks handed out, checked for overlap as they come.
type liveSet struct {
	mu sync.Mutex
	m  map[uintptr]uintptr
}

func (s *liveSet) add(p, n uintptr) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[uintptr]uintptr{}
	}
	if p%Unit != 0 {
		return fmt.Errorf("%#x is not 256-byte aligned", p)
	}
	keys := make([]uintptr, 0, len(s.m))
	for q := range s.m {
		keys = append(keys, q)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	i := sort.Search(len(keys), func(i int) bool { return keys[i] >= p })
	if i < len(keys) && keys[i] < p+n {
		return fmt.Errorf("[%#x, +%d) overlaps the live block at %#x", p, n, keys[i])
	}
	if i > 0 && keys[i-1]+s.m[keys[i-1]] > p {
		return fmt.Errorf("[%#x, +%d) overlaps the live block at %#x", p, n, keys[i-1])
	}
	s.m[p] = n
	return nil
}

func (s *liveSet) remove(p uintptr) {
	s.mu.Lock()
	delete(s.m, p)
	s.mu.Unlock()
}

func requireIs(t testing.TB, err, target error, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	require.True(t, errors.Is(err, target), "got %v, want an error wrapping %v", err, target)
}
