package cachepolicy

import "testing"

func TestBudgets(t *testing.T) {
	for _, c := range []struct{ held, caches, mags uintptr }{
		{0, ThreadCachesFloor, MagazinesFloor},
		{8 << 20, ThreadCachesFloor, MagazinesFloor},
		{1 << 30, 64 << 20, 64 << 20},
	} {
		if got := ThreadCaches(c.held); got != c.caches {
			t.Errorf("ThreadCaches(%d) = %d, want %d", c.held, got, c.caches)
		}
		if got := Magazines(c.held); got != c.mags {
			t.Errorf("Magazines(%d) = %d, want %d", c.held, got, c.mags)
		}
	}
	if BatchBytes > MaxBlock || Quantum > BatchBytes {
		t.Error("a refill must fit the largest block's budget; a quantum a refill")
	}
}
