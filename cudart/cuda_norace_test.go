//go:build !race

package cudart

const cudaRaceEnabled = false
