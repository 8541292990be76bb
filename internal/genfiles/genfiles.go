// Package genfiles writes the files a generator makes, or checks that they
// are current: the one way rmmgo's generators (cudart/internal/cudagen,
// internal/cabi/cabigen) keep generated code beside its source.
package genfiles

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Write writes every file (path relative to root -> contents) under root.
func Write(root string, files map[string][]byte) error {
	for _, name := range names(files) {
		if err := os.WriteFile(filepath.Join(root, name), files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Compare fails unless every file under root is as generated, naming the
// stale ones and how to regenerate them (regen, e.g. "go generate ./cudart").
func Compare(root string, files map[string][]byte, regen string) error {
	var stale []string
	for _, name := range names(files) {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil || !bytes.Equal(got, files[name]) {
			stale = append(stale, name)
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("not current: %v; run %s", stale, regen)
	}
	return nil
}

func names(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
