//go:build race

package core

// raceEnabled: the tests run under the race detector, which makes them
// roughly ten times slower; the sub-allocator tests scale down.
const raceEnabled = true
