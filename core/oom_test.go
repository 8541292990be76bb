package core

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Each resource fails on purpose on the simulated device; the report's
// figures are checked against the resource's own state.

func oomOf(t *testing.T, err error) *OutOfMemoryError {
	t.Helper()
	if err == nil {
		t.Fatal("the allocation succeeded; it should have run out of memory")
	}
	if !errors.Is(err, ErrOutOfMemory) {
		t.Fatalf("error does not wrap ErrOutOfMemory: %v", err)
	}
	var e *OutOfMemoryError
	if !errors.As(err, &e) {
		t.Fatalf("error is not an *OutOfMemoryError: %v", err)
	}
	if !strings.Contains(err.Error(), "\nout of memory: ") || !strings.Contains(err.Error(), "\n  reading: ") {
		t.Fatalf("the message has no report: %v", err)
	}
	if strings.Count(err.Error(), "\n  reading: ") != 1 {
		t.Fatalf("the report appears more than once: %v", err)
	}
	return e
}

func reportOf(t *testing.T, e *OutOfMemoryError, kind string) ResourceReport {
	t.Helper()
	for _, r := range e.Resources {
		if r.Kind == kind {
			return r
		}
	}
	t.Fatalf("no %s figures in the report: %s", kind, e.Report())
	return ResourceReport{}
}

func chainIs(t *testing.T, e *OutOfMemoryError, want ...string) {
	t.Helper()
	if strings.Join(e.Chain, ",") != strings.Join(want, ",") {
		t.Fatalf("chain %v, want %v", e.Chain, want)
	}
}

// fragmentedPool fills a 64 MiB pool (its maximum) with 2 MiB blocks and
// frees every other one: 32 MiB free, in 2 MiB pieces.
func fragmentedPool(t *testing.T) (*Pool, []uintptr) {
	t.Helper()
	cuda, err := NewCuda()
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPool(cuda, PoolOptions{InitialSize: 64 << 20, MaximumSize: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	var all, live []uintptr
	for i := 0; i < 32; i++ {
		ptr, err := p.Allocate(DefaultStream, 2<<20, DefaultAlignment)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ptr)
	}
	for i, ptr := range all {
		if i%2 == 0 {
			if err := p.Deallocate(DefaultStream, ptr, 2<<20, DefaultAlignment); err != nil {
				t.Fatal(err)
			}
		} else {
			live = append(live, ptr)
		}
	}
	return p, live
}

func TestOOMReportPoolFragmentation(t *testing.T) {
	p, _ := fragmentedPool(t)
	_, err := p.Allocate(DefaultStream, 4<<20, DefaultAlignment)
	e := oomOf(t, err)
	if !strings.HasPrefix(err.Error(), "pool: out of memory: Maximum pool size exceeded") {
		t.Fatalf("RMM's wording does not come first: %q", err.Error())
	}
	chainIs(t, e, "pool", "cuda")
	if e.Bytes != 4<<20 || e.Alignment != DefaultAlignment || e.Stream != DefaultStream {
		t.Fatalf("request %d/%d/%#x", e.Bytes, e.Alignment, e.Stream)
	}
	r := reportOf(t, e, "pool")
	if r.Reserved != p.PoolSize() || r.Reserved != 64<<20 || r.Maximum != 64<<20 {
		t.Fatalf("reserved %d (pool size %d), maximum %d", r.Reserved, p.PoolSize(), r.Maximum)
	}
	if r.Live != p.UsedBytes() || r.Live != 32<<20 {
		t.Fatalf("live %d, pool says %d", r.Live, p.UsedBytes())
	}
	if r.Free != 32<<20 || r.LargestFree != 2<<20 || r.FreeBlocks != 16 {
		t.Fatalf("free %d in %d blocks, largest %d", r.Free, r.FreeBlocks, r.LargestFree)
	}
	if st := p.h.Stats(); st.Largest != r.LargestFree || st.FreeBytes != r.Free {
		t.Fatalf("heap stats %+v, report free %d largest %d", st, r.Free, r.LargestFree)
	}
	if len(r.Streams) != 1 || r.Streams[0].LargestFree != 2<<20 {
		t.Fatalf("streams %+v", r.Streams)
	}
	if _, total, _ := testRuntime(t).MemGetInfo(); e.DeviceTotal != total || e.DeviceFree == 0 {
		t.Fatalf("device %d free of %d", e.DeviceFree, e.DeviceTotal)
	}
	if !strings.Contains(e.Reading, "32.0 MiB free in the pool but the largest block is 2.0 MiB: fragmentation") {
		t.Fatalf("reading %q", e.Reading)
	}
	t.Logf("\n%v", err)
}

func TestOOMReportAdaptorsOverPool(t *testing.T) {
	p, _ := fragmentedPool(t)
	st, _ := NewStatistics(p)
	tr, _ := NewTracking(st, false)
	lim, _ := NewLimiting(tr, 1<<40, DefaultAlignment)
	// Live bytes through the adaptors: one 2 MiB block.
	ptr, err := lim.Allocate(DefaultStream, 2<<20, DefaultAlignment)
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Deallocate(DefaultStream, ptr, 2<<20, DefaultAlignment)
	_, err = lim.Allocate(DefaultStream, 4<<20, DefaultAlignment)
	e := oomOf(t, err)
	chainIs(t, e, "limiting", "tracking", "statistics", "pool", "cuda")
	if r := reportOf(t, e, "statistics"); r.Live != 2<<20 {
		t.Fatalf("statistics live %d", r.Live)
	}
	if r := reportOf(t, e, "tracking"); r.Live != 2<<20 || !strings.Contains(r.Note, "1 allocations live") {
		t.Fatalf("tracking %+v", r)
	}
	if r := reportOf(t, e, "limiting"); r.Live != 2<<20 || r.Maximum != 1<<40 {
		t.Fatalf("limiting %+v", r)
	}
	if r := reportOf(t, e, "pool"); r.Live != 34<<20 || r.LargestFree != 2<<20 {
		t.Fatalf("pool %+v", r)
	}
	if !strings.Contains(e.Reading, "fragmentation") {
		t.Fatalf("reading %q", e.Reading)
	}
}

func TestOOMReportLimiting(t *testing.T) {
	cuda, _ := NewCuda()
	lim, _ := NewLimiting(cuda, 8<<20, DefaultAlignment)
	ptr, err := lim.Allocate(DefaultStream, 6<<20, DefaultAlignment)
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Deallocate(DefaultStream, ptr, 6<<20, DefaultAlignment)
	_, err = lim.Allocate(DefaultStream, 4<<20, DefaultAlignment)
	e := oomOf(t, err)
	chainIs(t, e, "limiting", "cuda")
	if r := reportOf(t, e, "limiting"); r.Live != lim.AllocatedBytes() || r.Live != 6<<20 || r.Maximum != 8<<20 {
		t.Fatalf("limiting %+v", r)
	}
	if !strings.Contains(e.Reading, "limiting adaptor allows 8.0 MiB and 6.0 MiB are live") {
		t.Fatalf("reading %q", e.Reading)
	}
}

func TestOOMReportCuda(t *testing.T) {
	cuda, _ := NewCuda()
	_, err := cuda.Allocate(DefaultStream, moreThanTheDevice(t), DefaultAlignment)
	e := oomOf(t, err)
	chainIs(t, e, "cuda")
	r, _ := rt()
	free, total, _ := r.MemGetInfo()
	if e.DeviceTotal != total || e.DeviceFree != free {
		t.Fatalf("device %d/%d, runtime says %d/%d", e.DeviceFree, e.DeviceTotal, free, total)
	}
	if !strings.Contains(e.Reading, "the device has") {
		t.Fatalf("reading %q", e.Reading)
	}
}

func TestOOMReportArena(t *testing.T) {
	cuda, _ := NewCuda()
	a, err := NewArena(cuda, ArenaOptions{ArenaSize: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var ptrs []uintptr
	for {
		p, err := a.Allocate(DefaultStream, 3<<20, DefaultAlignment)
		if err != nil {
			e := oomOf(t, err)
			chainIs(t, e, "arena", "cuda")
			r := reportOf(t, e, "arena")
			if r.Reserved != a.ArenaSize() {
				t.Fatalf("reserved %d, arena %d", r.Reserved, a.ArenaSize())
			}
			if r.LargestFree >= 3<<20 {
				t.Fatalf("largest free %d fits the request", r.LargestFree)
			}
			if r.Live < uintptr(len(ptrs))*(3<<20) {
				t.Fatalf("live %d below the %d bytes handed out", r.Live, len(ptrs)*(3<<20))
			}
			break
		}
		ptrs = append(ptrs, p)
	}
	for _, p := range ptrs {
		a.Deallocate(DefaultStream, p, 3<<20, DefaultAlignment)
	}
}

func TestOOMReportFixedSize(t *testing.T) {
	cuda, _ := NewCuda()
	lim, _ := NewLimiting(cuda, 4<<20, DefaultAlignment)
	f, err := NewFixedSize(lim, FixedSizeOptions{BlockSize: 1 << 20, BlocksToPreallocate: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Larger than a block: never fits.
	_, err = f.Allocate(DefaultStream, 2<<20, DefaultAlignment)
	e := oomOf(t, err)
	if !strings.Contains(e.Reading, "larger than the fixed_size's largest (1.0 MiB)") {
		t.Fatalf("reading %q", e.Reading)
	}
	var ptrs []uintptr
	for i := 0; i < 4; i++ {
		p, err := f.Allocate(DefaultStream, 1<<20, DefaultAlignment)
		if err != nil {
			t.Fatal(err)
		}
		ptrs = append(ptrs, p)
	}
	_, err = f.Allocate(DefaultStream, 1<<20, DefaultAlignment)
	e = oomOf(t, err)
	chainIs(t, e, "fixed_size", "limiting", "cuda")
	r := reportOf(t, e, "fixed_size")
	if r.Reserved != f.HeldBytes() || r.Reserved != 4<<20 || r.Live != 4<<20 || r.Free != 0 {
		t.Fatalf("fixed_size %+v (held %d)", r, f.HeldBytes())
	}
	if !strings.Contains(e.Reading, "limiting adaptor allows 4.0 MiB") {
		t.Fatalf("reading %q", e.Reading)
	}
	f.Deallocate(DefaultStream, ptrs[0], 1<<20, DefaultAlignment)
	ms := TakeMemorySnapshot(f)
	var live, free int
	for _, s := range ms.Segments {
		for _, b := range s.Blocks {
			if b.Live {
				live++
			} else {
				free++
			}
		}
	}
	if live != 3 || free != 1 {
		t.Fatalf("snapshot: %d live, %d free blocks", live, free)
	}
	for _, p := range ptrs[1:] {
		f.Deallocate(DefaultStream, p, 1<<20, DefaultAlignment)
	}
}

func TestOOMReportBinning(t *testing.T) {
	cuda, _ := NewCuda()
	lim, _ := NewLimiting(cuda, 48<<20, DefaultAlignment)
	b, err := NewBinning(lim, 18, 18) // one bin of 256 KiB, 8 MiB chunks (binBlocks)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = b.Allocate(DefaultStream, 64<<20, DefaultAlignment) // to the upstream
	e := oomOf(t, err)
	chainIs(t, e, "binning", "limiting", "cuda")
	if r := reportOf(t, e, "binning"); !strings.Contains(r.Note, "bins 256.0 KiB;") {
		t.Fatalf("binning %+v", r)
	}
	var ptrs []uintptr
	for {
		p, err := b.Allocate(DefaultStream, 256<<10, DefaultAlignment)
		if err != nil {
			e := oomOf(t, err)
			chainIs(t, e, "binning", "fixed_size", "limiting", "cuda")
			if r := reportOf(t, e, "fixed_size"); r.Live != uintptr(len(ptrs))<<18 || len(ptrs) != 48<<20/binChunk*binBlocks(256<<10) {
				t.Fatalf("fixed_size live %d, %d blocks handed out", r.Live, len(ptrs))
			}
			break
		}
		ptrs = append(ptrs, p)
	}
	for _, p := range ptrs {
		b.Deallocate(DefaultStream, p, 256<<10, DefaultAlignment)
	}
}

func TestOOMReportExpandable(t *testing.T) {
	e0, err := NewExpandable(ExpandableOptions{MaximumSize: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer e0.Close()
	var ptrs []uintptr
	for i := 0; i < 32; i++ {
		p, err := e0.Allocate(DefaultStream, 2<<20, DefaultAlignment)
		if err != nil {
			t.Fatal(err)
		}
		ptrs = append(ptrs, p)
	}
	_, err = e0.Allocate(DefaultStream, 2<<20, DefaultAlignment)
	e := oomOf(t, err)
	chainIs(t, e, "expandable")
	r := reportOf(t, e, "expandable")
	if r.Reserved != e0.PoolSize() || r.Maximum != 64<<20 || r.Live != e0.UsedBytes() || r.Live != 64<<20 {
		t.Fatalf("expandable %+v (mapped %d, used %d)", r, e0.PoolSize(), e0.UsedBytes())
	}
	if !strings.Contains(e.Reading, "at its maximum") {
		t.Fatalf("reading %q", e.Reading)
	}
	ms := TakeMemorySnapshot(e0)
	if len(ms.Segments) != 1 || !ms.Segments[0].Expandable {
		t.Fatalf("segments %+v", ms.Segments)
	}
	for _, p := range ptrs {
		e0.Deallocate(DefaultStream, p, 2<<20, DefaultAlignment)
	}
}

func TestOOMReportCudaAsync(t *testing.T) {
	c, err := NewCudaAsync(CudaAsyncOptions{})
	if err != nil {
		t.Skip(err)
	}
	defer c.Close()
	p, err := c.Allocate(DefaultStream, 8<<20, DefaultAlignment)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Deallocate(DefaultStream, p, 8<<20, DefaultAlignment)
	_, err = c.Allocate(DefaultStream, moreThanTheDevice(t), DefaultAlignment)
	e := oomOf(t, err)
	chainIs(t, e, "cuda_async")
	r := reportOf(t, e, "cuda_async")
	used, _ := c.rt.MemPoolGetAttribute(c.asyncPool(), 7)
	if r.Live != uintptr(used) || r.Live < 8<<20 {
		t.Fatalf("cuda_async live %d, pool used %d", r.Live, used)
	}
}

// Stream-ordered memory that another stream cannot use yet is named.
func TestOOMReportStreams(t *testing.T) {
	r := testRuntime(t)
	s := newStream(t, r)
	cuda, _ := NewCuda()
	p, err := NewPool(cuda, PoolOptions{InitialSize: 32 << 20, MaximumSize: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ptr, err := p.Allocate(s, 16<<20, DefaultAlignment)
	if err != nil {
		t.Fatal(err)
	}
	rest, err := p.Allocate(DefaultStream, 16<<20, DefaultAlignment)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Deallocate(DefaultStream, rest, 16<<20, DefaultAlignment)
	if err := p.Deallocate(s, ptr, 16<<20, DefaultAlignment); err != nil {
		t.Fatal(err)
	}
	e := &OutOfMemoryError{Bytes: 16 << 20, Stream: DefaultStream, Resources: []ResourceReport{p.oomReport()}}
	rep := e.Resources[0]
	if len(rep.Streams) != 1 || rep.Streams[0].Stream != s || rep.Streams[0].LargestFree != 16<<20 {
		t.Fatalf("streams %+v", rep.Streams)
	}
	if got := e.read(); !strings.Contains(got, "that stream 0x0 cannot use yet") {
		t.Fatalf("reading %q", got)
	}
}

func TestMemorySnapshotPool(t *testing.T) {
	p, live := fragmentedPool(t)
	tr, _ := NewTracking(p, true)
	ptr, err := tr.Allocate(DefaultStream, 2<<20, DefaultAlignment)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Deallocate(DefaultStream, ptr, 2<<20, DefaultAlignment)
	ms := TakeMemorySnapshot(tr)
	if strings.Join(ms.Chain, ",") != "tracking,pool,cuda" {
		t.Fatalf("chain %v", ms.Chain)
	}
	var liveBytes, freeBytes, total uintptr
	withFrames := 0
	for _, s := range ms.Segments {
		total += s.Size
		addr := s.Address
		for _, b := range s.Blocks {
			if b.Address != addr {
				t.Fatalf("blocks do not tile the segment at %#x", addr)
			}
			addr += b.Size
			if b.Live {
				liveBytes += b.Size
				if len(b.Frames) > 0 {
					withFrames++
					if !strings.Contains(b.Frames[0].Name+b.Frames[1].Name+b.Frames[2].Name, "TestMemorySnapshotPool") {
						t.Logf("frames %+v", b.Frames[:3])
					}
				}
			} else {
				freeBytes += b.Size
			}
		}
		if addr != s.Address+s.Size {
			t.Fatalf("blocks end at %#x, segment at %#x", addr, s.Address+s.Size)
		}
	}
	if total != p.PoolSize() || liveBytes != uintptr(len(live)+1)*(2<<20) || freeBytes != total-liveBytes {
		t.Fatalf("total %d live %d free %d", total, liveBytes, freeBytes)
	}
	if withFrames != 1 {
		t.Fatalf("%d live blocks with frames, want the tracked one", withFrames)
	}
	dir := t.TempDir()
	js := filepath.Join(dir, "snap.json")
	pk := filepath.Join(dir, "snap.pickle")
	if err := ms.WriteFile(js); err != nil {
		t.Fatal(err)
	}
	if err := ms.WriteFile(pk); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	data, _ := os.ReadFile(js)
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	segs := m["segments"].([]any)
	blk := segs[0].(map[string]any)["blocks"].([]any)[0].(map[string]any)
	for _, k := range []string{"size", "state", "requested_size", "address", "frames"} {
		if _, ok := blk[k]; !ok {
			t.Fatalf("block has no %q: %v", k, blk)
		}
	}
	// The pickle loads in Python and says the same as the JSON.
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to read the pickle")
	}
	out, err := exec.Command(py, "-c", `
import json, pickle, sys
p = pickle.load(open(sys.argv[1], "rb"))
j = json.load(open(sys.argv[2]))
assert p == j, "pickle and JSON differ"
assert isinstance(p["device_traces"], list)
print(len(p["segments"]), sum(b["size"] for s in p["segments"] for b in s["blocks"] if b["state"] == "active_allocated"))
`, pk, js).CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v: %s", err, out)
	}
	t.Logf("python3: %s", out)
}

func TestOOMSnapshotWrittenAtFirstFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oom.json")
	SetOOMSnapshotPath(path)
	defer SetOOMSnapshotPath("")
	p, _ := fragmentedPool(t)
	if _, err := p.Allocate(DefaultStream, 4<<20, DefaultAlignment); err == nil {
		t.Fatal("no failure")
	}
	if !OOMSnapshotWritten() {
		t.Fatal("no snapshot written")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	tr := m["device_traces"].([]any)[0].([]any)
	if last := tr[len(tr)-1].(map[string]any); last["action"] != "oom" || last["size"].(float64) != 4<<20 {
		t.Fatalf("last trace event %v", last)
	}
}

// moreThanTheDevice is a request no device of this run can hold: twice its
// memory (4 GiB was less than an H200's 141 GiB).
func moreThanTheDevice(t *testing.T) uintptr {
	_, total, err := testRuntime(t).MemGetInfo()
	if err != nil {
		t.Fatal(err)
	}
	return uintptr(2 * total)
}
