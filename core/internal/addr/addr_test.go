package addr

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAlign(t *testing.T) {
	for _, c := range []struct {
		v, a, up, down uintptr
		ok             bool
	}{
		{0, 256, 0, 0, true},
		{1, 256, 256, 0, true},
		{256, 256, 256, 256, true},
		{257, 256, 512, 256, true},
		{1000, 1, 1000, 1000, true},
		{math.MaxUint64 - 254, 256, 0, math.MaxUint64 - 255, false}, // overflows
	} {
		up, ok := AlignUp(c.v, c.a)
		assert.Equal(t, c.ok, ok, "AlignUp(%d, %d) fits", c.v, c.a)
		assert.Equal(t, c.up, up, "AlignUp(%d, %d)", c.v, c.a)
		assert.Equal(t, c.down, AlignDown(c.v, c.a), "AlignDown(%d, %d)", c.v, c.a)
		assert.Equal(t, c.v == c.down, IsAligned(c.v, c.a), "IsAligned(%d, %d)", c.v, c.a)
	}
	for v, want := range map[uintptr]bool{0: false, 1: true, 2: true, 3: false, 256: true, 384: false, 1 << 63: true} {
		assert.Equal(t, want, IsPow2(v), "IsPow2(%d)", v)
	}
}

// TestSearch compares Search with a scan on every point around the bases.
func TestSearch(t *testing.T) {
	for _, bases := range [][]uintptr{nil, {100}, {100, 200}, {0, 10, 20, 30, 40}, {5, 6, 7, 1000, 1 << 40, math.MaxUint64}} {
		var points []uintptr
		for _, b := range bases {
			points = append(points, b-1, b, b+1)
		}
		points = append(points, 0, math.MaxUint64)
		for _, p := range points {
			want := -1
			for i, b := range bases {
				if b <= p {
					want = i
				}
			}
			assert.Equal(t, want, Search(bases, p), "Search(%v, %d)", bases, p)
		}
	}
}
