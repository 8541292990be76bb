package heap

import (
	"sync"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/core/internal/relaxed"
)

// node describes one block.
type node struct {
	addr  uintptr
	size  uintptr
	seq   uint64        // free sequence number on the owner list's stream
	prev  relaxed.Int32 // physical predecessor in the chunk; 0: none
	owner relaxed.Int32 // id of the list holding the free block; 0: allocated; -1: unused
	next  int32         // physical successor in the chunk; 0: none
	stamp uint32        // bumped whenever the block leaves its size class
	chunk int32
}

const (
	nodePageBits = 12
	nodePageSize = 1 << nodePageBits
)

type nodePage [nodePageSize]node

// nodePages is a snapshot of the node store's page table. Pages never
// move, so an old snapshot stays valid for the nodes it covers.
type nodePages []*nodePage

func (p nodePages) at(id int32) *node { return &p[id>>nodePageBits][id&(nodePageSize-1)] }

// nodeStore hands out node ids. Lists keep a few spare ids each and come
// here in batches.
type nodeStore struct {
	pages atomic.Pointer[nodePages]
	mu    sync.Mutex
	next  int32
	free  []int32
}

func (s *nodeStore) init() {
	p := nodePages{new(nodePage)}
	s.pages.Store(&p)
	s.next = 1 // id 0 means none
}

func (s *nodeStore) load() nodePages { return *s.pages.Load() }

// get appends n unused ids to dst.
func (s *nodeStore) get(dst []int32, n int) []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ; n > 0 && len(s.free) > 0; n-- {
		dst = append(dst, s.free[len(s.free)-1])
		s.free = s.free[:len(s.free)-1]
	}
	for ; n > 0; n-- {
		p := *s.pages.Load()
		if int(s.next) >= len(p)*nodePageSize {
			np := append(append(make(nodePages, 0, len(p)+1), p...), new(nodePage))
			s.pages.Store(&np)
		}
		dst = append(dst, s.next)
		s.next++
	}
	return dst
}

// put returns ids to the store.
func (s *nodeStore) put(ids []int32) {
	s.mu.Lock()
	s.free = append(s.free, ids...)
	s.mu.Unlock()
}
