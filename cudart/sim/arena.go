package sim

// The simulated device's address-range allocator.
//
// An arena hands out blocks from one or more regions of address space. Every
// size and start it deals in is a multiple of simAlign. It keeps all blocks,
// free and used, in an address-ordered treap (to say which block a pointer
// falls in) and the free ones in a (size, start)-ordered treap (best fit), so
// allocation, free and lookup cost O(log n). Freed blocks coalesce with their
// address neighbours, but never across a region boundary: a region is one
// reservation (the whole range of a device, or one chunk of a memory pool).

const simAlign = 256 // every pointer the simulated device returns is 256-byte aligned

// simBlock is a piece of an arena's region: free, or one allocation.
type simBlock struct {
	start, size uintptr
	prev, next  *simBlock // address neighbours in the same region
	free        bool

	// Set while the block is in use.
	kind        memKind
	dev         int        // device the allocation belongs to (PointerGetAttributes)
	req         uintptr    // requested size
	pool        *simPool   // owning pool: for a pool's chunk, and for a pool allocation
	chunk       bool       // a memory pool's reservation (a region of that pool's arena)
	pendingFree bool       // FreeAsync queued, not yet executed
	advice      *simAdvice // managed-memory hints (MemAdvise / MemPrefetchAsync)

	byAddr, bySize treapNode
}

func (b *simBlock) end() uintptr { return b.start + b.size }

// whole reports whether the free block b spans its entire region.
func (b *simBlock) whole() bool { return b.prev == nil && b.next == nil }

type simArena struct {
	addr treap // every block, by start
	free treap // free blocks, by (size, start)
	// wholeFree holds the free blocks that span an entire region, so that a
	// memory pool can find the chunks it may give back without a scan.
	wholeFree map[*simBlock]struct{}
	// spare recycles the blocks that coalescing drops, so that a steady
	// allocate/free cycle makes no garbage. A dropped block is referenced
	// by nothing: it has left both treaps and wholeFree, and its caller
	// (Free, or the queued stream-ordered free) is done with it.
	spare []*simBlock
}

const simSpareBlocks = 1024

func (a *simArena) newBlock() *simBlock {
	if n := len(a.spare); n > 0 {
		b := a.spare[n-1]
		a.spare[n-1] = nil
		a.spare = a.spare[:n-1]
		*b = simBlock{}
		return b
	}
	return &simBlock{}
}

func (a *simArena) dropBlock(b *simBlock) {
	if len(a.spare) < simSpareBlocks {
		a.spare = append(a.spare, b)
	}
}

func newSimArena() *simArena {
	return &simArena{wholeFree: make(map[*simBlock]struct{})}
}

// addRegion makes [start, start+size) a new region of a, all free.
func (a *simArena) addRegion(start, size uintptr) *simBlock {
	b := &simBlock{start: start, size: size, free: true}
	a.insertFree(b)
	a.addr.insert(treapKey{start, 0}, &b.byAddr, b)
	return b
}

// removeRegion takes a whole free region out of a.
func (a *simArena) removeRegion(b *simBlock) {
	a.removeFree(b)
	a.addr.remove(treapKey{b.start, 0})
}

func (a *simArena) insertFree(b *simBlock) {
	b.free = true
	a.free.insert(treapKey{b.size, b.start}, &b.bySize, b)
	if b.whole() {
		a.wholeFree[b] = struct{}{}
	}
}

func (a *simArena) removeFree(b *simBlock) {
	a.free.remove(treapKey{b.size, b.start})
	delete(a.wholeFree, b)
}

// alloc takes the best-fitting free block of at least need bytes (a
// multiple of simAlign), splitting off the rest; nil when none fits.
func (a *simArena) alloc(need uintptr) *simBlock {
	n := a.free.ceil(treapKey{need, 0})
	if n == nil {
		return nil
	}
	b := n.blk
	a.removeFree(b)
	if b.size > need {
		rest := a.newBlock()
		rest.start, rest.size, rest.prev, rest.next = b.start+need, b.size-need, b, b.next
		if b.next != nil {
			b.next.prev = rest
		}
		b.next = rest
		b.size = need
		a.addr.insert(treapKey{rest.start, 0}, &rest.byAddr, rest)
		a.insertFree(rest)
	}
	b.free = false
	return b
}

// release frees the used block b, coalescing it with free neighbours, and
// returns the resulting free block.
func (a *simArena) release(b *simBlock) *simBlock {
	b.kind, b.dev, b.req, b.pool = 0, 0, 0, nil
	b.chunk, b.pendingFree, b.advice = false, false, nil
	if p := b.prev; p != nil && p.free {
		a.removeFree(p)
		a.addr.remove(treapKey{b.start, 0})
		p.size += b.size
		p.next = b.next
		if b.next != nil {
			b.next.prev = p
		}
		a.dropBlock(b)
		b = p
	}
	if n := b.next; n != nil && n.free {
		a.removeFree(n)
		a.addr.remove(treapKey{n.start, 0})
		b.size += n.size
		b.next = n.next
		if n.next != nil {
			n.next.prev = b
		}
		a.dropBlock(n)
	}
	a.insertFree(b)
	return b
}

// find returns the block (free or used) that contains p, or nil.
func (a *simArena) find(p uintptr) *simBlock {
	n := a.addr.floor(treapKey{p, 0})
	if n == nil || p >= n.blk.end() {
		return nil
	}
	return n.blk
}

// treap is an ordered map from treapKey to *simBlock whose nodes live inside
// the blocks, so that inserting costs no allocation. Expected O(log n) per
// operation.
type treap struct {
	root *treapNode
	rng  uint64
}

type treapKey struct{ a, b uintptr }

func (k treapKey) less(o treapKey) bool { return k.a < o.a || k.a == o.a && k.b < o.b }

type treapNode struct {
	key         treapKey
	prio        uint64
	left, right *treapNode
	blk         *simBlock
}

func (t *treap) nextPrio() uint64 {
	// xorshift64*: a cheap, well-spread priority source.
	if t.rng == 0 {
		t.rng = 0x9e3779b97f4a7c15
	}
	t.rng ^= t.rng >> 12
	t.rng ^= t.rng << 25
	t.rng ^= t.rng >> 27
	return t.rng * 2685821657736338717
}

// insert adds n under k; k must not be present.
func (t *treap) insert(k treapKey, n *treapNode, blk *simBlock) {
	*n = treapNode{key: k, prio: t.nextPrio(), blk: blk}
	// Descend, without writing, to where n's priority puts it; only the
	// subtree below is split.
	link := &t.root
	for c := *link; c != nil && c.prio > n.prio; c = *link {
		if k.less(c.key) {
			link = &c.left
		} else {
			link = &c.right
		}
	}
	n.left, n.right = treapSplit(*link, k)
	*link = n
}

// treapSplit splits t into the keys < k and the keys >= k.
func treapSplit(t *treapNode, k treapKey) (*treapNode, *treapNode) {
	if t == nil {
		return nil, nil
	}
	if t.key.less(k) {
		l, r := treapSplit(t.right, k)
		t.right = l
		return t, r
	}
	l, r := treapSplit(t.left, k)
	t.left = r
	return l, t
}

// treapMerge joins l and r, every key of l being below every key of r.
func treapMerge(l, r *treapNode) *treapNode {
	switch {
	case l == nil:
		return r
	case r == nil:
		return l
	case l.prio > r.prio:
		l.right = treapMerge(l.right, r)
		return l
	default:
		r.left = treapMerge(l, r.left)
		return r
	}
}

// remove deletes k; it reports whether k was present.
func (t *treap) remove(k treapKey) bool {
	link := &t.root
	for n := *link; n != nil; n = *link {
		switch {
		case k.less(n.key):
			link = &n.left
		case n.key.less(k):
			link = &n.right
		default:
			*link = treapMerge(n.left, n.right)
			n.left, n.right = nil, nil
			return true
		}
	}
	return false
}

// each calls fn on every block of t in key order; fn must not change t.
func (t *treap) each(fn func(*simBlock)) {
	var walk func(n *treapNode)
	walk = func(n *treapNode) {
		for n != nil {
			walk(n.left)
			fn(n.blk)
			n = n.right
		}
	}
	walk(t.root)
}

// ceil returns the node with the smallest key >= k, or nil.
func (t *treap) ceil(k treapKey) *treapNode {
	var best *treapNode
	for n := t.root; n != nil; {
		if n.key.less(k) {
			n = n.right
		} else {
			best = n
			n = n.left
		}
	}
	return best
}

// floor returns the node with the largest key <= k, or nil.
func (t *treap) floor(k treapKey) *treapNode {
	var best *treapNode
	for n := t.root; n != nil; {
		if k.less(n.key) {
			n = n.left
		} else {
			best = n
			n = n.right
		}
	}
	return best
}
