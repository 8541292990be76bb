package main

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFairShare: the C cache's rule for how much of a budget's shared part
// one pair may hold (tc_budget.c), on its own.
func TestFairShare(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name          string
		shared        uintptr
		holders       int64
		quantum, want uintptr
	}{
		{"alone: no limit", 42 * mib, 1, mib, math.MaxUint},
		{"nobody yet: no limit", 42 * mib, 0, mib, math.MaxUint},
		{"two share evenly", 42 * mib, 2, mib, 21 * mib},
		{"three share evenly", 42 * mib, 3, mib, 14 * mib},
		{"at least a quantum", 4 * mib, 16, mib, mib},
		{"an empty shared part still lets a quantum", 0, 2, 256 << 10, 256 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, cFairShare(c.shared, c.holders, c.quantum))
		})
	}
}

// TestLone: when a pair may take past its fair share (and the budget's
// private part): no other holder now, and none for lone_after.
func TestLone(t *testing.T) {
	const ms = int64(1e6)
	for _, c := range []struct {
		name                      string
		others, crowd, now, after int64
		want                      bool
	}{
		{"never crowded", 0, 0, 5 * ms, 10 * ms, true},
		{"another holds a quota", 1, 0, 5 * ms, 10 * ms, false},
		{"crowded recently", 0, 1 * ms, 5 * ms, 10 * ms, false},
		{"crowded long enough ago", 0, 1 * ms, 12 * ms, 10 * ms, true},
		{"exactly lone_after ago", 0, 1 * ms, 11*ms - 0, 10 * ms, true},
		{"lone_after zero: alone is enough", 0, 4 * ms, 5 * ms, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, cLone(c.others, c.crowd, c.now, c.after))
		})
	}
}
