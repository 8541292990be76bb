package core

// Tests every base resource against the same table: fill and check on two
// streams, properties, zero bytes, bad alignments, impossible sizes, double
// frees and the device rule. Resource-specific behaviour is tested in the
// resource's own _test.go file.

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmmgo/rmmgo/core/internal/addr"
	"github.com/rmmgo/rmmgo/cudart"
)

// baseCase describes one base resource for the table-driven tests.
type baseCase struct {
	kind  string
	props Properties
	// deviceBound: the resource enforces the device rule.
	deviceBound bool
	// deviceMemory: requests larger than the device fail (managed and host
	// memory may exceed the device on a real GPU).
	deviceMemory bool
	// pageable: the resource needs pageable memory access, so it runs on
	// pageableRuntime rather than the process runtime.
	pageable bool
	// make builds the resource on runtime r, with r's current device.
	make func(t testing.TB, r cudart.Runtime) (Resource, error)
}

var baseCases = []baseCase{
	{kind: "cuda", props: DeviceAccessible, deviceBound: true, deviceMemory: true,
		make: func(t testing.TB, r cudart.Runtime) (Resource, error) { return newCuda(r) }},
	{kind: "managed", props: DeviceAccessible | HostAccessible, deviceBound: true,
		make: func(t testing.TB, r cudart.Runtime) (Resource, error) { return newManaged(r) }},
	{kind: "pinned_host", props: DeviceAccessible | HostAccessible,
		make: func(t testing.TB, r cudart.Runtime) (Resource, error) { return newPinnedHost(r) }},
	{kind: "system", props: DeviceAccessible | HostAccessible, pageable: true,
		make: func(t testing.TB, r cudart.Runtime) (Resource, error) { return newSystem(r) }},
	{kind: "sam_headroom", props: DeviceAccessible | HostAccessible, deviceBound: true, pageable: true,
		make: func(t testing.TB, r cudart.Runtime) (Resource, error) { return newSAMHeadroom(r, 64<<20) }},
	{kind: "cuda_async", props: DeviceAccessible, deviceBound: true, deviceMemory: true,
		make: func(t testing.TB, r cudart.Runtime) (Resource, error) {
			c, err := newCudaAsync(r, CudaAsyncOptions{})
			if err == nil {
				t.Cleanup(func() { assert.NoError(t, c.Close()) })
			}
			return c, err
		}},
	{kind: "cuda_async_view", props: DeviceAccessible, deviceBound: true, deviceMemory: true,
		make: func(t testing.TB, r cudart.Runtime) (Resource, error) {
			dev, err := r.GetDevice()
			require.NoError(t, err)
			pool, err := r.DeviceGetDefaultMemPool(dev)
			if err != nil {
				return nil, cudaError("cuda_async_view: default pool", err)
			}
			return newCudaAsyncView(r, pool)
		}},
	{kind: "cuda_async_managed", props: DeviceAccessible | HostAccessible, deviceBound: true,
		make: func(t testing.TB, r cudart.Runtime) (Resource, error) {
			m, err := newCudaAsyncManaged(r)
			if err == nil {
				t.Cleanup(func() { assert.NoError(t, m.Close()) })
			}
			return m, err
		}},
}

// runtimeFor returns the runtime the case's resource is made on.
func (c baseCase) runtimeFor(t testing.TB) cudart.Runtime {
	if c.pageable {
		return pageableRuntime(t)
	}
	return testRuntime(t)
}

// build makes the case's resource on r. On the real GPU a resource the
// device or driver does not support skips the test; on the simulated
// device every resource must work.
func (c baseCase) build(t testing.TB, r cudart.Runtime) Resource {
	t.Helper()
	mr, err := c.make(t, r)
	if errors.Is(err, ErrNotSupported) && r.Backend() != cudart.BackendSimulated {
		t.Skipf("%s is not supported here: %v", c.kind, err)
	}
	require.NoError(t, err, "making a %s resource", c.kind)
	require.NotNil(t, mr)
	return mr
}

func TestBaseResourcesFillAndCheck(t *testing.T) {
	sizes := []uintptr{1, 255, 256, 257, 4097, 1 << 20, 3<<20 + 17}
	for _, c := range baseCases {
		t.Run(c.kind, func(t *testing.T) {
			r := c.runtimeFor(t)
			mr := c.build(t, r)
			streams := []Stream{newStream(t, r), newStream(t, r)}

			// One allocation at a time, on each stream.
			for si, s := range streams {
				for i, n := range sizes {
					p, err := mr.Allocate(s, n, DefaultAlignment)
					require.NoError(t, err, "Allocate(%d) on stream %d", n, si)
					require.NotZero(t, p)
					require.True(t, addr.IsAligned(p, DefaultAlignment), "%#x is not 256-byte aligned", p)
					fillAndCheck(t, r, p, n, byte(0x11*(i+1)+si), s)
					require.NoError(t, mr.Deallocate(s, p, n, DefaultAlignment))
				}
			}

			// Many live at once, alternating streams: they must not overlap.
			type live struct {
				p, n uintptr
				s    Stream
				v    byte
			}
			var all []live
			for i, n := range sizes {
				s := streams[i%2]
				p, err := mr.Allocate(s, n, DefaultAlignment)
				require.NoError(t, err)
				v := byte(0xA0 + i)
				fillAndCheck(t, r, p, n, v, s)
				all = append(all, live{p, n, s, v})
			}
			for _, a := range all { // re-read: no later fill touched it
				require.NoError(t, expect(r, a.p, a.n, a.v, a.s))
			}
			for _, a := range all {
				require.NoError(t, mr.Deallocate(a.s, a.p, a.n, DefaultAlignment))
			}

			// Without a stream.
			for i, n := range sizes {
				p, err := mr.AllocateSync(n, DefaultAlignment)
				require.NoError(t, err, "AllocateSync(%d)", n)
				require.True(t, addr.IsAligned(p, DefaultAlignment))
				fillAndCheck(t, r, p, n, byte(0x5A+i), DefaultStream)
				require.NoError(t, mr.DeallocateSync(p, n, DefaultAlignment))
			}

			// Every smaller alignment is honoured too.
			for a := uintptr(1); a <= DefaultAlignment; a *= 2 {
				p, err := mr.Allocate(streams[0], 100, a)
				require.NoError(t, err, "alignment %d", a)
				require.True(t, addr.IsAligned(p, DefaultAlignment))
				require.NoError(t, mr.Deallocate(streams[0], p, 100, a))
			}
		})
	}
}

func TestBaseResourceProperties(t *testing.T) {
	// Seed 000's table.
	want := map[string]Properties{
		"cuda":               DeviceAccessible,
		"managed":            DeviceAccessible | HostAccessible,
		"pinned_host":        DeviceAccessible | HostAccessible,
		"cuda_async_view":    DeviceAccessible,
		"system":             DeviceAccessible | HostAccessible,
		"cuda_async":         DeviceAccessible,
		"cuda_async_managed": DeviceAccessible | HostAccessible,
		"sam_headroom":       DeviceAccessible | HostAccessible,
	}
	require.Len(t, baseCases, len(want))
	for _, c := range baseCases {
		t.Run(c.kind, func(t *testing.T) {
			r := c.runtimeFor(t)
			mr := c.build(t, r)
			assert.Equal(t, c.kind, mr.Kind())
			assert.Equal(t, want[c.kind], mr.Properties())
			assert.True(t, mr.Properties().Has(DeviceAccessible))
			assert.Equal(t, want[c.kind].Has(HostAccessible), mr.Properties().Has(HostAccessible))
			dev, err := r.GetDevice()
			require.NoError(t, err)
			assert.Equal(t, dev, mr.(interface{ Device() int }).Device())
		})
	}
}

// countingRuntime counts the runtime calls a resource makes while
// allocating and freeing.
type countingRuntime struct {
	cudart.Runtime
	calls atomic.Int64
}

func (c *countingRuntime) GetDevice() (int, error) { c.calls.Add(1); return c.Runtime.GetDevice() }
func (c *countingRuntime) Malloc(n uintptr) (uintptr, error) {
	c.calls.Add(1)
	return c.Runtime.Malloc(n)
}
func (c *countingRuntime) MallocManaged(n uintptr, f uint32) (uintptr, error) {
	c.calls.Add(1)
	return c.Runtime.MallocManaged(n, f)
}
func (c *countingRuntime) HostAlloc(n uintptr, f uint32) (uintptr, error) {
	c.calls.Add(1)
	return c.Runtime.HostAlloc(n, f)
}
func (c *countingRuntime) MallocFromPoolAsync(n uintptr, p cudart.MemPool, s Stream) (uintptr, error) {
	c.calls.Add(1)
	return c.Runtime.MallocFromPoolAsync(n, p, s)
}
func (c *countingRuntime) Free(p uintptr) error     { c.calls.Add(1); return c.Runtime.Free(p) }
func (c *countingRuntime) FreeHost(p uintptr) error { c.calls.Add(1); return c.Runtime.FreeHost(p) }
func (c *countingRuntime) FreeAsync(p uintptr, s Stream) error {
	c.calls.Add(1)
	return c.Runtime.FreeAsync(p, s)
}
func (c *countingRuntime) StreamSynchronize(s Stream) error {
	c.calls.Add(1)
	return c.Runtime.StreamSynchronize(s)
}
func (c *countingRuntime) MemGetInfo() (uint64, uint64, error) {
	c.calls.Add(1)
	return c.Runtime.MemGetInfo()
}

func TestBaseResourceZeroBytes(t *testing.T) {
	for _, c := range baseCases {
		t.Run(c.kind, func(t *testing.T) {
			cr := &countingRuntime{Runtime: c.runtimeFor(t)}
			mr := c.build(t, cr)
			s := newStream(t, cr.Runtime)
			before := cr.calls.Load()

			p, err := mr.Allocate(s, 0, DefaultAlignment)
			require.NoError(t, err)
			assert.Zero(t, p)
			p, err = mr.AllocateSync(0, DefaultAlignment)
			require.NoError(t, err)
			assert.Zero(t, p)
			require.NoError(t, mr.Deallocate(s, 0, 0, DefaultAlignment))
			require.NoError(t, mr.DeallocateSync(0, 0, DefaultAlignment))
			require.NoError(t, mr.Deallocate(s, 0, 100, DefaultAlignment), "Deallocate of a null pointer")
			assert.Equal(t, before, cr.calls.Load(), "zero-byte requests must not call CUDA")

			// A bad alignment is reported even for zero bytes.
			_, err = mr.Allocate(s, 0, 3)
			requireIs(t, err, ErrBadAlignment)
		})
	}
}

func TestBaseResourceBadAlignment(t *testing.T) {
	bad := []struct {
		alignment uintptr
		tooLarge  bool
	}{
		{0, false}, {3, false}, {24, false}, {100, false}, {257, false}, {math.MaxUint64, false},
		{512, true}, {4096, true}, {1 << 20, true}, {1 << 63, true},
	}
	for _, c := range baseCases {
		t.Run(c.kind, func(t *testing.T) {
			r := c.runtimeFor(t)
			mr := c.build(t, r)
			for _, b := range bad {
				p, err := mr.Allocate(DefaultStream, 1024, b.alignment)
				requireIs(t, err, ErrBadAlignment, "alignment ", b.alignment)
				assert.Zero(t, p)
				assert.Contains(t, err.Error(), c.kind)
				if b.tooLarge {
					assert.Contains(t, err.Error(), "aligned adaptor")
				} else {
					assert.Contains(t, err.Error(), "not a power of two")
				}
				_, err = mr.AllocateSync(1024, b.alignment)
				requireIs(t, err, ErrBadAlignment)
			}
		})
	}
}

func TestBaseResourceImpossibleSizes(t *testing.T) {
	huge := []uintptr{math.MaxUint64, math.MaxUint64 - 255, math.MaxUint64 / 2, 1 << 62, maxAllocation + 1}
	for _, c := range baseCases {
		t.Run(c.kind, func(t *testing.T) {
			r := c.runtimeFor(t)
			mr := c.build(t, r)
			for _, n := range huge {
				p, err := mr.Allocate(DefaultStream, n, DefaultAlignment)
				requireIs(t, err, ErrOutOfMemory, "size ", n)
				assert.Zero(t, p)
				assert.Contains(t, err.Error(), fmt.Sprint(n))
				_, err = mr.AllocateSync(n, DefaultAlignment)
				requireIs(t, err, ErrOutOfMemory)
			}
			if c.deviceMemory {
				_, total, err := r.MemGetInfo()
				require.NoError(t, err)
				n := uintptr(total) + 1<<20
				p, err := mr.Allocate(DefaultStream, n, DefaultAlignment)
				requireIs(t, err, ErrOutOfMemory, "more than the device: ", n)
				requireIs(t, err, cudart.ErrMemoryAllocation)
				assert.Zero(t, p)
				assert.Contains(t, err.Error(), "cudaErrorMemoryAllocation")
			}
			// The resource still works.
			p, err := mr.AllocateSync(4096, DefaultAlignment)
			require.NoError(t, err)
			fillAndCheck(t, r, p, 4096, 0x3C, DefaultStream)
			require.NoError(t, mr.DeallocateSync(p, 4096, DefaultAlignment))
		})
	}
}

func TestBaseResourceDoubleFree(t *testing.T) {
	for _, c := range baseCases {
		t.Run(c.kind, func(t *testing.T) {
			r := c.runtimeFor(t)
			mr := c.build(t, r)
			s := newStream(t, r)

			p, err := mr.Allocate(s, 4096, DefaultAlignment)
			require.NoError(t, err)
			require.NoError(t, mr.Deallocate(s, p, 4096, DefaultAlignment))
			require.NoError(t, r.StreamSynchronize(s))
			err = mr.Deallocate(s, p, 4096, DefaultAlignment)
			requireIs(t, err, ErrInvalidPointer, "second free")
			assert.Contains(t, err.Error(), c.kind)
			require.NoError(t, r.StreamSynchronize(s))

			// A pointer inside a live allocation was never handed out.
			p, err = mr.AllocateSync(1<<16, DefaultAlignment)
			require.NoError(t, err)
			err = mr.DeallocateSync(p+4096, 4096, DefaultAlignment)
			requireIs(t, err, ErrInvalidPointer, "interior pointer")
			fillAndCheck(t, r, p, 1<<16, 0x77, DefaultStream) // still intact
			require.NoError(t, mr.DeallocateSync(p, 1<<16, DefaultAlignment))
		})
	}
}

func TestBaseResourceWrongDevice(t *testing.T) {
	for _, c := range baseCases {
		t.Run(c.kind, func(t *testing.T) {
			r := c.runtimeFor(t)
			requireDevices(t, r, 2)
			var mr Resource
			withDevice(t, r, 0, func() { mr = c.build(t, r) })
			assert.Equal(t, 0, mr.(interface{ Device() int }).Device())

			withDevice(t, r, 1, func() {
				p, err := mr.Allocate(DefaultStream, 4096, DefaultAlignment)
				if !c.deviceBound {
					require.NoError(t, err, "%s memory is not tied to a device", c.kind)
					require.NoError(t, mr.Deallocate(DefaultStream, p, 4096, DefaultAlignment))
					return
				}
				requireIs(t, err, ErrWrongDevice)
				assert.Zero(t, p)
				assert.Contains(t, err.Error(), "made on device 0 but device 1 is current")
				_, err = mr.AllocateSync(4096, DefaultAlignment)
				requireIs(t, err, ErrWrongDevice)
			})

			withDevice(t, r, 0, func() {
				p, err := mr.AllocateSync(4096, DefaultAlignment)
				require.NoError(t, err)
				fillAndCheck(t, r, p, 4096, 0x42, DefaultStream)
				require.NoError(t, mr.DeallocateSync(p, 4096, DefaultAlignment))
			})
		})
	}
}

func TestRejectRequest(t *testing.T) {
	tests := []struct {
		bytes, alignment uintptr
		ok               bool
		want             error
	}{
		{1, 256, true, nil},
		{maxAllocation, 1, true, nil},
		{0, 256, false, nil},
		{0, 0, false, ErrBadAlignment},
		{1, 0, false, ErrBadAlignment},
		{1, 512, false, ErrBadAlignment},
		{maxAllocation + 1, 256, false, ErrOutOfMemory},
		{math.MaxUint64, 3, false, ErrBadAlignment},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.ok, requestOK(tt.bytes, tt.alignment), "requestOK(%d, %d)", tt.bytes, tt.alignment)
		if !tt.ok {
			err := rejectRequest("test", tt.bytes, tt.alignment)
			if tt.want == nil {
				assert.NoError(t, err)
			} else {
				requireIs(t, err, tt.want)
			}
		}
	}
}

func TestFreeErrorClassification(t *testing.T) {
	err := freeError("cuda", 0x1000, cudart.NewError("cudaFree", cudart.ErrorInvalidValue, "invalid argument"))
	requireIs(t, err, ErrInvalidPointer)
	requireIs(t, err, cudart.ErrInvalidValue)
	assert.True(t, strings.Contains(err.Error(), "cudaErrorInvalidValue"), err.Error())
	err = freeError("cuda", 0x1000, cudart.NewError("cudaFree", cudart.ErrorInvalidDevicePointer, ""))
	requireIs(t, err, ErrInvalidPointer)
	err = freeError("cuda", 0x1000, cudart.NewError("cudaFree", cudart.ErrorIllegalAddress, ""))
	requireIs(t, err, ErrCUDA)
	assert.False(t, errors.Is(err, ErrInvalidPointer))
}

// BenchmarkCheckDevice measures the device rule's cost: one GetDevice.
func BenchmarkCheckDevice(b *testing.B) {
	mr, err := NewCuda()
	require.NoError(b, err)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := mr.checkDevice(kindCuda); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaseAllocateDeallocate measures one allocate and free of 1 KiB.
func BenchmarkBaseAllocateDeallocate(b *testing.B) {
	for _, c := range baseCases {
		b.Run(c.kind, func(b *testing.B) {
			r := c.runtimeFor(b)
			mr := c.build(b, r)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				p, err := mr.Allocate(DefaultStream, 1024, DefaultAlignment)
				if err != nil {
					b.Fatal(err)
				}
				if err := mr.Deallocate(DefaultStream, p, 1024, DefaultAlignment); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestBaseResourceEquality(t *testing.T) {
	r := testRuntime(t)
	pr := pageableRuntime(t)
	must := func(mr Resource, err error) Resource {
		t.Helper()
		require.NoError(t, err)
		return mr
	}
	// optional builds a resource the real device may not support; nil then.
	optional := func(mr Resource, err error) Resource {
		t.Helper()
		if errors.Is(err, ErrNotSupported) && !isSimulated(t) {
			return nil
		}
		require.NoError(t, err)
		if c, ok := mr.(interface{ Close() error }); ok {
			t.Cleanup(func() { assert.NoError(t, c.Close()) })
		}
		return mr
	}
	cuda1, cuda2 := must(newCuda(r)), must(newCuda(r))
	managed1, managed2 := must(newManaged(r)), must(newManaged(r))
	pinned1, pinned2 := must(newPinnedHost(r)), must(newPinnedHost(r))
	system1, system2 := must(newSystem(pr)), must(newSystem(pr))
	sam1, sam1b, sam2 := must(newSAMHeadroom(pr, 1<<20)), must(newSAMHeadroom(pr, 1<<20)), must(newSAMHeadroom(pr, 2<<20))
	async1 := optional(newCudaAsync(r, CudaAsyncOptions{}))
	async2 := optional(newCudaAsync(r, CudaAsyncOptions{}))
	amanaged1 := optional(newCudaAsyncManaged(r))
	amanaged2 := optional(newCudaAsyncManaged(r))
	viewOf := func(mr Resource) Resource {
		if mr == nil {
			return nil
		}
		return must(newCudaAsyncView(r, mr.(interface{ PoolHandle() cudart.MemPool }).PoolHandle()))
	}
	view1, view1b, view2, viewM := viewOf(async1), viewOf(async1), viewOf(async2), viewOf(amanaged1)
	var cudaOther Resource
	if n, _ := r.GetDeviceCount(); n > 1 {
		cudaOther = newCudaFor(r, 1)
	}

	tests := []struct {
		name string
		a, b Resource
		want bool
	}{
		{"cuda, cuda", cuda1, cuda2, true},
		{"cuda, cuda of another device", cuda1, cudaOther, true},
		{"managed, managed", managed1, managed2, true},
		{"pinned_host, pinned_host", pinned1, pinned2, true},
		{"system, system", system1, system2, true},
		{"sam_headroom, itself", sam1, sam1, true},
		{"sam_headroom, same headroom", sam1, sam1b, true},
		{"sam_headroom, other headroom", sam1, sam2, false},
		{"cuda_async, itself", async1, async1, true},
		{"cuda_async, another", async1, async2, false},
		{"cuda_async, view of its pool", async1, view1, true},
		{"cuda_async, view of another pool", async1, view2, false},
		{"views of one pool", view1, view1b, true},
		{"views of two pools", view1, view2, false},
		{"cuda_async_managed, itself", amanaged1, amanaged1, true},
		{"cuda_async_managed, another", amanaged1, amanaged2, false},
		{"cuda_async_managed, view of its pool", amanaged1, viewM, true},
		{"cuda, managed", cuda1, managed1, false},
		{"cuda, pinned_host", cuda1, pinned1, false},
		{"managed, pinned_host", managed1, pinned1, false},
		{"system, sam_headroom", system1, sam1, false},
		{"system, pinned_host", system1, pinned1, false},
		{"cuda, cuda_async", cuda1, async1, false},
		{"cuda, cuda_async_view", cuda1, view1, false},
		{"cuda_async, cuda_async_managed", async1, amanaged1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.a == nil || tt.b == nil {
				t.Skip("a resource is not available here")
			}
			assert.Equal(t, tt.want, tt.a.Equal(tt.b), "a.Equal(b)")
			assert.Equal(t, tt.want, tt.b.Equal(tt.a), "b.Equal(a)")
		})
	}
}

func TestBasePointerAttributes(t *testing.T) {
	want := map[string]cudart.MemoryType{
		"cuda":               cudart.MemoryTypeDevice,
		"managed":            cudart.MemoryTypeManaged,
		"pinned_host":        cudart.MemoryTypeHost,
		"cuda_async":         cudart.MemoryTypeDevice,
		"cuda_async_view":    cudart.MemoryTypeDevice,
		"cuda_async_managed": cudart.MemoryTypeManaged,
	}
	for _, c := range baseCases {
		typ, ok := want[c.kind]
		if !ok {
			continue // system memory: the runtime's answer depends on HMM/ATS
		}
		t.Run(c.kind, func(t *testing.T) {
			r := c.runtimeFor(t)
			mr := c.build(t, r)
			p, err := mr.AllocateSync(1<<16, DefaultAlignment)
			require.NoError(t, err)
			defer func() { require.NoError(t, mr.DeallocateSync(p, 1<<16, DefaultAlignment)) }()
			attrs, err := r.PointerGetAttributes(p)
			require.NoError(t, err)
			assert.Equal(t, typ, attrs.Type)
			if typ == cudart.MemoryTypeDevice {
				dev, err := r.GetDevice()
				require.NoError(t, err)
				assert.Equal(t, dev, attrs.Device)
			}
		})
	}
}
