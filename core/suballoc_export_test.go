package core

// Internals the external benchmarks (package core_test) read.

// ArenaLentBytes returns the bytes of a's global arena in use: superblocks
// lent to per-stream arenas and large allocations.
func ArenaLentBytes(a *Arena) uintptr { return a.size - a.global.FreeBytes() }
