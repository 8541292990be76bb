package core

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmmgo/rmmgo/core/internal/heap"
)

// Memory snapshots: every block of a resource chain, in the shape of
// PyTorch's torch.cuda.memory._snapshot() (segments of blocks that tile
// them, per-device traces), so that torch/cuda/_memory_viz.py and
// pytorch.org/memory_viz draw rmmgo's memory. See docs/out-of-memory.md.

// MemorySnapshot is the memory of a resource chain at one moment.
type MemorySnapshot struct {
	Chain    []string          // the resources, from the one asked to the last upstream
	Segments []SnapshotSegment // what the resources took from their upstream (or CUDA), in address order per resource
	// Traces are the events a Pressure adaptor with History recorded,
	// oldest first (empty without one).
	Traces []TraceEvent
	// Time of the snapshot.
	Time time.Time
}

// SnapshotSegment is one chunk (segment in PyTorch's words) and its blocks,
// which tile it in address order.
type SnapshotSegment struct {
	Resource   string // the kind of resource holding it
	Device     int
	Address    uintptr
	Size       uintptr
	Stream     Stream
	Expandable bool // one reserved range mapped in granules (its unmapped blocks are holes)
	Blocks     []SnapshotBlock
}

// SnapshotBlock is one block of a segment.
type SnapshotBlock struct {
	Address, Size uintptr
	// Requested: the bytes the user asked for (Size when unknown).
	Requested uintptr
	// Live: handed out. Otherwise free; Where says where it waits:
	// "free" (coalesced, in a free list), "magazine", "front", "unmapped"
	// (address space without memory, expandable only).
	Live   bool
	Where  string
	Stream Stream
	// Frames: where it was allocated, innermost first, when a Tracking
	// adaptor with stacks (or a Pressure adaptor with History) knows.
	Frames []Frame
}

// Frame is one frame of an allocation's origin.
type Frame struct {
	Name, Filename string
	Line           int
}

// TraceEvent is one event of a trace, in PyTorch's actions: "alloc",
// "free_requested", "free_completed", "segment_alloc", "segment_free",
// "oom", "snapshot".
type TraceEvent struct {
	Action     string
	Address    uintptr
	Size       uintptr
	Stream     Stream
	TimeUS     int64
	DeviceFree uint64 // "oom" only
	Frames     []Frame
}

// snapshotter is a resource that can list its blocks.
type snapshotter interface {
	snapshotSegments() []SnapshotSegment
}

// traceSource is an adaptor that keeps a trace (Pressure with History).
type traceSource interface {
	traceEvents() []TraceEvent
}

// TakeMemorySnapshot returns the memory of r and its upstreams: the
// segments of the first resource of the chain that keeps blocks (pool,
// arena, fixed_size, expandable, binning's bins, cuda_async as one
// segment), or, where none does, one segment per allocation a Tracking
// adaptor of the chain knows; the origins that Tracking adaptors with
// stacks know; and the trace of a Pressure adaptor with History.
func TakeMemorySnapshot(r Resource) *MemorySnapshot {
	ms := &MemorySnapshot{Time: time.Now()}
	var tracked []TrackedAllocation
	haveSegments := false
	for x, depth := r, 0; x != nil && depth < 64; x, depth = upstreamOf(x), depth+1 {
		ms.Chain = append(ms.Chain, x.Kind())
		if t, ok := x.(*Tracking); ok && tracked == nil {
			tracked = t.Outstanding()
		}
		if ts, ok := x.(traceSource); ok && ms.Traces == nil {
			ms.Traces = ts.traceEvents()
		}
		if s, ok := x.(snapshotter); ok && !haveSegments {
			ms.Segments = s.snapshotSegments()
			haveSegments = true
		}
	}
	origin := map[uintptr]TrackedAllocation{}
	for _, t := range tracked {
		origin[t.Pointer] = t
	}
	if !haveSegments {
		dev := snapshotDevice()
		for _, t := range tracked {
			ms.Segments = append(ms.Segments, SnapshotSegment{Resource: ms.Chain[len(ms.Chain)-1], Device: dev,
				Address: t.Pointer, Size: t.Size, Stream: t.Stream,
				Blocks: []SnapshotBlock{{Address: t.Pointer, Size: t.Size, Requested: t.Size, Live: true, Where: "live", Stream: t.Stream}}})
		}
	}
	for i := range ms.Segments {
		for j := range ms.Segments[i].Blocks {
			b := &ms.Segments[i].Blocks[j]
			if !b.Live {
				continue
			}
			if t, ok := origin[b.Address]; ok {
				b.Requested = t.Size
				b.Frames = framesOf(t.Stack)
			}
		}
	}
	return ms
}

// framesOf parses Tracking's "function (file:line)" frames.
func framesOf(stack []string) []Frame {
	if len(stack) == 0 {
		return nil
	}
	out := make([]Frame, 0, len(stack))
	for _, s := range stack {
		f := Frame{Name: s}
		if i := strings.LastIndex(s, " ("); i >= 0 && strings.HasSuffix(s, ")") {
			f.Name = s[:i]
			loc := s[i+2 : len(s)-1]
			if j := strings.LastIndex(loc, ":"); j >= 0 {
				f.Filename = loc[:j]
				f.Line, _ = strconv.Atoi(loc[j+1:])
			} else {
				f.Filename = loc
			}
		}
		out = append(out, f)
	}
	return out
}

func snapshotDevice() int {
	if r, err := rt(); err == nil {
		if d, err := r.GetDevice(); err == nil {
			return d
		}
	}
	return 0
}

// heapSegments converts a heap's snapshot.
func heapSegments(kind string, dev int, h *heap.Heap, expandable bool) []SnapshotSegment {
	cs := h.Snapshot()
	out := make([]SnapshotSegment, 0, len(cs))
	for _, c := range cs {
		seg := SnapshotSegment{Resource: kind, Device: dev, Address: c.Base, Size: c.Size, Expandable: expandable,
			Blocks: make([]SnapshotBlock, len(c.Blocks))}
		for i, b := range c.Blocks {
			seg.Blocks[i] = SnapshotBlock{Address: b.Addr, Size: b.Size, Requested: b.Size,
				Live: b.State == heap.BlockLive, Where: b.State, Stream: b.Stream}
		}
		out = append(out, seg)
	}
	return out
}

func (p *Pool) snapshotSegments() []SnapshotSegment {
	return append(heapSegments(kindPool, p.dev, &p.h, false), heapSegments(kindPool, p.dev, &p.big, false)...)
}

func (e *Expandable) snapshotSegments() []SnapshotSegment {
	return heapSegments(kindExpandable, e.dev, &e.h, true)
}

// The arena's segments are its global arena's blocks: a superblock lent to
// a stream arena is one live block there.
func (a *Arena) snapshotSegments() []SnapshotSegment {
	return heapSegments(kindArena, a.dev, &a.global, false)
}

func (f *FixedSize) snapshotSegments() []SnapshotSegment {
	chunks := *f.byID.Load()
	out := make([]SnapshotSegment, 0, len(chunks))
	for _, c := range chunks {
		if c == nil {
			continue
		}
		seg := SnapshotSegment{Resource: kindFixedSize, Device: f.dev, Address: c.base, Size: f.blockSize * uintptr(f.perChunk)}
		for i := 0; i < f.perChunk; i++ {
			live := c.used[i/64].Load()&(1<<(i%64)) != 0
			b := SnapshotBlock{Address: c.base + uintptr(i)*f.blockSize, Size: f.blockSize, Requested: f.blockSize, Live: live, Where: "live"}
			if !live {
				b.Where = heap.BlockFree
			}
			seg.Blocks = append(seg.Blocks, b)
		}
		out = append(out, seg)
	}
	return out
}

// A binning resource's segments are those of its bins that keep blocks.
func (b *Binning) snapshotSegments() []SnapshotSegment {
	var out []SnapshotSegment
	for _, bn := range b.bins.Load().bins {
		if s, ok := bn.r.(snapshotter); ok {
			out = append(out, s.snapshotSegments()...)
		}
	}
	return out
}

// A CUDA memory pool shows no blocks: one segment of its reserved bytes,
// its used bytes as one live block at the start.
func (c *poolCore) snapshotSegments() []SnapshotSegment {
	rep := c.oomReport()
	if rep.Reserved == 0 {
		return nil
	}
	seg := SnapshotSegment{Resource: c.kind, Device: c.dev, Size: rep.Reserved}
	if rep.Live > 0 {
		seg.Blocks = append(seg.Blocks, SnapshotBlock{Size: rep.Live, Requested: rep.Live, Live: true, Where: "live"})
	}
	if rep.Free > 0 {
		seg.Blocks = append(seg.Blocks, SnapshotBlock{Address: rep.Live, Size: rep.Free, Requested: rep.Free, Where: heap.BlockFree})
	}
	return []SnapshotSegment{seg}
}

// JSON returns the snapshot as JSON in PyTorch's layout (see Torch).
func (ms *MemorySnapshot) JSON() ([]byte, error) { return json.MarshalIndent(ms.Torch(), "", " ") }

// Torch returns the snapshot as torch.cuda.memory._snapshot() does: a map
// with "segments" (each with "device", "address", "total_size",
// "allocated_size", "active_size", "requested_size", "stream",
// "segment_type", "segment_pool_id", "is_expandable", "frames" and
// "blocks" of "address", "size", "requested_size", "state"
// ("active_allocated" or "inactive"), "frames"; rmmgo adds "resource" to
// segments and "where" and "stream" to blocks) and "device_traces" (a
// list per device of events with "action", "addr", "size", "stream",
// "time_us", "frames"), and "allocator_settings" naming the chain.
func (ms *MemorySnapshot) Torch() map[string]any {
	maxDev := 0
	segs := make([]any, 0, len(ms.Segments))
	for _, s := range ms.Segments {
		maxDev = max(maxDev, s.Device)
		var allocated, requested uintptr
		blocks := make([]any, 0, len(s.Blocks))
		for _, b := range s.Blocks {
			state := "inactive"
			if b.Live {
				state = "active_allocated"
				allocated += b.Size
				requested += b.Requested
			}
			blocks = append(blocks, map[string]any{
				"address": uint64(b.Address), "size": uint64(b.Size), "requested_size": uint64(b.Requested),
				"state": state, "where": b.Where, "stream": uint64(b.Stream), "frames": torchFrames(b.Frames),
			})
		}
		segs = append(segs, map[string]any{
			"device": s.Device, "address": uint64(s.Address), "total_size": uint64(s.Size),
			"allocated_size": uint64(allocated), "active_size": uint64(allocated), "requested_size": uint64(requested),
			"stream": uint64(s.Stream), "segment_type": segmentType(s.Size), "segment_pool_id": []any{0, 0},
			"is_expandable": s.Expandable, "frames": []any{}, "blocks": blocks, "resource": s.Resource,
		})
	}
	traces := make([]any, maxDev+1)
	for i := range traces {
		traces[i] = []any{}
	}
	tr := make([]any, 0, len(ms.Traces))
	for _, t := range ms.Traces {
		ev := map[string]any{"action": t.Action, "addr": uint64(t.Address), "size": uint64(t.Size),
			"stream": uint64(t.Stream), "time_us": t.TimeUS, "frames": torchFrames(t.Frames)}
		if t.Action == "oom" {
			ev["device_free"] = t.DeviceFree
		}
		tr = append(tr, ev)
	}
	dev := 0
	if len(ms.Segments) > 0 {
		dev = ms.Segments[0].Device
	}
	traces[dev] = tr
	return map[string]any{
		"segments":      segs,
		"device_traces": traces,
		"allocator_settings": map[string]any{
			"allocator": "rmmgo", "resources": strings.Join(ms.Chain, " -> "),
			"time": ms.Time.Format(time.RFC3339Nano),
		},
	}
}

func segmentType(size uintptr) string {
	if size <= 2<<20 {
		return "small"
	}
	return "large"
}

func torchFrames(fs []Frame) []any {
	out := make([]any, len(fs))
	for i, f := range fs {
		out[i] = map[string]any{"name": f.Name, "filename": f.Filename, "line": f.Line}
	}
	return out
}

// Pickle returns the snapshot as Python's pickle of Torch(): the file
// torch.cuda.memory._dump_snapshot writes and _memory_viz.py reads.
func (ms *MemorySnapshot) Pickle() []byte { return pickleValue(ms.Torch()) }

// WriteMemorySnapshot writes r's snapshot to path: JSON when path ends in
// ".json", else a pickle (PyTorch's format).
func WriteMemorySnapshot(r Resource, path string) error {
	return TakeMemorySnapshot(r).WriteFile(path)
}

// WriteFile writes the snapshot to path: JSON when path ends in ".json",
// else a pickle.
func (ms *MemorySnapshot) WriteFile(path string) error {
	var data []byte
	if strings.HasSuffix(path, ".json") {
		var err error
		if data, err = ms.JSON(); err != nil {
			return err
		}
	} else {
		data = ms.Pickle()
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("writing the memory snapshot: %w", err)
	}
	return nil
}

// The snapshot written at the first out-of-memory error: RMMGO_OOM_SNAPSHOT
// names the file (read at the first failure), SetOOMSnapshotPath overrides.
var oomSnap struct {
	once    sync.Once
	mu      sync.Mutex
	path    string
	written atomic.Bool
	set     bool
}

// SetOOMSnapshotPath makes the first out-of-memory error after the call
// write a snapshot of the resource that ran out (and its upstreams) to
// path ("" turns it off); RMMGO_OOM_SNAPSHOT does the same from the
// environment. The first error after each call writes one.
func SetOOMSnapshotPath(path string) {
	oomSnap.mu.Lock()
	oomSnap.path, oomSnap.set = path, true
	oomSnap.mu.Unlock()
	oomSnap.written.Store(false)
}

// OOMSnapshotWritten reports whether the snapshot of SetOOMSnapshotPath
// (or RMMGO_OOM_SNAPSHOT) was written.
func OOMSnapshotWritten() bool { return oomSnap.written.Load() }

// oomHappened writes the out-of-memory snapshot once, from the first
// resource in the failing chain that keeps blocks (an allocation that fails
// in a pool's upstream while the pool grows is not the pool's failure).
func oomHappened(r Resource, e *OutOfMemoryError) {
	if oomSnap.written.Load() {
		return
	}
	if _, ok := r.(snapshotter); !ok {
		if _, ok := r.(*Tracking); !ok {
			return
		}
	}
	oomSnap.once.Do(func() {
		oomSnap.mu.Lock()
		if !oomSnap.set {
			oomSnap.path = os.Getenv("RMMGO_OOM_SNAPSHOT")
		}
		oomSnap.mu.Unlock()
	})
	oomSnap.mu.Lock()
	path := oomSnap.path
	oomSnap.mu.Unlock()
	if path == "" || !oomSnap.written.CompareAndSwap(false, true) {
		return
	}
	ms := TakeMemorySnapshot(r)
	ms.Traces = append(ms.Traces, TraceEvent{Action: "oom", Size: e.Bytes, Stream: e.Stream,
		TimeUS: time.Now().UnixMicro(), DeviceFree: e.DeviceFree})
	_ = ms.WriteFile(path)
}
