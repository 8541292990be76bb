package core

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
)

// Out-of-memory reports: when an allocation fails, the error says why.
//
// Every resource's failure path (never its success path) passes an error
// that wraps ErrOutOfMemory through explainOOM, which returns an
// *OutOfMemoryError: the request, the chain of resources from the one
// called to the one that ran out, the figures of each that keeps any (live
// and reserved bytes, free blocks and the largest, per stream, what
// magazines and the caches in front of it hold), the device's free memory,
// and a one-line reading. An adaptor or sub-allocator above adds itself to
// the chain of the error its upstream returned; the report is written once,
// at the end of the outermost error's text, after RMM's own wording.
// Nothing here runs until an allocation fails.

// OutOfMemoryError is the error of an allocation that ran out of memory.
// It wraps the resource's own error (which wraps ErrOutOfMemory), so
// errors.Is(err, ErrOutOfMemory) holds; get it with errors.As.
type OutOfMemoryError struct {
	// The request, as the resource at the top of Chain was asked.
	Bytes, Alignment uintptr
	Stream           Stream
	// Chain is the kinds of the resources from the one called (first) down
	// to the last upstream.
	Chain []string
	// Resources has the figures of the resources of Chain that keep any,
	// in the same order.
	Resources []ResourceReport
	// The current device when the allocation failed, its free and total
	// memory (both 0 when they could not be read).
	Device                  int
	DeviceFree, DeviceTotal uint64
	// Reading says in one line what the figures mean ("... free in the
	// pool but the largest block is ...: fragmentation").
	Reading string
	// Err is the resource's error.
	Err error

	top   Resource    // the resource at the head of Chain
	inner atomic.Bool // wrapped by a later report: Error() leaves the report to it
}

// ResourceReport is what one resource holds when an allocation fails.
type ResourceReport struct {
	Kind string
	// Live: bytes handed out and not freed. Reserved: bytes held from the
	// upstream (or mapped, or reserved in a CUDA memory pool); 0 when the
	// resource holds none. Maximum: its bound (pool or expandable maximum,
	// limiting adaptor's limit), 0 for none.
	Live, Reserved, Maximum uintptr
	// Free: bytes free in the resource (coalesced blocks, and blocks in
	// magazines and the front); FreeBlocks of them in its free lists, the
	// largest LargestFree.
	Free        uintptr
	FreeBlocks  int
	LargestFree uintptr
	// Streams: the free memory of each stream's lists, largest block
	// first, where the resource keeps lists per stream.
	Streams []StreamFree
	// MagazineHeld: freed blocks waiting unmerged in magazines and the
	// front (counted in Free, not in LargestFree). CacheHeld: blocks the
	// caches in front of the resource hold (the C ABI's per-thread caches),
	// neither live nor free in the resource.
	MagazineHeld, CacheHeld uintptr
	// MaxRequest: the largest request the resource can serve at all (a
	// fixed-size resource's block size); 0 for no such bound.
	MaxRequest uintptr
	// Note: what else the resource can say (bins, peak).
	Note string
}

// StreamFree is the free memory of one stream's lists in a resource.
type StreamFree struct {
	Stream            Stream
	Free, LargestFree uintptr
	FreeBlocks        int
}

// oomReporter is a resource that can describe what it holds.
type oomReporter interface {
	oomReport() ResourceReport
}

// Error returns the resource's message (RMM's wording), then the report.
func (e *OutOfMemoryError) Error() string {
	msg := stripReports(e.Err.Error())
	if e.inner.Load() {
		return msg
	}
	return msg + "\n" + e.Report()
}

// reportStart begins every report in a message.
const reportStart = "\nout of memory: "

// stripReports removes the reports of errors wrapped below (whose text a
// wrapping fmt.Errorf took before this report was made): each runs from
// reportStart to the end of its last line indented by two spaces.
func stripReports(msg string) string {
	for {
		i := strings.Index(msg, reportStart)
		if i < 0 {
			return msg
		}
		j := i + 1
		if k := strings.IndexByte(msg[j:], '\n'); k >= 0 {
			j += k
			for strings.HasPrefix(msg[j:], "\n  ") {
				if k := strings.IndexByte(msg[j+1:], '\n'); k >= 0 {
					j += 1 + k
				} else {
					j = len(msg)
				}
			}
		} else {
			j = len(msg)
		}
		msg = msg[:i] + msg[j:]
	}
}

// Unwrap returns the resource's error.
func (e *OutOfMemoryError) Unwrap() error { return e.Err }

// Report returns the report alone, one fact a line.
func (e *OutOfMemoryError) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "out of memory: %s requested (alignment %d) on stream %#x; resources: %s",
		HumanBytes(e.Bytes), e.Alignment, uintptr(e.Stream), strings.Join(e.Chain, " -> "))
	for _, r := range e.Resources {
		b.WriteString("\n  ")
		b.WriteString(r.line())
	}
	if e.DeviceTotal != 0 {
		fmt.Fprintf(&b, "\n  device %d: %s free of %s", e.Device, HumanBytes(uintptr(e.DeviceFree)), HumanBytes(uintptr(e.DeviceTotal)))
	}
	if e.Reading != "" {
		b.WriteString("\n  reading: ")
		b.WriteString(e.Reading)
	}
	return b.String()
}

// line writes r in one line.
func (r ResourceReport) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s live", r.Kind, HumanBytes(r.Live))
	if r.Reserved != 0 {
		fmt.Fprintf(&b, ", %s reserved", HumanBytes(r.Reserved))
	}
	if r.Maximum != 0 {
		fmt.Fprintf(&b, " (maximum %s)", HumanBytes(r.Maximum))
	}
	if r.Reserved != 0 || r.Free != 0 {
		fmt.Fprintf(&b, "; %s free in %d blocks, the largest %s", HumanBytes(r.Free), r.FreeBlocks, HumanBytes(r.LargestFree))
	}
	if len(r.Streams) > 1 || (len(r.Streams) == 1 && r.Streams[0].Stream != DefaultStream) {
		b.WriteString("; by stream:")
		for i, s := range r.Streams {
			if i == 8 {
				fmt.Fprintf(&b, " (%d more)", len(r.Streams)-i)
				break
			}
			fmt.Fprintf(&b, " %#x largest %s of %s", uintptr(s.Stream), HumanBytes(s.LargestFree), HumanBytes(s.Free))
			if i < len(r.Streams)-1 && i < 7 {
				b.WriteByte(',')
			}
		}
	}
	if r.MagazineHeld != 0 {
		fmt.Fprintf(&b, "; magazines and front hold %s", HumanBytes(r.MagazineHeld))
	}
	if r.CacheHeld != 0 {
		fmt.Fprintf(&b, "; thread caches hold %s", HumanBytes(r.CacheHeld))
	}
	if r.Note != "" {
		b.WriteString("; ")
		b.WriteString(r.Note)
	}
	return b.String()
}

// HumanBytes writes a byte count short, e.g. "312.0 MiB", "512 B".
func HumanBytes(v uintptr) string {
	if v < 1024 {
		return fmt.Sprintf("%d B", v)
	}
	units := [...]string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	f, i := float64(v)/1024, 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}

// upstreamOf returns r's upstream, or nil.
func upstreamOf(r Resource) Resource {
	if a, ok := r.(Adaptor); ok {
		return a.Upstream()
	}
	return nil
}

// sameResource reports whether a and b are the same resource (resources
// are pointers; a panic of a non-comparable type counts as different).
func sameResource(a, b Resource) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// explainOOM returns err as an *OutOfMemoryError about r, when err wraps
// ErrOutOfMemory; any other error (nil included) is returned as it is. r
// is the resource whose Allocate fails with err for a request of bytes
// and alignment on stream s. Called on failure paths only.
func explainOOM(r Resource, s Stream, bytes, alignment uintptr, err error) error {
	if err == nil || !errors.Is(err, ErrOutOfMemory) {
		return err
	}
	var prev *OutOfMemoryError
	if errors.As(err, &prev) {
		if sameResource(prev.top, r) {
			return err // this level already explained it
		}
		prev.inner.Store(true)
	}
	e := &OutOfMemoryError{Bytes: bytes, Alignment: alignment, Stream: s, Err: err, top: r}
	found := false
	for x, depth := r, 0; x != nil && depth < 64; x, depth = upstreamOf(x), depth+1 {
		if prev != nil && sameResource(x, prev.top) {
			found = true
			break
		}
		e.addLevel(x)
		if prev != nil {
			// The error came from below this resource but not through its
			// upstream (a binning resource's bin): that path follows.
			if _, ok := x.(*Binning); ok {
				break
			}
		}
	}
	if prev != nil && (found || len(e.Chain) > 0) {
		e.Chain = append(e.Chain, prev.Chain...)
		e.Resources = append(e.Resources, prev.Resources...)
	}
	if r, rerr := rt(); rerr == nil {
		if d, derr := r.GetDevice(); derr == nil {
			e.Device = d
		}
		if free, total, merr := r.MemGetInfo(); merr == nil {
			e.DeviceFree, e.DeviceTotal = free, total
		}
	}
	e.Reading = e.read()
	oomHappened(r, e)
	return e
}

// addLevel adds x to the chain, with its figures when it has any.
func (e *OutOfMemoryError) addLevel(x Resource) {
	e.Chain = append(e.Chain, x.Kind())
	if rp, ok := x.(oomReporter); ok {
		e.Resources = append(e.Resources, rp.oomReport())
	}
}

// read writes the one-line reading of the figures.
func (e *OutOfMemoryError) read() string {
	want := e.Bytes
	for _, r := range e.Resources {
		switch {
		case r.MaxRequest != 0 && want > r.MaxRequest:
			return fmt.Sprintf("the request is larger than the %s's largest (%s): no amount of free memory serves it", r.Kind, HumanBytes(r.MaxRequest))
		}
	}
	for _, r := range e.Resources {
		switch {
		case r.Kind == kindLimiting && r.Maximum != 0 && r.Live+want > r.Maximum:
			return fmt.Sprintf("the limiting adaptor allows %s and %s are live: the request does not fit under the limit", HumanBytes(r.Maximum), HumanBytes(r.Live))
		}
	}
	for _, r := range e.Resources {
		if r.Reserved == 0 && r.Free == 0 {
			continue // an adaptor's counts: the resources below say more
		}
		if r.LargestFree >= want {
			for _, s := range r.Streams {
				if s.LargestFree >= want && s.Stream != e.Stream {
					return fmt.Sprintf("the %s has a free block of %s on stream %#x that stream %#x cannot use yet (freed in stream order, not settled): synchronize, or free on the allocating stream",
						r.Kind, HumanBytes(s.LargestFree), uintptr(s.Stream), uintptr(e.Stream))
				}
			}
		}
		if r.Free >= want && r.LargestFree < want {
			return fmt.Sprintf("%s free in the %s but the largest block is %s: fragmentation", HumanBytes(r.Free), r.Kind, HumanBytes(r.LargestFree))
		}
		if r.CacheHeld+r.MagazineHeld >= want {
			return fmt.Sprintf("%s sit in caches in front of the %s (thread caches %s, magazines %s)", HumanBytes(r.CacheHeld+r.MagazineHeld), r.Kind, HumanBytes(r.CacheHeld), HumanBytes(r.MagazineHeld))
		}
		if r.Maximum != 0 && r.Reserved+want > r.Maximum {
			return fmt.Sprintf("the %s is at its maximum (%s of %s reserved, %s live): the live memory is the problem", r.Kind, HumanBytes(r.Reserved), HumanBytes(r.Maximum), HumanBytes(r.Live))
		}
		if e.DeviceTotal != 0 && e.DeviceFree < uint64(want) {
			return fmt.Sprintf("the device has %s free: the %s holds %s (%s live), the other %s are used elsewhere (other resources, processes, the CUDA context)",
				HumanBytes(uintptr(e.DeviceFree)), r.Kind, HumanBytes(r.Reserved), HumanBytes(r.Live),
				HumanBytes(uintptr(e.DeviceTotal-e.DeviceFree)-min(r.Reserved, uintptr(e.DeviceTotal-e.DeviceFree))))
		}
		return fmt.Sprintf("the %s has %s live of %s reserved and the device %s free: the request does not fit", r.Kind, HumanBytes(r.Live), HumanBytes(r.Reserved), HumanBytes(uintptr(e.DeviceFree)))
	}
	if e.DeviceTotal != 0 && e.DeviceFree < uint64(want) {
		return fmt.Sprintf("the device has %s free of %s: the request does not fit", HumanBytes(uintptr(e.DeviceFree)), HumanBytes(uintptr(e.DeviceTotal)))
	}
	if e.DeviceTotal != 0 {
		return fmt.Sprintf("the device has %s free, in pieces or held by the driver: no contiguous %s", HumanBytes(uintptr(e.DeviceFree)), HumanBytes(want))
	}
	return ""
}

// streamFrees converts the heap's per-stream figures.
func streamFrees[T any](in []T, conv func(T) StreamFree) []StreamFree {
	if len(in) == 0 {
		return nil
	}
	out := make([]StreamFree, len(in))
	for i, x := range in {
		out[i] = conv(x)
	}
	return out
}

// Map returns the report as plain values with snake_case keys (what the C
// ABI's rmm_last_out_of_memory_report writes as JSON, and Python's
// OutOfMemoryError carries as attributes).
func (e *OutOfMemoryError) Map() map[string]any {
	res := make([]any, len(e.Resources))
	for i, r := range e.Resources {
		ss := make([]any, len(r.Streams))
		for j, s := range r.Streams {
			ss[j] = map[string]any{"stream": uint64(s.Stream), "free": uint64(s.Free), "largest_free": uint64(s.LargestFree), "free_blocks": s.FreeBlocks}
		}
		res[i] = map[string]any{"kind": r.Kind, "live": uint64(r.Live), "reserved": uint64(r.Reserved), "maximum": uint64(r.Maximum),
			"free": uint64(r.Free), "free_blocks": r.FreeBlocks, "largest_free": uint64(r.LargestFree), "streams": ss,
			"magazine_held": uint64(r.MagazineHeld), "cache_held": uint64(r.CacheHeld), "max_request": uint64(r.MaxRequest), "note": r.Note}
	}
	chain := make([]any, len(e.Chain))
	for i, c := range e.Chain {
		chain[i] = c
	}
	return map[string]any{"bytes": uint64(e.Bytes), "alignment": uint64(e.Alignment), "stream": uint64(e.Stream),
		"chain": chain, "resources": res, "device": e.Device, "device_free": e.DeviceFree, "device_total": e.DeviceTotal,
		"reading": e.Reading, "message": e.Error()}
}
