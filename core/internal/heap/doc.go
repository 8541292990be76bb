// Package heap is the coalescing block heap behind core's Pool and the
// Arena's global arena: a best-fit allocator of 256-byte units over chunks
// its owner takes from an upstream, with stream-ordered free lists (package
// streamorder). It never touches the memory it manages.
//
// Memory comes in chunks (one upstream allocation each). A chunk is tiled
// by blocks, free or allocated, each described by a node; nodes link to
// their neighbours in the chunk (boundary tags), so a free merges with free
// neighbours in constant time, and never across chunks. Free blocks sit in
// the free lists of the stream-ordered engine, each in two parts (fresh
// and settled, see freeList); each part is a two-level segregated fit
// index (TLSF): 64 exact size classes for blocks up to 16 KiB, then 32
// classes per power of two, with a bitmap of the non-empty classes, so
// finding the smallest class that holds a fitting block is a few bit
// operations whatever the number of blocks. Allocated blocks are found from
// their address through one directory of 64 KiB regions: one slot per
// 256-byte unit for blocks under 64 KiB, one per region for larger ones.
// Frees of blocks up to 1 MiB are coalesced late, through the lists'
// magazines, where the pool enables them; with the front on (the pool's
// heap, front.go), requests up to 1 MiB are rounded to size classes and
// blocks freed on the legacy default stream wait in per-P stacks of their
// class, taken by the next request of the class without a list lock.
//
// Nodes live in pages of a node store and are named by int32 ids, so the
// heap holds no Go pointers per block and costs the garbage collector
// nothing however many blocks it has.
//
// Concurrency: a free block's node changes only under its list's lock. A
// node's physical-predecessor link (prev) may be rewritten by the lock
// holder of the list that owns the node before it; owner and prev are
// relaxed shared words (package relaxed). Under its own lock a list merges
// a block with a neighbour only when the neighbour's owner is that list,
// which nobody else can change, so a stale read of a neighbour owned by
// another list is harmless.
//
// Files: heap.go (the Heap and its API), alloc.go (allocation and free in
// stream order), block.go (carving, merging, publishing and claiming
// blocks; adding chunks), front.go (size classes and the per-P front;
// spin*.go its lock), defrag.go (merging other lists' memory before
// growing), release.go (taking chunks out; statistics), list.go (one
// stream's free list in one shard), class.go (the free index's classes),
// chunk.go (chunks and the address index), node.go (the node store),
// magazine.go (deferred coalescing) and expand.go (holes: address space
// with no memory behind it, for the expandable resource).
package heap
