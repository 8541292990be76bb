package abi

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFuncs checks the list against itself: each supported runtime version
// gets exactly one shape of every symbol, the hint functions in the shapes
// cudart expects, and no two symbols fill one slot.
func TestFuncs(t *testing.T) {
	for _, f := range Funcs() {
		assert.True(t, strings.HasPrefix(f.Symbol, "cuda") || f.DriverABI != 0 && strings.HasPrefix(f.Symbol, "cu"), f.Symbol)
		assert.True(t, f.Before == 0 || f.Before > f.Since, "%s: empty version range", f.Symbol)
		assert.True(t, f.Since == 0 || f.Since > MinRuntimeVersion, "%s: Since %d", f.Symbol, f.Since)
	}
	for _, version := range []int{12000, 12010, 12020, 12050, 12090, 13000, 13020} {
		shapes := make(map[string][]string)
		slots := make(map[string][]string)
		for _, f := range Funcs() {
			if f.AppliesTo(version) {
				shapes[f.Symbol] = append(shapes[f.Symbol], f.TypeName())
				slots[f.TypeName()] = append(slots[f.TypeName()], f.Symbol)
			}
		}
		for sym, types := range shapes {
			assert.Len(t, types, 1, "version %d: %s has shapes %v", version, sym, types)
		}
		for typ, syms := range slots {
			assert.Len(t, syms, 1, "version %d: %v fill slot %s", version, syms, typ)
		}
		wantPrefetch, wantAdvise := "cudaMemPrefetchAsync_device", "cudaMemAdvise_device"
		if version >= 13000 {
			wantPrefetch, wantAdvise = "cudaMemPrefetchAsync_location", "cudaMemAdvise_location"
		}
		assert.Equal(t, []string{wantPrefetch}, shapes["cudaMemPrefetchAsync"], "version %d", version)
		assert.Equal(t, []string{wantAdvise}, shapes["cudaMemAdvise"], "version %d", version)
		_, v2 := shapes["cudaMemPrefetchAsync_v2"]
		assert.Equal(t, version >= 12020 && version < 13000, v2, "version %d", version)
		_, entry := shapes["cudaGetDriverEntryPointByVersion"]
		assert.Equal(t, version >= 12050, entry, "version %d", version)
	}
}

func TestConsts(t *testing.T) {
	seen := make(map[string]bool)
	for _, c := range Consts() {
		assert.False(t, seen[c.GoName], "%s listed twice", c.GoName)
		seen[c.GoName] = true
		if c.CName != "" {
			assert.False(t, seen["C:"+c.CName], "%s listed twice", c.CName)
			seen["C:"+c.CName] = true
			assert.Regexp(t, `^(cuda[A-Z][A-Za-z0-9]*|(CU|CUDA)_[A-Z0-9_]+)$`, c.CName)
		}
		assert.True(t, c.Since == 0 || c.Since > MinRuntimeVersion, "%s: Since %d", c.CName, c.Since)
	}
}

// TestDriverAliases: each alias names a runtime constant of Consts and a
// driver constant that Consts does not list.
func TestDriverAliases(t *testing.T) {
	goNames, cNames := make(map[string]bool), make(map[string]bool)
	for _, c := range Consts() {
		goNames[c.GoName], cNames[c.CName] = true, true
	}
	for _, a := range DriverAliases() {
		assert.True(t, goNames[a.GoName], "%s: no such constant in Consts", a.GoName)
		assert.False(t, cNames[a.CName], "%s is in Consts already", a.CName)
		assert.Regexp(t, `^(CU|CUDA)_[A-Z0-9_]+$`, a.CName)
	}
}
