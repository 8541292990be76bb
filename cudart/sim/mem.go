package sim

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"syscall"
	"unsafe"

	"github.com/rmmgo/rmmgo/cudart"
)

// memKind is the kind of memory an allocation holds.
type memKind uint8

const (
	memNone    memKind = iota
	memDevice          // device memory (cudaMalloc, device-located pools)
	memManaged         // managed memory (cudaMallocManaged, managed pools)
	memHost            // pinned host memory (cudaHostAlloc, host-located pools)
	memVirtual         // address reservations of the driver's virtual memory management (vmm.go)
)

func (k memKind) String() string {
	switch k {
	case memDevice:
		return "device"
	case memManaged:
		return "managed"
	case memHost:
		return "pinned host"
	case memVirtual:
		return "reserved virtual"
	}
	return "unregistered"
}

const (
	simSlack      = 256 << 20 // extra address space per range, beyond twice its limit
	simChunk      = 2 << 20   // granularity of a memory pool's reservations
	simDontNeedAt = 64 << 10  // freed blocks this large give their pages back
)

// simRange is one reserved address range: a device's memory, all managed
// memory, or all pinned host memory. It is mapped readable and writable with
// MAP_NORESERVE, so untouched pages cost nothing, and stays mapped until
// Close. The range is twice the memory it may hand out (plus slack), so that
// fragmentation of the address space never causes an out-of-memory error
// that the capacity does not.
type simRange struct {
	base, size uintptr
	mem        []byte
	arena      *simArena
	kind       memKind
	dev        int // for device ranges
}

func newSimRange(kind memKind, dev int, size uint64) (*simRange, error) {
	if size > uint64(^uint(0)>>1) {
		return nil, fmt.Errorf("cannot reserve %d bytes of address space", size)
	}
	mem, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("reserving %d bytes of address space for %s memory: %w", size, kind, err)
	}
	r := &simRange{
		base:  uintptr(unsafe.Pointer(unsafe.SliceData(mem))),
		size:  uintptr(size),
		mem:   mem,
		arena: newSimArena(),
		kind:  kind,
		dev:   dev,
	}
	r.arena.addRegion(r.base, r.size)
	return r, nil
}

func (r *simRange) unmap() error {
	if r.mem == nil {
		return nil
	}
	err := syscall.Munmap(r.mem)
	r.mem = nil
	return err
}

// dontNeed gives back the whole pages of [start, end) to the system; they
// read back as zeros when touched again.
func (r *simRange) dontNeed(start, end uintptr) {
	page := uintptr(os.Getpagesize())
	start = (start + page - 1) &^ (page - 1)
	end &^= page - 1
	if end <= start || r.mem == nil {
		return
	}
	// Failure only means the pages stay resident.
	_ = syscall.Madvise(r.mem[start-r.base:end-r.base], syscall.MADV_DONTNEED)
}

func (s *Runtime) reserveRanges(capacity uint64) error {
	va := func(limit uint64) uint64 { return alignUp64(2*limit+simSlack, simChunk) }
	reserve := func(kind memKind, dev int, limit uint64) (*simRange, error) {
		r, err := newSimRange(kind, dev, va(limit))
		if err != nil {
			// Try again without the headroom against fragmentation.
			r, err = newSimRange(kind, dev, alignUp64(limit+simChunk, simChunk))
		}
		if err == nil {
			s.ranges = append(s.ranges, r)
		}
		return r, err
	}
	var err error
	defer func() {
		if err != nil {
			for _, r := range s.ranges {
				_ = r.unmap()
			}
			s.ranges, s.devs = nil, nil
		}
	}()
	for i := 0; i < s.cfg.Devices; i++ {
		var r *simRange
		if r, err = reserve(memDevice, i, capacity); err != nil {
			return err
		}
		s.devs = append(s.devs, &simDevice{id: i, capacity: capacity, rng: r})
	}
	if s.managed, err = reserve(memManaged, -1, s.managedLimit); err != nil {
		return err
	}
	if s.pinned, err = reserve(memHost, -1, s.pinnedLimit); err != nil {
		return err
	}
	sort.Slice(s.ranges, func(i, j int) bool { return s.ranges[i].base < s.ranges[j].base })
	return nil
}

// rangeOf returns the range that contains p, or nil for ordinary host
// memory.
func (s *Runtime) rangeOf(p uintptr) *simRange {
	i := sort.Search(len(s.ranges), func(i int) bool { return s.ranges[i].base+s.ranges[i].size > p })
	if i < len(s.ranges) && s.ranges[i].base <= p {
		return s.ranges[i]
	}
	return nil
}

// budget returns the counter and limit that allocations from r count
// against.
func (s *Runtime) budget(r *simRange) (used *uint64, limit uint64) {
	switch r.kind {
	case memDevice:
		d := s.devs[r.dev]
		return &d.used, d.capacity
	case memManaged:
		return &s.managedUsed, s.managedLimit
	default:
		return &s.pinnedUsed, s.pinnedLimit
	}
}

// name says what r holds, for error messages.
func (r *simRange) name() string {
	if r.kind == memDevice {
		return fmt.Sprintf("simulated device %d", r.dev)
	}
	return r.kind.String() + " memory"
}

// allocTop takes size bytes from r, counting them against r's budget.
func (s *Runtime) allocTop(fn string, r *simRange, size uintptr) (*simBlock, error) {
	used, limit := s.budget(r)
	free := limit - *used
	if uint64(size) > free {
		return nil, simErr(fn, cudart.ErrorMemoryAllocation, "%s has %d of %d bytes free, %d requested", r.name(), free, limit, size)
	}
	need := uintptr(alignUp64(uint64(size), simAlign))
	b := r.arena.alloc(need)
	if b == nil {
		return nil, simErr(fn, cudart.ErrorMemoryAllocation, "%s: address space too fragmented for %d bytes", r.name(), size)
	}
	*used += uint64(need)
	b.kind, b.dev, b.req = r.kind, r.dev, size
	return b, nil
}

// freeTop returns the block b of r to r.
func (s *Runtime) freeTop(r *simRange, b *simBlock) {
	used, _ := s.budget(r)
	*used -= uint64(b.size)
	if b.size >= simDontNeedAt {
		r.dontNeed(b.start, b.end())
	}
	r.arena.release(b)
}

// liveBlock returns the live allocation that contains p: a plain allocation,
// or an allocation from a pool (inside one of the pool's chunks). reserved
// reports whether p lies in memory the device has mapped, live or not: a
// live allocation or a pool's reservation.
func (s *Runtime) liveBlock(p uintptr) (r *simRange, b *simBlock, reserved bool) {
	r = s.rangeOf(p)
	if r == nil {
		return nil, nil, false
	}
	if r.kind == memVirtual {
		return r, nil, s.mappingAt(p) != nil // no allocation: reserved memory, mapped or not
	}
	top := r.arena.find(p)
	if top == nil || top.free {
		return r, nil, false
	}
	if !top.chunk {
		return r, top, true
	}
	in := top.pool.arena.find(p)
	if in == nil || in.free {
		return r, nil, true
	}
	return r, in, true
}

func (s *Runtime) countLive(dev, delta int) {
	if dev >= 0 && dev < len(s.devs) {
		s.devs[dev].live += delta
	}
}

// Malloc allocates device memory on the current device. Zero bytes give a
// null pointer and no error, as in CUDA.
func (s *Runtime) Malloc(size uintptr) (uintptr, error) {
	tok := threadToken()
	const fn = "cudaMalloc"
	if err := s.lock(fn); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if size == 0 {
		return 0, nil
	}
	if err := s.injectedFailure(fn, size); err != nil {
		return 0, err
	}
	d := s.curDev(tok)
	b, err := s.allocTop(fn, d.rng, size)
	if err != nil {
		return 0, err
	}
	s.countLive(d.id, 1)
	return b.start, nil
}

// Free frees memory from Malloc, MallocManaged, MallocAsync or
// MallocFromPoolAsync (the last two at once, as cudaFree does). A null
// pointer is a no-op. Anything else, pinned host memory, a second free and
// memory with a FreeAsync still queued included, fails with
// cudaErrorInvalidValue.
func (s *Runtime) Free(ptr uintptr) error {
	const fn = "cudaFree"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if ptr == 0 {
		return nil
	}
	r := s.rangeOf(ptr)
	if r == nil {
		return simErr(fn, cudart.ErrorInvalidValue, "%#x is not memory the simulated device allocated", ptr)
	}
	if r.kind == memVirtual {
		return simErr(fn, cudart.ErrorInvalidValue, "%#x is reserved virtual memory (cuMemAddressReserve, cuMemMap): cudaFree cannot free it", ptr)
	}
	top := r.arena.find(ptr)
	if top != nil && top.chunk {
		in := top.pool.arena.find(ptr)
		if in == nil || in.free || in.start != ptr || in.pendingFree {
			return simErr(fn, cudart.ErrorInvalidValue, "%#x is not the start of a live allocation (freed twice?)", ptr)
		}
		s.poolFree(in)
		return nil
	}
	if top == nil || top.free || top.start != ptr || top.pendingFree {
		return simErr(fn, cudart.ErrorInvalidValue, "%#x is not the start of a live allocation (freed twice?)", ptr)
	}
	if top.kind == memHost {
		return simErr(fn, cudart.ErrorInvalidValue, "%#x is pinned host memory: free it with cudaFreeHost", ptr)
	}
	s.countLive(top.dev, -1)
	s.freeTop(r, top)
	return nil
}

// MallocManaged allocates managed memory, attributed to the current device.
// flags must be MemAttachGlobal or MemAttachHost. Zero bytes give a null
// pointer and no error: CUDA's documentation says cudaErrorInvalidValue, but
// the CUDA 13.0 runtime (driver 13.0, H200) returns success.
func (s *Runtime) MallocManaged(size uintptr, flags uint32) (uintptr, error) {
	tok := threadToken()
	const fn = "cudaMallocManaged"
	if err := s.lock(fn); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if flags != cudart.MemAttachGlobal && flags != cudart.MemAttachHost {
		return 0, simErr(fn, cudart.ErrorInvalidValue, "flags %#x: want cudaMemAttachGlobal or cudaMemAttachHost", flags)
	}
	if size == 0 {
		return 0, nil
	}
	if err := s.injectedFailure(fn, size); err != nil {
		return 0, err
	}
	b, err := s.allocTop(fn, s.managed, size)
	if err != nil {
		return 0, err
	}
	b.dev = s.curDev(tok).id
	b.advice = &simAdvice{}
	s.countLive(b.dev, 1)
	return b.start, nil
}

// HostAlloc allocates pinned host memory, attributed to the current device.
// flags is a combination of the HostAlloc* flags. Zero bytes give a null
// pointer and no error.
func (s *Runtime) HostAlloc(size uintptr, flags uint32) (uintptr, error) {
	tok := threadToken()
	const fn = "cudaHostAlloc"
	if err := s.lock(fn); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if flags&^(cudart.HostAllocPortable|cudart.HostAllocMapped|cudart.HostAllocWriteCombined) != 0 {
		return 0, simErr(fn, cudart.ErrorInvalidValue, "unknown flags %#x", flags)
	}
	if size == 0 {
		return 0, nil
	}
	if err := s.injectedFailure(fn, size); err != nil {
		return 0, err
	}
	b, err := s.allocTop(fn, s.pinned, size)
	if err != nil {
		return 0, err
	}
	b.dev = s.curDev(tok).id
	s.countLive(b.dev, 1)
	return b.start, nil
}

// FreeHost frees memory from HostAlloc. A null pointer is a no-op; anything
// else fails with cudaErrorInvalidValue.
func (s *Runtime) FreeHost(ptr uintptr) error {
	const fn = "cudaFreeHost"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if ptr == 0 {
		return nil
	}
	r := s.rangeOf(ptr)
	if r != s.pinned {
		return simErr(fn, cudart.ErrorInvalidValue, "%#x is not pinned host memory from cudaHostAlloc", ptr)
	}
	b := r.arena.find(ptr)
	if b == nil || b.free || b.chunk || b.start != ptr {
		return simErr(fn, cudart.ErrorInvalidValue, "%#x is not the start of a live cudaHostAlloc allocation (freed twice?)", ptr)
	}
	s.countLive(b.dev, -1)
	s.freeTop(r, b)
	return nil
}

// PointerGetAttributes describes ptr: device memory (with its device and no
// host pointer), managed memory or pinned host memory (device and host
// pointer both ptr); memory a pool has reserved but not handed out reads as
// the pool's kind, as its address range is mapped on a GPU too. Any other
// pointer, freed memory included, is unregistered host memory with device
// InvalidDeviceID and host pointer ptr (CUDA does not check that such memory
// exists; CUDA 13.0 on an H200 reports the address itself). Its device
// pointer is ptr where the device has pageable memory access and null where
// it has not (the latter as CUDA 13.0 reports it; the former follows the
// documented meaning of the field, unverified on such a machine). A null
// pointer fails with cudaErrorInvalidValue.
func (s *Runtime) PointerGetAttributes(ptr uintptr) (cudart.PointerAttributes, error) {
	const fn = "cudaPointerGetAttributes"
	if err := s.lock(fn); err != nil {
		return cudart.PointerAttributes{}, err
	}
	defer s.mu.Unlock()
	if ptr == 0 {
		return cudart.PointerAttributes{}, simErr(fn, cudart.ErrorInvalidValue, "null pointer")
	}
	unregistered := cudart.PointerAttributes{Type: cudart.MemoryTypeUnregistered, Device: cudart.InvalidDeviceID, HostPointer: ptr}
	if s.cfg.PageableMemoryAccess {
		unregistered.DevicePointer = ptr
	}
	r, b, reserved := s.liveBlock(ptr)
	if !reserved {
		return unregistered, nil
	}
	if r.kind == memVirtual {
		return cudart.PointerAttributes{Type: cudart.MemoryTypeDevice, Device: s.mappingAt(ptr).phys.dev, DevicePointer: ptr}, nil
	}
	kind, dev := r.kind, r.dev
	if b != nil {
		kind, dev = b.kind, b.dev
	} else if top := r.arena.find(ptr); top != nil {
		kind, dev = top.kind, top.dev
	}
	if dev < 0 {
		dev = 0
	}
	switch kind {
	case memDevice:
		return cudart.PointerAttributes{Type: cudart.MemoryTypeDevice, Device: dev, DevicePointer: ptr}, nil
	case memManaged:
		return cudart.PointerAttributes{Type: cudart.MemoryTypeManaged, Device: dev, DevicePointer: ptr, HostPointer: ptr}, nil
	case memHost:
		return cudart.PointerAttributes{Type: cudart.MemoryTypeHost, Device: dev, DevicePointer: ptr, HostPointer: ptr}, nil
	}
	return unregistered, nil
}

// checkAccess validates that the device may touch [p, p+n): inside one live
// allocation of the simulator, or host memory outside its ranges, or
// reserved memory that is mapped and accessible from device dev (for
// writing when write is set; vmm.go). onDevice says the device, not the
// host, touches the memory: pageable host memory then needs pageable memory
// access. what names the operand for messages.
func (s *Runtime) checkAccess(fn, what string, p, n uintptr, onDevice bool, dev int, write bool) error {
	if p == 0 {
		return simErr(fn, cudart.ErrorInvalidValue, "null %s pointer", what)
	}
	end := p + n
	if end < p {
		return simErr(fn, cudart.ErrorInvalidValue, "%s range %#x + %d wraps around", what, p, n)
	}
	r, b, _ := s.liveBlock(p)
	if r != nil && r.kind == memVirtual {
		if why := s.checkVirtual(p, n, dev, write); why != "" {
			return simErr(fn, cudart.ErrorInvalidValue, "%s range %#x + %d: %s", what, p, n, why)
		}
		return nil
	}
	if r == nil {
		if s.rangeOf(end-1) != nil {
			return simErr(fn, cudart.ErrorInvalidValue, "%s range %#x + %d runs from host memory into device memory", what, p, n)
		}
		if onDevice && !s.cfg.PageableMemoryAccess {
			return simErr(fn, cudart.ErrorInvalidValue, "%s %#x is pageable host memory, which the device cannot access (no pageable memory access)", what, p)
		}
		if !hostMapped(p, n) {
			return simErr(fn, cudart.ErrorInvalidValue, "%s range %#x + %d is neither memory the simulated device allocated nor host memory of this process (not mapped)", what, p, n)
		}
		return nil
	}
	if b == nil {
		return simErr(fn, cudart.ErrorInvalidValue, "%s %#x is not inside a live allocation", what, p)
	}
	if end > b.end() {
		return simErr(fn, cudart.ErrorInvalidValue, "%s range %#x + %d runs past the end of its %d-byte allocation at %#x", what, p, n, b.req, b.start)
	}
	return nil
}

func (s *Runtime) checkCopy(fn string, dst, src, n uintptr, kind cudart.MemcpyKind, dev int) error {
	if kind < cudart.MemcpyHostToHost || kind > cudart.MemcpyDefault {
		return simErr(fn, cudart.ErrorInvalidMemcpyDirection, "kind %d", int32(kind))
	}
	if n == 0 {
		return nil
	}
	dstDev := kind == cudart.MemcpyHostToDevice || kind == cudart.MemcpyDeviceToDevice
	srcDev := kind == cudart.MemcpyDeviceToHost || kind == cudart.MemcpyDeviceToDevice
	if err := s.checkAccess(fn, "destination", dst, n, dstDev, dev, true); err != nil {
		return err
	}
	return s.checkAccess(fn, "source", src, n, srcDev, dev, false)
}

// bytesAt views n bytes at address p.
func bytesAt(p, n uintptr) []byte {
	if n == 0 {
		return nil
	}
	// p is memory the simulator mapped, or host memory the caller vouches
	// for; the double conversion keeps vet's uintptr rule quiet.
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), n)
}

func fill(b []byte, v byte) {
	if len(b) == 0 {
		return
	}
	if v == 0 {
		clear(b)
		return
	}
	b[0] = v
	for i := 1; i < len(b); i *= 2 {
		copy(b[i:], b[:i])
	}
}

// Memcpy copies n bytes from src to dst, in order after the work queued on
// the current device's default stream, and returns when done. Device-side
// operands (as kind says; any for MemcpyDefault) must lie inside live
// allocations, or be host memory where the device has pageable memory
// access; violations fail with cudaErrorInvalidValue. Host memory outside
// the simulator must not move while the call runs (Go heap memory is fine;
// goroutine stacks are not). Overlapping ranges copy as memmove does.
func (s *Runtime) Memcpy(dst, src, n uintptr, kind cudart.MemcpyKind) error {
	tok := threadToken()
	const fn = "cudaMemcpy"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	d := s.curDev(tok)
	if err := s.checkCopy(fn, dst, src, n, kind, d.id); err != nil || n == 0 {
		return err
	}
	return s.runSync(fn, d.null, s.guardVirtual(fn, d.id, func() { copy(bytesAt(dst, n), bytesAt(src, n)) },
		simTouch{dst, n, true}, simTouch{src, n, false}))
}

// MemcpyAsync queues the copy Memcpy makes on stream st. The operands are
// checked at once; the bytes move when the stream reaches the copy.
func (s *Runtime) MemcpyAsync(dst, src, n uintptr, kind cudart.MemcpyKind, st cudart.Stream) error {
	tok := threadToken()
	const fn = "cudaMemcpyAsync"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	q, err := s.stream(fn, st, tok)
	if err != nil {
		return err
	}
	if err := s.checkCopy(fn, dst, src, n, kind, q.dev); err != nil || n == 0 {
		return err
	}
	s.enqueue(q, simOp{run: s.guardVirtual(fn, q.dev, func() { copy(bytesAt(dst, n), bytesAt(src, n)) },
		simTouch{dst, n, true}, simTouch{src, n, false})})
	return nil
}

// Memset sets n bytes at ptr to the low byte of value, in order after the
// work queued on the current device's default stream, and returns when done.
// ptr must lie inside a live allocation (or be host memory where the device
// has pageable memory access).
func (s *Runtime) Memset(ptr uintptr, value int, n uintptr) error {
	tok := threadToken()
	const fn = "cudaMemset"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if n == 0 {
		return nil
	}
	d := s.curDev(tok)
	if err := s.checkAccess(fn, "destination", ptr, n, true, d.id, true); err != nil {
		return err
	}
	return s.runSync(fn, d.null, s.guardVirtual(fn, d.id, func() { fill(bytesAt(ptr, n), byte(value)) }, simTouch{ptr, n, true}))
}

// MemsetAsync queues the fill Memset makes on stream st.
func (s *Runtime) MemsetAsync(ptr uintptr, value int, n uintptr, st cudart.Stream) error {
	tok := threadToken()
	const fn = "cudaMemsetAsync"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	q, err := s.stream(fn, st, tok)
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if err := s.checkAccess(fn, "destination", ptr, n, true, q.dev, true); err != nil {
		return err
	}
	s.enqueue(q, simOp{run: s.guardVirtual(fn, q.dev, func() { fill(bytesAt(ptr, n), byte(value)) }, simTouch{ptr, n, true})})
	return nil
}

// simAdvice is what MemAdvise and MemPrefetchAsync recorded for a managed
// allocation.
type simAdvice struct {
	readMostly   bool
	preferred    cudart.MemLocation
	accessedBy   []cudart.MemLocation
	lastPrefetch cudart.MemLocation
}

// ManagedInfo is what the simulator recorded for a managed allocation:
// the hints MemAdvise set (for the whole allocation: the simulator does not
// split an allocation by advised range) and where the last executed
// MemPrefetchAsync moved it. Locations not set have type
// MemLocationTypeInvalid.
type ManagedInfo struct {
	ReadMostly        bool
	PreferredLocation cudart.MemLocation
	AccessedBy        []cudart.MemLocation
	LastPrefetch      cudart.MemLocation
}

// Advice is one MemAdvise call the simulator accepted.
type Advice struct {
	Ptr, Count uintptr
	Advice     cudart.MemoryAdvise
	Location   cudart.MemLocation
}

// ManagedInfo reports the hints recorded for the live managed allocation
// that contains ptr; ok is false when ptr is not in one.
func (s *Runtime) ManagedInfo(ptr uintptr) (info ManagedInfo, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return info, false
	}
	_, b, _ := s.liveBlock(ptr)
	if b == nil || b.kind != memManaged || b.advice == nil {
		return info, false
	}
	a := b.advice
	return ManagedInfo{
		ReadMostly:        a.readMostly,
		PreferredLocation: a.preferred,
		AccessedBy:        slices.Clone(a.accessedBy),
		LastPrefetch:      a.lastPrefetch,
	}, true
}

// MemAdviseCalls returns the MemAdvise calls the simulator accepted, oldest
// first, on managed and (with pageable memory access) pageable memory; it
// keeps the last 1024.
func (s *Runtime) MemAdviseCalls() []Advice {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.adviceLog)
}

// checkManaged validates a prefetch or advice range: inside one live managed
// allocation, or pageable host memory where the device has pageable memory
// access. It returns the allocation, or nil for pageable memory. Other
// memory fails with cudaErrorInvalidValue, as on CUDA.
func (s *Runtime) checkManaged(fn string, p, n uintptr) (*simBlock, error) {
	if p == 0 || n == 0 {
		return nil, simErr(fn, cudart.ErrorInvalidValue, "empty range %#x + %d", p, n)
	}
	end := p + n
	if end < p {
		return nil, simErr(fn, cudart.ErrorInvalidValue, "range %#x + %d wraps around", p, n)
	}
	r, b, _ := s.liveBlock(p)
	if r == nil {
		if s.rangeOf(end-1) != nil {
			return nil, simErr(fn, cudart.ErrorInvalidValue, "range %#x + %d runs from host memory into device memory", p, n)
		}
		if !s.cfg.PageableMemoryAccess {
			return nil, simErr(fn, cudart.ErrorInvalidValue, "%#x is pageable host memory, not managed memory, and the device has no pageable memory access", p)
		}
		return nil, nil
	}
	if b == nil {
		return nil, simErr(fn, cudart.ErrorInvalidValue, "%#x is not inside a live allocation", p)
	}
	if b.kind != memManaged {
		return nil, simErr(fn, cudart.ErrorInvalidValue, "%#x is %s memory, not managed memory", p, b.kind)
	}
	if end > b.end() {
		return nil, simErr(fn, cudart.ErrorInvalidValue, "range %#x + %d runs past the end of its %d-byte allocation", p, n, b.req)
	}
	if b.advice == nil {
		b.advice = &simAdvice{}
	}
	return b, nil
}

// checkLocation validates a prefetch or advice target: a device that
// exists, or the host (HostNuma with node 0: the simulated host has one
// NUMA node).
func (s *Runtime) checkLocation(fn string, loc cudart.MemLocation) error {
	switch loc.Type {
	case cudart.MemLocationTypeDevice:
		_, err := s.device(fn, int(loc.ID))
		return err
	case cudart.MemLocationTypeHost, cudart.MemLocationTypeHostNumaCurrent:
		return nil
	case cudart.MemLocationTypeHostNuma:
		if loc.ID != 0 {
			return simErr(fn, cudart.ErrorInvalidValue, "host NUMA node %d does not exist (the simulated host has node 0)", loc.ID)
		}
		return nil
	}
	return simErr(fn, cudart.ErrorInvalidValue, "invalid location type %d", int32(loc.Type))
}

// MemPrefetchAsync queues a migration of managed memory (or, with pageable
// memory access, pageable memory) to loc on stream st; the simulator only
// records the last location reached (see ManagedInfo). Device memory and
// pinned host memory fail with cudaErrorInvalidValue, as CUDA reports them;
// a device target needs concurrent managed access (else
// cudaErrorInvalidDevice).
func (s *Runtime) MemPrefetchAsync(ptr, n uintptr, loc cudart.MemLocation, st cudart.Stream) error {
	tok := threadToken()
	const fn = "cudaMemPrefetchAsync"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	q, err := s.stream(fn, st, tok)
	if err != nil {
		return err
	}
	if err := s.checkLocation(fn, loc); err != nil {
		return err
	}
	if loc.Type == cudart.MemLocationTypeDevice && s.cfg.NoConcurrentManaged {
		return simErr(fn, cudart.ErrorInvalidDevice, "device %d has no concurrent managed access", loc.ID)
	}
	b, err := s.checkManaged(fn, ptr, n)
	if err != nil || b == nil {
		return err
	}
	a := b.advice
	s.enqueue(q, simOp{run: func() { a.lastPrefetch = loc }})
	return nil
}

// MemAdvise records a hint for managed memory (or, with pageable memory
// access, pageable memory). From runtime version 13000 on (cudaMemAdvise
// takes a cudaMemLocation), every hint needs a valid location, read-mostly
// and the Unset hints included: CUDA 13.0 rejects SetReadMostly with a
// location of type cudaMemLocationTypeInvalid (0) with cudaErrorInvalidValue.
// Before 13000, only SetPreferredLocation and Set/UnsetAccessedBy check the
// location and the other hints ignore it, as CUDA 12's device-number
// argument is ignored for them. Device memory and pinned host memory fail
// with cudaErrorInvalidValue.
func (s *Runtime) MemAdvise(ptr, n uintptr, advice cudart.MemoryAdvise, loc cudart.MemLocation) error {
	const fn = "cudaMemAdvise"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	needsLocation := s.cfg.RuntimeVersion >= 13000
	switch advice {
	case cudart.MemAdviseSetPreferredLocation, cudart.MemAdviseSetAccessedBy, cudart.MemAdviseUnsetAccessedBy:
		needsLocation = true
	case cudart.MemAdviseSetReadMostly, cudart.MemAdviseUnsetReadMostly, cudart.MemAdviseUnsetPreferredLocation:
	default:
		return simErr(fn, cudart.ErrorInvalidValue, "unknown advice %d", int32(advice))
	}
	if needsLocation {
		if err := s.checkLocation(fn, loc); err != nil {
			return err
		}
	}
	b, err := s.checkManaged(fn, ptr, n)
	if err != nil {
		return err
	}
	if b != nil {
		a := b.advice
		switch advice {
		case cudart.MemAdviseSetReadMostly:
			a.readMostly = true
		case cudart.MemAdviseUnsetReadMostly:
			a.readMostly = false
		case cudart.MemAdviseSetPreferredLocation:
			a.preferred = loc
		case cudart.MemAdviseUnsetPreferredLocation:
			a.preferred = cudart.MemLocation{}
		case cudart.MemAdviseSetAccessedBy:
			if !slices.Contains(a.accessedBy, loc) {
				a.accessedBy = append(a.accessedBy, loc)
			}
		case cudart.MemAdviseUnsetAccessedBy:
			a.accessedBy = slices.DeleteFunc(a.accessedBy, func(l cudart.MemLocation) bool { return l == loc })
		}
	}
	if len(s.adviceLog) == simAdviceLogSize {
		s.adviceLog = append(s.adviceLog[:0], s.adviceLog[1:]...)
	}
	s.adviceLog = append(s.adviceLog, Advice{Ptr: ptr, Count: n, Advice: advice, Location: loc})
	return nil
}
