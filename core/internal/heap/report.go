package heap

import (
	"sort"

	"github.com/rmmgo/rmmgo/core/internal/streamorder"
	"github.com/rmmgo/rmmgo/cudart"
)

// What the heap holds, for out-of-memory reports and memory snapshots.
// Nothing here runs on the allocation path: the owners call these when an
// allocation failed, or when asked for a snapshot.

// StreamFree is the coalesced free memory of one stream's lists.
type StreamFree struct {
	Stream  cudart.Stream // the stream as first seen (for messages only)
	Free    uintptr       // free bytes in the stream's lists (coalesced blocks)
	Largest uintptr       // the largest of them
	Blocks  int
}

// FreeByStream returns, per stream, the free blocks of its lists (blocks
// waiting in magazines and in the front are not among them: MagazineHeld
// counts those), largest first. It locks each list in turn: a snapshot
// while others work.
func (h *Heap) FreeByStream() []StreamFree {
	pg := h.nodes.load()
	by := map[*streamorder.State]*StreamFree{}
	var order []*streamorder.State
	for _, l := range h.eng.AllLists() {
		l.Mu.Lock()
		pg = h.nodes.load()
		st := l.St
		f := by[st]
		if f == nil {
			f = &StreamFree{}
			if st != nil {
				f.Stream = st.Handle
			}
			by[st] = f
			order = append(order, st)
		}
		l.each(pg, func(_ int32, n *node) {
			f.Blocks++
			f.Free += n.size
			f.Largest = max(f.Largest, n.size)
		})
		l.Mu.Unlock()
	}
	out := make([]StreamFree, 0, len(order))
	for _, st := range order {
		if f := by[st]; f.Blocks > 0 {
			out = append(out, *f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Largest > out[j].Largest })
	return out
}

// Where a block of a snapshot is.
const (
	BlockLive     = "live"     // handed out
	BlockFree     = "free"     // in a free list, coalesced
	BlockMagazine = "magazine" // freed, waiting unmerged in a list's magazine
	BlockFront    = "front"    // freed on the default stream, waiting in a per-P front shard
	BlockUnmapped = "unmapped" // a hole of the expandable resource: address space without memory
)

// BlockInfo is one block of a snapshot.
type BlockInfo struct {
	Addr, Size uintptr
	State      string        // BlockLive, BlockFree, BlockMagazine or BlockFront
	Stream     cudart.Stream // the stream whose list holds a free block (magazine blocks too)
}

// ChunkInfo is one chunk of a snapshot and its blocks, in address order.
type ChunkInfo struct {
	Base, Size uintptr
	Blocks     []BlockInfo
}

// Snapshot returns every chunk and every block in it, without changing
// anything: blocks in magazines and in the front keep their place and are
// reported as such. It takes the growth lock and every list's lock (the
// front's shards one at a time, first), so it is consistent but for blocks
// that move between the front and a user meanwhile.
func (h *Heap) Snapshot() []ChunkInfo {
	cached := map[uintptr]string{}
	if f := h.front; f != nil {
		for i := range f.shards {
			sh := f.lockShardAt(i)
			for _, st := range sh.stacks {
				for _, e := range st {
					cached[e.addr] = BlockFront
				}
			}
			unlockShard(sh)
		}
	}
	h.growMu.Lock()
	defer h.growMu.Unlock()
	h.holes.mu.Lock()
	defer h.holes.mu.Unlock()
	ls := h.eng.LockAll()
	defer streamorder.UnlockAll(ls)
	stream := map[int32]cudart.Stream{}
	magStream := map[uintptr]cudart.Stream{}
	for _, l := range ls {
		var s cudart.Stream
		if l.St != nil {
			s = l.St.Handle
		}
		stream[l.ID] = s
		if m := l.mag; m != nil {
			mask := uint64(len(m.ring) - 1)
			for p := m.head; p != m.tail; p++ {
				if e := m.ring[p&mask]; e.id != 0 {
					cached[e.addr] = BlockMagazine
					magStream[e.addr] = s
				}
			}
		}
	}
	pg := h.nodes.load()
	t := h.chunks.Load()
	out := make([]ChunkInfo, 0, len(t.sorted))
	for _, c := range t.sorted {
		ci := ChunkInfo{Base: c.base, Size: c.size}
		for id := c.first; id != 0; id = pg.at(id).next {
			n := pg.at(id)
			b := BlockInfo{Addr: n.addr, Size: n.size, State: BlockLive}
			if o := n.owner.Load(); o > 0 {
				b.State, b.Stream = BlockFree, stream[o]
			} else if o == holeOwner {
				b.State = BlockUnmapped
			} else if where, ok := cached[n.addr]; ok {
				b.State, b.Stream = where, magStream[n.addr]
			}
			ci.Blocks = append(ci.Blocks, b)
		}
		out = append(out, ci)
	}
	return out
}
