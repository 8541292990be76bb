package genfiles

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteThenCompare(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{"a.h": []byte("a\n"), "b.py": []byte("b\n")}
	if err := Compare(dir, files, "go generate"); err == nil {
		t.Fatal("Compare passed with no files written")
	}
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	if err := Compare(dir, files, "go generate"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.py"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Compare(dir, files, "go generate ./x")
	if err == nil || err.Error() != "not current: [b.py]; run go generate ./x" {
		t.Fatalf("Compare of a changed file: %v", err)
	}
}
