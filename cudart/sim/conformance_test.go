package sim

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/cudart"
)

// Conformance tests: the behaviour the simulated device claims to share
// with CUDA, asserted on the simulator always and, with RMMGO_BACKEND=cuda
// on a GPU machine, on the real runtime too. A failure on "cuda" means the
// simulator's model of CUDA is wrong there. The tests avoid anything that
// could leave a sticky error in a real CUDA context (no access to freed
// device memory, no invalid handles that CUDA would dereference).

type runtimeUnderTest struct {
	name string
	rt   cudart.Runtime
}

func conformanceRuntimes(t *testing.T) []runtimeUnderTest {
	t.Helper()
	rts := []runtimeUnderTest{{"simulated", newTestSim(t, Config{MemoryPerDevice: 256 * mib})}}
	if os.Getenv(cudart.EnvBackend) == string(cudart.BackendCUDA) {
		rt, err := cudart.Open(cudart.Options{Backend: cudart.BackendCUDA})
		require.NoError(t, err)
		rts = append(rts, runtimeUnderTest{"cuda", rt})
	}
	return rts
}

func forEachRuntime(t *testing.T, f func(t *testing.T, r cudart.Runtime)) {
	for _, rut := range conformanceRuntimes(t) {
		t.Run(rut.name, func(t *testing.T) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			require.NoError(t, rut.rt.SetDevice(0))
			f(t, rut.rt)
		})
	}
}

// probe checks a behaviour of the simulator's model that real CUDA has not
// confirmed yet: on the simulator err must carry code (Success: no
// error); on CUDA the outcome is logged, not asserted, so that a GPU run
// reports what CUDA does without failing. It reports whether err is nil.
func probe(t *testing.T, r cudart.Runtime, what string, err error, code cudart.ErrorCode) bool {
	t.Helper()
	if r.Backend() != cudart.BackendSimulated {
		t.Logf("probe: %s: %v", what, errOrSuccess(err))
	} else if code == cudart.Success {
		assert.NoError(t, err, what)
	} else {
		requireCode(t, err, code, what)
	}
	return err == nil
}

func errOrSuccess(err error) any {
	if err == nil {
		return "success"
	}
	return err
}

func attr(t *testing.T, r cudart.Runtime, a cudart.DeviceAttr) int {
	t.Helper()
	v, err := r.DeviceGetAttribute(a, 0)
	require.NoError(t, err)
	return v
}

func TestConformanceZeroSizes(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, r cudart.Runtime) {
		p, err := r.Malloc(0)
		require.NoError(t, err)
		assert.Zero(t, p)
		p, err = r.HostAlloc(0, cudart.HostAllocDefault)
		require.NoError(t, err)
		assert.Zero(t, p)
		// CUDA documents cudaErrorInvalidValue here, but CUDA 13.0 succeeds.
		p, err = r.MallocManaged(0, cudart.MemAttachGlobal)
		require.NoError(t, err, "cudaMallocManaged of 0 bytes")
		assert.Zero(t, p, "cudaMallocManaged of 0 bytes")
		require.NoError(t, r.Free(p))
		if attr(t, r, cudart.DevAttrMemoryPoolsSupported) == 1 {
			p, err = r.MallocAsync(0, cudart.DefaultStream)
			require.NoError(t, err)
			assert.Zero(t, p)
			require.NoError(t, r.FreeAsync(0, cudart.DefaultStream))
		}
		require.NoError(t, r.Free(0))
		require.NoError(t, r.FreeHost(0))
		d, err := r.Malloc(256)
		require.NoError(t, err)
		require.NoError(t, r.Memset(d, 0, 0))
		require.NoError(t, r.Memcpy(d, d, 0, cudart.MemcpyDeviceToDevice))
		require.NoError(t, r.Free(d))
	})
}

func TestConformanceBadFrees(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, r cudart.Runtime) {
		d, err := r.Malloc(4096)
		require.NoError(t, err)
		requireCode(t, r.Free(d+256), cudart.ErrorInvalidValue, "interior pointer")
		requireCode(t, r.FreeHost(d), cudart.ErrorInvalidValue, "device memory with FreeHost")
		if attr(t, r, cudart.DevAttrMemoryPoolsSupported) == 1 {
			// cudaFreeAsync takes cudaMalloc memory too (CUDA 13.0).
			require.NoError(t, r.FreeAsync(d, cudart.DefaultStream), "FreeAsync of cudaMalloc memory")
			require.NoError(t, r.StreamSynchronize(cudart.DefaultStream))
		} else {
			require.NoError(t, r.Free(d))
		}
		requireCode(t, r.Free(d), cudart.ErrorInvalidValue, "double free")

		h, err := r.HostAlloc(4096, cudart.HostAllocDefault)
		require.NoError(t, err)
		requireCode(t, r.Free(h), cudart.ErrorInvalidValue, "pinned memory with Free")
		require.NoError(t, r.FreeHost(h))
		requireCode(t, r.FreeHost(h), cudart.ErrorInvalidValue, "pinned double free")

		m, err := r.MallocManaged(4096, cudart.MemAttachGlobal)
		require.NoError(t, err)
		requireCode(t, r.FreeHost(m), cudart.ErrorInvalidValue, "managed memory with FreeHost")
		require.NoError(t, r.Free(m))

		// Not yet seen on a GPU: FreeAsync of managed and of pinned memory.
		if attr(t, r, cudart.DevAttrMemoryPoolsSupported) == 1 {
			m, err = r.MallocManaged(4096, cudart.MemAttachGlobal)
			require.NoError(t, err)
			if probe(t, r, "FreeAsync of cudaMallocManaged memory", r.FreeAsync(m, cudart.DefaultStream), cudart.ErrorInvalidValue) {
				require.NoError(t, r.StreamSynchronize(cudart.DefaultStream))
			} else {
				require.NoError(t, r.Free(m))
			}
			h, err = r.HostAlloc(4096, cudart.HostAllocDefault)
			require.NoError(t, err)
			if probe(t, r, "FreeAsync of cudaHostAlloc memory", r.FreeAsync(h, cudart.DefaultStream), cudart.ErrorInvalidValue) {
				require.NoError(t, r.StreamSynchronize(cudart.DefaultStream))
			} else {
				require.NoError(t, r.FreeHost(h))
			}
		}
	})
}

func TestConformancePointerAttributes(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, r cudart.Runtime) {
		d, err := r.Malloc(1000)
		require.NoError(t, err)
		m, err := r.MallocManaged(1000, cudart.MemAttachGlobal)
		require.NoError(t, err)
		h, err := r.HostAlloc(1000, cudart.HostAllocDefault)
		require.NoError(t, err)
		_, hostAddr := hostBuf(64)
		tests := []struct {
			name string
			ptr  uintptr
			want cudart.PointerAttributes
		}{
			{"device", d + 8, cudart.PointerAttributes{Type: cudart.MemoryTypeDevice, Device: 0, DevicePointer: d + 8}},
			{"managed", m, cudart.PointerAttributes{Type: cudart.MemoryTypeManaged, Device: 0, DevicePointer: m, HostPointer: m}},
			{"pinned", h, cudart.PointerAttributes{Type: cudart.MemoryTypeHost, Device: 0, DevicePointer: h, HostPointer: h}},
		}
		for _, tt := range tests {
			got, err := r.PointerGetAttributes(tt.ptr)
			require.NoError(t, err, tt.name)
			assert.Equal(t, tt.want, got, tt.name)
		}
		got, err := r.PointerGetAttributes(hostAddr)
		require.NoError(t, err)
		assert.Equal(t, cudart.MemoryTypeUnregistered, got.Type)
		assert.Equal(t, cudart.InvalidDeviceID, got.Device, "device of unregistered memory")
		// CUDA does not check unregistered memory: the host pointer is the
		// address; the device pointer is null without pageable access.
		assert.Equal(t, hostAddr, got.HostPointer, "host pointer of unregistered memory")
		if attr(t, r, cudart.DevAttrPageableMemoryAccess) == 0 {
			assert.Zero(t, got.DevicePointer, "device pointer of unregistered memory")
		} else if r.Backend() == cudart.BackendSimulated {
			assert.Equal(t, hostAddr, got.DevicePointer, "device pointer of unregistered memory")
		} else { // not yet seen on a GPU
			t.Logf("probe: with pageable memory access, unregistered memory at %#x has device pointer %#x", hostAddr, got.DevicePointer)
		}
		require.NoError(t, r.Free(d))
		require.NoError(t, r.Free(m))
		require.NoError(t, r.FreeHost(h))
	})
}

func TestConformanceDevices(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, r cudart.Runtime) {
		n, err := r.GetDeviceCount()
		require.NoError(t, err)
		requireCode(t, r.SetDevice(n), cudart.ErrorInvalidDevice)
		requireCode(t, r.SetDevice(-1), cudart.ErrorInvalidDevice)
		_, err = r.DeviceGetAttribute(cudart.DevAttrIntegrated, n)
		requireCode(t, err, cudart.ErrorInvalidDevice)
		dev, err := r.GetDevice()
		require.NoError(t, err)
		assert.Equal(t, 0, dev)
		free, total, err := r.MemGetInfo()
		require.NoError(t, err)
		assert.LessOrEqual(t, free, total)
		assert.Equal(t, 1, attr(t, r, cudart.DevAttrManagedMemory))
		// A new thread starts on device 0.
		if n > 1 {
			require.NoError(t, r.SetDevice(1))
			done := make(chan int)
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				d, err := r.GetDevice()
				assert.NoError(t, err)
				done <- d
			}()
			assert.Equal(t, 0, <-done)
			require.NoError(t, r.SetDevice(0))
		}
	})
}

func TestConformanceStreamsAndEvents(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, r cudart.Runtime) {
		ev, err := r.EventCreate(cudart.EventFlagDisableTiming)
		require.NoError(t, err)
		require.NoError(t, r.EventQuery(ev), "never recorded")
		require.NoError(t, r.EventSynchronize(ev))
		st, err := r.StreamCreate(cudart.StreamFlagNonBlocking)
		require.NoError(t, err)
		require.NoError(t, r.StreamWaitEvent(st, ev), "waiting on an event never recorded")
		require.NoError(t, r.EventRecord(ev, st))
		require.NoError(t, r.EventSynchronize(ev))
		require.NoError(t, r.EventQuery(ev))
		require.NoError(t, r.StreamQuery(st))
		id0, err := r.StreamGetID(cudart.DefaultStream)
		require.NoError(t, err)
		idLegacy, err := r.StreamGetID(cudart.LegacyDefaultStream)
		require.NoError(t, err)
		idSt, err := r.StreamGetID(st)
		require.NoError(t, err)
		assert.Equal(t, id0, idLegacy)
		assert.NotEqual(t, id0, idSt)
		_, err = r.StreamCreate(2)
		requireCode(t, err, cudart.ErrorInvalidValue)
		_, err = r.EventCreate(4) // interprocess without DisableTiming
		requireCode(t, err, cudart.ErrorInvalidValue)
		require.NoError(t, r.StreamDestroy(st))
		require.NoError(t, r.EventDestroy(ev))
	})
}

func TestConformanceCopies(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, r cudart.Runtime) {
		const n = 64 << 10
		d, err := r.Malloc(n)
		require.NoError(t, err)
		src, srcAddr := hostBuf(n)
		for i := range src {
			src[i] = byte(i)
		}
		dst, dstAddr := hostBuf(n)
		st, err := r.StreamCreate(0)
		require.NoError(t, err)
		require.NoError(t, r.MemcpyAsync(d, srcAddr, n, cudart.MemcpyHostToDevice, st))
		require.NoError(t, r.MemsetAsync(d+n/2, 0x7f, n/4, st))
		require.NoError(t, r.MemcpyAsync(dstAddr, d, n, cudart.MemcpyDeviceToHost, st))
		require.NoError(t, r.StreamSynchronize(st))
		want := append([]byte(nil), src...)
		fill(want[n/2:n/2+n/4], 0x7f)
		assert.Equal(t, want, dst)
		requireCode(t, r.Memcpy(d, srcAddr, 16, cudart.MemcpyKind(7)), cudart.ErrorInvalidMemcpyDirection)
		require.NoError(t, r.StreamDestroy(st))
		require.NoError(t, r.Free(d))
		runtime.KeepAlive(src)
		runtime.KeepAlive(dst)
	})
}

func TestConformancePools(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, r cudart.Runtime) {
		if attr(t, r, cudart.DevAttrMemoryPoolsSupported) == 0 {
			t.Skip("no memory pools")
		}
		get := func(pool cudart.MemPool, a cudart.MemPoolAttr) uint64 {
			t.Helper()
			v, err := r.MemPoolGetAttribute(pool, a)
			require.NoError(t, err)
			return v
		}
		pool, err := r.MemPoolCreate(cudart.MemPoolProps{AllocType: cudart.MemAllocationTypePinned, Location: cudart.DeviceLocation(0)})
		require.NoError(t, err)
		assert.Zero(t, get(pool, cudart.MemPoolAttrReleaseThreshold), "CUDA's default release threshold")
		for _, a := range []cudart.MemPoolAttr{cudart.MemPoolReuseFollowEventDependencies, cudart.MemPoolReuseAllowOpportunistic, cudart.MemPoolReuseAllowInternalDependencies} {
			assert.Equal(t, uint64(1), get(pool, a), "reuse policy %d", a)
		}
		p, err := r.MallocFromPoolAsync(mib, pool, cudart.DefaultStream)
		require.NoError(t, err)
		assert.Zero(t, p%256)
		assert.GreaterOrEqual(t, get(pool, cudart.MemPoolAttrUsedMemCurrent), uint64(mib))
		assert.GreaterOrEqual(t, get(pool, cudart.MemPoolAttrReservedMemCurrent), get(pool, cudart.MemPoolAttrUsedMemCurrent))
		a, err := r.PointerGetAttributes(p)
		require.NoError(t, err)
		assert.Equal(t, cudart.MemoryTypeDevice, a.Type)
		require.NoError(t, r.FreeAsync(p, cudart.DefaultStream))
		require.NoError(t, r.StreamSynchronize(cudart.DefaultStream))
		assert.Zero(t, get(pool, cudart.MemPoolAttrUsedMemCurrent))
		assert.Zero(t, get(pool, cudart.MemPoolAttrReservedMemCurrent), "threshold 0: released at synchronization")
		assert.GreaterOrEqual(t, get(pool, cudart.MemPoolAttrReservedMemHigh), uint64(mib))

		// With a high threshold the memory stays; TrimTo(0) gives it back.
		require.NoError(t, r.MemPoolSetAttribute(pool, cudart.MemPoolAttrReleaseThreshold, ^uint64(0)))
		p, err = r.MallocFromPoolAsync(mib, pool, cudart.DefaultStream)
		require.NoError(t, err)
		require.NoError(t, r.FreeAsync(p, cudart.DefaultStream))
		require.NoError(t, r.StreamSynchronize(cudart.DefaultStream))
		assert.GreaterOrEqual(t, get(pool, cudart.MemPoolAttrReservedMemCurrent), uint64(mib))
		require.NoError(t, r.MemPoolTrimTo(pool, 0))
		assert.Zero(t, get(pool, cudart.MemPoolAttrReservedMemCurrent))

		requireCode(t, r.MemPoolSetAttribute(pool, cudart.MemPoolAttrUsedMemHigh, 5), cudart.ErrorInvalidValue)
		require.NoError(t, r.MemPoolSetAttribute(pool, cudart.MemPoolAttrUsedMemHigh, 0))
		assert.Zero(t, get(pool, cudart.MemPoolAttrUsedMemHigh))

		// Destroying a pool with an allocation outstanding leaves it usable.
		p, err = r.MallocFromPoolAsync(4096, pool, cudart.DefaultStream)
		require.NoError(t, err)
		require.NoError(t, r.MemPoolDestroy(pool))
		require.NoError(t, r.Memset(p, 1, 4096))
		require.NoError(t, r.Free(p))

		def, err := r.DeviceGetDefaultMemPool(0)
		require.NoError(t, err)
		assert.Zero(t, get(def, cudart.MemPoolAttrReleaseThreshold))
		p, err = r.MallocAsync(1000, cudart.DefaultStream)
		require.NoError(t, err)
		require.NoError(t, r.Free(p), "cudaFree of a stream-ordered allocation")
	})
}

func TestConformanceManagedHints(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, r cudart.Runtime) {
		d, err := r.Malloc(4096)
		require.NoError(t, err)
		m, err := r.MallocManaged(4096, cudart.MemAttachGlobal)
		require.NoError(t, err)
		requireCode(t, r.MemPrefetchAsync(d, 4096, cudart.DeviceLocation(0), cudart.DefaultStream), cudart.ErrorInvalidValue, "prefetch of device memory")
		requireCode(t, r.MemAdvise(d, 4096, cudart.MemAdviseSetReadMostly, cudart.DeviceLocation(0)), cudart.ErrorInvalidValue, "advice on device memory")
		if attr(t, r, cudart.DevAttrConcurrentManagedAccess) == 1 {
			require.NoError(t, r.MemPrefetchAsync(m, 4096, cudart.DeviceLocation(0), cudart.DefaultStream))
		}
		require.NoError(t, r.MemPrefetchAsync(m, 4096, cudart.HostLocation(), cudart.DefaultStream))
		require.NoError(t, r.MemAdvise(m, 4096, cudart.MemAdviseSetPreferredLocation, cudart.DeviceLocation(0)))
		require.NoError(t, r.MemAdvise(m, 4096, cudart.MemAdviseSetAccessedBy, cudart.DeviceLocation(0)))
		require.NoError(t, r.MemAdvise(m, 4096, cudart.MemAdviseSetReadMostly, cudart.DeviceLocation(0)))
		require.NoError(t, r.MemAdvise(m, 4096, cudart.MemAdviseUnsetReadMostly, cudart.DeviceLocation(0)))
		require.NoError(t, r.MemAdvise(m, 4096, cudart.MemAdviseUnsetPreferredLocation, cudart.DeviceLocation(0)))
		require.NoError(t, r.MemAdvise(m, 4096, cudart.MemAdviseUnsetAccessedBy, cudart.DeviceLocation(0)))
		if v, err := r.RuntimeVersion(); assert.NoError(t, err) && v >= 13000 {
			// CUDA 13 wants a valid location for every hint.
			requireCode(t, r.MemAdvise(m, 4096, cudart.MemAdviseSetReadMostly, cudart.MemLocation{}), cudart.ErrorInvalidValue, "read-mostly with an invalid location")
			probe(t, r, "UnsetReadMostly with an invalid location", r.MemAdvise(m, 4096, cudart.MemAdviseUnsetReadMostly, cudart.MemLocation{}), cudart.ErrorInvalidValue)
			probe(t, r, "UnsetPreferredLocation with an invalid location", r.MemAdvise(m, 4096, cudart.MemAdviseUnsetPreferredLocation, cudart.MemLocation{}), cudart.ErrorInvalidValue)
		}
		require.NoError(t, r.StreamSynchronize(cudart.DefaultStream))
		require.NoError(t, r.Free(d))
		require.NoError(t, r.Free(m))
	})
}

// TestConformanceVirtualMemory: the driver's virtual memory management, as
// the expandable resource uses it: reserve, make physical memory, map it in
// granules, give access, copy and fill across mappings, and take it apart.
func TestConformanceVirtualMemory(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, r cudart.Runtime) {
		vm, err := cudart.VirtualMemoryOf(r)
		require.NoError(t, err)
		prop := cudart.DeviceMemoryProp(0)
		g, err := vm.MemGetAllocationGranularity(prop, cudart.MemGranularityMinimum)
		require.NoError(t, err)
		assert.EqualValues(t, 2*mib, g, "minimum granularity")
		rec, err := vm.MemGetAllocationGranularity(prop, cudart.MemGranularityRecommended)
		require.NoError(t, err)
		assert.EqualValues(t, 2*mib, rec, "recommended granularity")

		freeBefore, total, err := r.MemGetInfo()
		require.NoError(t, err)
		base, err := vm.MemAddressReserve(4*g, 0)
		require.NoError(t, err)
		assert.Zero(t, base%g, "a reservation starts at a multiple of the granularity")
		h1, err := vm.MemCreate(g, prop)
		require.NoError(t, err)
		h2, err := vm.MemCreate(g, prop)
		require.NoError(t, err)
		freeNow, _, err := r.MemGetInfo()
		require.NoError(t, err)
		probe(t, r, "physical memory lowers the free memory by its size", func() error {
			if freeBefore-freeNow != uint64(2*g) {
				return fmt.Errorf("free went from %d to %d", freeBefore, freeNow)
			}
			return nil
		}(), cudart.Success)

		// Sizes not a multiple of the granularity, and unaligned maps, are
		// refused; so is physical memory beyond the device (an invalid
		// value, as an H100 with CUDA 13.0 answers), and memory that fits
		// the device but not what is free now (out of memory).
		_, err = vm.MemCreate(g/2, prop)
		requireCode(t, err, cudart.ErrorInvalidValue, "cuMemCreate of half a granule")
		_, err = vm.MemCreate(uintptr(total)+g, prop)
		requireCode(t, err, cudart.ErrorInvalidValue, "cuMemCreate of more than the device has")
		if whole := uintptr(total) / g * g; uint64(whole) > freeNow {
			h, err := vm.MemCreate(whole, prop)
			if err == nil {
				require.NoError(t, vm.MemRelease(h))
			}
			probe(t, r, "cuMemCreate of the whole device with memory in use", err, cudart.ErrorMemoryAllocation)
		}
		requireCode(t, vm.MemMap(base+g/2, g, 0, h1), cudart.ErrorInvalidValue, "cuMemMap at half a granule")

		// Two mappings side by side, made accessible at once.
		require.NoError(t, vm.MemMap(base+g, g, 0, h1))
		require.NoError(t, vm.MemMap(base+2*g, g, 0, h2))
		probe(t, r, "cuMemMap over a mapping", vm.MemMap(base+g, g, 0, h2), cudart.ErrorInvalidValue)
		rw := cudart.MemAccessDesc{Location: cudart.DeviceLocation(0), Flags: cudart.MemAccessFlagsProtReadWrite}
		require.NoError(t, vm.MemSetAccess(base+g, 2*g, rw))
		f, err := vm.MemGetAccess(cudart.DeviceLocation(0), base+2*g)
		require.NoError(t, err)
		assert.Equal(t, cudart.MemAccessFlagsProtReadWrite, f)
		a, err := r.PointerGetAttributes(base + g + 4096)
		require.NoError(t, err)
		assert.Equal(t, cudart.MemoryTypeDevice, a.Type)
		assert.Equal(t, 0, a.Device)

		// A fill and copies that cross from one mapping to the next.
		n := int(g)
		require.NoError(t, r.Memset(base+g, 0x5a, 2*g))
		src, srcAddr := hostBuf(n)
		for i := range src {
			src[i] = byte(i * 7)
		}
		require.NoError(t, r.Memcpy(base+g+g/2, srcAddr, g, cudart.MemcpyHostToDevice))
		out, outAddr := hostBuf(2 * n)
		require.NoError(t, r.Memcpy(outAddr, base+g, 2*g, cudart.MemcpyDeviceToHost))
		want := make([]byte, 2*n)
		fill(want, 0x5a)
		copy(want[n/2:], src)
		assert.Equal(t, want, out)
		runtime.KeepAlive(src)
		runtime.KeepAlive(out)

		// Unmapping takes whole mappings; memory goes back once released and
		// unmapped, in either order.
		probe(t, r, "cuMemUnmap of two mappings at once", vm.MemUnmap(base+g, 2*g), cudart.ErrorInvalidValue)
		if r.Backend() == cudart.BackendSimulated {
			require.NoError(t, vm.MemUnmap(base+g, g))
		} else if _, err := vm.MemGetAccess(cudart.DeviceLocation(0), base+g); err == nil {
			require.NoError(t, vm.MemUnmap(base+g, g)) // CUDA refused the double unmap too
		}
		require.NoError(t, vm.MemRelease(h1))
		require.NoError(t, vm.MemRelease(h2)) // still mapped: goes back at the unmap
		if _, err := vm.MemGetAccess(cudart.DeviceLocation(0), base+2*g); err == nil {
			require.NoError(t, vm.MemUnmap(base+2*g, g))
		}
		require.NoError(t, vm.MemAddressFree(base, 4*g))
		freeAfter, _, err := r.MemGetInfo()
		require.NoError(t, err)
		probe(t, r, "all physical memory back", func() error {
			if freeAfter != freeBefore {
				return fmt.Errorf("free memory %d before, %d after", freeBefore, freeAfter)
			}
			return nil
		}(), cudart.Success)
	})
}
