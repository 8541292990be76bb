package cachepolicy

import (
	"testing"
	"time"
)

func TestBudgets(t *testing.T) {
	for _, c := range []struct{ held, caches, mags uintptr }{
		{0, ThreadCachesFloor, MagazinesFloor},
		{8 << 20, ThreadCachesFloor, MagazinesFloor},
		{1 << 30, 32 << 20, 32 << 20},
	} {
		if got := ThreadCaches(c.held); got != c.caches {
			t.Errorf("ThreadCaches(%d) = %d, want %d", c.held, got, c.caches)
		}
		if got := Magazines(c.held); got != c.mags {
			t.Errorf("Magazines(%d) = %d, want %d", c.held, got, c.mags)
		}
	}
	for _, held := range []uintptr{0, 8 << 20, 1 << 30, 80 << 30} {
		if ThreadCachesLone(held) < ThreadCaches(held) {
			t.Errorf("ThreadCachesLone(%d) = %d is less than the shared part %d", held, ThreadCachesLone(held), ThreadCaches(held))
		}
	}
	if got := ThreadCachesLone(1 << 30); got != 256<<20 {
		t.Errorf("ThreadCachesLone(1 GiB) = %d, want 256 MiB", got)
	}
	if BatchBytes > MaxBlock || Quantum > BatchBytes {
		t.Error("a refill must fit the largest block's budget; a quantum a refill")
	}
}

// TestCacheBudget: a resource with memory to spare lets its caches keep up
// to half of what it holds; one that asked its caches for memory less than
// SpareAfter ago keeps them to the thirty-second, and one alone may keep a
// quarter. The time since the resource was pressed is an argument: no test
// waits for a window.
func TestCacheBudget(t *testing.T) {
	const held, free = 1 << 30, 768 << 20
	for _, c := range []struct {
		name          string
		free          uintptr
		pressed       bool
		since         time.Duration
		budget, share uintptr
	}{
		{"never pressed, nothing free", 0, false, 0, 256 << 20, 32 << 20},
		{"never pressed, free memory", free, false, 0, 512 << 20, 512 << 20},
		{"pressed just now", free, true, 0, 256 << 20, 32 << 20},
		{"pressed a moment before SpareAfter", free, true, SpareAfter - 1, 256 << 20, 32 << 20},
		{"pressed SpareAfter ago", free, true, SpareAfter, 512 << 20, 512 << 20},
		{"little free", 8 << 20, false, 0, 256 << 20, 32 << 20},
		{"some free", 100 << 20, true, time.Hour, 256 << 20, 100 << 20},
	} {
		b, s := CacheBudget(held, c.free, c.pressed, c.since)
		if b != c.budget || s != c.share {
			t.Errorf("%s: CacheBudget = %d, %d; want %d, %d", c.name, b, s, c.budget, c.share)
		}
	}
	if b, s := CacheBudget(0, 0, false, 0); b != ThreadCachesFloor || s != ThreadCachesFloor {
		t.Errorf("an empty resource: %d, %d; want the floor %d", b, s, ThreadCachesFloor)
	}
}
