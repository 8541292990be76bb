package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/internal/cabi"
)

// TestSizeClassesAreCabis: the C cache computes internal/cabi's classes,
// for every size up to the largest class at its edges and between them.
func TestSizeClassesAreCabis(t *testing.T) {
	require.Equal(t, cabi.Classes, cClasses())
	for c := 0; c < cabi.Classes; c++ {
		require.Equal(t, cabi.ClassSize(c), cClassSize(c), "class %d", c)
		require.Equal(t, cabi.ClassSize(c), cClassTable(c), "class %d", c)
		lo := uintptr(1)
		if c > 0 {
			lo = cabi.ClassSize(c-1) + 1
		}
		for _, n := range []uintptr{lo, lo + 1, (lo + cabi.ClassSize(c)) / 2, cabi.ClassSize(c) - 1, cabi.ClassSize(c)} {
			require.Equal(t, cabi.ClassOf(n), cClassOf(n), "%d bytes", n)
		}
	}
	for n := uintptr(1); n <= 1<<20; n += 37 {
		require.Equal(t, cabi.ClassOf(n), cClassOf(n), "%d bytes", n)
	}
}

// TestStatusesAndKindsAreCabis: rmm_status_string names every status
// internal/cabi lists, and the kind table has every kind it lists, by its
// name.
func TestStatusesAndKindsAreCabis(t *testing.T) {
	for _, s := range cabi.Statuses {
		assert.Equal(t, s.Name, cStatusString(s.Value))
	}
	assert.Equal(t, "RMM_ERROR_UNKNOWN_STATUS", cStatusString(len(cabi.Statuses)))
	require.Len(t, kindsByEnum, len(cabi.Kinds))
	for _, k := range cabi.Kinds {
		spec := kindsByName[k.Name]
		if assert.NotNil(t, spec, k.Enum) {
			assert.Equal(t, k.Value, int(spec.kind), k.Enum)
		}
	}
}
