package relaxed

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestWords: each word reads back what was stored, Add wraps as unsigned
// arithmetic does (the free lists subtract with Add(^(n-1))), and of
// goroutines racing to CompareAndSwap one value only one wins.
func TestWords(t *testing.T) {
	var i Int32
	i.Store(-7)
	assert.Equal(t, int32(-7), i.Load())
	assert.False(t, i.CompareAndSwap(0, 1))
	assert.True(t, i.CompareAndSwap(-7, 3))
	assert.Equal(t, int32(3), i.Load())

	var p Uintptr
	p.Store(1000)
	p.Add(24)
	p.Add(^uintptr(256 - 1)) // minus 256
	assert.Equal(t, uintptr(768), p.Load())

	var u64 Uint64
	u64.Store(1 << 40)
	assert.True(t, u64.CompareAndSwap(1<<40, 5))
	assert.Equal(t, uint64(5), u64.Load())

	var u32 Uint32
	u32.Store(9)
	assert.Equal(t, uint32(9), u32.Load())

	var wg sync.WaitGroup
	wins := make([]bool, 8)
	for g := range wins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wins[g] = u32.CompareAndSwap(9, uint32(100+g))
		}()
	}
	wg.Wait()
	n := 0
	for _, w := range wins {
		if w {
			n++
		}
	}
	assert.Equal(t, 1, n, "exactly one CompareAndSwap wins")
}
