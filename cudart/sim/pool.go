package sim

import (
	"sort"

	"github.com/rmmgo/rmmgo/cudart"
)

// simPool is a memory pool of the simulated device, modelled on CUDA's
// stream-ordered allocator:
//
//   - The pool reserves memory in chunks (multiples of 2 MiB, or exactly
//     what is left under the pool's maximum size) from its location: a
//     device's memory (counted against its capacity and MemGetInfo), managed
//     memory or pinned host memory. Allocations are carved from the chunks
//     (best fit, 256-byte granularity) and freed blocks coalesce within
//     their chunk.
//   - Physical memory is mapped into the chunks in 2 MiB granules, and
//     reserved memory counts what is mapped, as the driver's pool counts
//     it. When the pool must grow (no free block holds a request), it first
//     unmaps every group of 32 granules (64 MiB, aligned in its chunk) that
//     lies wholly in free memory, anywhere in its chunks, so that the new
//     chunk reuses that physical memory rather than adding to it; a later
//     allocation that lands on unmapped granules maps them again. A chunk
//     whose granules are all unmapped and free is given back (its addresses
//     too). This is the model closest to what the driver's pool does in
//     effect on the logs of bench/traces (simUnmapGranules): a pool that
//     reuses memory only inside its chunks holds 1.42x on gpt2-train where
//     the driver holds 1.03x, one that unmaps granule by granule 1.01x on
//     every log where the driver holds up to 1.16x.
//   - FreeAsync returns a block to the pool when its stream reaches the free;
//     from then on any allocation may reuse it. Free returns it at once.
//   - At every synchronization (stream, event or device), a pool holding
//     more than its release threshold (CUDA's default: 0) gives back wholly
//     free chunks while it keeps at least the threshold, exactly as
//     MemPoolTrimTo(threshold) does.
//   - When a pool cannot grow, it first gives back its own wholly free
//     chunks and tries again; then the allocation fails with
//     cudaErrorMemoryAllocation.
//   - Reserved and used memory, current and high, are the attributes CUDA
//     names; used counts allocations rounded up to 256 bytes, including
//     stream-ordered frees not yet executed.
//   - MemPoolDestroy with allocations outstanding returns at once; the
//     allocations stay valid and the pool's memory goes back when the last
//     is freed, as CUDA documents.
type simPool struct {
	handle    cudart.MemPool
	kind      memKind
	dev       int // location device; -1 for host-located pools
	isDefault bool
	destroyed bool

	threshold      uint64
	maxSize        uint64 // 0: none
	handleTypes    cudart.MemHandleType
	reuse          [3]uint64 // cudaMemPoolReuse* attributes 1..3
	reserved, used uint64
	reservedHigh   uint64
	usedHigh       uint64
	live           int
	unsynced       int // stream-ordered frees no host synchronization covered yet

	arena  *simArena             // regions: the chunks
	chunks map[uintptr]*simBlock // chunk start -> the chunk's block in its range
	// unmapped holds, for the chunks with granules unmapped (and only
	// those), which: chunk start -> its granules' state.
	unmapped map[uintptr]*simGranules
}

// simGranules records which granules of a chunk are unmapped.
type simGranules struct {
	off   []bool // granule i unmapped
	bytes uint64 // bytes unmapped
}

// granule returns the start and size of granule i of chunk c (the last one
// may be short: a chunk at a pool's maximum need not be a multiple).
func granule(c *simBlock, i int) (uintptr, uintptr) {
	start := c.start + uintptr(i)*simChunk
	return start, min(simChunk, c.end()-start)
}

// mappedBytes is what chunk c holds of the device's memory.
func (p *simPool) mappedBytes(c *simBlock) uint64 {
	if g := p.unmapped[c.start]; g != nil {
		return uint64(c.size) - g.bytes
	}
	return uint64(c.size)
}

// chunkOf returns the chunk of p that holds address a.
func (s *Runtime) chunkOf(p *simPool, a uintptr) *simBlock {
	top := s.backing(p).arena.find(a)
	if top == nil {
		return nil
	}
	return p.chunks[top.start]
}

// simUnmapGranules is how many granules the pool unmaps together: a group
// of this many (aligned in its chunk; a chunk's last group may be short)
// goes back only when it lies wholly in free memory. Calibrated on the
// replays of bench/traces with cuda_async on an H200 (CUDA 13; docs/
// benchmarks.md): the driver held 1.03x, 1.02x and 1.16x the peak live
// bytes of gpt2-train, resnet50-train and cupy-pipeline; granule by granule
// this model held 1.01x on all three, 32 granules (64 MiB) 1.02x, 1.01x and
// 1.09x, 64 granules 1.07x, 1.03x, 1.08x. The driver's rule is not
// documented: this is the model that comes closest, not the driver's.
const simUnmapGranules = 32

// unmapFree unmaps every group of simUnmapGranules granules of p that lies
// wholly in free memory, giving its physical memory back to the device (the
// pool reuses it for what it maps next), and gives back the chunks left
// wholly free and unmapped. s.mu held.
func (s *Runtime) unmapFree(p *simPool) {
	r := s.backing(p)
	used, _ := s.budget(r)
	var empty []*simBlock
	p.arena.free.each(func(f *simBlock) {
		c := s.chunkOf(p, f.start)
		if c == nil {
			return
		}
		n := int((c.size + simChunk - 1) / simChunk)
		k := simUnmapGranules
		first := int((f.start - c.start + simChunk*uintptr(k) - 1) / (simChunk * uintptr(k)))
		g := p.unmapped[c.start]
		for i := first * k; i < n; i++ {
			gs, gn := granule(c, i)
			if gs+gn > f.end() {
				break
			}
			if i%k == 0 { // a group is unmapped whole or not at all
				ls, ln := granule(c, min(i+k, n)-1)
				if ls+ln > f.end() {
					break
				}
			}
			if g == nil {
				g = &simGranules{off: make([]bool, n)}
				p.unmapped[c.start] = g
			}
			if !g.off[i] {
				g.off[i] = true
				g.bytes += uint64(gn)
				p.reserved -= uint64(gn)
				*used -= uint64(gn)
			}
		}
		if f.whole() && g != nil && g.bytes == uint64(c.size) {
			empty = append(empty, f)
		}
	})
	for _, f := range empty {
		s.dropChunk(p, f)
	}
}

// dropChunk gives back the wholly free chunk whose free block is b: its
// mapped memory and its addresses. s.mu held.
func (s *Runtime) dropChunk(p *simPool, b *simBlock) {
	r := s.backing(p)
	chunk := p.chunks[b.start]
	mapped := p.mappedBytes(chunk)
	if g := p.unmapped[b.start]; g != nil {
		used, _ := s.budget(r)
		*used += g.bytes // freeTop takes the whole chunk off the budget
		delete(p.unmapped, b.start)
	}
	p.arena.removeRegion(b)
	delete(p.chunks, b.start)
	p.reserved -= mapped
	s.freeTop(r, chunk)
}

// mapBlock maps the unmapped granules under the block b just allocated from
// p, unmapping free ones elsewhere first when the device has no room. It
// fails with the device's out-of-memory error. s.mu held.
func (s *Runtime) mapBlock(fn string, p *simPool, b *simBlock) error {
	c := s.chunkOf(p, b.start)
	g := p.unmapped[c.start]
	if g == nil {
		return nil
	}
	var need uint64
	lo, hi := int((b.start-c.start)/simChunk), int((b.end()-c.start-1)/simChunk)
	for i := lo; i <= hi; i++ {
		if g.off[i] {
			_, gn := granule(c, i)
			need += uint64(gn)
		}
	}
	if need == 0 {
		return nil
	}
	// The physical memory comes from free granules elsewhere first.
	s.unmapFree(p)
	g = p.unmapped[c.start] // b's granules are still off: b is not free
	r := s.backing(p)
	used, limit := s.budget(r)
	if *used+need > limit {
		return simErr(fn, cudart.ErrorMemoryAllocation, "%s has %d of %d bytes free, %d to map", r.name(), limit-*used, limit, need)
	}
	if p.maxSize > 0 && p.reserved+need > p.maxSize {
		return simErr(fn, cudart.ErrorMemoryAllocation, "the pool's maximum size is %d bytes, %d reserved, %d to map", p.maxSize, p.reserved, need)
	}
	for i := lo; i <= hi; i++ {
		if g.off[i] {
			_, gn := granule(c, i)
			g.off[i] = false
			g.bytes -= uint64(gn)
		}
	}
	if g.bytes == 0 {
		delete(p.unmapped, c.start)
	}
	*used += need
	p.reserved += need
	p.reservedHigh = max(p.reservedHigh, p.reserved)
	return nil
}

func (s *Runtime) newPool(kind memKind, dev int, maxSize uint64, isDefault bool) *simPool {
	p := &simPool{
		handle:    cudart.MemPool(s.newHandle(poolHandle)),
		kind:      kind,
		dev:       dev,
		isDefault: isDefault,
		maxSize:   maxSize,
		reuse:     [3]uint64{1, 1, 1},
		arena:     newSimArena(),
		chunks:    make(map[uintptr]*simBlock),
		unmapped:  make(map[uintptr]*simGranules),
	}
	s.pools[p.handle] = p
	s.allPools[p] = struct{}{}
	return p
}

// backing is the range p's chunks come from.
func (s *Runtime) backing(p *simPool) *simRange {
	switch p.kind {
	case memDevice:
		return s.devs[p.dev].rng
	case memManaged:
		return s.managed
	}
	return s.pinned
}

func (s *Runtime) pool(fn string, h cudart.MemPool) (*simPool, error) {
	if s.cfg.NoMemoryPools {
		return nil, simErr(fn, cudart.ErrorNotSupported, "the simulated devices have no memory-pool support")
	}
	p, ok := s.pools[h]
	if !ok {
		// CUDA documents cudaErrorInvalidValue for a pool it cannot use.
		return nil, s.badHandle(fn, cudart.ErrorInvalidValue, poolHandle, uintptr(h))
	}
	return p, nil
}

// reserve adds a chunk of size bytes to p.
func (s *Runtime) reserve(fn string, p *simPool, size uintptr) error {
	r := s.backing(p)
	b, err := s.allocTop(fn, r, size)
	if err != nil {
		return err
	}
	b.chunk, b.pool, b.kind, b.dev = true, p, p.kind, p.dev
	p.arena.addRegion(b.start, b.size)
	p.chunks[b.start] = b
	p.reserved += uint64(b.size)
	p.reservedHigh = max(p.reservedHigh, p.reserved)
	return nil
}

// grow reserves room for an allocation of need bytes: first it unmaps the
// granules that lie in free memory (the new chunk reuses their physical
// memory), then it maps a chunk of need rounded up to 2 MiB, or exactly need
// where the device or the maximum leaves no more (judged before unmapping,
// as CUDA cannot tell which of its free memory the pool will reuse).
func (s *Runtime) grow(fn string, p *simPool, need uintptr) error {
	chunk := uintptr(alignUp64(uint64(need), simChunk))
	used, limit := s.budget(s.backing(p))
	if *used+uint64(chunk) > limit {
		chunk = need
	}
	s.unmapFree(p)
	if p.maxSize > 0 && p.reserved+uint64(need) > p.maxSize {
		return simErr(fn, cudart.ErrorMemoryAllocation, "the pool's maximum size is %d bytes, %d reserved, %d requested", p.maxSize, p.reserved, need)
	}
	if p.maxSize > 0 && p.reserved+uint64(chunk) > p.maxSize {
		chunk = need
	}
	err := s.reserve(fn, p, chunk)
	if err != nil && chunk > need {
		err = s.reserve(fn, p, need)
	}
	if err != nil && len(p.arena.wholeFree) > 0 {
		s.trimTo(p, 0)
		err = s.reserve(fn, p, need)
	}
	return err
}

// poolAlloc takes size bytes from p for device dev's accounting.
func (s *Runtime) poolAlloc(fn string, p *simPool, size uintptr, dev int) (uintptr, error) {
	if err := s.injectedFailure(fn, size); err != nil {
		return 0, err
	}
	if uint64(size) > 1<<62 {
		return 0, simErr(fn, cudart.ErrorMemoryAllocation, "%d bytes requested", size)
	}
	need := uintptr(alignUp64(uint64(size), simAlign))
	b := p.arena.alloc(need)
	if b == nil {
		if err := s.grow(fn, p, need); err != nil {
			return 0, err
		}
		if b = p.arena.alloc(need); b == nil {
			return 0, simErr(fn, cudart.ErrorMemoryAllocation, "internal: no block after growing the pool")
		}
	}
	if err := s.mapBlock(fn, p, b); err != nil {
		p.arena.release(b)
		return 0, err
	}
	b.kind, b.pool, b.req, b.dev = p.kind, p, size, dev
	if p.kind == memManaged {
		b.advice = &simAdvice{}
	}
	p.used += uint64(b.size)
	p.usedHigh = max(p.usedHigh, p.used)
	p.live++
	s.countLive(dev, 1)
	return b.start, nil
}

// poolFree returns the pool allocation b to its pool.
func (s *Runtime) poolFree(b *simBlock) {
	p := b.pool
	p.used -= uint64(b.size)
	p.live--
	s.countLive(b.dev, -1)
	p.arena.release(b)
	if p.destroyed {
		s.trimTo(p, 0)
		if p.live == 0 {
			delete(s.allPools, p)
		}
	}
}

// trimTo gives back p's wholly free chunks, largest first, while p keeps at
// least keep bytes reserved.
func (s *Runtime) trimTo(p *simPool, keep uint64) {
	if p.reserved <= keep || len(p.arena.wholeFree) == 0 {
		return
	}
	free := make([]*simBlock, 0, len(p.arena.wholeFree))
	for b := range p.arena.wholeFree {
		free = append(free, b)
	}
	sort.Slice(free, func(i, j int) bool {
		if free[i].size != free[j].size {
			return free[i].size > free[j].size
		}
		return free[i].start < free[j].start
	})
	for _, b := range free {
		if p.reserved-p.mappedBytes(p.chunks[b.start]) < keep {
			continue
		}
		s.dropChunk(p, b)
	}
}

// unsyncedFree notes a stream-ordered free of a block of p queued on q:
// until the host synchronizes with q, CUDA does not know it ran. s.mu held.
func (s *Runtime) unsyncedFree(q *simStream, p *simPool) {
	if q.poolFrees == nil {
		q.poolFrees = make(map[*simPool]int)
	}
	q.poolFrees[p]++
	p.unsynced++
	s.unsyncedFrees[q] = struct{}{}
}

// synced notes that the host synchronized with q (StreamSynchronize, or
// DeviceSynchronize of q's device): the pool frees queued on q before are
// known to have run. s.mu held.
func (s *Runtime) synced(q *simStream) {
	for p, n := range q.poolFrees {
		p.unsynced -= n
	}
	q.poolFrees = nil
	delete(s.unsyncedFrees, q)
}

// DeferredPoolDestroys reports how many memory pools were destroyed while
// allocations from them were outstanding, or while stream-ordered frees of
// their blocks were queued that no host synchronization had covered (a
// free on an idle stream included: the host learns that it ran only when it
// synchronizes). CUDA's cudaMemPoolDestroy returns at once in both cases and
// releases the pool later, when the driver sees the last allocation go;
// rmmgo's own resources synchronize before they destroy a pool, so that the
// driver never defers (an H100 crashed inside cudaMallocFromPoolAsync of a
// later pool after deferred destructions). Test control; not part of CUDA.
func (s *Runtime) DeferredPoolDestroys() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deferredDestroys
}

// trimPools applies every pool's release threshold, as CUDA does at
// synchronization. Its cost is in the number of pools.
func (s *Runtime) trimPools() {
	for p := range s.allPools {
		if p.reserved > p.threshold {
			s.trimTo(p, p.threshold)
		}
	}
}

// MallocAsync allocates size bytes in stream order from the default pool of
// st's device. Zero bytes give a null pointer and no error.
func (s *Runtime) MallocAsync(size uintptr, st cudart.Stream) (uintptr, error) {
	tok := threadToken()
	const fn = "cudaMallocAsync"
	if err := s.lock(fn); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if s.cfg.NoMemoryPools {
		return 0, simErr(fn, cudart.ErrorNotSupported, "the simulated devices have no memory-pool support")
	}
	q, err := s.stream(fn, st, tok)
	if err != nil {
		return 0, err
	}
	if size == 0 {
		return 0, nil
	}
	p := s.devs[q.dev].defaultPool
	return s.poolAlloc(fn, p, size, q.dev)
}

// MallocFromPoolAsync allocates size bytes in stream order from pool. Zero
// bytes give a null pointer and no error.
func (s *Runtime) MallocFromPoolAsync(size uintptr, pool cudart.MemPool, st cudart.Stream) (uintptr, error) {
	tok := threadToken()
	const fn = "cudaMallocFromPoolAsync"
	if err := s.lock(fn); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	p, err := s.pool(fn, pool)
	if err != nil {
		return 0, err
	}
	if _, err := s.stream(fn, st, tok); err != nil {
		return 0, err
	}
	if size == 0 {
		return 0, nil
	}
	dev := p.dev
	if dev < 0 { // a host-located pool: attributed to the current device
		dev = s.curDev(tok).id
	}
	return s.poolAlloc(fn, p, size, dev)
}

// FreeAsync frees, when st reaches this point, memory from MallocAsync,
// MallocFromPoolAsync or Malloc (CUDA 13.0 accepts cudaMalloc memory too).
// A null pointer is a no-op. Any other pointer (managed memory from
// MallocManaged and pinned host memory included), or one already being
// freed, fails with cudaErrorInvalidValue at once.
func (s *Runtime) FreeAsync(ptr uintptr, st cudart.Stream) error {
	tok := threadToken()
	const fn = "cudaFreeAsync"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.cfg.NoMemoryPools {
		return simErr(fn, cudart.ErrorNotSupported, "the simulated devices have no memory-pool support")
	}
	q, err := s.stream(fn, st, tok)
	if err != nil {
		return err
	}
	if ptr == 0 {
		return nil
	}
	r, b, _ := s.liveBlock(ptr)
	if b == nil || b.start != ptr || (b.pool == nil && b.kind != memDevice) {
		return simErr(fn, cudart.ErrorInvalidValue, "%#x is not the start of a live allocation from cudaMallocAsync, cudaMallocFromPoolAsync or cudaMalloc (freed twice?)", ptr)
	}
	if b.pendingFree {
		return simErr(fn, cudart.ErrorInvalidValue, "%#x is already being freed", ptr)
	}
	b.pendingFree = true
	if b.pool != nil {
		s.unsyncedFree(q, b.pool)
		s.enqueue(q, simOp{run: func() { s.poolFree(b) }})
		return nil
	}
	s.enqueue(q, simOp{run: func() {
		s.countLive(b.dev, -1)
		s.freeTop(r, b)
	}})
	return nil
}

// MemPoolCreate makes a pool. AllocType Pinned with a device location makes
// a device pool; with a host location (Host, HostNuma node 0,
// HostNumaCurrent) a pinned host pool. AllocType Managed (runtime 13.0 and
// later, with concurrent managed access) makes a managed pool located on a
// device or the host. HandleTypes may ask for POSIX file descriptors on
// device pools; other handle types are not supported. MaxSize > 0 caps the
// pool's reservation.
func (s *Runtime) MemPoolCreate(props cudart.MemPoolProps) (cudart.MemPool, error) {
	const fn = "cudaMemPoolCreate"
	if err := s.lock(fn); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if s.cfg.NoMemoryPools {
		return 0, simErr(fn, cudart.ErrorNotSupported, "the simulated devices have no memory-pool support")
	}
	loc := props.Location
	var kind memKind
	dev := -1
	switch props.AllocType {
	case cudart.MemAllocationTypePinned:
		kind = memHost
	case cudart.MemAllocationTypeManaged:
		if s.cfg.RuntimeVersion < 13000 {
			return 0, simErr(fn, cudart.ErrorInvalidValue, "managed memory pools need CUDA 13.0 (runtime version is %d)", s.cfg.RuntimeVersion)
		}
		if s.cfg.NoConcurrentManaged {
			return 0, simErr(fn, cudart.ErrorNotSupported, "managed memory pools need concurrent managed access")
		}
		kind = memManaged
	default:
		return 0, simErr(fn, cudart.ErrorInvalidValue, "allocation type %d", int32(props.AllocType))
	}
	switch loc.Type {
	case cudart.MemLocationTypeDevice:
		if _, err := s.device(fn, int(loc.ID)); err != nil {
			return 0, err
		}
		dev = int(loc.ID)
		if kind == memHost {
			kind = memDevice
		}
	case cudart.MemLocationTypeHost, cudart.MemLocationTypeHostNuma, cudart.MemLocationTypeHostNumaCurrent:
		if loc.Type == cudart.MemLocationTypeHostNuma && loc.ID != 0 {
			return 0, simErr(fn, cudart.ErrorInvalidValue, "host NUMA node %d does not exist (the simulated host has node 0)", loc.ID)
		}
	default:
		return 0, simErr(fn, cudart.ErrorInvalidValue, "location type %d", int32(loc.Type))
	}
	const known = cudart.MemHandleTypePosixFileDescriptor | cudart.MemHandleTypeWin32 | cudart.MemHandleTypeWin32Kmt | cudart.MemHandleTypeFabric
	switch ht := props.HandleTypes; {
	case ht&^known != 0:
		return 0, simErr(fn, cudart.ErrorInvalidValue, "handle types %#x", int32(ht))
	case ht&^cudart.MemHandleTypePosixFileDescriptor != 0:
		return 0, simErr(fn, cudart.ErrorNotSupported, "handle types %#x: the simulated device exports POSIX file descriptors only", int32(ht))
	case ht != 0 && kind != memDevice:
		return 0, simErr(fn, cudart.ErrorNotSupported, "handle types %#x on a %s pool", int32(ht), kind)
	}
	p := s.newPool(kind, dev, props.MaxSize, false)
	p.handleTypes = props.HandleTypes
	return p.handle, nil
}

// MemPoolDestroy destroys a pool made by MemPoolCreate; a device's default
// pool cannot be destroyed (cudaErrorInvalidValue). Allocations still
// outstanding stay valid; the pool's memory is given back when the last of
// them is freed.
func (s *Runtime) MemPoolDestroy(pool cudart.MemPool) error {
	const fn = "cudaMemPoolDestroy"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	p, err := s.pool(fn, pool)
	if err != nil {
		return err
	}
	if p.isDefault {
		return simErr(fn, cudart.ErrorInvalidValue, "device %d's default memory pool cannot be destroyed", p.dev)
	}
	if p.live > 0 || p.unsynced > 0 {
		s.deferredDestroys++
	}
	delete(s.pools, pool)
	p.destroyed = true
	s.trimTo(p, 0)
	if p.live == 0 {
		delete(s.allPools, p)
	}
	return nil
}

// MemPoolSetAttribute sets the release threshold or a reuse policy (0 or
// 1), or resets a high-water mark to the current value (value 0 only).
// Other attributes and values fail with cudaErrorInvalidValue. The reuse
// policies are recorded; the simulator's reuse does not depend on them.
func (s *Runtime) MemPoolSetAttribute(pool cudart.MemPool, attr cudart.MemPoolAttr, value uint64) error {
	const fn = "cudaMemPoolSetAttribute"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	p, err := s.pool(fn, pool)
	if err != nil {
		return err
	}
	switch attr {
	case cudart.MemPoolReuseFollowEventDependencies, cudart.MemPoolReuseAllowOpportunistic, cudart.MemPoolReuseAllowInternalDependencies:
		if value > 1 {
			return simErr(fn, cudart.ErrorInvalidValue, "reuse policy %d: value %d is not 0 or 1", int32(attr), value)
		}
		p.reuse[attr-cudart.MemPoolReuseFollowEventDependencies] = value
	case cudart.MemPoolAttrReleaseThreshold:
		p.threshold = value
	case cudart.MemPoolAttrReservedMemHigh, cudart.MemPoolAttrUsedMemHigh:
		if value != 0 {
			return simErr(fn, cudart.ErrorInvalidValue, "a high-water mark can only be reset (to 0), not set to %d", value)
		}
		if attr == cudart.MemPoolAttrReservedMemHigh {
			p.reservedHigh = p.reserved
		} else {
			p.usedHigh = p.used
		}
	case cudart.MemPoolAttrReservedMemCurrent, cudart.MemPoolAttrUsedMemCurrent:
		return simErr(fn, cudart.ErrorInvalidValue, "attribute %d is read-only", int32(attr))
	default:
		return simErr(fn, cudart.ErrorInvalidValue, "unknown memory pool attribute %d", int32(attr))
	}
	return nil
}

// MemPoolGetAttribute reads a pool attribute.
func (s *Runtime) MemPoolGetAttribute(pool cudart.MemPool, attr cudart.MemPoolAttr) (uint64, error) {
	const fn = "cudaMemPoolGetAttribute"
	if err := s.lock(fn); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	p, err := s.pool(fn, pool)
	if err != nil {
		return 0, err
	}
	switch attr {
	case cudart.MemPoolReuseFollowEventDependencies, cudart.MemPoolReuseAllowOpportunistic, cudart.MemPoolReuseAllowInternalDependencies:
		return p.reuse[attr-cudart.MemPoolReuseFollowEventDependencies], nil
	case cudart.MemPoolAttrReleaseThreshold:
		return p.threshold, nil
	case cudart.MemPoolAttrReservedMemCurrent:
		return p.reserved, nil
	case cudart.MemPoolAttrReservedMemHigh:
		return p.reservedHigh, nil
	case cudart.MemPoolAttrUsedMemCurrent:
		return p.used, nil
	case cudart.MemPoolAttrUsedMemHigh:
		return p.usedHigh, nil
	}
	return 0, simErr(fn, cudart.ErrorInvalidValue, "unknown memory pool attribute %d", int32(attr))
}

// MemPoolTrimTo gives back the pool's wholly free chunks while it keeps at
// least minBytesToKeep reserved; a pool holding less is left alone.
// Allocations freed in stream order whose free has not run yet still hold
// their memory.
func (s *Runtime) MemPoolTrimTo(pool cudart.MemPool, minBytesToKeep uintptr) error {
	const fn = "cudaMemPoolTrimTo"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	p, err := s.pool(fn, pool)
	if err != nil {
		return err
	}
	s.trimTo(p, uint64(minBytesToKeep))
	return nil
}

// DeviceGetDefaultMemPool returns dev's default pool (release threshold 0,
// like CUDA's).
func (s *Runtime) DeviceGetDefaultMemPool(dev int) (cudart.MemPool, error) {
	const fn = "cudaDeviceGetDefaultMemPool"
	if err := s.lock(fn); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	d, err := s.device(fn, dev)
	if err != nil {
		return 0, err
	}
	if d.defaultPool == nil {
		return 0, simErr(fn, cudart.ErrorNotSupported, "the simulated devices have no memory-pool support")
	}
	return d.defaultPool.handle, nil
}
