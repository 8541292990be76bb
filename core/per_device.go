package core

import (
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/rmmgo/rmmgo/cudart"
)

// Per-device current resources, like RMM's get/set/reset_per_device_resource
// and get/set/reset_current_device_resource. The process has one table,
// shared by Go callers and by the C ABI (and so by C, C++ and Python).
//
// Each device's slot starts out holding its initial resource, a *Cuda for
// that device, made on first use. Setters store a resource and return the
// one they replaced; resetters restore the initial resource. All six
// functions are safe for concurrent use: writers take one mutex, readers
// only load the slot atomically.

// deviceTable is the per-device table, made on first use.
type deviceTable struct {
	mu      sync.Mutex // serializes writers
	rt      cudart.Runtime
	current []atomic.Pointer[resourceBox] // nil slot: the initial resource, not made yet
	initial []*Cuda                       // made on first use, under mu
}

// resourceBox lets an interface value live behind an atomic pointer.
type resourceBox struct{ r Resource }

var (
	tableMu sync.Mutex
	table   atomic.Pointer[deviceTable]
)

// devices returns the table, making it on first use.
func devices() (*deviceTable, error) {
	if t := table.Load(); t != nil {
		return t, nil
	}
	tableMu.Lock()
	defer tableMu.Unlock()
	if t := table.Load(); t != nil {
		return t, nil
	}
	r, err := rt()
	if err != nil {
		return nil, err
	}
	n, err := r.GetDeviceCount()
	if err != nil {
		return nil, cudaError("per-device resources: counting devices", err)
	}
	t := &deviceTable{
		rt:      r,
		current: make([]atomic.Pointer[resourceBox], n),
		initial: make([]*Cuda, n),
	}
	table.Store(t)
	return t, nil
}

// slot returns the table and checks dev.
func slot(dev int) (*deviceTable, error) {
	t, err := devices()
	if err != nil {
		return nil, err
	}
	if dev < 0 || dev >= len(t.current) {
		return nil, fmt.Errorf("per-device resource: %w: device %d does not exist (there are %d devices)",
			ErrInvalidArgument, dev, len(t.current))
	}
	return t, nil
}

// initialFor returns device dev's initial resource. t.mu must be held.
func (t *deviceTable) initialFor(dev int) *Cuda {
	if t.initial[dev] == nil {
		t.initial[dev] = newCudaFor(t.rt, dev)
	}
	return t.initial[dev]
}

// swap stores r (the initial resource when r is nil) in dev's slot and
// returns what was there.
func (t *deviceTable) swap(dev int, r Resource) Resource {
	t.mu.Lock()
	defer t.mu.Unlock()
	var prev Resource
	if b := t.current[dev].Load(); b != nil {
		prev = b.r
	} else {
		prev = t.initialFor(dev)
	}
	if r == nil {
		r = t.initialFor(dev)
	}
	t.current[dev].Store(&resourceBox{r})
	return prev
}

// currentDevice returns the calling thread's current device.
func currentDevice() (int, error) {
	r, err := rt()
	if err != nil {
		return 0, err
	}
	dev, err := r.GetDevice()
	if err != nil {
		return 0, cudaError("per-device resource: reading the current device", err)
	}
	return dev, nil
}

// PerDeviceResource returns device dev's current resource: the one last set
// for it, or its initial *Cuda resource. An unknown device is an error
// wrapping ErrInvalidArgument.
func PerDeviceResource(dev int) (Resource, error) {
	t, err := slot(dev)
	if err != nil {
		return nil, err
	}
	if b := t.current[dev].Load(); b != nil {
		return b.r, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if b := t.current[dev].Load(); b != nil {
		return b.r, nil
	}
	r := t.initialFor(dev)
	t.current[dev].Store(&resourceBox{r})
	return r, nil
}

// SetPerDeviceResource makes r device dev's current resource and returns the
// previous one (the initial *Cuda resource if none was set). A nil r, or an
// unknown device, is an error wrapping ErrInvalidArgument; a resource that
// belongs to another device (one made with another device current, or an
// adaptor over one) is an error wrapping ErrWrongDevice, since RMM's rule is
// that a resource is used with the device it was made on current. Resources
// tied to no device (pinned host and system memory, callbacks, resources of
// a Go caller's own without a Device method) may be set for any device.
//
// The table keeps r until it is replaced.
func SetPerDeviceResource(dev int, r Resource) (prev Resource, err error) {
	if isNil(r) {
		return nil, fmt.Errorf("per-device resource: %w: the resource for device %d is nil", ErrInvalidArgument, dev)
	}
	t, err := slot(dev)
	if err != nil {
		return nil, err
	}
	if own, ok := boundDevice(r); ok && own != dev {
		return nil, fmt.Errorf("per-device resource: %w: the %s resource belongs to device %d and cannot be device %d's resource",
			ErrWrongDevice, r.Kind(), own, dev)
	}
	return t.swap(dev, r), nil
}

// boundDevice reports the device whose memory r hands out: the device of
// the first resource down its chain of upstreams that records one (base
// resources and sub-allocators, which use that device's streams and events).
// Pinned host and system memory serve every device, so a chain that reaches
// them before any such resource, or that ends without one, is tied to none.
func boundDevice(r Resource) (int, bool) {
	for range maxChainDepth {
		switch r.(type) {
		case *PinnedHost, *System:
			return 0, false
		}
		if d, ok := r.(interface{ Device() int }); ok {
			return d.Device(), true
		}
		a, ok := r.(Adaptor)
		if !ok || isNil(a.Upstream()) {
			return 0, false
		}
		r = a.Upstream()
	}
	return 0, false
}

// maxChainDepth bounds walks down chains of upstreams, which the
// constructors keep free of cycles; no real chain is a fraction as deep.
const maxChainDepth = 1 << 10

// ResetPerDeviceResource restores device dev's initial resource and returns
// the previous one.
func ResetPerDeviceResource(dev int) (prev Resource, err error) {
	t, err := slot(dev)
	if err != nil {
		return nil, err
	}
	return t.swap(dev, nil), nil
}

// CurrentDeviceResource is PerDeviceResource for the calling thread's
// current device. Go code that changed the current device must hold its
// goroutine on its OS thread (runtime.LockOSThread) for this to see it.
func CurrentDeviceResource() (Resource, error) {
	dev, err := currentDevice()
	if err != nil {
		return nil, err
	}
	return PerDeviceResource(dev)
}

// SetCurrentDeviceResource is SetPerDeviceResource for the calling thread's
// current device.
func SetCurrentDeviceResource(r Resource) (prev Resource, err error) {
	if isNil(r) {
		return nil, fmt.Errorf("per-device resource: %w: the resource is nil", ErrInvalidArgument)
	}
	dev, err := currentDevice()
	if err != nil {
		return nil, err
	}
	return SetPerDeviceResource(dev, r)
}

// ResetCurrentDeviceResource is ResetPerDeviceResource for the calling
// thread's current device.
func ResetCurrentDeviceResource() (prev Resource, err error) {
	dev, err := currentDevice()
	if err != nil {
		return nil, err
	}
	return ResetPerDeviceResource(dev)
}

// isNil reports whether r is nil or a nil pointer in an interface.
func isNil(r Resource) bool {
	if r == nil {
		return true
	}
	v := reflect.ValueOf(r)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
