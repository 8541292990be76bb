package core

import (
	"sync"

	"github.com/rmmgo/rmmgo/cudart"
)

// The blocks a CudaAsync or CudaAsyncManaged resource handed out from the
// CUDA memory pool it owns, so that its Close gives back the ones still
// outstanding before it destroys the pool. CUDA keeps a destroyed pool's
// memory until every block of it is freed, and once a resource's last C
// handle is released nothing else can free them: without this, every block
// a thread still held when the handle went was lost for the process.
//
// Frees take blocks out whichever resource frees them (a view of the pool
// frees what its owner handed out). Blocks the views handed out are not
// recorded: they stay valid after the owner's Close, as CUDA keeps them,
// until the view frees them.
//
// A block costs a hash, an uncontended lock and a map update next to a
// cudaMallocFromPoolAsync; the table is sharded by address so that threads
// allocating at once rarely meet on one lock.
var asyncBlocks blockTable

// blockShards is the number of independently locked parts of a table.
const blockShards = 64

// blockTable maps a block's address to the pool it came from.
type blockTable struct {
	shards [blockShards]blockShard
}

// blockShard is one locked part of a table, alone on its cache line.
type blockShard struct {
	mu sync.Mutex
	m  map[uintptr]cudart.MemPool
	_  [64 - 16]byte
}

// shard returns the shard holding ptr: allocations are 256-byte aligned,
// and a multiplicative hash spreads the rest.
func (t *blockTable) shard(ptr uintptr) *blockShard {
	h := uint64(ptr>>8) * 0x9E3779B97F4A7C15
	return &t.shards[h>>(64-6)]
}

// add records ptr (not 0), just handed out from pool.
func (t *blockTable) add(ptr uintptr, pool cudart.MemPool) {
	s := t.shard(ptr)
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[uintptr]cudart.MemPool)
	}
	s.m[ptr] = pool
	s.mu.Unlock()
}

// take removes ptr's record, returning its pool; ok is false when ptr was
// not recorded.
func (t *blockTable) take(ptr uintptr) (pool cudart.MemPool, ok bool) {
	s := t.shard(ptr)
	s.mu.Lock()
	pool, ok = s.m[ptr]
	if ok {
		delete(s.m, ptr)
	}
	s.mu.Unlock()
	return pool, ok
}

// takePool removes and returns every block recorded for pool.
func (t *blockTable) takePool(pool cudart.MemPool) []uintptr {
	var out []uintptr
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		for p, q := range s.m {
			if q == pool {
				out = append(out, p)
				delete(s.m, p)
			}
		}
		s.mu.Unlock()
	}
	return out
}

// has reports whether ptr is recorded (for tests).
func (t *blockTable) has(ptr uintptr) bool {
	s := t.shard(ptr)
	s.mu.Lock()
	_, ok := s.m[ptr]
	s.mu.Unlock()
	return ok
}
