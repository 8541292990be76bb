package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// Every Go export of a public function is renamed by entries.h, so that
// the public symbol is entry.c's wrapper, which refuses calls in a fork's
// child before entering Go (issue 24). An export missing there would still
// build and work, but hang in a fork's child.
func TestEveryEntryIsGuarded(t *testing.T) {
	header, err := os.ReadFile("entries.h")
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("entries.h is not in the working directory (a test binary run outside the source tree, as the GPU bundle's)")
	}
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	export := regexp.MustCompile(`(?m)^//export (rmm_\w+)$`)
	n := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range export.FindAllSubmatch(src, -1) {
			name := string(m[1])
			n++
			rename := regexp.MustCompile(`(?m)^#define ` + name + ` rmmgo_impl_` + name + `$`)
			entry := regexp.MustCompile(`(?m)^  X\(` + name + `, `)
			if !rename.Match(header) || !entry.Match(header) {
				t.Errorf("%s: //export %s is not in entries.h's RMMGO_STATUS_ENTRIES and renames", f, name)
			}
		}
	}
	if n < 50 {
		t.Errorf("found %d exports of rmm_* functions; the pattern no longer matches the sources", n)
	}
}
