//go:build cgo && unix

package cudart

// The real backend. The C side, the function table and one trampoline per
// CUDA function, is generated from the list in internal/abi (go generate):
// calls_generated.h.

/*
#include <stdlib.h>
#include "calls_generated.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"unsafe"

	"github.com/rmmgo/rmmgo/cudart/internal/abi"
)

// Library names OpenCUDA tries, in order, when no path is given.
var defaultLibraryNames = []string{"libcudart.so.13", "libcudart.so.12", "libcudart.so"}

// OpenCUDA loads the CUDA runtime and returns a Runtime over it.
//
// With a path (RMMGO_CUDART_LIBRARY through Open), exactly that library is
// loaded: a path that does not load is an error, never a reason to pick
// another runtime. Without one, a libcudart the process has already loaded
// (by a CUDA program or Python package that shares the process) is used
// first, so that everyone in the process shares one runtime; otherwise
// libcudart.so.13, libcudart.so.12 and libcudart.so are tried in that order,
// moving to the next one only when a library does not load or its runtime is
// too new for the installed driver.
//
// Once loaded, every function rmmgo calls is resolved, and the runtime
// version, driver version and device count are read. A missing function, a
// runtime older than 12.0, a missing or too old driver, or no device is an
// error that says which.
func OpenCUDA(path string) (Runtime, error) {
	if path != "" {
		lib, err := dlOpen(path, dlNow|dlLocal)
		if err != nil {
			return nil, fmt.Errorf("cudart: cannot load the CUDA runtime named by the caller: %w", err)
		}
		rt, err := openRuntime(lib)
		if err != nil {
			_ = lib.close()
			return nil, err
		}
		return rt, nil
	}
	if rt, err := openLoaded(defaultLibraryNames); rt != nil || err != nil {
		return rt, err
	}
	return openFirst(defaultLibraryNames)
}

// openLoaded uses the first of names that the process has already loaded.
// It returns nil, nil when none is.
func openLoaded(names []string) (Runtime, error) {
	for _, name := range names {
		lib, err := dlOpen(name, dlNow|dlLocal|dlNoLoad)
		if err != nil {
			continue
		}
		rt, err := openRuntime(lib)
		if err != nil {
			_ = lib.close()
			return nil, fmt.Errorf("cudart: the process has already loaded %s: %w", name, err)
		}
		return rt, nil
	}
	return nil, nil
}

// openFirst loads the first of names that loads and works. It moves on from
// a library that does not load, and from one whose runtime needs a newer
// driver than the installed one (an older runtime may still work); any other
// failure is final. The error lists every name tried and why it failed.
func openFirst(names []string) (Runtime, error) {
	var tried []string
	var last error
	for _, name := range names {
		lib, err := dlOpen(name, dlNow|dlLocal)
		if err != nil {
			tried = append(tried, err.Error())
			continue
		}
		rt, err := openRuntime(lib)
		if err == nil {
			return rt, nil
		}
		_ = lib.close()
		if !errors.Is(err, ErrInsufficientDriver) {
			return nil, err
		}
		tried = append(tried, fmt.Sprintf("%s: %v", name, err))
		last = err
	}
	return nil, &loadError{msg: "cudart: cannot load the CUDA runtime; tried " + strings.Join(tried, "; "), cause: last}
}

// loadError lists every library tried; it wraps the last runtime failure
// (an insufficient driver), if any, for errors.Is.
type loadError struct {
	msg   string
	cause error
}

func (e *loadError) Error() string { return e.msg }
func (e *loadError) Unwrap() error { return e.cause }

// cudaRuntime is the real backend: the CUDA runtime loaded with dlopen.
// Everything in it is fixed at load time except the cache of error texts.
type cudaRuntime struct {
	tbl            C.uintptr_t // the function table (calls_generated.h) in C memory, never freed
	slots          []uintptr   // the same table, as Go writes and reads it
	lib            *dynLib
	file           string // the library file, after the loader's search
	runtimeVersion int
	driverVersion  int
	deviceCount    int
	prefetchFunc   string // the prefetch function in use, for messages and tests
	adviseFunc     string
	// Whether the hint functions in use take a cudaMemLocation (CUDA 13, or
	// the _v2 functions of CUDA 12.2+) rather than an int device.
	prefetchLocation bool
	adviseLocation   bool
	// Whether StreamGetID asks the driver's cuStreamGetId first.
	driverStreamID bool

	texts sync.Map // ErrorCode -> errorText

	// Preallocated answers of the polling calls, so that polling a busy
	// stream or event does not allocate.
	streamNotReady *Error
	eventNotReady  *Error
}

type errorText struct{ name, desc string }

// slotIndex maps each function type of abi.Funcs to its slot in the table,
// as the generated C names them.
var slotIndex = sync.OnceValue(func() map[string]int {
	m := make(map[string]int, int(C.rmmgo_slot_count))
	for i := 0; i < int(C.rmmgo_slot_count); i++ {
		m[C.GoString(C.rmmgo_slot_name(C.int(i)))] = i
	}
	return m
})

// slot returns the address of the function of type typ, or 0 if the
// runtime lacks it.
func (c *cudaRuntime) slot(typ string) uintptr { return c.slots[slotIndex()[typ]] }

// openRuntime resolves the runtime's functions in lib and checks that it can
// run: version, driver and devices.
func openRuntime(lib *dynLib) (*cudaRuntime, error) {
	verSym, err := lib.lookup("cudaRuntimeGetVersion")
	if err != nil {
		return nil, fmt.Errorf("cudart: %s is not a CUDA runtime library: %w", lib.name, err)
	}
	file := fileOf(verSym)
	if file == "" {
		file = lib.name
	}

	// The table is small and lives as long as the process: a runtime may be
	// in use until exit, and CUDA itself is never unloaded under it.
	t := C.calloc(C.rmmgo_slot_count, C.sizeof_uintptr_t)
	if t == nil {
		return nil, errors.New("cudart: out of host memory for the function table")
	}
	loaded := false
	defer func() {
		if !loaded {
			C.free(t)
		}
	}()
	c := &cudaRuntime{
		tbl:   C.uintptr_t(uintptr(t)),
		slots: unsafe.Slice((*uintptr)(t), int(C.rmmgo_slot_count)),
		lib:   lib,
		file:  file,
	}
	c.slots[slotIndex()["cudaRuntimeGetVersion"]] = uintptr(verSym)
	v := C.rmmgo_call_cudaRuntimeGetVersion(c.tbl)
	if v.err != 0 {
		return nil, fmt.Errorf("cudart: %s: cudaRuntimeGetVersion failed with error %d", file, int32(v.err))
	}
	c.runtimeVersion = int(v.runtimeVersion)
	if c.runtimeVersion < MinRuntimeVersion {
		return nil, fmt.Errorf("cudart: %s is CUDA runtime %s; rmmgo needs %s or later",
			file, versionString(c.runtimeVersion), versionString(MinRuntimeVersion))
	}

	// Resolve every runtime function that applies to this version. Of the
	// symbols that share a type, at most one applies to a version.
	filledBy := make(map[string]string) // type -> symbol
	var missing []string
	for _, f := range abi.Funcs() {
		if !f.AppliesTo(c.runtimeVersion) || f.DriverABI != 0 {
			continue
		}
		i, ok := slotIndex()[f.TypeName()]
		if !ok {
			return nil, fmt.Errorf("cudart: internal error: no table slot for %s (run go generate)", f.TypeName())
		}
		if other, dup := filledBy[f.TypeName()]; dup {
			return nil, fmt.Errorf("cudart: internal error: %s and %s both fill slot %s", other, f.Symbol, f.TypeName())
		}
		p, err := lib.lookup(f.Symbol)
		if err != nil {
			if !f.Optional {
				missing = append(missing, f.Symbol)
			}
			continue
		}
		c.slots[i] = uintptr(p)
		filledBy[f.TypeName()] = f.Symbol
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("cudart: %s (CUDA runtime %s) lacks functions rmmgo needs: %s",
			file, versionString(c.runtimeVersion), strings.Join(missing, ", "))
	}
	c.chooseHints(filledBy)

	c.streamNotReady = c.newError("cudaStreamQuery", ErrorNotReady)
	c.eventNotReady = c.newError("cudaEventQuery", ErrorNotReady)

	d := C.rmmgo_call_cudaDriverGetVersion(c.tbl)
	if d.err != 0 {
		return nil, fmt.Errorf("cudart: %s: %w", file, c.newError("cudaDriverGetVersion", ErrorCode(d.err)))
	}
	c.driverVersion = int(d.driverVersion)

	n := C.rmmgo_call_cudaGetDeviceCount(c.tbl)
	switch code := ErrorCode(n.err); {
	case code == ErrorInsufficientDriver && c.driverVersion == 0:
		return nil, fmt.Errorf("cudart: no CUDA driver is installed (CUDA runtime %s from %s): %w",
			versionString(c.runtimeVersion), file, c.newError("cudaGetDeviceCount", code))
	case code == ErrorInsufficientDriver:
		return nil, fmt.Errorf("cudart: the CUDA driver (%s) is too old for CUDA runtime %s from %s: %w",
			versionString(c.driverVersion), versionString(c.runtimeVersion), file, c.newError("cudaGetDeviceCount", code))
	case code == ErrorNoDevice || (code == Success && n.count == 0):
		if code == Success {
			code = ErrorNoDevice
		}
		return nil, fmt.Errorf("cudart: no CUDA device found (CUDA runtime %s, driver %s): %w",
			versionString(c.runtimeVersion), versionString(c.driverVersion), c.newError("cudaGetDeviceCount", code))
	case code != Success:
		return nil, fmt.Errorf("cudart: cannot count CUDA devices (CUDA runtime %s, driver %s): %w",
			versionString(c.runtimeVersion), versionString(c.driverVersion), c.newError("cudaGetDeviceCount", code))
	}
	c.deviceCount = int(n.count)
	// The driver functions, through the runtime (which has the driver
	// loaded by now: it counted the devices).
	if c.slot("cudaGetDriverEntryPointByVersion") != 0 {
		for _, f := range abi.Funcs() {
			if f.DriverABI != 0 {
				c.slots[slotIndex()[f.TypeName()]] = c.driverEntry(f.Symbol, f.DriverABI)
			}
		}
	}
	c.driverStreamID = c.slot("cuStreamGetId") != 0
	loaded = true
	return c, nil
}

// driverEntry returns the driver function symbol in the given ABI version,
// through the runtime, or 0 when it has none.
func (c *cudaRuntime) driverEntry(symbol string, abiVersion int) uintptr {
	cs := C.CString(symbol)
	defer C.free(unsafe.Pointer(cs))
	r := C.rmmgo_call_cudaGetDriverEntryPointByVersion(c.tbl, C.uintptr_t(uintptr(unsafe.Pointer(cs))),
		C.uint(abiVersion), driverEntryEnableDefault)
	if r.err != 0 || r.driverStatus != driverEntrySuccess {
		return 0
	}
	return uintptr(r.funcPtr)
}

// chooseHints picks the shape of cudaMemPrefetchAsync and cudaMemAdvise:
// the location shape where the runtime has it (CUDA 13's plain functions,
// or the _v2 functions of CUDA 12.2 and later: only they can name a host
// NUMA node), else CUDA 12's device shape, with cudaCpuDeviceId for the
// host. filledBy names the symbol in each filled slot.
func (c *cudaRuntime) chooseHints(filledBy map[string]string) {
	pick := func(location, device string) (string, bool) {
		if sym, ok := filledBy[location]; ok {
			return sym, true
		}
		return filledBy[device], false
	}
	c.prefetchFunc, c.prefetchLocation = pick("cudaMemPrefetchAsync_location", "cudaMemPrefetchAsync_device")
	c.adviseFunc, c.adviseLocation = pick("cudaMemAdvise_location", "cudaMemAdvise_device")
}

// versionString writes a CUDA version number (12040) as "12.4".
func versionString(v int) string {
	if v <= 0 {
		return "none"
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

// LibraryPath is the file the runtime was loaded from.
func (c *cudaRuntime) LibraryPath() string { return c.file }

// String describes the loaded runtime, e.g. "CUDA runtime 13.0 (driver 13.0,
// 2 devices) from /usr/local/cuda/lib64/libcudart.so.13".
func (c *cudaRuntime) String() string {
	return fmt.Sprintf("CUDA runtime %s (driver %s, %d devices) from %s",
		versionString(c.runtimeVersion), versionString(c.driverVersion), c.deviceCount, c.file)
}

// errorText asks the runtime for code's name and description, once per code.
func (c *cudaRuntime) errorText(code ErrorCode) errorText {
	if v, ok := c.texts.Load(code); ok {
		return v.(errorText)
	}
	var t errorText
	if name := C.rmmgo_call_cudaGetErrorName(c.tbl, C.int32_t(code)); name != nil {
		t.name = C.GoString(name)
	}
	if desc := C.rmmgo_call_cudaGetErrorString(c.tbl, C.int32_t(code)); desc != nil {
		t.desc = C.GoString(desc)
	}
	// The runtime names codes it does not know "unrecognized error code";
	// keep a name that says which code it was.
	if !strings.HasPrefix(t.name, "cuda") {
		t.name = code.Name()
	}
	c.texts.Store(code, t)
	return t
}

// newError builds the *Error for a failed call to fn.
func (c *cudaRuntime) newError(fn string, code ErrorCode) *Error {
	t := c.errorText(code)
	return &Error{Code: code, Name: t.name, Desc: t.desc, Func: fn}
}

// check turns a status into nil or an *Error for fn.
func (c *cudaRuntime) check(fn string, code C.int32_t) error {
	if code == 0 {
		return nil
	}
	return c.newError(fn, ErrorCode(code))
}

// peekAtLastError reports the calling thread's last CUDA error without
// clearing it (for tests: rmmgo's calls must leave it clean).
func (c *cudaRuntime) peekAtLastError() ErrorCode {
	return ErrorCode(C.rmmgo_call_cudaPeekAtLastError(c.tbl))
}

// deviceArg converts a device ordinal for C, or reports it invalid.
func (c *cudaRuntime) deviceArg(fn string, dev int) (C.int, error) {
	if dev < math.MinInt32 || dev > math.MaxInt32 {
		return 0, c.newError(fn, ErrorInvalidDevice)
	}
	return C.int(dev), nil
}

// Backend reports BackendCUDA.
func (c *cudaRuntime) Backend() Backend { return BackendCUDA }

// RuntimeVersion is cudaRuntimeGetVersion, read once at load time.
func (c *cudaRuntime) RuntimeVersion() (int, error) { return c.runtimeVersion, nil }

// DriverVersion is cudaDriverGetVersion, read once at load time.
func (c *cudaRuntime) DriverVersion() (int, error) { return c.driverVersion, nil }

// ErrorName is cudaGetErrorName.
func (c *cudaRuntime) ErrorName(code ErrorCode) string { return c.errorText(code).name }

// ErrorString is cudaGetErrorString.
func (c *cudaRuntime) ErrorString(code ErrorCode) string { return c.errorText(code).desc }

// GetDeviceCount is cudaGetDeviceCount.
func (c *cudaRuntime) GetDeviceCount() (int, error) {
	r := C.rmmgo_call_cudaGetDeviceCount(c.tbl)
	if r.err != 0 {
		return 0, c.newError("cudaGetDeviceCount", ErrorCode(r.err))
	}
	return int(r.count), nil
}

// GetDevice is cudaGetDevice: the calling OS thread's current device.
func (c *cudaRuntime) GetDevice() (int, error) {
	r := C.rmmgo_call_cudaGetDevice(c.tbl)
	if r.err != 0 {
		return 0, c.newError("cudaGetDevice", ErrorCode(r.err))
	}
	return int(r.device), nil
}

// SetDevice is cudaSetDevice: it sets the calling OS thread's current device.
func (c *cudaRuntime) SetDevice(dev int) error {
	d, err := c.deviceArg("cudaSetDevice", dev)
	if err != nil {
		return err
	}
	return c.check("cudaSetDevice", C.rmmgo_call_cudaSetDevice(c.tbl, d))
}

// DeviceGetAttribute is cudaDeviceGetAttribute.
func (c *cudaRuntime) DeviceGetAttribute(attr DeviceAttr, dev int) (int, error) {
	d, err := c.deviceArg("cudaDeviceGetAttribute", dev)
	if err != nil {
		return 0, err
	}
	r := C.rmmgo_call_cudaDeviceGetAttribute(c.tbl, C.int32_t(attr), d)
	if r.err != 0 {
		return 0, c.newError("cudaDeviceGetAttribute", ErrorCode(r.err))
	}
	return int(r.value), nil
}

// DeviceSynchronize is cudaDeviceSynchronize.
func (c *cudaRuntime) DeviceSynchronize() error {
	return c.check("cudaDeviceSynchronize", C.rmmgo_call_cudaDeviceSynchronize(c.tbl))
}

// MemGetInfo is cudaMemGetInfo, for the current device.
func (c *cudaRuntime) MemGetInfo() (free, total uint64, err error) {
	r := C.rmmgo_call_cudaMemGetInfo(c.tbl)
	if r.err != 0 {
		return 0, 0, c.newError("cudaMemGetInfo", ErrorCode(r.err))
	}
	return uint64(r.free), uint64(r.total), nil
}

// Malloc is cudaMalloc.
func (c *cudaRuntime) Malloc(size uintptr) (uintptr, error) {
	r := C.rmmgo_call_cudaMalloc(c.tbl, C.size_t(size))
	if r.err != 0 {
		return 0, c.newError("cudaMalloc", ErrorCode(r.err))
	}
	return uintptr(r.devPtr), nil
}

// Free is cudaFree.
func (c *cudaRuntime) Free(ptr uintptr) error {
	return c.check("cudaFree", C.rmmgo_call_cudaFree(c.tbl, C.uintptr_t(ptr)))
}

// MallocManaged is cudaMallocManaged.
func (c *cudaRuntime) MallocManaged(size uintptr, flags uint32) (uintptr, error) {
	r := C.rmmgo_call_cudaMallocManaged(c.tbl, C.size_t(size), C.uint(flags))
	if r.err != 0 {
		return 0, c.newError("cudaMallocManaged", ErrorCode(r.err))
	}
	return uintptr(r.devPtr), nil
}

// HostAlloc is cudaHostAlloc.
func (c *cudaRuntime) HostAlloc(size uintptr, flags uint32) (uintptr, error) {
	r := C.rmmgo_call_cudaHostAlloc(c.tbl, C.size_t(size), C.uint(flags))
	if r.err != 0 {
		return 0, c.newError("cudaHostAlloc", ErrorCode(r.err))
	}
	return uintptr(r.pHost), nil
}

// FreeHost is cudaFreeHost.
func (c *cudaRuntime) FreeHost(ptr uintptr) error {
	return c.check("cudaFreeHost", C.rmmgo_call_cudaFreeHost(c.tbl, C.uintptr_t(ptr)))
}

// MallocAsync is cudaMallocAsync.
func (c *cudaRuntime) MallocAsync(size uintptr, stream Stream) (uintptr, error) {
	r := C.rmmgo_call_cudaMallocAsync(c.tbl, C.size_t(size), C.uintptr_t(stream))
	if r.err != 0 {
		return 0, c.newError("cudaMallocAsync", ErrorCode(r.err))
	}
	return uintptr(r.devPtr), nil
}

// MallocFromPoolAsync is cudaMallocFromPoolAsync.
func (c *cudaRuntime) MallocFromPoolAsync(size uintptr, pool MemPool, stream Stream) (uintptr, error) {
	r := C.rmmgo_call_cudaMallocFromPoolAsync(c.tbl, C.size_t(size), C.uintptr_t(pool), C.uintptr_t(stream))
	if r.err != 0 {
		return 0, c.newError("cudaMallocFromPoolAsync", ErrorCode(r.err))
	}
	return uintptr(r.ptr), nil
}

// FreeAsync is cudaFreeAsync.
func (c *cudaRuntime) FreeAsync(ptr uintptr, stream Stream) error {
	return c.check("cudaFreeAsync", C.rmmgo_call_cudaFreeAsync(c.tbl, C.uintptr_t(ptr), C.uintptr_t(stream)))
}

// MemPoolCreate is cudaMemPoolCreate. It lays props out as CUDA's 88-byte
// cudaMemPoolProps with every other field zero.
func (c *cudaRuntime) MemPoolCreate(props MemPoolProps) (MemPool, error) {
	var p C.rmmgo_cudaMemPoolProps // zeroed, as CUDA wants the fields rmmgo does not set
	p.allocType = C.rmmgo_cudaMemAllocationType(props.AllocType)
	p.handleTypes = C.rmmgo_cudaMemAllocationHandleType(props.HandleTypes)
	p.location = cLocation(props.Location)
	p.maxSize = C.size_t(props.MaxSize)
	r := C.rmmgo_call_cudaMemPoolCreate(c.tbl, p)
	if r.err != 0 {
		return 0, c.newError("cudaMemPoolCreate", ErrorCode(r.err))
	}
	return MemPool(r.pool), nil
}

// MemPoolDestroy is cudaMemPoolDestroy.
func (c *cudaRuntime) MemPoolDestroy(pool MemPool) error {
	return c.check("cudaMemPoolDestroy", C.rmmgo_call_cudaMemPoolDestroy(c.tbl, C.uintptr_t(pool)))
}

// MemPoolSetAttribute is cudaMemPoolSetAttribute. The reuse attributes are
// int flags in CUDA: any non-zero value sets them.
func (c *cudaRuntime) MemPoolSetAttribute(pool MemPool, attr MemPoolAttr, value uint64) error {
	if isIntPoolAttr(attr) && value != 0 {
		value = 1
	}
	return c.check("cudaMemPoolSetAttribute",
		C.rmmgo_call_cudaMemPoolSetAttribute(c.tbl, C.uintptr_t(pool), C.int32_t(attr), C.uint64_t(value)))
}

// isIntPoolAttr: CUDA reads and writes the reuse attributes as an int, the
// others as 64 bits.
func isIntPoolAttr(attr MemPoolAttr) bool {
	return attr >= MemPoolReuseFollowEventDependencies && attr <= MemPoolReuseAllowInternalDependencies
}

// MemPoolGetAttribute is cudaMemPoolGetAttribute; the reuse attributes read
// as 0 or 1.
func (c *cudaRuntime) MemPoolGetAttribute(pool MemPool, attr MemPoolAttr) (uint64, error) {
	r := C.rmmgo_call_cudaMemPoolGetAttribute(c.tbl, C.uintptr_t(pool), C.int32_t(attr))
	if r.err != 0 {
		return 0, c.newError("cudaMemPoolGetAttribute", ErrorCode(r.err))
	}
	if isIntPoolAttr(attr) {
		return uint64(uint32(r.value)), nil
	}
	return uint64(r.value), nil
}

// MemPoolTrimTo is cudaMemPoolTrimTo.
func (c *cudaRuntime) MemPoolTrimTo(pool MemPool, minBytesToKeep uintptr) error {
	return c.check("cudaMemPoolTrimTo", C.rmmgo_call_cudaMemPoolTrimTo(c.tbl, C.uintptr_t(pool), C.size_t(minBytesToKeep)))
}

// DeviceGetDefaultMemPool is cudaDeviceGetDefaultMemPool.
func (c *cudaRuntime) DeviceGetDefaultMemPool(dev int) (MemPool, error) {
	d, err := c.deviceArg("cudaDeviceGetDefaultMemPool", dev)
	if err != nil {
		return 0, err
	}
	r := C.rmmgo_call_cudaDeviceGetDefaultMemPool(c.tbl, d)
	if r.err != 0 {
		return 0, c.newError("cudaDeviceGetDefaultMemPool", ErrorCode(r.err))
	}
	return MemPool(r.memPool), nil
}

// StreamCreate is cudaStreamCreateWithFlags.
func (c *cudaRuntime) StreamCreate(flags uint32) (Stream, error) {
	r := C.rmmgo_call_cudaStreamCreateWithFlags(c.tbl, C.uint(flags))
	if r.err != 0 {
		return 0, c.newError("cudaStreamCreateWithFlags", ErrorCode(r.err))
	}
	return Stream(r.pStream), nil
}

// StreamDestroy is cudaStreamDestroy.
func (c *cudaRuntime) StreamDestroy(s Stream) error {
	return c.check("cudaStreamDestroy", C.rmmgo_call_cudaStreamDestroy(c.tbl, C.uintptr_t(s)))
}

// StreamSynchronize is cudaStreamSynchronize.
func (c *cudaRuntime) StreamSynchronize(s Stream) error {
	return c.check("cudaStreamSynchronize", C.rmmgo_call_cudaStreamSynchronize(c.tbl, C.uintptr_t(s)))
}

// StreamQuery is cudaStreamQuery: nil when all work is done, an *Error with
// ErrorNotReady while work is pending.
func (c *cudaRuntime) StreamQuery(s Stream) error {
	switch code := C.rmmgo_call_cudaStreamQuery(c.tbl, C.uintptr_t(s)); code {
	case 0:
		return nil
	case C.int32_t(ErrorNotReady):
		return c.streamNotReady
	default:
		return c.newError("cudaStreamQuery", ErrorCode(code))
	}
}

// StreamWaitEvent is cudaStreamWaitEvent with no flags.
func (c *cudaRuntime) StreamWaitEvent(s Stream, e Event) error {
	return c.check("cudaStreamWaitEvent", C.rmmgo_call_cudaStreamWaitEvent(c.tbl, C.uintptr_t(s), C.uintptr_t(e), 0))
}

// streamIDRuntime is cudaStreamGetId through the runtime only.
func (c *cudaRuntime) streamIDRuntime(s Stream) (uint64, error) {
	r := C.rmmgo_call_cudaStreamGetId(c.tbl, C.uintptr_t(s))
	if r.err != 0 {
		return 0, c.newError("cudaStreamGetId", ErrorCode(r.err))
	}
	return uint64(r.streamId), nil
}

// StreamGetIDFuncs returns the addresses of the stream-id function in use
// (the driver's cuStreamGetId where the runtime hands it out, CUDA 12.5 and
// later, else the runtime's cudaStreamGetId; both return 0 on success) and
// of cudaGetLastError when r is the CUDA backend, else zeros. C code that
// must know a stream by its id without entering Go (the C ABI's per-thread
// cache) calls them directly; the second clears the thread's last error
// after a failed first, as every call here does.
func StreamGetIDFuncs(r Runtime) (getID, getLastError uintptr) {
	c, ok := r.(*cudaRuntime)
	if !ok || c == nil {
		return 0, 0
	}
	getID = c.slot("cuStreamGetId")
	if getID == 0 {
		getID = c.slot("cudaStreamGetId")
	}
	return getID, c.slot("cudaGetLastError")
}

// GetDeviceFuncs returns the addresses of the runtime's cudaGetDevice and
// cudaGetLastError, for C code that reads the calling thread's current
// device without crossing into Go (rmm_current_resource_token); 0, 0 when
// r is not the CUDA runtime.
func GetDeviceFuncs(r Runtime) (getDevice, getLastError uintptr) {
	c, ok := r.(*cudaRuntime)
	if !ok || c == nil {
		return 0, 0
	}
	return c.slot("cudaGetDevice"), c.slot("cudaGetLastError")
}

// PoolAsyncFuncs returns the addresses of the runtime's
// cudaMallocFromPoolAsync and cudaFreeAsync when r is the CUDA runtime,
// else 0, 0: C code that serves the pool-based resources without entering
// Go (core's C path for cuda_async) calls them directly, with
// GetDeviceFuncs' cudaGetDevice and cudaGetLastError.
func PoolAsyncFuncs(r Runtime) (mallocFromPoolAsync, freeAsync uintptr) {
	c, ok := r.(*cudaRuntime)
	if !ok || c == nil {
		return 0, 0
	}
	return c.slot("cudaMallocFromPoolAsync"), c.slot("cudaFreeAsync")
}

// StreamGetID is cudaStreamGetId. It asks the driver's cuStreamGetId
// first, which takes no process-wide lock; on any failure there (no current
// context on this thread, say) it asks the runtime, whose error is the one
// reported.
func (c *cudaRuntime) StreamGetID(s Stream) (uint64, error) {
	if c.driverStreamID {
		if r := C.rmmgo_call_cuStreamGetId(c.tbl, C.uintptr_t(s)); r.err == 0 {
			return uint64(r.streamId), nil
		}
	}
	return c.streamIDRuntime(s)
}

// EventCreate is cudaEventCreateWithFlags.
func (c *cudaRuntime) EventCreate(flags uint32) (Event, error) {
	r := C.rmmgo_call_cudaEventCreateWithFlags(c.tbl, C.uint(flags))
	if r.err != 0 {
		return 0, c.newError("cudaEventCreateWithFlags", ErrorCode(r.err))
	}
	return Event(r.event), nil
}

// EventDestroy is cudaEventDestroy.
func (c *cudaRuntime) EventDestroy(e Event) error {
	return c.check("cudaEventDestroy", C.rmmgo_call_cudaEventDestroy(c.tbl, C.uintptr_t(e)))
}

// EventRecord is cudaEventRecord.
func (c *cudaRuntime) EventRecord(e Event, s Stream) error {
	return c.check("cudaEventRecord", C.rmmgo_call_cudaEventRecord(c.tbl, C.uintptr_t(e), C.uintptr_t(s)))
}

// EventQuery is cudaEventQuery: nil when the event has completed, an *Error
// with ErrorNotReady before.
func (c *cudaRuntime) EventQuery(e Event) error {
	switch code := C.rmmgo_call_cudaEventQuery(c.tbl, C.uintptr_t(e)); code {
	case 0:
		return nil
	case C.int32_t(ErrorNotReady):
		return c.eventNotReady
	default:
		return c.newError("cudaEventQuery", ErrorCode(code))
	}
}

// EventSynchronize is cudaEventSynchronize.
func (c *cudaRuntime) EventSynchronize(e Event) error {
	return c.check("cudaEventSynchronize", C.rmmgo_call_cudaEventSynchronize(c.tbl, C.uintptr_t(e)))
}

// Memcpy is cudaMemcpy.
func (c *cudaRuntime) Memcpy(dst, src, n uintptr, kind MemcpyKind) error {
	return c.check("cudaMemcpy", C.rmmgo_call_cudaMemcpy(c.tbl, C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), C.int32_t(kind)))
}

// MemcpyAsync is cudaMemcpyAsync.
func (c *cudaRuntime) MemcpyAsync(dst, src, n uintptr, kind MemcpyKind, s Stream) error {
	return c.check("cudaMemcpyAsync",
		C.rmmgo_call_cudaMemcpyAsync(c.tbl, C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), C.int32_t(kind), C.uintptr_t(s)))
}

// Memset is cudaMemset; like CUDA, it writes the low byte of value.
func (c *cudaRuntime) Memset(ptr uintptr, value int, n uintptr) error {
	return c.check("cudaMemset", C.rmmgo_call_cudaMemset(c.tbl, C.uintptr_t(ptr), C.int(int32(value)), C.size_t(n)))
}

// MemsetAsync is cudaMemsetAsync; like CUDA, it writes the low byte of value.
func (c *cudaRuntime) MemsetAsync(ptr uintptr, value int, n uintptr, s Stream) error {
	return c.check("cudaMemsetAsync",
		C.rmmgo_call_cudaMemsetAsync(c.tbl, C.uintptr_t(ptr), C.int(int32(value)), C.size_t(n), C.uintptr_t(s)))
}

// legacyDevice turns a location into CUDA 12's int device argument: a device
// ordinal, cudaCpuDeviceId for the host, cudaInvalidDeviceId for no location
// (the advice kinds that ignore it). Host NUMA locations have no such form.
func (c *cudaRuntime) legacyDevice(fn string, loc MemLocation) (C.int, error) {
	switch loc.Type {
	case MemLocationTypeDevice:
		return C.int(loc.ID), nil
	case MemLocationTypeHost:
		return C.int(CPUDeviceID), nil
	case MemLocationTypeInvalid:
		return C.int(InvalidDeviceID), nil
	default:
		return 0, &Error{Code: ErrorInvalidValue, Name: c.errorText(ErrorInvalidValue).name,
			Desc: fmt.Sprintf("memory location type %d needs CUDA runtime 12.2 or later (this is %s)",
				loc.Type, versionString(c.runtimeVersion)),
			Func: fn}
	}
}

// MemPrefetchAsync prefetches managed memory to loc. On CUDA 13 it calls
// cudaMemPrefetchAsync with the location; on CUDA 12.2+ cudaMemPrefetchAsync_v2;
// on CUDA 12.0 and 12.1 cudaMemPrefetchAsync with a device (host: cudaCpuDeviceId).
func (c *cudaRuntime) MemPrefetchAsync(ptr, n uintptr, loc MemLocation, s Stream) error {
	if c.prefetchLocation {
		return c.check(c.prefetchFunc, C.rmmgo_call_cudaMemPrefetchAsync_location(c.tbl,
			C.uintptr_t(ptr), C.size_t(n), cLocation(loc), 0, C.uintptr_t(s)))
	}
	dev, err := c.legacyDevice(c.prefetchFunc, loc)
	if err != nil {
		return err
	}
	return c.check(c.prefetchFunc, C.rmmgo_call_cudaMemPrefetchAsync_device(c.tbl,
		C.uintptr_t(ptr), C.size_t(n), dev, C.uintptr_t(s)))
}

// MemAdvise advises CUDA about managed memory. The function it calls is
// chosen by version as for MemPrefetchAsync.
func (c *cudaRuntime) MemAdvise(ptr, n uintptr, advice MemoryAdvise, loc MemLocation) error {
	if c.adviseLocation {
		return c.check(c.adviseFunc, C.rmmgo_call_cudaMemAdvise_location(c.tbl,
			C.uintptr_t(ptr), C.size_t(n), C.int32_t(advice), cLocation(loc)))
	}
	dev, err := c.legacyDevice(c.adviseFunc, loc)
	if err != nil {
		return err
	}
	return c.check(c.adviseFunc, C.rmmgo_call_cudaMemAdvise_device(c.tbl,
		C.uintptr_t(ptr), C.size_t(n), C.int32_t(advice), dev))
}

// cLocation lays loc out as CUDA's cudaMemLocation.
func cLocation(loc MemLocation) C.rmmgo_cudaMemLocation {
	return C.rmmgo_cudaMemLocation{_type: C.rmmgo_cudaMemLocationType(loc.Type), id: C.int(loc.ID)}
}

// PointerGetAttributes is cudaPointerGetAttributes.
func (c *cudaRuntime) PointerGetAttributes(ptr uintptr) (PointerAttributes, error) {
	r := C.rmmgo_call_cudaPointerGetAttributes(c.tbl, C.uintptr_t(ptr))
	if r.err != 0 {
		return PointerAttributes{}, c.newError("cudaPointerGetAttributes", ErrorCode(r.err))
	}
	a := r.attributes
	return PointerAttributes{
		Type:          MemoryType(a._type),
		Device:        int(a.device),
		DevicePointer: uintptr(a.devicePointer),
		HostPointer:   uintptr(a.hostPointer),
	}, nil
}

var _ Runtime = (*cudaRuntime)(nil)
