package core

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/core/internal/addr"
	"github.com/rmmgo/rmmgo/core/internal/streamorder"
	"github.com/rmmgo/rmmgo/cudart"
)

const kindFixedSize = "fixed_size"

// Defaults of FixedSizeOptions, as RMM's fixed_size_memory_resource has
// them.
const (
	defaultFixedBlockSize   uintptr = 1 << 20
	defaultBlocksToPrealloc         = 128
)

// FixedSizeOptions configures a FixedSize resource.
type FixedSizeOptions struct {
	// BlockSize is the size of every block, rounded up to 256 bytes; 0 (or
	// SizeDefault) means 1 MiB.
	BlockSize uintptr
	// BlocksToPreallocate is the number of blocks fetched from the upstream
	// at once, when the resource is made and whenever it runs out; 0 means
	// 128.
	BlocksToPreallocate int
}

// FixedSize hands out blocks of one size, like RMM's
// fixed_size_memory_resource: every request of at most BlockSize bytes gets
// a whole block; larger requests fail with ErrOutOfMemory. Blocks come from
// the upstream in chunks of BlockSize*BlocksToPreallocate bytes, one at
// construction and another whenever all blocks are in use; chunks return to
// the upstream at Close, and the bins a Binning makes give back their
// wholly free ones when the upstream asks for memory (releaseFree).
//
// It is stream-ordered like Pool (the same per-stream, per-shard lists and
// event scheme, and a device synchronization before failing when the
// upstream refuses a chunk while other streams hold free blocks), its blocks are 256-byte aligned, and it refuses alignments
// above 256. Free blocks are reused last-in first-out. A FixedSize is safe
// for concurrent use.
type FixedSize struct {
	upstream  Resource
	rt        cudart.Runtime
	dev       int
	blockSize uintptr
	perChunk  int

	eng     streamorder.Engine[blockList, *blockList]
	index   fixedIndex
	byID    atomic.Pointer[[]*fixedChunk] // chunks by id (nil: given back); never modified once published
	chunks  []*fixedChunk                 // every chunk, for Close; guarded by chunkMu
	freeIDs []int32                       // ids of chunks given back, for new ones; guarded by chunkMu
	stray   []uintptr                     // chunks taken out whose return upstream failed, for Close; guarded by chunkMu
	nheld   atomic.Int64                  // chunks held from the upstream (in chunks or stray)
	shift   int                           // log2(blockSize) when a power of two, else -1
	chunkMu sync.Mutex
	growMu  sync.Mutex
	gen     atomic.Uint64
	caches  caches // caches in front of the resource (cache.go)

	closed  atomic.Bool
	closeMu sync.Mutex
}

// NewFixedSize returns a fixed-size resource over upstream. It fetches the
// first chunk at once; its failure is returned.
func NewFixedSize(upstream Resource, opts FixedSizeOptions) (*FixedSize, error) {
	r, err := rt()
	if err != nil {
		return nil, err
	}
	return newFixedSize(r, upstream, opts)
}

func newFixedSize(r cudart.Runtime, upstream Resource, opts FixedSizeOptions) (*FixedSize, error) {
	return makeFixedSize(r, upstream, opts, false)
}

// makeFixedSize is newFixedSize, fetching no chunk before the first
// request when lazy is set.
func makeFixedSize(r cudart.Runtime, upstream Resource, opts FixedSizeOptions, lazy bool) (*FixedSize, error) {
	if upstream == nil {
		return nil, fmt.Errorf("%s: %w: nil upstream resource", kindFixedSize, ErrInvalidArgument)
	}
	bs := opts.BlockSize
	if bs == 0 || bs == SizeDefault {
		bs = defaultFixedBlockSize
	}
	n := opts.BlocksToPreallocate
	if n == 0 {
		n = defaultBlocksToPrealloc
	}
	if n < 0 {
		return nil, fmt.Errorf("%s: %w: %d blocks to preallocate", kindFixedSize, ErrInvalidArgument, n)
	}
	bs, ok := addr.AlignUp(bs, DefaultAlignment)
	if !ok || bs > maxAllocation || uintptr(n) > maxAllocation/bs || uint64(n) > math.MaxUint32 {
		return nil, fmt.Errorf("%s: %w: %d blocks of %d bytes do not fit in memory", kindFixedSize, ErrInvalidArgument, n, opts.BlockSize)
	}
	dev, err := r.GetDevice()
	if err != nil {
		return nil, cudaError(kindFixedSize, err)
	}
	f := &FixedSize{upstream: upstream, rt: r, dev: dev, blockSize: bs, perChunk: n}
	f.eng.Init(streamorder.Config[blockList, *blockList]{
		Kind:       kindFixedSize,
		Runtime:    r,
		NewList:    func() *blockList { return new(blockList) },
		SettleList: func(l *blockList, cut uint64) { l.settle(cut, f.blockSize) },
	})
	f.index.size = bs * uintptr(n)
	f.index.g = uint(bits.Len64(uint64(f.index.size))) - 1
	f.index.dirs.Store(&fixedDirs{})
	f.byID.Store(&[]*fixedChunk{})
	f.shift = -1
	if addr.IsPow2(bs) {
		f.shift = bits.TrailingZeros64(uint64(bs))
	}
	if lazy {
		return f, nil
	}
	l := f.eng.List(f.eng.Default(), 0)
	l.Mu.Lock()
	_, err = f.growLocked(DefaultStream, l, false)
	l.Mu.Unlock()
	if err != nil {
		return nil, err
	}
	return f, nil
}

// BlockSize returns the size of every block.
func (f *FixedSize) BlockSize() uintptr { return f.blockSize }

// growLocked fetches a chunk from the upstream on stream s and puts its
// blocks into l (l.mu held), keeping one back for the caller when take is
// set.
func (f *FixedSize) growLocked(s Stream, l *blockList, take bool) (uintptr, error) {
	size := f.blockSize * uintptr(f.perChunk)
	base, err := takeChunk(kindFixedSize, f.upstream, s, size)
	if err != nil {
		return 0, fmt.Errorf("%s: fetching %d blocks of %d bytes from the upstream: %w", kindFixedSize, f.perChunk, f.blockSize, err)
	}
	f.chunkMu.Lock()
	old := *f.byID.Load()
	id := int32(len(old))
	if n := len(f.freeIDs); n > 0 {
		id = f.freeIDs[n-1]
		f.freeIDs = f.freeIDs[:n-1]
	}
	c := f.index.add(base, id, (f.perChunk+63)/64)
	nb := make([]*fixedChunk, max(len(old), int(id)+1))
	copy(nb, old)
	nb[id] = c
	f.byID.Store(&nb)
	f.chunks = append(f.chunks, c)
	f.nheld.Add(1)
	f.chunkMu.Unlock()
	seq := l.St.Epoch.Load() // fresh: seq >= l.Cut
	first := 0
	if take {
		first = 1
		c.used[0].Or(1)
	}
	// Push in reverse so that blocks are handed out in address order.
	for i := f.perChunk - 1; i >= first; i-- {
		l.blocks = append(l.blocks, fixedBlock{seq, c.id, uint32(i)})
	}
	l.Free.Add(uintptr(f.perChunk-first) * f.blockSize)
	if take {
		return base, nil
	}
	return 0, nil
}

// chunkBytes returns the bytes the resource holds from the upstream.
func (f *FixedSize) chunkBytes() uintptr {
	return f.blockSize * uintptr(f.perChunk) * uintptr(f.nheld.Load())
}

// HeldBytes returns the bytes the resource holds from its upstream (its
// chunks, blocks in use or not).
func (f *FixedSize) HeldBytes() uintptr { return f.chunkBytes() }

// findChunk returns the chunk holding ptr, or nil.
func (f *FixedSize) findChunk(ptr uintptr) *fixedChunk { return f.index.find(ptr) }

// setUsed marks block i of c allocated. Its caller owns the block (took
// it from a list, or is undoing its own clearUsed), so nobody else changes
// its bit: without the old value, the OR is one locked instruction rather
// than a compare-and-swap loop.
func (f *FixedSize) setUsed(c *fixedChunk, i uintptr) {
	c.used[i/64].Or(uint64(1) << (i % 64))
}

// clearUsed marks block i of c free and reports whether it was allocated:
// of two goroutines freeing the block at once, only one sees true.
func (f *FixedSize) clearUsed(c *fixedChunk, i uintptr) bool {
	bit := uint64(1) << (i % 64)
	return c.used[i/64].And(^bit)&bit != 0
}

// blockIndex returns the index of the block at offset off of its chunk.
func (f *FixedSize) blockIndex(off uintptr) uintptr {
	if f.shift >= 0 {
		return off >> f.shift
	}
	return off / f.blockSize
}

// blockOffset returns the offset of block i in its chunk.
func (f *FixedSize) blockOffset(i uintptr) uintptr {
	if f.shift >= 0 {
		return i << f.shift
	}
	return i * f.blockSize
}

// publish marks a block taken from a list as allocated and returns its
// address.
func (f *FixedSize) publish(b fixedBlock) (uintptr, error) {
	cs := *f.byID.Load()
	if int(b.chunk) >= len(cs) {
		return 0, errClosed(kindFixedSize)
	}
	c := cs[b.chunk]
	if c == nil {
		return 0, errClosed(kindFixedSize) // not reached: a chunk given back has no block in a list
	}
	f.setUsed(c, uintptr(b.idx))
	return c.base + f.blockOffset(uintptr(b.idx)), nil
}

// release finds the live block at ptr and marks it free, or returns nil.
// Of two goroutines releasing the same block at once, only one gets it.
func (f *FixedSize) release(ptr uintptr) (*fixedChunk, uintptr) {
	c := f.findChunk(ptr)
	if c == nil {
		return nil, 0
	}
	off := ptr - c.base
	i := f.blockIndex(off)
	if f.blockOffset(i) != off || !f.clearUsed(c, i) {
		return nil, 0
	}
	return c, i
}

// pop takes a block from l, the last freed first, or returns false. l.mu
// is held.
func (f *FixedSize) pop(l *blockList) (fixedBlock, bool) {
	n := len(l.blocks)
	if n == 0 {
		return f.popSettled(l)
	}
	b := l.blocks[n-1]
	l.blocks = l.blocks[:n-1]
	l.Free.Add(^(f.blockSize - 1))
	return b, true
}

// popSettled takes a settled block from l, or returns false. l.mu is held.
func (f *FixedSize) popSettled(l *blockList) (fixedBlock, bool) {
	n := len(l.set)
	if n == 0 {
		return fixedBlock{}, false
	}
	b := l.set[n-1]
	l.set = l.set[:n-1]
	l.Free.Add(^(f.blockSize - 1))
	l.Settled.Add(^(f.blockSize - 1))
	return b, true
}

// forOthers reports whether another stream's list l may hold blocks this
// stream can take: any free block of a durable stream's list, a settled one
// of any other. No lock is needed: the counts are read as hints.
func forOthers(l *blockList) bool {
	if l.St.Durable() {
		return l.Free.Load() != 0
	}
	return l.Settled.Load() != 0
}

// popForOthers takes a block of another stream's list l that this stream
// can take (see forOthers), or returns false. l.mu is held.
func (f *FixedSize) popForOthers(l *blockList) (fixedBlock, bool) {
	if l.St.Durable() {
		return f.pop(l)
	}
	return f.popSettled(l)
}

// publishInto publishes blocks into out[:len(blocks)], in order, and
// returns how many it published: fewer only when the resource closed
// meanwhile (Close takes every chunk back).
func (f *FixedSize) publishInto(out []uintptr, blocks []fixedBlock) int {
	for i, b := range blocks {
		p, err := f.publish(b)
		if err != nil {
			return i
		}
		out[i] = p
	}
	return len(blocks)
}

// put files the free block b in l (l.mu held).
func (f *FixedSize) put(l *blockList, b fixedBlock) {
	if b.seq < l.Cut {
		l.set = append(l.set, b)
		l.Settled.Add(f.blockSize)
	} else {
		l.blocks = append(l.blocks, b)
	}
	l.Free.Add(f.blockSize)
}

// freeBytes sums the free bytes of every list (a hint while others work).
func (f *FixedSize) freeBytes() uintptr {
	var n uintptr
	for _, l := range f.eng.AllLists() {
		n += l.Free.Load()
	}
	return n
}

// Allocate returns a block (of BlockSize bytes) for a request of at most
// BlockSize bytes, usable in stream order on stream. Errors:
// ErrBadAlignment; ErrOutOfMemory for larger requests ("Maximum allocation
// size exceeded") or when the upstream has no room for another chunk;
// ErrClosed after Close.
func (f *FixedSize) Allocate(stream Stream, bytes, alignment uintptr) (uintptr, error) {
	if !subRequestOK(bytes, alignment) {
		return 0, rejectRequest(kindFixedSize, bytes, alignment)
	}
	if bytes > f.blockSize {
		return 0, explainOOM(f, stream, bytes, alignment, fmt.Errorf("%s: %w: Maximum allocation size exceeded (%d bytes requested, blocks are %d bytes)", kindFixedSize, ErrOutOfMemory, bytes, f.blockSize))
	}
	p, err := f.allocate(stream)
	if err != nil {
		return 0, explainOOM(f, stream, bytes, alignment, err)
	}
	return p, nil
}

// allocate is Allocate for a request already checked (not 0 bytes, at most
// a block, a valid alignment): Binning calls it directly, so that a request
// is checked once on its way to a bin.
func (f *FixedSize) allocate(stream Stream) (uintptr, error) {
	if f.closed.Load() {
		return 0, errClosed(kindFixedSize)
	}
	if stream == DefaultStream || stream == cudart.LegacyDefaultStream {
		// The fast path: the default stream's list in this shard (which
		// never settles: every block is in l.blocks), pop and publish
		// written out.
		if l := f.eng.DefaultShard(); l != nil {
			l.Mu.Lock()
			if n := len(l.blocks); n > 0 {
				b := l.blocks[n-1]
				l.blocks = l.blocks[:n-1]
				l.Free.Add(^(f.blockSize - 1))
				l.Mu.Unlock()
				if cs := *f.byID.Load(); int(b.chunk) < len(cs) && cs[b.chunk] != nil {
					c := cs[b.chunk]
					c.used[b.idx/64].Or(uint64(1) << (b.idx % 64))
					return c.base + f.blockOffset(uintptr(b.idx)), nil
				}
				return 0, errClosed(kindFixedSize)
			}
			b, ok := f.pop(l)
			l.Mu.Unlock()
			if ok {
				return f.publish(b)
			}
		}
	}
	return f.allocateList(stream)
}

// allocateList is allocate past the fast path: any stream, the stream's
// own list first, then allocateSlow. It is a function of its own so that
// allocate stays small (and its callers do not pay for this one's defer).
func (f *FixedSize) allocateList(stream Stream) (uintptr, error) {
	if stream == cudart.PerThreadDefaultStream {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	for {
		sl, err := f.eng.Lookup(stream)
		if err != nil {
			return 0, err
		}
		f.eng.MaybeSettle(sl, stream)
		l := f.eng.List(sl, f.eng.Shard())
		l.Mu.Lock()
		b, ok := f.pop(l)
		l.Mu.Unlock()
		if ok {
			return f.publish(b)
		}
		if p, err := f.allocateSlow(stream, sl, l); err != streamorder.ErrRetry {
			if err != nil {
				return 0, closedOr(&f.closed, kindFixedSize, err)
			}
			return p, nil
		}
	}
}

// allocateSlow serves a request its own list could not, in the order of
// the pool's heap (core/internal/heap, allocateSlow): the stream's other
// shards, ordered blocks of other streams, growth, and after a failed
// growth a device synchronization.
func (f *FixedSize) allocateSlow(s Stream, sl *streamorder.Lists[blockList], own *blockList) (uintptr, error) {
	st := sl.St
	var growErr error // set once the device was synchronized after growth failed
	reclaimed, gave := false, false
	for {
		gen := f.gen.Load()
		for i := range sl.Shards {
			l := sl.Shards[i].Load()
			if l == nil || l == own || l.Free.Load() == 0 {
				continue
			}
			l.Mu.Lock()
			b, ok := f.pop(l)
			l.Mu.Unlock()
			if ok {
				return f.publish(b)
			}
		}
		ls := f.eng.AllLists()
		f.eng.WantOthers(ls, st, true)
		for _, l := range ls {
			if l.St == st {
				continue
			}
			if !forOthers(l) {
				continue
			}
			l.Mu.Lock()
			b, ok := f.popForOthers(l)
			if ok {
				l.St.Inflight.Add(1)
			}
			l.Mu.Unlock()
			if !ok {
				continue
			}
			err := f.eng.OrderAfter(s, st, l.St, b.seq)
			if err != nil {
				f.push(l, b)
			}
			l.St.Inflight.Add(-1) // after push: l stays in the engine till then
			if err != nil {
				return 0, err
			}
			return f.publish(b)
		}
		f.eng.WantOthers(ls, st, false)
		if f.eng.NeedSweep() {
			ls := f.eng.LockAll()
			f.eng.Sweep(ls, own)
			streamorder.UnlockAll(ls)
		}
		if growErr != nil {
			if gave {
				f.caches.futile()
			}
			return 0, growErr
		}
		// Blocks the caches in front of the resource hold are free memory
		// it cannot see: take them back before growing (once a call).
		if !reclaimed {
			reclaimed = true
			if f.caches.reclaim(f.blockSize) {
				gave = true
				// The blocks came back, most likely into own: look there,
				// then everywhere as before.
				own.Mu.Lock()
				b, ok := f.pop(own)
				own.Mu.Unlock()
				if ok {
					return f.publish(b)
				}
				continue
			}
		}
		f.growMu.Lock()
		if f.gen.Load() != gen || f.closed.Load() {
			f.growMu.Unlock()
			if f.closed.Load() {
				return 0, errClosed(kindFixedSize)
			}
			continue
		}
		own.Mu.Lock()
		if own.Retired {
			own.Mu.Unlock()
			f.growMu.Unlock()
			return 0, streamorder.ErrRetry
		}
		ptr, err := f.growLocked(s, own, true)
		own.Mu.Unlock()
		if err != nil {
			f.growMu.Unlock()
			if !errors.Is(err, ErrOutOfMemory) || f.freeBytes() == 0 {
				if gave && errors.Is(err, ErrOutOfMemory) {
					f.caches.futile()
				}
				return 0, err
			}
			// Blocks are free, but not ordered before this stream: after a
			// device synchronization all of them are.
			if serr := f.eng.Synchronize(); serr != nil {
				return 0, errors.Join(err, serr)
			}
			growErr = err
			continue
		}
		f.gen.Add(1)
		f.growMu.Unlock()
		// The chunk's other blocks are fresh in own's list: settle them,
		// so that other streams need not grow too.
		f.eng.SettleNow(sl, s, true)
		return ptr, nil
	}
}

// push returns a block to l.
func (f *FixedSize) push(l *blockList, b fixedBlock) {
	l.Mu.Lock()
	f.put(l, b)
	l.Mu.Unlock()
}

// Deallocate returns a block in stream order on stream. bytes must be what
// was passed to Allocate. A pointer that is not a block of this resource, or
// a block not allocated, gives ErrInvalidPointer.
func (f *FixedSize) Deallocate(stream Stream, ptr, bytes, alignment uintptr) error {
	if fc := f.caches.claimer(); fc != nil && ptr != 0 && bytes != 0 {
		return claimedFree(f, fc, ptr, bytes, func(n uintptr) error { return f.deallocateUnclaimed(stream, ptr, n, alignment) })
	}
	return f.deallocateUnclaimed(stream, ptr, bytes, alignment)
}

// deallocateUnclaimed is Deallocate without the claim of a cache in front
// (DeallocateBatch: the cache's own give-back).
func (f *FixedSize) deallocateUnclaimed(stream Stream, ptr, bytes, alignment uintptr) error {
	if done, err := subFreeChecked(kindFixedSize, f, ptr, bytes, alignment); done {
		return err
	}
	if bytes > f.blockSize {
		return fmt.Errorf("%s: %w: deallocating %d bytes at %#x, more than a block (%d bytes)", kindFixedSize, ErrInvalidArgument, bytes, ptr, f.blockSize)
	}
	return f.deallocate(stream, ptr)
}

// deallocate is Deallocate for a request already checked (ptr not 0, at
// most a block, a valid alignment); see allocate.
func (f *FixedSize) deallocate(stream Stream, ptr uintptr) error {
	if f.closed.Load() {
		return errClosed(kindFixedSize)
	}
	if stream != DefaultStream && stream != cudart.LegacyDefaultStream {
		return f.deallocateList(stream, ptr)
	}
	c, i := f.release(ptr)
	if c == nil {
		return f.errNotLive(ptr)
	}
	// The fast path: the default stream never settles (cut is 0).
	sl := f.eng.Default()
	if l := f.eng.DefaultShard(); l != nil {
		l.Mu.Lock()
		l.blocks = append(l.blocks, fixedBlock{sl.St.Epoch.Load(), c.id, uint32(i)})
		l.Free.Add(f.blockSize)
		l.Mu.Unlock()
		return nil
	}
	return f.putFreed(stream, sl, c, i)
}

// errNotLive is the error of freeing ptr, which is not a live block (or
// ErrClosed, the resource being closed meanwhile).
func (f *FixedSize) errNotLive(ptr uintptr) error {
	if f.closed.Load() {
		return errClosed(kindFixedSize)
	}
	return fmt.Errorf("%s: %w: %#x is not a live block of this resource (deallocated already?)", kindFixedSize, ErrInvalidPointer, ptr)
}

// deallocateList is deallocate for any stream.
func (f *FixedSize) deallocateList(stream Stream, ptr uintptr) error {
	if stream == cudart.PerThreadDefaultStream {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	sl, err := f.eng.Lookup(stream)
	if err != nil {
		return err
	}
	c, i := f.release(ptr)
	if c == nil {
		return f.errNotLive(ptr)
	}
	return f.putFreed(stream, sl, c, i)
}

// putFreed files block i of chunk c, just marked free, in a list
// of stream (sl, its lists, looked up during this call). When the stream
// is swept meanwhile and cannot be looked up again, the block is marked
// allocated again and the error returned.
func (f *FixedSize) putFreed(stream Stream, sl *streamorder.Lists[blockList], c *fixedChunk, i uintptr) error {
	for {
		l := f.eng.List(sl, f.eng.Shard())
		l.Mu.Lock()
		if !l.Retired {
			f.put(l, fixedBlock{sl.St.Epoch.Load(), c.id, uint32(i)})
			batch := (l.NoteFreed(f.blockSize, f.chunkBytes) || l.Fresh() >= f.settleBytes()) && f.eng.Shared()
			l.Mu.Unlock()
			if batch {
				f.eng.Want(sl.St)
			}
			// A record made now covers this free too.
			f.eng.MaybeSettle(sl, stream)
			return nil
		}
		l.Mu.Unlock()
		var err error
		if sl, err = f.eng.Lookup(stream); err != nil {
			f.setUsed(c, i)
			return err
		}
	}
}

// settleBytes is the free bytes no record covers that make a list of a
// stream settle its stream at once, when several streams share the
// resource: a block, or 1 MiB of smaller ones. The engine's own batches
// (64 frees and a sixteenth of the resource) let every stream keep up to
// that much of each bin to itself, where another stream cannot take it:
// with 16 streams (TestSoakStreams) the 4 MiB bin of a binning resource
// grew while the other streams held 28-135 MiB of its blocks free. A
// record costs a few microseconds on a GPU: once per free of a block of
// 1 MiB or more, once per 1 MiB of smaller blocks.
func (f *FixedSize) settleBytes() uintptr {
	return max(f.blockSize, 1<<20)
}

// AllocateSync allocates on the default stream and synchronizes it.
func (f *FixedSize) AllocateSync(bytes, alignment uintptr) (uintptr, error) {
	return allocateSync(f, f.rt, bytes, alignment)
}

// DeallocateSync deallocates on the default stream.
func (f *FixedSize) DeallocateSync(ptr, bytes, alignment uintptr) error {
	return f.Deallocate(DefaultStream, ptr, bytes, alignment)
}

// Properties reports the upstream's properties.
func (f *FixedSize) Properties() Properties { return f.upstream.Properties() }

// Equal reports whether other is this very resource.
func (f *FixedSize) Equal(other Resource) bool {
	o, ok := other.(*FixedSize)
	return ok && o == f
}

// Kind returns "fixed_size".
func (f *FixedSize) Kind() string { return kindFixedSize }

// Upstream returns the resource the blocks come from.
func (f *FixedSize) Upstream() Resource { return f.upstream }

// Device returns the device that was current when the resource was made.
func (f *FixedSize) Device() int { return f.dev }

// Close returns every chunk to the upstream (after synchronizing the
// device) and releases the events. Later calls fail with ErrClosed; closing
// again does nothing. Calls racing Close finish, or fail with ErrClosed;
// no chunk is fetched once it began.
func (f *FixedSize) Close() error {
	f.closeMu.Lock()
	defer f.closeMu.Unlock()
	if f.closed.Swap(true) {
		return nil
	}
	f.growMu.Lock()
	ls := f.eng.LockAll()
	for _, l := range ls {
		l.blocks, l.set = nil, nil
		l.Free.Store(0)
		l.Settled.Store(0)
	}
	f.chunkMu.Lock()
	cs := f.chunks
	f.chunks = nil
	stray := f.stray
	f.stray = nil
	f.index.dirs.Store(&fixedDirs{})
	f.byID.Store(&[]*fixedChunk{})
	f.chunkMu.Unlock()
	streamorder.UnlockAll(ls)
	f.growMu.Unlock()
	var errs []error
	bases := make([]uintptr, 0, len(cs)+len(stray))
	for _, c := range cs {
		bases = append(bases, c.base)
	}
	bases = append(bases, stray...)
	if len(bases) > 0 {
		if err := f.rt.DeviceSynchronize(); err != nil {
			errs = append(errs, cudaError(kindFixedSize+": synchronizing before returning memory upstream", err))
		}
	}
	for _, base := range bases {
		if err := f.giveBack(base); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, f.eng.Close())
	return errors.Join(errs...)
}
