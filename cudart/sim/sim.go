package sim

import (
	"fmt"
	"sync"

	"github.com/rmmgo/rmmgo/cudart"
)

// Config describes the simulated machine.
type Config struct {
	Devices              int    // number of devices; 0 means 2
	MemoryPerDevice      uint64 // capacity of each device in bytes; 0 means 1 GiB
	PageableMemoryAccess bool   // devices can use pageable host memory (HMM/ATS)
	NoConcurrentManaged  bool   // report no concurrent managed access
	NoMemoryPools        bool   // report no memory-pool (malloc-async) support
	NoVirtualMemory      bool   // the driver's virtual memory management fails with CUDA_ERROR_NOT_SUPPORTED
	RuntimeVersion       int    // reported runtime and driver version; 0 means 13000
}

// Runtime is the simulated device: a cudart.Runtime for machines without a
// GPU. It models what rmmgo's resources rely on, as CUDA behaves, so that the same
// code and the same tests run on it and on a real GPU:
//
//   - Devices: Config.Devices devices (default 2), each with a capacity
//     (default 1 GiB). Allocations beyond it fail with
//     cudaErrorMemoryAllocation, and MemGetInfo reports what is left. Device
//     attributes describe a compute-capability 9.0 discrete GPU with managed
//     memory, concurrent managed access and memory pools, unless the config
//     says otherwise. The current device belongs to the calling OS thread, as
//     in CUDA (a new thread starts on device 0).
//   - Memory: device, managed and pinned host memory are host memory, so Go
//     and C code can read and write it directly. Each kind (and each device)
//     has its own reserved address range, so every pointer is 256-byte
//     aligned, freed memory stays mapped (a stray access never crashes the
//     process, though the bytes may read back as zero), and the simulator can
//     tell which allocation, if any, a pointer belongs to. Freeing a pointer
//     that is not the start of a live allocation of the right kind (a double
//     free included) fails with cudaErrorInvalidValue, as do copies and fills
//     that touch device ranges outside live allocations. Pointers outside the
//     simulator's ranges are ordinary (pageable) host memory.
//   - Pinned host memory does not count against device capacity; it has its
//     own limit of four times a device's capacity. Managed memory has a
//     separate limit of the same size and, as on a GPU before its pages
//     migrate, does not lower MemGetInfo's free memory.
//   - Streams and events are in-order queues of work (copies, fills, event
//     records, waits on events, stream-ordered frees). Work runs as soon as
//     nothing holds it back, that is at enqueue time, unless the stream is
//     paused with PauseStream or waits on an event that has not completed.
//     Queries, synchronization and waits between streams observe completion
//     exactly as on a GPU.
//   - Memory pools back MallocAsync and MallocFromPoolAsync: each device has
//     a default pool, and MemPoolCreate makes device, pinned host and managed
//     pools. A pool reserves memory in 2 MiB chunks (counted against the
//     device's capacity for device pools) and carves allocations from them;
//     its reserved memory is the 2 MiB granules mapped, and before it maps
//     more it unmaps the granules that lie in free memory anywhere in its
//     chunks, reusing their physical memory as the driver's pool does;
//     a stream-ordered free returns its block when the stream reaches it.
//     At every stream, event or device synchronization a pool above its
//     release threshold (CUDA's default: 0) gives back wholly free chunks
//     while it keeps at least the threshold, as MemPoolTrimTo does. A pool
//     that cannot grow first gives back its own free chunks. Reserved and
//     used memory (current and high) are reported as CUDA names them.
//     Destroying a pool with allocations outstanding leaves them valid; its
//     memory goes back when the last is freed.
//   - Virtual memory management (cudart.VirtualMemory: reservations,
//     physical memory in 2 MiB granules counted against the device's
//     capacity, mappings, access): see vmm.go. Copies and fills into
//     reserved memory that is not mapped, or not accessible from the device
//     that runs them, fail with cudaErrorInvalidValue.
//   - Handles: the simulator knows every stream, event and pool it made.
//     Stream 0, cudart.LegacyDefaultStream and cudart.PerThreadDefaultStream
//     are always valid. Any other handle, forged, destroyed or of another
//     kind, fails every call that takes it with an error that names it and
//     says which it is: cudaErrorInvalidResourceHandle for a stream or an
//     event, cudaErrorInvalidValue for a pool (the codes CUDA gives where it
//     checks). On a GPU such a handle is a wild pointer that CUDA may
//     dereference and crash on: the simulator is where tests see it.
//
// Where CUDA's behaviour and its documentation part, the simulator does what
// the CUDA 13.0 runtime did on a GPU (H200, driver 13.0), as the conformance
// tests (conformance_test.go) check on both: cudaMallocManaged of zero
// bytes succeeds (the simulator returns a null pointer); cudaFreeAsync takes cudaMalloc memory
// (freed in stream order); unregistered host memory reports its own address
// as host pointer; and from runtime version 13000 on, cudaMemAdvise needs a
// valid location for every hint.
//
// Simplifications, each harmless to the resources above it: the legacy
// default stream has no implicit synchronization with other streams (stream
// 0, cudart.LegacyDefaultStream and cudart.PerThreadDefaultStream are ordinary in-order
// streams of the current device, and the per-thread stream is one stream per
// device, not per thread); Free and FreeHost do not wait for queued work;
// memory freed with FreeAsync becomes reusable, by any stream, when the free
// executes (a pending free is not reused early by its own stream).
//
// The test controls PauseStream, ResumeStream, InjectAllocFailures,
// LiveAllocations, UsedBytes, ManagedInfo, MemAdviseCalls, VirtualMemory and Close are
// methods of *Runtime only. Everything on *Runtime is safe for concurrent use.
type Runtime struct {
	cfg Config // with defaults filled in

	mu      sync.Mutex
	cond    sync.Cond // signalled whenever queued work completes, and on Close
	closed  bool
	initErr error // the simulator could not be set up: every call fails

	devs    []*simDevice
	managed *simRange
	pinned  *simRange
	ranges  []*simRange // every range, sorted by base address

	managedLimit, managedUsed uint64
	pinnedLimit, pinnedUsed   uint64

	cur map[uint64]int // current device of each thread that set one (see threadToken)

	streams  map[cudart.Stream]*simStream
	busy     map[*simStream]struct{} // streams with queued work
	events   map[cudart.Event]*simEvent
	pools    map[cudart.MemPool]*simPool // pools with a live handle
	allPools map[*simPool]struct{}       // those plus destroyed pools with allocations left
	// Streams with stream-ordered pool frees that no host synchronization
	// covered yet, and the pools destroyed with such frees or allocations
	// outstanding (pool.go, DeferredPoolDestroys).
	unsyncedFrees    map[*simStream]struct{}
	deferredDestroys int

	handleSeq    [poolHandle + 1]uintptr // handles made, per kind (handles.go)
	nextStreamID uint64
	failNext     int // allocations left to fail (InjectAllocFailures)

	adviceLog []Advice

	vmm simVMM // virtual memory management (vmm.go)
}

type simDevice struct {
	id             int
	capacity, used uint64 // used: plain allocations plus pool reservations
	rng            *simRange
	null, ptds     *simStream
	defaultPool    *simPool
	live           int // live allocations attributed to the device
}

const (
	simDefaultDevices = 2
	simDefaultMemory  = 1 << 30
	simDefaultVersion = 13000
	simHostFactor     = 4 // pinned and managed limits, in device capacities
	simAdviceLogSize  = 1024
)

var _ cudart.Runtime = (*Runtime)(nil)

// New makes a simulated machine as cfg describes; zero fields take their
// defaults (2 devices of 1 GiB, runtime and driver version 13000). A
// capacity that is not a multiple of 256 bytes is rounded down to one. It never
// fails: if the address space cannot be reserved, or cfg is invalid, every
// call of the returned Runtime fails with cudaErrorInitializationError and says
// why. A Runtime holds address space until Close.
func New(cfg Config) *Runtime {
	s := &Runtime{
		cur:      make(map[uint64]int),
		streams:  make(map[cudart.Stream]*simStream),
		busy:     make(map[*simStream]struct{}),
		events:   make(map[cudart.Event]*simEvent),
		pools:    make(map[cudart.MemPool]*simPool),
		allPools: make(map[*simPool]struct{}),

		unsyncedFrees: make(map[*simStream]struct{}),
	}
	s.cond.L = &s.mu
	if cfg.Devices == 0 {
		cfg.Devices = simDefaultDevices
	}
	if cfg.MemoryPerDevice == 0 {
		cfg.MemoryPerDevice = simDefaultMemory
	}
	if cfg.RuntimeVersion == 0 {
		cfg.RuntimeVersion = simDefaultVersion
	}
	s.cfg = cfg
	switch {
	case cfg.Devices < 0 || cfg.Devices > 1024:
		s.initErr = fmt.Errorf("simulated device count %d is out of range (1..1024)", cfg.Devices)
		return s
	case cfg.MemoryPerDevice > 1<<44:
		s.initErr = fmt.Errorf("simulated device memory %d bytes is larger than 16 TiB", cfg.MemoryPerDevice)
		return s
	}
	// Capacity is a whole number of 256-byte units, so that free memory is
	// too and an allocation never overshoots it.
	capacity := max(cfg.MemoryPerDevice&^(simAlign-1), simAlign)
	s.pinnedLimit = simHostFactor * capacity
	s.managedLimit = simHostFactor * capacity
	if err := s.reserveRanges(capacity); err != nil {
		s.initErr = err
		return s
	}
	for _, d := range s.devs {
		d.null = s.newStream(d.id, cudart.StreamFlagDefault, cudart.DefaultStream)
		d.ptds = s.newStream(d.id, cudart.StreamFlagDefault, cudart.PerThreadDefaultStream)
		if !cfg.NoMemoryPools {
			d.defaultPool = s.newPool(memDevice, d.id, 0, true)
		}
	}
	return s
}

// Config returns the configuration s runs with, defaults filled in.
func (s *Runtime) Config() Config { return s.cfg }

// Close releases the simulator's address space. Afterwards every call fails
// with cudaErrorCudartUnloading, queued work is dropped, waiters return that
// error, and memory the simulator handed out must no longer be touched.
// Close is for tests that make many simulators; the process's default
// Runtime is never closed.
func (s *Runtime) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for st := range s.busy {
		st.queue = nil
	}
	s.busy = make(map[*simStream]struct{})
	s.cond.Broadcast()
	var first error
	for _, r := range s.ranges {
		if err := r.unmap(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// usable is the first check of every call, made with s.mu held.
func (s *Runtime) usable(fn string) error {
	if s.closed {
		return simErr(fn, cudart.ErrorCudartUnloading, "the simulated device was closed")
	}
	if s.initErr != nil {
		return simErr(fn, cudart.ErrorInitializationError, "simulated device: %v", s.initErr)
	}
	return nil
}

// lock takes s.mu and checks that s is usable; on success the caller must
// unlock.
func (s *Runtime) lock(fn string) error {
	s.mu.Lock()
	if err := s.usable(fn); err != nil {
		s.mu.Unlock()
		return err
	}
	return nil
}

// simErr builds the *Error of a failed call: CUDA's description of code,
// followed by what the simulator found.
func simErr(fn string, code cudart.ErrorCode, format string, args ...any) error {
	desc := simErrorStrings[code]
	if format != "" {
		if desc != "" {
			desc += ": "
		}
		desc += fmt.Sprintf(format, args...)
	}
	return cudart.NewError(fn, code, desc)
}

// curDev is the calling thread's current device; s.mu held.
func (s *Runtime) curDev(tok uint64) *simDevice { return s.devs[s.cur[tok]] }

func (s *Runtime) device(fn string, dev int) (*simDevice, error) {
	if dev < 0 || dev >= len(s.devs) {
		return nil, simErr(fn, cudart.ErrorInvalidDevice, "device %d does not exist (the simulator has %d)", dev, len(s.devs))
	}
	return s.devs[dev], nil
}

// Backend reports BackendSimulated.
func (s *Runtime) Backend() cudart.Backend { return cudart.BackendSimulated }

// RuntimeVersion reports Config.RuntimeVersion (default 13000).
func (s *Runtime) RuntimeVersion() (int, error) {
	if err := s.lock("cudaRuntimeGetVersion"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	return s.cfg.RuntimeVersion, nil
}

// DriverVersion reports the same version as RuntimeVersion.
func (s *Runtime) DriverVersion() (int, error) {
	if err := s.lock("cudaDriverGetVersion"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	return s.cfg.RuntimeVersion, nil
}

var simErrorStrings = map[cudart.ErrorCode]string{
	cudart.Success:                          "no error",
	cudart.ErrorInvalidValue:                "invalid argument",
	cudart.ErrorMemoryAllocation:            "out of memory",
	cudart.ErrorInitializationError:         "initialization error",
	cudart.ErrorCudartUnloading:             "driver shutting down",
	cudart.ErrorInvalidDevicePointer:        "invalid device pointer",
	cudart.ErrorInvalidMemcpyDirection:      "invalid copy direction for memcpy",
	cudart.ErrorInsufficientDriver:          "CUDA driver version is insufficient for CUDA runtime version",
	cudart.ErrorNoDevice:                    "no CUDA-capable device is detected",
	cudart.ErrorInvalidDevice:               "invalid device ordinal",
	cudart.ErrorInvalidResourceHandle:       "invalid resource handle",
	cudart.ErrorNotReady:                    "device not ready",
	cudart.ErrorIllegalAddress:              "an illegal memory access was encountered",
	cudart.ErrorHostMemoryAlreadyRegistered: "part or all of the requested memory range is already mapped",
	cudart.ErrorNotSupported:                "operation not supported",
}

// ErrorName is CUDA's name for code, or "unrecognized error code" as CUDA
// says for a code it does not know.
func (s *Runtime) ErrorName(code cudart.ErrorCode) string {
	if _, ok := simErrorStrings[code]; ok {
		return code.Name()
	}
	return "unrecognized error code"
}

// ErrorString is CUDA's description of code, or "unrecognized error code".
func (s *Runtime) ErrorString(code cudart.ErrorCode) string {
	if d, ok := simErrorStrings[code]; ok {
		return d
	}
	return "unrecognized error code"
}

// GetDeviceCount reports Config.Devices.
func (s *Runtime) GetDeviceCount() (int, error) {
	if err := s.lock("cudaGetDeviceCount"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	return len(s.devs), nil
}

// GetDevice reports the calling thread's current device (0 until the thread
// sets one).
func (s *Runtime) GetDevice() (int, error) {
	tok := threadToken()
	if err := s.lock("cudaGetDevice"); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	return s.cur[tok], nil
}

// SetDevice makes dev the calling thread's current device.
func (s *Runtime) SetDevice(dev int) error {
	tok := threadToken()
	const fn = "cudaSetDevice"
	if err := s.lock(fn); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, err := s.device(fn, dev); err != nil {
		return err
	}
	if dev == 0 {
		delete(s.cur, tok)
	} else {
		s.cur[tok] = dev
	}
	return nil
}

// DeviceGetAttribute reports the attributes DeviceAttr names: 132
// multiprocessors, compute capability 9.0, not integrated, managed memory,
// concurrent managed access and memory pools (POSIX file descriptor export)
// unless the config turns them off, and pageable memory access as the config
// says. With pageable access the device looks like an address-translation
// (ATS) system: it uses the host page tables, reaches managed memory from the
// host directly and has native host atomics. Other attributes fail with
// cudaErrorInvalidValue.
func (s *Runtime) DeviceGetAttribute(attr cudart.DeviceAttr, dev int) (int, error) {
	const fn = "cudaDeviceGetAttribute"
	if err := s.lock(fn); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if _, err := s.device(fn, dev); err != nil {
		return 0, err
	}
	b := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	c := s.cfg
	switch attr {
	case cudart.DevAttrMultiProcessorCount:
		return 132, nil
	case cudart.DevAttrIntegrated:
		return 0, nil
	case cudart.DevAttrComputeCapabilityMajor:
		return 9, nil
	case cudart.DevAttrComputeCapabilityMinor:
		return 0, nil
	case cudart.DevAttrManagedMemory:
		return 1, nil
	case cudart.DevAttrHostNativeAtomicSupported, cudart.DevAttrPageableMemoryAccessUsesHostPageTbl, cudart.DevAttrDirectManagedMemAccessFromHost:
		return b(c.PageableMemoryAccess), nil
	case cudart.DevAttrPageableMemoryAccess:
		return b(c.PageableMemoryAccess), nil
	case cudart.DevAttrConcurrentManagedAccess:
		return b(!c.NoConcurrentManaged), nil
	case cudart.DevAttrMemoryPoolsSupported:
		return b(!c.NoMemoryPools), nil
	case cudart.DevAttrMemoryPoolSupportedHandleTypes:
		if c.NoMemoryPools {
			return 0, nil
		}
		return int(cudart.MemHandleTypePosixFileDescriptor), nil
	}
	return 0, simErr(fn, cudart.ErrorInvalidValue, "device attribute %d is not modelled by the simulated device", int32(attr))
}

// MemGetInfo reports the current device's free and total memory. Free is the
// capacity less plain allocations and memory reserved by pools located on
// the device.
func (s *Runtime) MemGetInfo() (free, total uint64, err error) {
	tok := threadToken()
	if err := s.lock("cudaMemGetInfo"); err != nil {
		return 0, 0, err
	}
	defer s.mu.Unlock()
	d := s.curDev(tok)
	return d.capacity - d.used, d.capacity, nil
}

// InjectAllocFailures makes the next n allocation calls fail with
// cudaErrorMemoryAllocation, whatever memory is left: Malloc,
// MallocManaged, HostAlloc, MallocAsync and MallocFromPoolAsync each count
// (calls that fail validation first, or that allocate zero bytes, do not).
// n <= 0 cancels failures not yet used.
func (s *Runtime) InjectAllocFailures(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = max(n, 0)
}

// injectedFailure consumes one injected failure, if any; s.mu held.
func (s *Runtime) injectedFailure(fn string, size uintptr) error {
	if s.failNext == 0 {
		return nil
	}
	s.failNext--
	return simErr(fn, cudart.ErrorMemoryAllocation, "injected failure (InjectAllocFailures) for %d bytes", size)
}

// LiveAllocations counts the live allocations attributed to device dev:
// device memory (Malloc and pools located on dev), and managed and pinned
// host memory allocated while dev was current. A stream-ordered free counts
// as live until it executes. It returns -1 for a device that does not exist.
func (s *Runtime) LiveAllocations(dev int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if dev < 0 || dev >= len(s.devs) {
		return -1
	}
	return s.devs[dev].live
}

// UsedBytes is the device memory of dev in use: plain allocations (rounded
// up to 256 bytes) plus memory reserved by pools located on dev, i.e. total
// less free as MemGetInfo reports them. It returns 0 for a device that does
// not exist.
func (s *Runtime) UsedBytes(dev int) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if dev < 0 || dev >= len(s.devs) {
		return 0
	}
	return s.devs[dev].used
}

func alignUp64(v, a uint64) uint64 { return (v + a - 1) &^ (a - 1) }
