package core

import (
	"fmt"
	"strings"

	"github.com/rmmgo/rmmgo/core/internal/heap"
	"github.com/rmmgo/rmmgo/cudart"
)

// The figures each resource gives an out-of-memory report (oom.go). Read
// on failure paths only; each is a snapshot while others work.

func heapStreams(h *heap.Heap) ([]StreamFree, uintptr, int, uintptr) {
	var free, largest uintptr
	var blocks int
	ss := streamFrees(h.FreeByStream(), func(f heap.StreamFree) StreamFree {
		free += f.Free
		blocks += f.Blocks
		largest = max(largest, f.Largest)
		return StreamFree{Stream: f.Stream, Free: f.Free, LargestFree: f.Largest, FreeBlocks: f.Blocks}
	})
	return ss, free, blocks, largest
}

func (p *Pool) oomReport() ResourceReport {
	_, mag := p.h.MagazineHeld()
	ss, free, blocks, largest := heapStreams(&p.h)
	bs, bfree, bblocks, blargest := heapStreams(&p.big)
	ss, free, blocks, largest = append(ss, bs...), free+bfree, blocks+bblocks, max(largest, blargest)
	return ResourceReport{Kind: kindPool, Live: p.UsedBytes(), Reserved: p.PoolSize(), Maximum: p.maxSize,
		Free: free + mag, FreeBlocks: blocks, LargestFree: largest, Streams: ss,
		MagazineHeld: mag, CacheHeld: p.caches.held()}
}

func (e *Expandable) oomReport() ResourceReport {
	_, mag := e.h.MagazineHeld()
	ss, free, blocks, largest := heapStreams(&e.h)
	maxBytes := e.MaximumSize()
	return ResourceReport{Kind: kindExpandable, Live: e.UsedBytes(), Reserved: e.PoolSize(), Maximum: maxBytes,
		Free: free + mag, FreeBlocks: blocks, LargestFree: largest, Streams: ss,
		MagazineHeld: mag, CacheHeld: e.caches.held(),
		Note: fmt.Sprintf("%s of address space reserved, %s unmapped, peak mapped %s",
			HumanBytes(e.ReservedSize()), HumanBytes(e.h.HoleBytes()), HumanBytes(e.PeakPoolSize()))}
}

func (a *Arena) oomReport() ResourceReport {
	ss, free, blocks, largest := heapStreams(&a.global)
	r := ResourceReport{Kind: kindArena, Reserved: a.size, Free: free, FreeBlocks: blocks, LargestFree: largest,
		Streams: ss, CacheHeld: a.caches.held()}
	var sbs, sbFree, sbLargest int
	for _, l := range a.eng.AllLists() {
		l.Mu.Lock()
		for _, sb := range l.sbs {
			sbs++
			sbFree += sb.free
			sbLargest = max(sbLargest, sb.largestRun())
		}
		l.Mu.Unlock()
	}
	lentFree := uintptr(sbFree) << unitShift
	r.Free += lentFree
	if idle := r.Free + r.CacheHeld; idle < a.size {
		r.Live = a.size - idle
	}
	r.Note = fmt.Sprintf("global arena %s free (largest %s); %d superblocks of 1 MiB lent to stream arenas, %s free in them (largest run %s)",
		HumanBytes(free), HumanBytes(largest), sbs, HumanBytes(lentFree), HumanBytes(uintptr(sbLargest)<<unitShift))
	return r
}

func (f *FixedSize) oomReport() ResourceReport {
	r := ResourceReport{Kind: kindFixedSize, Reserved: f.chunkBytes(), MaxRequest: f.blockSize, CacheHeld: f.caches.held()}
	by := map[Stream]*StreamFree{}
	var order []Stream
	for _, l := range f.eng.AllLists() {
		n := l.Free.Load()
		if n == 0 {
			continue
		}
		s := DefaultStream
		if l.St != nil {
			s = l.St.Handle
		}
		sf := by[s]
		if sf == nil {
			sf = &StreamFree{Stream: s}
			by[s] = sf
			order = append(order, s)
		}
		sf.Free += n
		sf.FreeBlocks += int(n / f.blockSize)
		sf.LargestFree = f.blockSize
	}
	for _, s := range order {
		r.Streams = append(r.Streams, *by[s])
		r.Free += by[s].Free
		r.FreeBlocks += by[s].FreeBlocks
	}
	if r.Free > 0 {
		r.LargestFree = f.blockSize
	}
	if idle := r.Free + r.CacheHeld; idle < r.Reserved {
		r.Live = r.Reserved - idle
	}
	r.Note = fmt.Sprintf("blocks of %s, %d per chunk", HumanBytes(f.blockSize), f.perChunk)
	return r
}

func (b *Binning) oomReport() ResourceReport {
	sizes := b.BinSizes()
	parts := make([]string, len(sizes))
	for i, s := range sizes {
		parts[i] = HumanBytes(s)
	}
	return ResourceReport{Kind: kindBinning, Note: "bins " + strings.Join(parts, ", ") + "; larger requests go to the upstream"}
}

func (c *poolCore) oomReport() ResourceReport {
	r := ResourceReport{Kind: c.kind}
	pool := c.asyncPool()
	if pool == 0 {
		return r
	}
	used, uerr := c.rt.MemPoolGetAttribute(pool, cudart.MemPoolAttrUsedMemCurrent)
	res, rerr := c.rt.MemPoolGetAttribute(pool, cudart.MemPoolAttrReservedMemCurrent)
	if uerr == nil && rerr == nil {
		r.Live, r.Reserved = uintptr(used), uintptr(res)
		if res > used {
			r.Free = uintptr(res - used)
		}
		r.Note = "the CUDA memory pool's free memory, its largest block unknown"
	}
	if thr, err := c.rt.MemPoolGetAttribute(pool, cudart.MemPoolAttrReleaseThreshold); err == nil && thr != 0 && thr != ^uint64(0) {
		r.Note += fmt.Sprintf("; release threshold %s", HumanBytes(uintptr(thr)))
	}
	return r
}

func (st *Statistics) oomReport() ResourceReport {
	b, c := st.Counters()
	return ResourceReport{Kind: kindStatistics, Live: uintptr(max(b.Value, 0)),
		Note: fmt.Sprintf("%d allocations live, peak %s", c.Value, HumanBytes(uintptr(max(b.Peak, 0))))}
}

func (l *Limiting) oomReport() ResourceReport {
	return ResourceReport{Kind: kindLimiting, Live: l.AllocatedBytes(), Maximum: l.limit}
}

func (t *Tracking) oomReport() ResourceReport {
	t.mu.Lock()
	n, bytes := len(t.live), t.bytes
	t.mu.Unlock()
	return ResourceReport{Kind: kindTracking, Live: bytes, Note: fmt.Sprintf("%d allocations live", n)}
}
