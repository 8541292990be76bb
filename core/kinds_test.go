package core

import (
	"testing"

	"github.com/rmmgo/rmmgo/internal/cabi"
)

// TestKindNamesAreTheABIs: the kinds named outside kinds.go spell their
// names as internal/cabi does, and so does the largest request.
func TestKindNamesAreTheABIs(t *testing.T) {
	for got, want := range map[string]string{kindArena: cabi.KindArena, kindFixedSize: cabi.KindFixedSize} {
		if got != want {
			t.Errorf("kind %q, internal/cabi says %q", got, want)
		}
	}
	if maxAllocation != cabi.MaxAllocation {
		t.Errorf("maxAllocation %d, internal/cabi says %d", maxAllocation, cabi.MaxAllocation)
	}
}
