package cachepolicy

import "testing"

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
