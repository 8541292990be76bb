package cacheclock

import (
	"testing"
	"time"
)

func TestAdvance(t *testing.T) {
	var moved time.Duration
	OnAdvance(func(d time.Duration) { moved += d })
	a := Now()
	Advance(time.Hour)
	b := Now()
	if b-a < int64(time.Hour) {
		t.Fatalf("Advance(1h) moved the clock by %v", time.Duration(b-a))
	}
	if moved != time.Hour {
		t.Fatalf("the hook saw %v, want 1h", moved)
	}
	if c := Now(); c < b {
		t.Fatalf("the clock went back: %d after %d", c, b)
	}
}
