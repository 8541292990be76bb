package core

// The expandable resource's address ranges and the driver's virtual memory
// calls behind them: reserving a range, mapping physical handles into it
// (mapRange), and giving wholly free handles back (release). The resource
// itself, its growth policy and its allocations are in expandable.go.

import (
	"errors"
	"fmt"

	"github.com/rmmgo/rmmgo/core/internal/heap"
	"github.com/rmmgo/rmmgo/cudart"
)

// defaultReservedFactor is the default address range, in maximum sizes.
const defaultReservedFactor = 4

// maxRanges bounds the address ranges one resource reserves: when no range
// has room for a request that the maximum allows, another is reserved.
const maxRanges = 4

// vaRange is one reserved address range.
type vaRange struct {
	base, size uintptr
	// Per granule: the handle of the physical memory mapped there, on the
	// first granule of each handle (0 elsewhere), and how many granules
	// back that first granule lies (0 on it; 0 with no handle: unmapped).
	// A handle spans up to handleGranules granules.
	handles []cudart.MemHandle
	back    []uint8
}

// How large the physical allocations behind a growth are. CUDA's virtual
// memory calls cost per handle, not per byte: on an H200 (CUDA 13,
// docs/expandable.md) mapping 1 GiB as 2 MiB handles took 30 ms and
// unmapping it 22 ms, as 32 MiB handles 2 ms each, and GPT-2's first
// training steps map tens of GiB. But giving back frees only handles whose
// every granule is free, so a handle is at most a handleShare-th of what is
// mapped (and handleGranules granules): a resource that holds little gives
// memory back granule by granule, one that holds tens of GiB in pieces of
// handleGranules granules. Replays of bench/traces with 32 MiB pieces:
// GPT-2 training mapped 6.7x fewer handles than with a handle per granule,
// the CuPy pipeline 2.2x fewer and held 1.05x its peak live bytes instead
// of 1.04x. At the device's limit the
// handle size decides what is served: on an H200, GPT-2 training at batch
// 100 failed with 294 MiB free in 127 pieces inside 32 MiB handles where it
// needed 170 MiB more (Run 36); replaying its batch-93 log
// (bench/traces/at-limit, peak live 132,403 MiB), the smallest device that
// serves it is about 132,750 MiB with 32 MiB handles, 132,490 MiB with
// 8 MiB ones and 132,440 MiB with 2 MiB ones. So 8 MiB: four granules.
const (
	handleGranules = 4
	handleShare    = 256
)

// mapping is the handle mapped over the granule at a: its first address,
// its size and the range's slot of it; size 0 when a is unmapped. mu held.
func (e *Expandable) mapping(a uintptr) (start, size uintptr, slot *cudart.MemHandle) {
	for _, r := range e.ranges {
		if a-r.base >= r.size {
			continue
		}
		j := int((a - r.base) / e.gran)
		if r.back[j] == 0 && r.handles[j] == 0 {
			return 0, 0, nil
		}
		j -= int(r.back[j])
		k := 1
		for j+k < len(r.back) && int(r.back[j+k]) == k {
			k++
		}
		return r.base + uintptr(j)*e.gran, uintptr(k) * e.gran, &r.handles[j]
	}
	panic(fmt.Sprintf("%s: internal error: %#x is in no reserved range", kindExpandable, a))
}

// setMapping records h as mapped over [at, at+n) (h 0: nothing mapped
// there). mu held.
func (e *Expandable) setMapping(at, n uintptr, h cudart.MemHandle) {
	for _, r := range e.ranges {
		if at-r.base >= r.size {
			continue
		}
		j := int((at - r.base) / e.gran)
		r.handles[j] = h
		for k := 0; k < int(n/e.gran); k++ {
			if h == 0 {
				r.back[j+k] = 0
			} else {
				r.back[j+k] = uint8(k)
			}
		}
		return
	}
	panic(fmt.Sprintf("%s: internal error: %#x is in no reserved range", kindExpandable, at))
}

// addRange reserves another range of e.reserved bytes and hands it to the
// heap as a hole. mu held (or the resource not yet shared).
func (e *Expandable) addRange() error {
	base, err := e.vm.MemAddressReserve(e.reserved, e.gran)
	if err != nil {
		return vmmError(fmt.Sprintf("%s: reserving %s of address space", kindExpandable, formatBytes(e.reserved)), err)
	}
	n := e.reserved / e.gran
	e.ranges = append(e.ranges, &vaRange{base: base, size: e.reserved, handles: make([]cudart.MemHandle, n), back: make([]uint8, n)})
	e.nranges.Add(1)
	e.h.AddReservedChunk(base, e.reserved)
	return nil
}

// vmmError wraps the failure of a virtual memory call: ErrNotSupported
// where the runtime or device has none, else as cudaError.
func vmmError(what string, err error) error {
	if errors.Is(err, cudart.ErrNotSupported) {
		return fmt.Errorf("%s: %w: %w", what, ErrNotSupported, err)
	}
	return cudaError(what, err)
}

// mapRange backs [at, at+n) with device memory, in handles of up to
// handleGranules granules, and gives the resource's devices access to it;
// on failure it leaves the range as it was. mu held.
func (e *Expandable) mapRange(at, n uintptr) error {
	piece := min(max(e.mapped.Load()/handleShare/e.gran, 1), handleGranules) * e.gran
	undo := func(done uintptr) {
		for off := uintptr(0); off < done; {
			a, sz, hp := e.mapping(at + off)
			_ = e.vm.MemUnmap(a, sz)
			_ = e.vm.MemRelease(*hp)
			e.setMapping(a, sz, 0)
			off += sz
		}
	}
	for off := uintptr(0); off < n; {
		sz := min(piece, n-off)
		h, err := e.vm.MemCreate(sz, e.prop)
		if err != nil {
			undo(off)
			if errors.Is(err, cudart.ErrMemoryAllocation) {
				return fmt.Errorf("%s: %w: device %d has no memory for %s more (%s mapped): %w",
					kindExpandable, ErrOutOfMemory, e.dev, formatBytes(n), formatBytes(e.mapped.Load()), err)
			}
			return vmmError(kindExpandable+": making device memory", err)
		}
		if err := e.vm.MemMap(at+off, sz, 0, h); err != nil {
			_ = e.vm.MemRelease(h)
			undo(off)
			return vmmError(kindExpandable+": mapping device memory", err)
		}
		e.setMapping(at+off, sz, h)
		e.handles.Add(1)
		off += sz
	}
	if err := e.vm.MemSetAccess(at, n, e.access...); err != nil {
		undo(n)
		return vmmError(kindExpandable+": giving access to device memory", err)
	}
	e.growths.Add(1)
	if m := e.mapped.Add(n); m > e.peak.Load() {
		e.peak.Store(m) // under mu
	}
	return nil
}

// release gives back the memory of every handle whose granules are all
// free: it takes the wholly free granules out of the heap, synchronizes the
// device (memory freed in stream order may still be in use by queued
// work), unmaps and frees the handles that lie wholly in them, and makes
// the rest free memory again. mu held.
func (e *Expandable) release() error {
	spans := e.h.Dig(e.gran)
	if len(spans) == 0 {
		return nil
	}
	e.gen.Add(1)
	e.releases.Add(1)
	marks := e.h.SyncMarks()
	if err := e.rt.DeviceSynchronize(); err != nil {
		// Unmapping now could pull memory from under queued work: keep it,
		// free again.
		for _, sp := range spans {
			_, _ = e.h.Fill(DefaultStream, sp.Base, sp.Size, 0)
		}
		return cudaError(kindExpandable+": synchronizing before giving memory back", err)
	}
	e.h.ApplySync(marks)
	var errs []error
	var keep []heap.Span // granules of handles partly live: free memory again
	for _, sp := range spans {
		end := sp.Base + sp.Size
		for a := sp.Base; a < end; {
			start, sz, hp := e.mapping(a)
			if start < sp.Base || start+sz > end {
				next := min(start+sz, end)
				if n := len(keep); n > 0 && keep[n-1].Base+keep[n-1].Size == a {
					keep[n-1].Size += next - a
				} else {
					keep = append(keep, heap.Span{Base: a, Size: next - a})
				}
				a = next
				continue
			}
			a = start + sz
			if err := e.vm.MemUnmap(start, sz); err != nil {
				errs = append(errs, vmmError(fmt.Sprintf("%s: unmapping %#x", kindExpandable, start), err))
				continue // stays mapped, in a hole: Close tries again
			}
			if err := e.vm.MemRelease(*hp); err != nil {
				errs = append(errs, vmmError(kindExpandable+": releasing device memory", err))
			}
			e.setMapping(start, sz, 0)
			e.mapped.Add(^(sz - 1))
		}
	}
	for _, sp := range keep {
		if _, err := e.h.Fill(DefaultStream, sp.Base, sp.Size, 0); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
