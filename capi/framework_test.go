package main

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// The framework allocators' shards are padded so that no cache line holds
// the data (lock and map) of two shards, wherever the array starts.
// Before, a 40-byte pad made 56-byte shards that shared lines.
func TestLiveShardsDoNotShareCacheLines(t *testing.T) {
	data := unsafe.Sizeof(liveShardData{})
	size := unsafe.Sizeof(liveShard{})
	assert.Zero(t, size%cacheLine, "a shard is whole cache lines: %d bytes", size)
	assert.GreaterOrEqual(t, size-data, uintptr(cacheLine), "at least a line between two shards' data")
	line := func(p uintptr) uintptr { return p / cacheLine }
	for i := 0; i+1 < len(live); i++ {
		lastOfThis := uintptr(unsafe.Pointer(&live[i])) + data - 1
		firstOfNext := uintptr(unsafe.Pointer(&live[i+1]))
		if !assert.Less(t, line(lastOfThis), line(firstOfNext), "shards %d and %d share a line", i, i+1) {
			return
		}
	}
	// Whatever the array's alignment: the gap holds for every offset.
	for base := uintptr(0); base < cacheLine; base += 8 {
		assert.Less(t, line(base+data-1), line(base+size), "array at offset %d", base)
	}
}
