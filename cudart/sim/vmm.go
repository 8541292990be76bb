package sim

import (
	"fmt"
	"sort"
	"syscall"
	"unsafe"

	"github.com/rmmgo/rmmgo/cudart"
)

// Virtual memory management (cudart.VirtualMemory), as the CUDA driver has
// it: address ranges reserved with no memory behind them, physical memory
// made in granules that counts against its device's capacity, mappings of
// that memory into reserved ranges, and access that each device must be
// given before it may touch mapped memory.
//
//   - Granularity: 2 MiB for every device, minimum and recommended, as on
//     current GPUs. Physical memory, mappings and their offsets come in
//     multiples of it; reservations in multiples of the host page size,
//     placed at multiples of the granularity (or of a larger power-of-two
//     alignment).
//   - Reservations come from one address range of the simulator's, made on
//     first use, of sixteen times the devices' total capacity (plus 1 GiB):
//     so large because a reservation holds no memory, as on a GPU. It is host
//     memory (reserved with MAP_NORESERVE, readable and writable), so a stray
//     access never crashes the process.
//   - Physical memory (MemCreate) counts against its device's capacity as
//     cudaMalloc does (MemGetInfo, UsedBytes) and counts as one live
//     allocation (LiveAllocations); InjectAllocFailures makes MemCreate fail
//     too. More than the device's capacity is CUDA_ERROR_INVALID_VALUE, as
//     on an H100; what fits the capacity but not the free memory,
//     CUDA_ERROR_OUT_OF_MEMORY. It goes back when it is released and
//     unmapped everywhere.
//   - Mapped memory is the host memory at its address: its bytes belong to
//     the address, not to the physical memory. So the same memory mapped at
//     two addresses does not alias, and memory unmapped and mapped elsewhere
//     does not carry its contents. Unmapping drops the contents: the range
//     reads back as zeros when mapped again, as fresh memory.
//   - Access: a mapping starts with none. MemSetAccess gives devices read
//     or read-write access to whole mappings (the simulator refuses a range
//     that cuts a mapping: finer than CUDA asks, never looser). Copies and
//     fills (Memcpy, Memset and their async forms) into or out of reserved
//     memory need every byte mapped and accessible from the device that runs
//     them (the current device, or the stream's), read-write for a
//     destination; otherwise they fail with cudaErrorInvalidValue. A copy or
//     fill queued behind other work is checked again when it runs: if its
//     memory was unmapped or lost its access meanwhile, it does nothing and
//     is recorded as a fault (VirtualMemory().Faults), where a GPU would
//     fault on an illegal address.
//   - Unmapping takes exactly one whole mapping; freeing a reservation needs
//     every mapping in it gone (the simulator refuses otherwise, with
//     CUDA_ERROR_INVALID_VALUE: stricter than CUDA may be, never looser).
//   - Failures are *cudart.Error values with the driver's codes and names
//     (cudart.NewDriverError): CUDA_ERROR_INVALID_VALUE for bad arguments,
//     CUDA_ERROR_INVALID_DEVICE for a device that does not exist,
//     CUDA_ERROR_OUT_OF_MEMORY beyond the device's capacity, and
//     CUDA_ERROR_NOT_SUPPORTED everywhere with Config.NoVirtualMemory.

// simGranularity is the devices' allocation granularity.
const simGranularity = 2 << 20

var _ cudart.VirtualMemory = (*Runtime)(nil)

// simVMM is the simulator's virtual memory state; s.mu guards it.
type simVMM struct {
	rng     *simRange                         // reservations' address range; nil until first use
	resv    map[uintptr]*simReservation       // by the start of their arena block
	handles map[cudart.MemHandle]*simPhysical // live handles
	seq     uint64                            // handles made
	faults  []string                          // queued copies and fills that found their memory gone
}

// simReservation is one MemAddressReserve.
type simReservation struct {
	start, size uintptr   // as the caller sees it
	blk         *simBlock // the arena block holding it (at least as large)
	maps        []*simMapping
}

// simPhysical is one MemCreate.
type simPhysical struct {
	handle   cudart.MemHandle
	size     uintptr
	dev      int
	released bool
	mapped   int // mappings of it
}

// simMapping is one MemMap.
type simMapping struct {
	start, size uintptr
	phys        *simPhysical
	access      []cudart.MemAccessFlags // per device
}

func (m *simMapping) end() uintptr { return m.start + m.size }

const (
	simVMMFactor    = 16      // the reservations' range, in total device capacities
	simVMMSlack     = 1 << 30 // and this much more
	simHandleBase   = 0x7a11_0000_0000
	simFaultLogSize = 64
)

func vmmErr(fn string, code cudart.ErrorCode, format string, args ...any) error {
	return cudart.NewDriverError(fn, code, fmt.Sprintf(format, args...))
}

// vmmLock takes s.mu for the driver call fn and checks that the simulator
// is usable and has virtual memory; on success the caller must unlock.
func (s *Runtime) vmmLock(fn string) error {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return vmmErr(fn, cudart.ErrorCudartUnloading, "the simulated device was closed")
	case s.initErr != nil:
		s.mu.Unlock()
		return vmmErr(fn, cudart.ErrorInitializationError, "simulated device: %v", s.initErr)
	case s.cfg.NoVirtualMemory:
		s.mu.Unlock()
		return vmmErr(fn, cudart.ErrorNotSupported, "the simulated devices have no virtual memory management (Config.NoVirtualMemory)")
	}
	if s.vmm.handles == nil {
		s.vmm.resv = make(map[uintptr]*simReservation)
		s.vmm.handles = make(map[cudart.MemHandle]*simPhysical)
	}
	return nil
}

// checkProp validates the properties of device memory; s.mu held.
func (s *Runtime) checkProp(fn string, p cudart.MemAllocationProp) error {
	if p.Type != cudart.MemAllocationTypePinned {
		return vmmErr(fn, cudart.ErrorInvalidValue, "allocation type %d: the simulator makes pinned memory (CU_MEM_ALLOCATION_TYPE_PINNED) only", p.Type)
	}
	if p.Location.Type != cudart.MemLocationTypeDevice {
		return vmmErr(fn, cudart.ErrorInvalidValue, "location type %d: the simulator makes device memory (CU_MEM_LOCATION_TYPE_DEVICE) only", p.Location.Type)
	}
	if p.Location.ID < 0 || int(p.Location.ID) >= len(s.devs) {
		return vmmErr(fn, cudart.ErrorInvalidDevice, "device %d does not exist (the simulator has %d)", p.Location.ID, len(s.devs))
	}
	if p.RequestedHandleTypes&^cudart.MemHandleTypePosixFileDescriptor != 0 {
		return vmmErr(fn, cudart.ErrorInvalidValue, "handle types %#x: the simulator knows POSIX file descriptors only", p.RequestedHandleTypes)
	}
	return nil
}

// MemGetAllocationGranularity reports 2 MiB for device memory, minimum and
// recommended.
func (s *Runtime) MemGetAllocationGranularity(prop cudart.MemAllocationProp, option cudart.MemGranularityOption) (uintptr, error) {
	const fn = "cuMemGetAllocationGranularity"
	if err := s.vmmLock(fn); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if err := s.checkProp(fn, prop); err != nil {
		return 0, err
	}
	if option != cudart.MemGranularityMinimum && option != cudart.MemGranularityRecommended {
		return 0, vmmErr(fn, cudart.ErrorInvalidValue, "granularity option %d", option)
	}
	return simGranularity, nil
}

// vmmRange returns the reservations' address range, reserving it on first
// use; s.mu held.
func (s *Runtime) vmmRange(fn string) (*simRange, error) {
	if s.vmm.rng != nil {
		return s.vmm.rng, nil
	}
	var total uint64
	for _, d := range s.devs {
		total += d.capacity
	}
	var mem []byte
	var err error
	for _, size := range []uint64{simVMMFactor*total + simVMMSlack, 2*total + simGranularity} {
		size = alignUp64(size, simGranularity) + simGranularity // room to align the base
		if size > uint64(^uint(0)>>1) {
			continue
		}
		mem, err = syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE,
			syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
		if err == nil {
			break
		}
	}
	if mem == nil {
		return nil, vmmErr(fn, cudart.ErrorMemoryAllocation, "cannot reserve host address space for virtual memory: %v", err)
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	r := &simRange{base: base, size: uintptr(len(mem)), mem: mem, arena: newSimArena(), kind: memVirtual, dev: -1}
	start := (base + simGranularity - 1) &^ (simGranularity - 1)
	r.arena.addRegion(start, (base+r.size-start)&^(simGranularity-1))
	s.ranges = append(s.ranges, r)
	sort.Slice(s.ranges, func(i, j int) bool { return s.ranges[i].base < s.ranges[j].base })
	s.vmm.rng = r
	return r, nil
}

// MemAddressReserve reserves size bytes (a multiple of the host page size)
// of address space, at a multiple of alignment (0: the granularity; else a
// power of two).
func (s *Runtime) MemAddressReserve(size, alignment uintptr) (uintptr, error) {
	const fn = "cuMemAddressReserve"
	if err := s.vmmLock(fn); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	page := uintptr(syscall.Getpagesize())
	if size == 0 || size%page != 0 {
		return 0, vmmErr(fn, cudart.ErrorInvalidValue, "size %d is not a positive multiple of the host page size (%d)", size, page)
	}
	if alignment&(alignment-1) != 0 {
		return 0, vmmErr(fn, cudart.ErrorInvalidValue, "alignment %d is not a power of two", alignment)
	}
	alignment = max(alignment, simGranularity)
	r, err := s.vmmRange(fn)
	if err != nil {
		return 0, err
	}
	need := (size + simGranularity - 1) &^ (simGranularity - 1)
	if need < size || need+alignment < need {
		return 0, vmmErr(fn, cudart.ErrorInvalidValue, "size %d is too large", size)
	}
	b := r.arena.alloc(need + alignment - simGranularity) // every block starts at a multiple of the granularity
	if b == nil {
		return 0, vmmErr(fn, cudart.ErrorMemoryAllocation, "the simulated address space has no free range of %d bytes", size)
	}
	b.kind, b.dev, b.req = memVirtual, -1, size
	start := (b.start + alignment - 1) &^ (alignment - 1)
	s.vmm.resv[b.start] = &simReservation{start: start, size: size, blk: b}
	return start, nil
}

// reservationAt returns the reservation holding p, or nil; s.mu held.
func (s *Runtime) reservationAt(p uintptr) *simReservation {
	if s.vmm.rng == nil || p-s.vmm.rng.base >= s.vmm.rng.size {
		return nil
	}
	b := s.vmm.rng.arena.find(p)
	if b == nil || b.free {
		return nil
	}
	if rv := s.vmm.resv[b.start]; rv != nil && p-rv.start < rv.size {
		return rv
	}
	return nil
}

// MemAddressFree frees the reservation at ptr of size bytes; it must hold
// no mapping.
func (s *Runtime) MemAddressFree(ptr, size uintptr) error {
	const fn = "cuMemAddressFree"
	if err := s.vmmLock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	rv := s.reservationAt(ptr)
	if rv == nil || rv.start != ptr {
		return vmmErr(fn, cudart.ErrorInvalidValue, "%#x is not the start of an address reservation", ptr)
	}
	if size != rv.size {
		return vmmErr(fn, cudart.ErrorInvalidValue, "size %d, but the reservation at %#x is %d bytes", size, ptr, rv.size)
	}
	if len(rv.maps) > 0 {
		return vmmErr(fn, cudart.ErrorInvalidValue, "the reservation at %#x still has %d mappings: unmap them first", ptr, len(rv.maps))
	}
	delete(s.vmm.resv, rv.blk.start)
	s.vmm.rng.dontNeed(rv.blk.start, rv.blk.end())
	s.vmm.rng.arena.release(rv.blk)
	return nil
}

// MemCreate makes size bytes (a multiple of the granularity) of physical
// memory on the device prop names, counted against its capacity.
func (s *Runtime) MemCreate(size uintptr, prop cudart.MemAllocationProp) (cudart.MemHandle, error) {
	const fn = "cuMemCreate"
	if err := s.vmmLock(fn); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if err := s.checkProp(fn, prop); err != nil {
		return 0, err
	}
	if size == 0 || size%simGranularity != 0 {
		return 0, vmmErr(fn, cudart.ErrorInvalidValue, "size %d is not a positive multiple of the granularity (%d)", size, simGranularity)
	}
	if s.failNext > 0 {
		s.failNext--
		return 0, vmmErr(fn, cudart.ErrorMemoryAllocation, "injected failure (InjectAllocFailures) for %d bytes", size)
	}
	d := s.devs[prop.Location.ID]
	if uint64(size) > d.capacity {
		// CUDA 13.0 (H100): more than the device has at all is an invalid
		// value; out of memory is for what fits the device but not now.
		return 0, vmmErr(fn, cudart.ErrorInvalidValue, "%d bytes is more than simulated device %d's %d bytes", size, d.id, d.capacity)
	}
	if free := d.capacity - d.used; uint64(size) > free {
		return 0, vmmErr(fn, cudart.ErrorMemoryAllocation, "simulated device %d has %d of %d bytes free, %d requested", d.id, free, d.capacity, size)
	}
	d.used += uint64(size)
	d.live++
	s.vmm.seq++
	h := cudart.MemHandle(simHandleBase + s.vmm.seq<<4)
	s.vmm.handles[h] = &simPhysical{handle: h, size: size, dev: d.id}
	return h, nil
}

// physical returns the live handle h; s.mu held.
func (s *Runtime) physical(fn string, h cudart.MemHandle) (*simPhysical, error) {
	p := s.vmm.handles[h]
	if p == nil || p.released {
		return nil, vmmErr(fn, cudart.ErrorInvalidValue, "%#x is not a live memory handle (released already, or never made)", uint64(h))
	}
	return p, nil
}

// dropPhysical gives p's memory back once it is released and unmapped;
// s.mu held.
func (s *Runtime) dropPhysical(p *simPhysical) {
	if !p.released || p.mapped > 0 {
		return
	}
	d := s.devs[p.dev]
	d.used -= uint64(p.size)
	d.live--
	delete(s.vmm.handles, p.handle)
}

// MemRelease releases handle h; its memory goes back once no mapping uses
// it.
func (s *Runtime) MemRelease(h cudart.MemHandle) error {
	const fn = "cuMemRelease"
	if err := s.vmmLock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	p, err := s.physical(fn, h)
	if err != nil {
		return err
	}
	p.released = true
	s.dropPhysical(p)
	return nil
}

// mappingIndex returns the index of the first mapping of rv that ends
// after p.
func (rv *simReservation) mappingIndex(p uintptr) int {
	return sort.Search(len(rv.maps), func(i int) bool { return rv.maps[i].end() > p })
}

// MemMap maps size bytes of h from offset at ptr: all multiples of the
// granularity, inside one reservation, over no other mapping. The mapping
// is accessible to no device yet.
func (s *Runtime) MemMap(ptr, size, offset uintptr, h cudart.MemHandle) error {
	const fn = "cuMemMap"
	if err := s.vmmLock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	p, err := s.physical(fn, h)
	if err != nil {
		return err
	}
	if size == 0 || ptr%simGranularity != 0 || size%simGranularity != 0 || offset%simGranularity != 0 {
		return vmmErr(fn, cudart.ErrorInvalidValue, "address %#x, size %d and offset %d must be multiples of the granularity (%d), the size not 0", ptr, size, offset, simGranularity)
	}
	if offset > p.size || size > p.size-offset {
		return vmmErr(fn, cudart.ErrorInvalidValue, "%d bytes from offset %d run past the end of the %d-byte memory", size, offset, p.size)
	}
	rv := s.reservationAt(ptr)
	if rv == nil || size > rv.start+rv.size-ptr {
		return vmmErr(fn, cudart.ErrorInvalidValue, "[%#x, %#x) does not lie inside one address reservation", ptr, ptr+size)
	}
	i := rv.mappingIndex(ptr)
	if i < len(rv.maps) && rv.maps[i].start < ptr+size {
		return vmmErr(fn, cudart.ErrorInvalidValue, "[%#x, %#x) overlaps the mapping at %#x", ptr, ptr+size, rv.maps[i].start)
	}
	m := &simMapping{start: ptr, size: size, phys: p, access: make([]cudart.MemAccessFlags, len(s.devs))}
	rv.maps = append(rv.maps, nil)
	copy(rv.maps[i+1:], rv.maps[i:])
	rv.maps[i] = m
	p.mapped++
	return nil
}

// MemUnmap unmaps the one whole mapping [ptr, ptr+size). Its contents are
// dropped.
func (s *Runtime) MemUnmap(ptr, size uintptr) error {
	const fn = "cuMemUnmap"
	if err := s.vmmLock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	rv := s.reservationAt(ptr)
	var i int
	if rv != nil {
		i = rv.mappingIndex(ptr)
	}
	if rv == nil || i == len(rv.maps) || rv.maps[i].start != ptr || rv.maps[i].size != size {
		return vmmErr(fn, cudart.ErrorInvalidValue, "[%#x, %#x) is not one whole mapping", ptr, ptr+size)
	}
	m := rv.maps[i]
	rv.maps = append(rv.maps[:i], rv.maps[i+1:]...)
	s.vmm.rng.dontNeed(m.start, m.end())
	m.phys.mapped--
	s.dropPhysical(m.phys)
	return nil
}

// mappingsOf returns the mappings that make up [ptr, ptr+size) exactly,
// or an error; s.mu held.
func (s *Runtime) mappingsOf(fn string, ptr, size uintptr) ([]*simMapping, error) {
	rv := s.reservationAt(ptr)
	if rv == nil || size == 0 || size > rv.start+rv.size-ptr {
		return nil, vmmErr(fn, cudart.ErrorInvalidValue, "[%#x, %#x) does not lie inside one address reservation", ptr, ptr+size)
	}
	i := rv.mappingIndex(ptr)
	j := i
	for at := ptr; at < ptr+size; j++ {
		if j == len(rv.maps) || rv.maps[j].start != at {
			return nil, vmmErr(fn, cudart.ErrorInvalidValue, "%#x is not the start of a mapping: [%#x, %#x) must be whole mappings, with no gap", at, ptr, ptr+size)
		}
		at = rv.maps[j].end()
	}
	if rv.maps[j-1].end() != ptr+size {
		return nil, vmmErr(fn, cudart.ErrorInvalidValue, "%#x cuts the mapping at %#x", ptr+size, rv.maps[j-1].start)
	}
	return rv.maps[i:j], nil
}

// MemSetAccess gives each descriptor's device its access to the whole
// mappings [ptr, ptr+size).
func (s *Runtime) MemSetAccess(ptr, size uintptr, desc ...cudart.MemAccessDesc) error {
	const fn = "cuMemSetAccess"
	if err := s.vmmLock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	ms, err := s.mappingsOf(fn, ptr, size)
	if err != nil {
		return err
	}
	for _, d := range desc {
		if d.Location.Type != cudart.MemLocationTypeDevice {
			return vmmErr(fn, cudart.ErrorInvalidValue, "location type %d: the simulator gives devices access only", d.Location.Type)
		}
		if d.Location.ID < 0 || int(d.Location.ID) >= len(s.devs) {
			return vmmErr(fn, cudart.ErrorInvalidDevice, "device %d does not exist (the simulator has %d)", d.Location.ID, len(s.devs))
		}
		switch d.Flags {
		case cudart.MemAccessFlagsProtNone, cudart.MemAccessFlagsProtRead, cudart.MemAccessFlagsProtReadWrite:
		default:
			return vmmErr(fn, cudart.ErrorInvalidValue, "access flags %d", d.Flags)
		}
	}
	for _, d := range desc {
		for _, m := range ms {
			m.access[d.Location.ID] = d.Flags
		}
	}
	return nil
}

// MemGetAccess reports loc's access to the mapped address ptr.
func (s *Runtime) MemGetAccess(loc cudart.MemLocation, ptr uintptr) (cudart.MemAccessFlags, error) {
	const fn = "cuMemGetAccess"
	if err := s.vmmLock(fn); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if loc.Type != cudart.MemLocationTypeDevice || loc.ID < 0 || int(loc.ID) >= len(s.devs) {
		return 0, vmmErr(fn, cudart.ErrorInvalidValue, "location %d/%d is no device of the simulator", loc.Type, loc.ID)
	}
	m := s.mappingAt(ptr)
	if m == nil {
		return 0, vmmErr(fn, cudart.ErrorInvalidValue, "%#x is not mapped", ptr)
	}
	return m.access[loc.ID], nil
}

// mappingAt returns the mapping holding p, or nil; s.mu held.
func (s *Runtime) mappingAt(p uintptr) *simMapping {
	rv := s.reservationAt(p)
	if rv == nil {
		return nil
	}
	if i := rv.mappingIndex(p); i < len(rv.maps) && rv.maps[i].start <= p {
		return rv.maps[i]
	}
	return nil
}

// checkVirtual reports why device dev may not touch [p, p+n) of reserved
// memory (for writing when write is set), or nil; s.mu held.
func (s *Runtime) checkVirtual(p, n uintptr, dev int, write bool) string {
	need, verb := cudart.MemAccessFlagsProtRead, "read"
	if write {
		need, verb = cudart.MemAccessFlagsProtReadWrite, "write"
	}
	for at, end := p, p+n; at < end; {
		m := s.mappingAt(at)
		if m == nil {
			if s.reservationAt(at) == nil {
				return fmt.Sprintf("%#x is not in an address reservation", at)
			}
			return fmt.Sprintf("%#x is reserved but not mapped (cuMemMap)", at)
		}
		if m.access[dev]&need != need {
			return fmt.Sprintf("device %d may not %s the mapping at %#x (access %d; cuMemSetAccess)", dev, verb, m.start, m.access[dev])
		}
		at = m.end()
	}
	return ""
}

// guardVirtual wraps the queued operation run, which touches the given
// ranges from device dev, so that it does nothing, and records a fault,
// if their reserved memory is unmapped or loses its access before it runs.
// Ranges outside reserved memory are not looked at. s.mu held.
func (s *Runtime) guardVirtual(fn string, dev int, run func(), ranges ...simTouch) func() {
	var virt []simTouch
	for _, t := range ranges {
		if r := s.rangeOf(t.p); r != nil && r.kind == memVirtual {
			virt = append(virt, t)
		}
	}
	if len(virt) == 0 {
		return run
	}
	return func() {
		for _, t := range virt {
			if why := s.checkVirtual(t.p, t.n, dev, t.write); why != "" {
				if len(s.vmm.faults) == simFaultLogSize {
					s.vmm.faults = append(s.vmm.faults[:0], s.vmm.faults[1:]...)
				}
				s.vmm.faults = append(s.vmm.faults, fmt.Sprintf("%s on device %d, when it ran: %s", fn, dev, why))
				return
			}
		}
		run()
	}
}

// simTouch is a range a copy or fill touches.
type simTouch struct {
	p, n  uintptr
	write bool
}

// VirtualMemoryState describes the simulator's virtual memory, for tests.
type VirtualMemoryState struct {
	Reservations  int     // address reservations
	ReservedBytes uintptr // their bytes
	Mappings      int
	MappedBytes   uintptr
	Handles       int      // physical memory not given back (released and still mapped included)
	Faults        []string // queued copies and fills that found their memory unmapped or inaccessible, oldest first (the last 64)
}

// VirtualMemory describes the simulator's virtual memory.
func (s *Runtime) VirtualMemory() VirtualMemoryState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := VirtualMemoryState{Handles: len(s.vmm.handles), Faults: append([]string(nil), s.vmm.faults...)}
	for _, rv := range s.vmm.resv {
		st.Reservations++
		st.ReservedBytes += rv.size
		for _, m := range rv.maps {
			st.Mappings++
			st.MappedBytes += m.size
		}
	}
	return st
}
