package core

import (
	"errors"
	"fmt"
	"github.com/rmmgo/rmmgo/internal/fastpath"
	"math/bits"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/cudart"
)

// Binning routes each allocation by size to a bin, like RMM's
// binning_memory_resource: the bin of the smallest size at least as large
// as the request (rounded up to 256 bytes) serves it, and requests larger
// than every bin go to the upstream. A bin is any resource; the bins that
// NewBinning and AddBin make are FixedSize resources over the upstream,
// owned (closed) by the Binning.
//
// Deallocate routes by size the same way, so it must be given the size
// passed to Allocate. A zero-byte request returns 0 without touching any
// bin (core's rule for every resource; RMM 26.08 sends it to the smallest
// bin instead). Alignments above 256 are refused. A Binning is safe for
// concurrent use, AddBin included (RMM's add_bin is not).
type Binning struct {
	upstream Resource
	rt       cudart.Runtime
	dev      int

	bins   atomic.Pointer[binTable] // never modified once published
	mu     sync.Mutex               // serializes AddBin, Close and links
	closed atomic.Bool
	// links: caches attached to the Binning, and to each of its
	// fixed-size bins (cache.go); guarded by mu.
	links []*binCacheLink
	// own: the same caches, for claimedFree only (the bins and the
	// upstream ask them for memory).
	own caches
	// detachUp detaches the Binning from a Cacheable upstream, which asks
	// it for the bins' wholly free chunks before it grows (binRelease).
	detachUp func()
	// retired: hidden bins AddBin replaced, closed at Close; guarded by mu.
	retired []*FixedSize
}

// binCacheLink is a cache attached to a Binning: attached to each bin
// that is a FixedSize (whose blocks the cache keeps), so that a bin asks
// for them before it grows.
type binCacheLink struct {
	c      fastpath.BlockCache
	detach []func()
}

type bin struct {
	size  uintptr
	r     Resource
	owned *FixedSize // the bin, when the Binning made it
	// fixed is r when it is a FixedSize whose blocks hold size bytes (every
	// owned bin): Binning calls it directly, without an interface call and
	// without checking the request again.
	fixed *FixedSize
	// hidden: a bin NewBinning made below the smallest one asked for
	// (binHidden), which BinSizes does not list.
	hidden bool
}

// binTable is the bins sorted by size. For a request of n bytes let k be
// bits.Len(max(n, 256)-1), so that the request rounded up to 256 bytes
// lies in (2^(k-1), 2^k]: first[k] is the index of the first bin larger
// than 2^(k-1) bytes, where a lookup starts, and direct[k] is that bin
// when it serves every request of class k (it is at least 2^k bytes), so
// that with power-of-two bins a lookup is one table load.
type binTable struct {
	bins   []bin
	first  [65]uint8
	direct [65]*bin
	// cached is the sizes of the bins a cache may serve from: the
	// smallest ones, up to the first that is not a FixedSize.
	cached []uintptr
}

func newBinTable(bins []bin) *binTable {
	t := &binTable{bins: bins}
	for _, bn := range bins {
		if bn.fixed == nil {
			break
		}
		t.cached = append(t.cached, bn.size)
	}
	for k := range t.first {
		lo := uintptr(0)
		if k > 0 {
			lo = uintptr(1) << (k - 1)
		}
		i := sort.Search(len(bins), func(i int) bool { return bins[i].size > lo })
		t.first[k] = uint8(i)
		// Class 64 has no direct bin: 2^64 does not fit a uintptr, and no
		// request that large gets this far.
		if k < 64 && i < len(bins) && bins[i].size >= uintptr(1)<<k {
			t.direct[k] = &t.bins[i]
		}
	}
	return t
}

// find returns the bin for a request of bytes (1 <= bytes <= maxAllocation),
// or nil.
func (t *binTable) find(bytes uintptr) *bin {
	// The bin sizes are multiples of 256, so comparing them with bytes is
	// comparing them with bytes rounded up to 256; and bytes-1 | 255 has the
	// bit length of the rounded size minus one.
	k := bits.Len64(uint64((bytes - 1) | (DefaultAlignment - 1)))
	if bn := t.direct[k]; bn != nil {
		return bn
	}
	for i := int(t.first[k]); i < len(t.bins); i++ {
		if t.bins[i].size >= bytes {
			return &t.bins[i]
		}
	}
	return nil
}

// binChunk and binChunkMax bound what a bin the Binning makes takes from
// the upstream at once: 128 blocks (RMM's number) up to 128 KiB blocks,
// binChunk (16 MiB) of blocks above, but at least binMinBlocks blocks as
// long as they fit in binChunkMax (32 MiB): 64 blocks of 256 KiB, 32 of
// 512 KiB, 16 of 1 MiB, 8 of 2 and 4 MiB, 4 of 8 MiB, one block above
// 32 MiB.
//
// RMM's 128 blocks of 4 MiB take 512 MiB for the first 4 MiB request;
// replaying real training (bench/traces) with bins of 256 KiB to 4 MiB over
// a pool, 32 MiB chunks took ResNet-50 from 1.23x to 1.13x its peak live
// bytes and a CuPy pipeline from 1.66x to 1.29x. With 16 streams allocating
// random sizes (TestSoakStreams, peak live ~150 MiB) 32 MiB chunks for
// every bin left the bins holding 180-190 MiB of free blocks on average
// (five bins of at least one chunk each, and chunks kept by one live
// block): 2.9-3.2x reserved over peak live in three runs of 3 s; 8 MiB
// chunks for every bin, 70-80 MiB and 2.3-2.5x. But 8 or 16 MiB chunks for
// the 4 MiB bin took GPT-2's replay from 1.055x to 1.16x (before its last
// growths, for requests of 2.5 GiB, the pool could give back one 2.2 GiB
// chunk fewer; no bin's chunk lay in it: a request above the bins stayed
// live there, placed otherwise after the bins took other chunks), hence at
// least 8 blocks. Chunks of 16 MiB rather than 8 below that: CuPy's replay
// 1.209x against 1.256x (GPT-2 1.061x against 1.058x, ResNet-50 1.078x
// against 1.066x), the soak 2.56-2.92x against 2.48-2.85x in 4 runs of 2 s
// each, alternated.
const (
	binChunk     = 16 << 20
	binChunkMax  = 32 << 20
	binMinBlocks = 8
)

// binBlocks is the number of blocks a bin of size bytes fetches at once.
func binBlocks(size uintptr) int {
	n := max(binChunk/size, min(binMinBlocks, binChunkMax/size))
	return int(max(1, min(defaultBlocksToPrealloc, n)))
}

// maxBinExponent bounds the exponents NewBinning accepts: a bin of 2^57
// bytes is already larger than any allocation.
const maxBinExponent = 57

// NewBinning returns a binning resource over upstream with fixed-size bins
// of 2^minExp, 2^(minExp+1), ..., 2^maxExp bytes (sizes below 256 become
// one bin of 256 bytes). minExp = maxExp = -1 makes no bins (add them with
// AddBin). Each bin fetches 128 blocks from the upstream at a time, as
// RMM's do, or fewer for bins over 128 KiB (binBlocks).
func NewBinning(upstream Resource, minExp, maxExp int) (*Binning, error) {
	r, err := rt()
	if err != nil {
		return nil, err
	}
	return newBinning(r, upstream, minExp, maxExp)
}

func newBinning(r cudart.Runtime, upstream Resource, minExp, maxExp int) (*Binning, error) {
	if upstream == nil {
		return nil, fmt.Errorf("%s: %w: nil upstream resource", kindBinning, ErrInvalidArgument)
	}
	if !(minExp == -1 && maxExp == -1) && (minExp < 0 || maxExp < minExp || maxExp > maxBinExponent) {
		return nil, fmt.Errorf("%s: %w: bin exponents %d..%d (want 0 <= min <= max <= %d, or -1 and -1 for no bins)",
			kindBinning, ErrInvalidArgument, minExp, maxExp, maxBinExponent)
	}
	dev, err := r.GetDevice()
	if err != nil {
		return nil, cudaError(kindBinning, err)
	}
	b := &Binning{upstream: upstream, rt: r, dev: dev}
	b.bins.Store(newBinTable(nil))
	if up, ok := upstream.(cacheable); ok {
		b.detachUp = up.AttachCache(binRelease{b})
	}
	if minExp >= 0 {
		for e := minExp; e <= maxExp; e++ {
			if err := b.AddBin(uintptr(1)<<e, nil); err != nil {
				return nil, errors.Join(err, b.Close())
			}
		}
		for e := binHiddenMin; e < minExp; e++ {
			if err := b.addBin(uintptr(1)<<e, nil, true); err != nil {
				return nil, errors.Join(err, b.Close())
			}
		}
	}
	return b, nil
}

// binHiddenMin: NewBinning(up, min, max) also makes hidden bins of 2^8,
// 2^9, ..., 2^(min-1) bytes, which fetch no memory before their first
// request. RMM sends a request below the smallest bin to that bin: with
// bins of 2^18..2^22 (the usual choice) a request of a few KiB took a
// block of 256 KiB, and 16 streams allocating random sizes
// (TestSoakStreams) held 5-6x their peak live bytes, where the pool alone
// held 2x (3-3.6x with the hidden bins); replaying GPT-2 training
// (bench/traces) held 1.16x its peak live bytes (1.06x with them). Sent to
// the upstream pool instead, they cost the pool's time rather than a
// bin's: 96 -> 127 ns per op on the GPT-2 replay. A hidden bin rounds a
// request up to a power of two, as the others do. AddBin of a hidden bin's
// size makes it a bin like the others (or replaces it with the caller's
// resource).
const binHiddenMin = 8

// AddBin adds a bin for allocations of up to size bytes (rounded up to 256)
// served by r, or by a new FixedSize resource over the upstream (owned by
// the Binning) when r is nil. As in RMM, an existing bin of that size is
// kept and AddBin does nothing.
//
// AddBin is safe while other goroutines allocate, but Deallocate routes by
// size, so a bin must not be added while allocations of the sizes it takes
// over are live (they would be returned to the new bin): add bins before
// allocating those sizes.
//
// A bin that is b itself, or is built over b (b lies down its upstreams or
// among the bins of a Binning below it), is an error wrapping
// ErrInvalidArgument: b would be its own descendant, and an allocation would
// recurse without end.
func (b *Binning) AddBin(size uintptr, r Resource) error {
	return b.addBin(size, r, false)
}

// addBin is AddBin, of a hidden bin (NewBinning's, r nil) when hidden is
// set.
func (b *Binning) addBin(size uintptr, r Resource, hidden bool) error {
	if size == 0 || size > maxAllocation {
		return fmt.Errorf("%s: %w: bin size %d", kindBinning, ErrInvalidArgument, size)
	}
	size = (size + DefaultAlignment - 1) &^ (DefaultAlignment - 1)
	if r != nil {
		// Bins are the only links made after construction: checking and
		// linking under one lock keeps two AddBin calls from closing a loop
		// between them.
		binLinkMu.Lock()
		defer binLinkMu.Unlock()
		if reaches(r, b) {
			return fmt.Errorf("%s: %w: the bin of %d bytes is this binning resource or is built over it; adding it would make the resource its own descendant",
				kindBinning, ErrInvalidArgument, size)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed.Load() {
		return errClosed(kindBinning)
	}
	old := b.bins.Load().bins
	i := sort.Search(len(old), func(i int) bool { return old[i].size >= size })
	replace := false
	if i < len(old) && old[i].size == size {
		if !old[i].hidden || hidden {
			return nil
		}
		if r == nil {
			// The hidden bin becomes a bin like the others.
			bins := append([]bin(nil), old...)
			bins[i].hidden = false
			b.bins.Store(newBinTable(bins))
			return nil
		}
		// The caller's resource replaces the hidden bin, which stays open
		// (holding what it holds) until Close.
		b.retired = append(b.retired, old[i].owned)
		replace = true
	}
	nb := bin{size: size, r: r, hidden: hidden}
	if r == nil {
		f, err := makeFixedSize(b.rt, b.upstream, FixedSizeOptions{BlockSize: size, BlocksToPreallocate: binBlocks(size)}, hidden)
		if err != nil {
			return fmt.Errorf("%s: making a bin of %d bytes: %w", kindBinning, size, err)
		}
		nb.r, nb.owned = f, f
	}
	if f, ok := nb.r.(*FixedSize); ok && f.BlockSize() >= size {
		nb.fixed = f
	}
	bins := make([]bin, 0, len(old)+1)
	rest := old[i:]
	if replace {
		rest = old[i+1:]
	}
	bins = append(append(append(bins, old[:i]...), nb), rest...)
	if nb.fixed != nil {
		lo := uintptr(0)
		if i > 0 {
			lo = old[i-1].size
		}
		for _, k := range b.links {
			k.detach = append(k.detach, nb.fixed.AttachCache(binCache{k.c, lo, size}))
		}
	}
	b.bins.Store(newBinTable(bins))
	return nil
}

// binLinkMu serializes AddBin calls given a bin of the caller's.
var binLinkMu sync.Mutex

// reaches reports whether target is r or lies below it: down the upstreams
// of adaptors and sub-allocators, and among the bins of every Binning on the
// way. The graph below r has no cycle (constructors take existing upstreams,
// and AddBin refuses a loop), so the walk ends; each resource is visited
// once.
func reaches(r Resource, target *Binning) bool {
	seen := make(map[Resource]bool)
	stack := []Resource{r}
	for len(stack) > 0 {
		r := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if isNil(r) {
			continue
		}
		if t, ok := r.(*Binning); ok && t == target {
			return true
		}
		if reflect.TypeOf(r).Comparable() {
			if seen[r] {
				continue
			}
			seen[r] = true
		}
		if bn, ok := r.(*Binning); ok {
			for _, x := range bn.bins.Load().bins {
				stack = append(stack, x.r)
			}
		}
		if a, ok := r.(Adaptor); ok {
			stack = append(stack, a.Upstream())
		}
	}
	return false
}

// target returns the resource that serves requests of bytes (not 0).
func (b *Binning) target(bytes uintptr) Resource {
	if bn := b.bins.Load().find(bytes); bn != nil {
		return bn.r
	}
	return b.upstream
}

// zeroExternal is the user's resource (an External) that a zero-byte
// request or free goes to, as RMM's binning sends it to the smallest bin
// (the upstream when there is none); nil when that resource is rmmgo's own,
// which answers NULL for 0 bytes without being asked.
func (b *Binning) zeroExternal() Resource {
	var r Resource = b.upstream
	if bins := b.bins.Load().bins; len(bins) > 0 {
		if bins[0].fixed != nil {
			return nil
		}
		r = bins[0].r
	}
	if _, ok := AsExternal(r); ok {
		return r
	}
	return nil
}

// allocateZero is a zero-byte request: NULL, from the user's resource
// zeroExternal names when there is one (RMM's ZeroByteAllocationsUseBinResource).
func (b *Binning) allocateZero(stream Stream, alignment uintptr, sync bool) (uintptr, error) {
	if err := rejectRequest(kindBinning, 0, alignment); err != nil {
		return 0, err
	}
	if b.closed.Load() {
		return 0, errClosed(kindBinning)
	}
	if r := b.zeroExternal(); r != nil {
		return upAllocate(r, stream, 0, alignment, sync)
	}
	return 0, nil
}

// Allocate allocates bytes from the bin for that size, or from the upstream
// when no bin is large enough.
func (b *Binning) Allocate(stream Stream, bytes, alignment uintptr) (uintptr, error) {
	if bytes == 0 {
		return b.allocateZero(stream, alignment, false)
	}
	if !subRequestOK(bytes, alignment) {
		return 0, rejectRequest(kindBinning, bytes, alignment)
	}
	if b.closed.Load() {
		return 0, errClosed(kindBinning)
	}
	bn := b.bins.Load().find(bytes)
	if bn == nil {
		p, err := b.upstream.Allocate(stream, bytes, alignment)
		if err != nil {
			return 0, b.failed(nil, stream, bytes, alignment, err)
		}
		return p, nil
	}
	if bn.fixed != nil {
		// Checked above: bytes is at most the bin's size, hence at most a
		// block, and the alignment is valid.
		p, err := bn.fixed.allocate(stream)
		if err != nil {
			return 0, b.failed(bn.fixed, stream, bytes, alignment, err)
		}
		return p, nil
	}
	p, err := bn.r.Allocate(stream, bytes, alignment)
	if err != nil {
		return 0, b.failed(nil, stream, bytes, alignment, err)
	}
	return p, nil
}

// failed is the error of an allocation that failed with err, with its
// out-of-memory report (oom.go): the bin's, when a fixed-size bin called
// directly failed, then the Binning's. Out of line, off the fast path.
//
//go:noinline
func (b *Binning) failed(bin *FixedSize, stream Stream, bytes, alignment uintptr, err error) error {
	if bin != nil {
		err = explainOOM(bin, stream, bytes, alignment, err)
	}
	return explainOOM(b, stream, bytes, alignment, err)
}

// Deallocate returns memory to the bin (or upstream) that bytes selects.
func (b *Binning) Deallocate(stream Stream, ptr, bytes, alignment uintptr) error {
	if fc := b.own.claimer(); fc != nil && ptr != 0 && bytes != 0 {
		return claimedFree(b, fc, ptr, bytes, func(n uintptr) error { return b.deallocateUnclaimed(stream, ptr, n, alignment) })
	}
	return b.deallocateUnclaimed(stream, ptr, bytes, alignment)
}

// deallocateUnclaimed is Deallocate without the claim of a cache in front
// (DeallocateBatch: the cache's own give-back).
func (b *Binning) deallocateUnclaimed(stream Stream, ptr, bytes, alignment uintptr) error {
	if bytes == 0 && freeAlignmentOK(alignment) && !b.closed.Load() {
		if r := b.zeroExternal(); r != nil {
			return r.Deallocate(stream, ptr, 0, alignment)
		}
	}
	if done, err := b.freeChecked(ptr, bytes, alignment); done {
		return err
	}
	bn := b.bins.Load().find(bytes)
	if bn == nil {
		return b.upstream.Deallocate(stream, ptr, bytes, alignment)
	}
	if bn.fixed != nil {
		if ptr&(DefaultAlignment-1) != 0 {
			return subFreeRefused(kindBinning, ptr, bytes, alignment)
		}
		return bn.fixed.deallocate(stream, ptr)
	}
	return bn.r.Deallocate(stream, ptr, bytes, alignment)
}

// freeChecked makes the checks both of the binning's deallocations make
// before they route by size, as subFreeChecked does for the other
// sub-allocators, and reports whether the deallocation ends here (with
// err, nil for ptr 0). A pointer's 256-byte alignment is the bin's to
// check: an upstream or a caller's bin may hand out others.
func (b *Binning) freeChecked(ptr, bytes, alignment uintptr) (done bool, err error) {
	if ptr == 0 {
		return true, nil
	}
	if bytes == 0 || !freeAlignmentOK(alignment) {
		return true, subFreeRefused(kindBinning, ptr, bytes, alignment)
	}
	if err := lentHere(kindBinning, b, ptr); err != nil {
		return true, err // a chunk another sub-allocator holds (lent_blocks.go)
	}
	if !subRequestOK(bytes, alignment) {
		if err := rejectRequest(kindBinning, bytes, alignment); err != nil {
			return true, err
		}
	}
	if b.closed.Load() {
		return true, errClosed(kindBinning)
	}
	return false, nil
}

// AllocateSync is the bin's (or the upstream's) AllocateSync.
func (b *Binning) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	if bytes == 0 {
		return b.allocateZero(DefaultStream, alignment, true)
	}
	if !subRequestOK(bytes, alignment) {
		return 0, rejectRequest(kindBinning, bytes, alignment)
	}
	if b.closed.Load() {
		return 0, errClosed(kindBinning)
	}
	p, err := b.target(bytes).AllocateSync(bytes, alignment)
	if err != nil {
		return 0, explainOOM(b, DefaultStream, bytes, alignment, err)
	}
	return p, nil
}

// DeallocateSync is the bin's (or the upstream's) DeallocateSync.
func (b *Binning) DeallocateSync(ptr, bytes, alignment uintptr) error {
	if bytes == 0 && freeAlignmentOK(alignment) && !b.closed.Load() {
		if r := b.zeroExternal(); r != nil {
			return r.DeallocateSync(ptr, 0, alignment)
		}
	}
	if done, err := b.freeChecked(ptr, bytes, alignment); done {
		return err
	}
	if fc := b.own.claimer(); fc != nil {
		return claimedFree(b, fc, ptr, bytes, func(n uintptr) error { return b.target(n).DeallocateSync(ptr, n, alignment) })
	}
	return b.target(bytes).DeallocateSync(ptr, bytes, alignment)
}

// BinSizes returns the sizes of the bins, smallest first: those made for
// NewBinning's exponents or by AddBin, not the hidden ones below them.
func (b *Binning) BinSizes() []uintptr {
	var out []uintptr
	for _, bn := range b.bins.Load().bins {
		if !bn.hidden {
			out = append(out, bn.size)
		}
	}
	return out
}

// Properties reports the upstream's properties.
func (b *Binning) Properties() Properties { return b.upstream.Properties() }

// Equal reports whether other is this very resource.
func (b *Binning) Equal(other Resource) bool {
	o, ok := other.(*Binning)
	return ok && o == b
}

// Kind returns "binning".
func (b *Binning) Kind() string { return kindBinning }

// Upstream returns the resource that serves requests larger than every bin
// and feeds the bins the Binning made.
func (b *Binning) Upstream() Resource { return b.upstream }

// Device returns the device that was current when the resource was made.
func (b *Binning) Device() int { return b.dev }

// Close closes the bins the Binning made (returning their memory to the
// upstream); bins given to AddBin stay open. Later calls fail with
// ErrClosed; closing again does nothing.
func (b *Binning) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed.Swap(true) {
		return nil
	}
	if b.detachUp != nil {
		b.detachUp()
	}
	var errs []error
	for _, bn := range b.bins.Load().bins {
		if bn.owned != nil {
			errs = append(errs, bn.owned.Close())
		}
	}
	for _, f := range b.retired {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// The binning resource as a Cacheable one (cache.go). A cache may keep the
// blocks of the bins that are FixedSize resources, up to the first bin that
// is not (an adaptor must see every call); the budget follows what those
// bins hold.

// CacheLimits: requests up to the largest bin a cache may serve from; when
// every bin is a FixedSize and the upstream is Cacheable too (a pool), the
// sizes above the bins as well, from the upstream. The shared part is the
// bins' alone (what their chunks hold), for the upstream's blocks too:
// adding the upstream's (a pool made at half the device lets its caches
// keep up to half of it) let the caches keep every free block of the bins,
// so that a bin ran dry on every few misses and took its blocks back from
// every thread's cache (a reclaim, a device synchronization), which left
// threads on their own streams crossing into Go for one block at a time.
// The lone budget (one thread's cache alone on the resource) adds the
// upstream's, so that a thread alone keeps its large blocks cached.
func (b *Binning) CacheLimits() fastpath.CacheLimits {
	t := b.bins.Load()
	if len(t.cached) == 0 || b.closed.Load() {
		return fastpath.CacheLimits{}
	}
	bins := t.bins[:len(t.cached)]
	var held uintptr
	for _, bn := range bins {
		held += bn.fixed.chunkBytes()
	}
	l := cacheLimits(bins[len(bins)-1].size, 0, held)
	l.BlockSizes = t.cached // made once: this runs on every crossing of the C cache
	if up, ok := b.upstream.(cacheable); ok && len(bins) == len(t.bins) {
		if u := up.CacheLimits(); u.MaxRequest > l.MaxRequest && u.BlockSize == 0 {
			l.MaxRequest = u.MaxRequest
			l.Budget += u.Budget
		}
	}
	return l
}

// AllocateBatch allocates blocks of size bytes from the bin for size: the
// first as Allocate does, the others from what the bin has at hand.
func (b *Binning) AllocateBatch(s Stream, size uintptr, out []uintptr) (int, error) {
	if len(out) == 0 {
		return 0, nil
	}
	if !subRequestOK(size, DefaultAlignment) {
		return 0, rejectRequest(kindBinning, size, DefaultAlignment)
	}
	if b.closed.Load() {
		return 0, errClosed(kindBinning)
	}
	bn := b.bins.Load().find(size)
	if up, ok := b.upstream.(cacheable); ok && bn == nil {
		return up.AllocateBatch(s, size, out) // above the bins: the upstream's blocks
	}
	if bn == nil || bn.fixed == nil {
		// Not a size a cache serves (the bins changed meanwhile): one block.
		p, err := b.Allocate(s, size, DefaultAlignment)
		if err != nil {
			return 0, err
		}
		out[0] = p
		return 1, nil
	}
	first, err := bn.fixed.allocate(s)
	if err != nil {
		return 0, err
	}
	out[0] = first
	return 1 + bn.fixed.allocateMore(s, out[1:]), nil
}

// DeallocateBatch deallocates each block.
func (b *Binning) DeallocateBatch(s Stream, size uintptr, ptrs []uintptr) error {
	return deallocateBatch(b.deallocateUnclaimed, s, size, ptrs)
}

// CheckFree: a free goes to the bin (or upstream) its size selects, which
// must be the one the allocation's size selected.
func (b *Binning) CheckFree(ptr, bytes, allocated uintptr) error {
	t := b.bins.Load()
	if up, ok := b.upstream.(cacheable); ok && allocated != 0 && t.find(allocated) == nil && t.find(bytes) == nil {
		return up.CheckFree(ptr, bytes, allocated) // both above the bins: the upstream says
	}
	if bytes == 0 || bytes > maxAllocation || allocated == 0 || allocated > maxAllocation || t.find(bytes) != t.find(allocated) {
		return fmt.Errorf("%s: %w: %#x is not a live allocation of %d bytes (it was allocated with %d, rounded to 256)",
			kindBinning, ErrInvalidPointer, ptr, bytes, (allocated+DefaultAlignment-1)&^(DefaultAlignment-1))
	}
	return nil
}

// binCache is a cache as one bin sees it: when the bin needs memory, the
// cache gives back the blocks of the sizes the bin serves, (lo, hi] (a
// SizedBlockCache), rather than every block it holds.
type binCache struct {
	c      fastpath.BlockCache
	lo, hi uintptr
}

func (k binCache) Reclaim(need uintptr) bool {
	if s, ok := k.c.(sizedBlockCache); ok {
		return s.ReclaimSizes(k.lo, k.hi)
	}
	return k.c.Reclaim(need)
}

func (k binCache) HeldBytes() uintptr { return k.c.HeldBytes() }

// binRelease is a Binning as its upstream's cache: when the upstream
// needs memory (before it grows), the bins the Binning made give back
// their wholly free chunks of more than 1 MiB (FixedSize.releaseFree). Otherwise a bin keeps
// the chunks of its peak for good, out of reach of the other bins and of
// the requests above them: replaying a CuPy pipeline (bench/traces), the
// bins held 160 MiB of chunks with no block in use when the pool grew to
// its peak. It holds nothing itself.
type binRelease struct{ b *Binning }

func (r binRelease) Reclaim(uintptr) bool {
	if r.b.closed.Load() {
		return false
	}
	gave := false
	for _, bn := range r.b.bins.Load().bins {
		// Not the chunks of 1 MiB or less, which a pool keeps in its small
		// heap: giving those back and fetching them again, the 16-stream
		// soak (TestSoakStreams) peaked at 4.9-6.9x in 5 runs of 22 (the
		// pool's small heap held 300 MiB, mostly free); keeping them, at
		// 2.9-3.7x in 16 of 16, and the CuPy replay took 146 ns per op
		// rather than 173.
		if bn.owned != nil && bn.owned.index.size > smallBlock {
			// A failed return leaves the chunk held, to return at Close.
			if g, _ := bn.owned.releaseFree(); g {
				gave = true
			}
		}
	}
	return gave
}

func (binRelease) HeldBytes() uintptr { return 0 }

// reclaimOnly is a fastpath.BlockCache that gives its blocks back on request but
// counts none as held.
type reclaimOnly struct{ c fastpath.BlockCache }

func (r reclaimOnly) Reclaim(need uintptr) bool { return r.c.Reclaim(need) }
func (reclaimOnly) HeldBytes() uintptr          { return 0 }

// AttachCache attaches c to each bin that is a FixedSize (see Cacheable),
// to the bins added later, and to the upstream when it is Cacheable.
func (b *Binning) AttachCache(c fastpath.BlockCache) func() {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := &binCacheLink{c: c}
	lo := uintptr(0)
	for _, bn := range b.bins.Load().bins {
		if bn.fixed != nil {
			k.detach = append(k.detach, bn.fixed.AttachCache(binCache{c, lo, bn.size}))
		}
		lo = bn.size
	}
	if up, ok := b.upstream.(cacheable); ok {
		// It serves the sizes above the bins: it asks c for its blocks
		// before it grows. (c's bytes also hold blocks of the bins, which
		// are in use to the upstream: it counts none as not in use.)
		k.detach = append(k.detach, up.AttachCache(reclaimOnly{c}))
	}
	// Its own list too: the caches that hand its blocks out themselves
	// claim a user's free of one (claimedFree).
	k.detach = append(k.detach, b.own.attach(c))
	b.links = append(b.links, k)
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			for i, x := range b.links {
				if x == k {
					b.links = append(b.links[:i], b.links[i+1:]...)
					break
				}
			}
			detach := k.detach
			b.mu.Unlock()
			for _, d := range detach {
				d()
			}
		})
	}
}
