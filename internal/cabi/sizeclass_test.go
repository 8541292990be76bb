package cabi

import "testing"

// TestSizeClasses: every request gets the smallest class that holds it,
// and no class is more than a quarter larger than the requests it serves
// above SmallLimit.
func TestSizeClasses(t *testing.T) {
	if ClassSize(Classes-1) != ClassMax {
		t.Fatalf("the last class is %d bytes, want ClassMax %d", ClassSize(Classes-1), ClassMax)
	}
	for c := 1; c < Classes; c++ {
		if ClassSize(c) <= ClassSize(c-1) {
			t.Fatalf("class %d (%d bytes) not larger than class %d (%d)", c, ClassSize(c), c-1, ClassSize(c-1))
		}
		if c >= SmallClasses && ClassSize(c)-ClassSize(c-1) > ClassSize(c-1)/ClassesPerDoubling {
			t.Fatalf("class %d: %d bytes after %d, more than a quarter", c, ClassSize(c), ClassSize(c-1))
		}
	}
	for c := 0; c < Classes; c++ {
		lo := uintptr(1)
		if c > 0 {
			lo = ClassSize(c-1) + 1
		}
		for _, n := range []uintptr{lo, (lo + ClassSize(c)) / 2, ClassSize(c)} {
			if got := ClassOf(n); got != c {
				t.Fatalf("ClassOf(%d) = %d, want %d (classes %d..%d bytes)", n, got, c, lo, ClassSize(c))
			}
		}
	}
	if ClassSize(0) != 256 || ClassSize(SmallClasses-1) != 4096 || ClassSize(SmallClasses) != 5120 ||
		ClassSize(SmallClasses+3) != 8192 || ClassSize(SmallClasses+4) != 10240 {
		t.Fatalf("classes around SmallLimit: %d %d %d %d %d", ClassSize(0), ClassSize(SmallClasses-1),
			ClassSize(SmallClasses), ClassSize(SmallClasses+3), ClassSize(SmallClasses+4))
	}
}

// TestKinds: values and names are unique, and KindName finds each.
func TestKinds(t *testing.T) {
	seen := map[int]bool{}
	names := map[string]bool{}
	for _, k := range Kinds {
		if seen[k.Value] || names[k.Name] {
			t.Fatalf("kind %s: value %d or name %q twice", k.Enum, k.Value, k.Name)
		}
		seen[k.Value], names[k.Name] = true, true
		if KindName(k.Value) != k.Name {
			t.Fatalf("KindName(%d) = %q, want %q", k.Value, KindName(k.Value), k.Name)
		}
	}
	if KindName(0) != "" || KindName(1000) != "" {
		t.Fatal("KindName of no kind is not empty")
	}
	for i, s := range Statuses {
		if s.Value != i {
			t.Fatalf("status %s is %d, want %d (in order, from 0)", s.Name, s.Value, i)
		}
	}
}
