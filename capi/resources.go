package main

/*
#include "capi_internal.h"
*/
import "C"

import (
	"fmt"
	"io"
	"unsafe"

	"github.com/rmmgo/rmmgo/core"
)

// Resources: creation, references, allocation and queries.

// readOptions copies the part of the caller's options that its struct_size
// covers over the defaults; fields a newer library added keep their
// defaults. A struct_size outside the rule of options.c is refused (false,
// with the thread's message set) before anything is read.
func readOptions(fn string, o *C.rmmgo_const_options) (C.rmm_resource_options, bool) {
	var opts C.rmm_resource_options
	C.rmmgo_options_defaults(&opts)
	if o == nil {
		return opts, true
	}
	size := uintptr(o.struct_size)
	if !checkStructSize(fn, "options->struct_size", size, C.RMMGO_OPTIONS_MIN_SIZE, "set it with rmm_resource_options_init") {
		return opts, false
	}
	n := min(size, unsafe.Sizeof(opts))
	src := unsafe.Slice((*byte)(unsafe.Pointer(o)), n)
	dst := unsafe.Slice((*byte)(unsafe.Pointer(&opts)), n)
	copy(dst, src)
	opts.struct_size = C.size_t(unsafe.Sizeof(opts))
	return opts, true
}

//export rmm_resource_create
func rmm_resource_create(kind C.rmm_resource_kind, options *C.rmmgo_const_options, out *C.rmm_resource_t) (st status) {
	fn := "rmm_resource_create"
	defer recoverTo(fn, &st)
	spec := kindsByEnum[kind]
	if spec != nil {
		fn += "(" + spec.name + ")"
	}
	if out == nil {
		return invalid(fn, "out is NULL")
	}
	if spec == nil {
		return invalid(fn, "%d is not an rmm_resource_kind", int(kind))
	}
	opts, ok := readOptions(fn, options)
	if !ok {
		return statusInvalidArgument
	}
	if options == nil && spec.upstream {
		return invalid(fn, "a %s resource needs options with an upstream", spec.name)
	}
	if options == nil && spec.needsOptions {
		return invalid(fn, "a %s resource needs options (see rmm_resource_options)", spec.name)
	}
	e, err := createResource(spec, &opts)
	if err != nil {
		return fail(fn, err, statusBadAlloc)
	}
	putHandle(out, e)
	return statusSuccess
}

// createResource makes a resource of spec's kind from the options o and
// registers it with one reference.
func createResource(spec *kindSpec, o *C.rmm_resource_options) (*entry, error) {
	r, err := runtimeOrFail()
	if err != nil {
		return nil, err
	}
	dev, err := r.GetDevice()
	if err != nil {
		return nil, err
	}
	args := &createArgs{o: o}
	var up *entry
	if spec.upstream {
		if o.upstream == nil {
			return nil, fmt.Errorf("%w: options.upstream is NULL", core.ErrInvalidArgument)
		}
		e, err := reg.get(handleValue(o.upstream))
		if err != nil {
			return nil, fmt.Errorf("options.upstream: %w", err)
		}
		if !e.tryRetain() {
			return nil, fmt.Errorf("options.upstream: %w: released while in use", errInvalidHandle)
		}
		up, args.upstream = e, e.res
	}
	res, err := spec.make(args)
	if err != nil {
		if up != nil {
			_ = reg.releaseEntry(up)
		}
		return nil, err
	}
	var deps []*entry
	if up != nil {
		deps = []*entry{up}
	}
	e, err := reg.add(res, true, dev, deps)
	if err != nil {
		closeQuietly(res)
		if up != nil {
			_ = reg.releaseEntry(up)
		}
		return nil, err
	}
	return e, nil
}

// closeQuietly closes res if it is an io.Closer (after a failure, when the
// first error is the one to report).
func closeQuietly(res core.Resource) {
	if c, ok := res.(io.Closer); ok {
		_ = c.Close()
	}
}

//export rmm_resource_retain
func rmm_resource_retain(mr C.rmm_resource_t) (st status) {
	const fn = "rmm_resource_retain"
	defer recoverTo(fn, &st)
	if err := reg.retain(handleValue(mr)); err != nil {
		return fail(fn, err, statusInvalidHandle)
	}
	return statusSuccess
}

//export rmm_resource_release
func rmm_resource_release(mr C.rmm_resource_t) (st status) {
	const fn = "rmm_resource_release"
	defer recoverTo(fn, &st)
	if err := reg.release(handleValue(mr)); err != nil {
		return fail(fn, err, statusInternal)
	}
	return statusSuccess
}

// rmm_allocate, rmm_deallocate and rmm_deallocate_sync are C functions
// (thread_cache.c) over the per-thread cache; their uncached Go halves are
// in thread_cache.go.

//export rmm_allocate_sync
func rmm_allocate_sync(mr C.rmm_resource_t, bytes, alignment C.size_t, ptr *unsafe.Pointer) (st status) {
	defer recoverTo("rmm_allocate_sync", &st)
	if ptr == nil {
		return invalid("rmm_allocate_sync", "ptr is NULL")
	}
	e, ok := reg.lookup(handleValue(mr))
	if !ok {
		return badHandle("rmm_allocate_sync", mr)
	}
	p, err := e.res.AllocateSync(uintptr(bytes), uintptr(alignment))
	if err != nil || (p == 0 && bytes != 0) {
		return allocFailed("rmm_allocate_sync", e, bytes, alignment, err)
	}
	putPointer(ptr, p)
	return statusSuccess
}

// allocFailed reports a failed allocation: err, or a resource that
// returned no memory and no error for a request of bytes > 0 (a bug in that
// resource, never passed on to C as a NULL success).
func allocFailed(fn string, e *entry, bytes, alignment C.size_t, err error) status {
	fn = fmt.Sprintf("%s(%d bytes, alignment %d)", fn, bytes, alignment)
	if err == nil {
		err = fmt.Errorf("%w: the %s resource returned no memory and no error", errInternal, e.res.Kind())
	}
	noteOutOfMemory(err) // oom.go
	return fail(fn, err, statusBadAlloc)
}

// badHandle reports a failed lookup of mr (the slow path of a failure).
func badHandle(fn string, mr C.rmm_resource_t) status {
	_, err := reg.get(handleValue(mr))
	if err == nil { // released and made live again in between: still a misuse
		err = fmt.Errorf("%w: %#x", errInvalidHandle, handleValue(mr))
	}
	return fail(fn, err, statusInvalidHandle)
}

// lookupFor is the lookup of the query functions.
func lookupFor(fn string, mr C.rmm_resource_t) (*entry, status) {
	e, err := reg.get(handleValue(mr))
	if err != nil {
		return nil, fail(fn, err, statusInvalidHandle)
	}
	return e, statusSuccess
}

//export rmm_resource_has_property
func rmm_resource_has_property(mr C.rmm_resource_t, property C.rmm_property, has *C.int) (st status) {
	const fn = "rmm_resource_has_property"
	defer recoverTo(fn, &st)
	if has == nil {
		return invalid(fn, "has is NULL")
	}
	e, st := lookupFor(fn, mr)
	if st != statusSuccess {
		return st
	}
	var p core.Properties
	switch property {
	case C.RMM_PROPERTY_DEVICE_ACCESSIBLE:
		p = core.DeviceAccessible
	case C.RMM_PROPERTY_HOST_ACCESSIBLE:
		p = core.HostAccessible
	default:
		return invalid(fn, "%d is not an rmm_property", int(property))
	}
	*has = 0
	if e.res.Properties().Has(p) {
		*has = 1
	}
	return statusSuccess
}

//export rmm_resource_is_equal
func rmm_resource_is_equal(a, b C.rmm_resource_t, equal *C.int) (st status) {
	const fn = "rmm_resource_is_equal"
	defer recoverTo(fn, &st)
	if equal == nil {
		return invalid(fn, "equal is NULL")
	}
	ea, st := lookupFor(fn+": a", a)
	if st != statusSuccess {
		return st
	}
	eb, st := lookupFor(fn+": b", b)
	if st != statusSuccess {
		return st
	}
	*equal = 0
	if ea == eb || ea.res.Equal(eb.res) {
		*equal = 1
	}
	return statusSuccess
}

//export rmm_resource_kind_of
func rmm_resource_kind_of(mr C.rmm_resource_t, kind *C.rmm_resource_kind) (st status) {
	const fn = "rmm_resource_kind_of"
	defer recoverTo(fn, &st)
	if kind == nil {
		return invalid(fn, "kind is NULL")
	}
	e, st := lookupFor(fn, mr)
	if st != statusSuccess {
		return st
	}
	k := kindOf(e.res)
	if k == nil {
		return fail(fn, fmt.Errorf("%w: the resource's kind %q (made in Go) has no rmm_resource_kind value", core.ErrNotSupported, e.res.Kind()), statusNotSupported)
	}
	*kind = k.kind
	return statusSuccess
}

//export rmm_resource_name
func rmm_resource_name(mr C.rmm_resource_t, name *C.rmmgo_cstr) (st status) {
	const fn = "rmm_resource_name"
	defer recoverTo(fn, &st)
	if name == nil {
		return invalid(fn, "name is NULL")
	}
	e, st := lookupFor(fn, mr)
	if st != statusSuccess {
		return st
	}
	*name = C.rmmgo_cstr(className(e.res))
	return statusSuccess
}

// deviceOf finds the device of res: its own (base resources), else its
// upstream's, down the chain.
func deviceOf(res core.Resource) (int, bool) {
	for i := 0; res != nil && i < 1000; i++ {
		if d, ok := res.(interface{ Device() int }); ok {
			return d.Device(), true
		}
		a, ok := res.(core.Adaptor)
		if !ok {
			return 0, false
		}
		res = a.Upstream()
	}
	return 0, false
}

//export rmm_resource_device
func rmm_resource_device(mr C.rmm_resource_t, device *C.int) (st status) {
	const fn = "rmm_resource_device"
	defer recoverTo(fn, &st)
	if device == nil {
		return invalid(fn, "device is NULL")
	}
	e, st := lookupFor(fn, mr)
	if st != statusSuccess {
		return st
	}
	if d, ok := deviceOf(e.res); ok {
		*device = C.int(d)
		return statusSuccess
	}
	if e.device >= 0 {
		*device = C.int(e.device)
		return statusSuccess
	}
	return fail(fn, fmt.Errorf("%w: the %s resource does not know its device", core.ErrNotSupported, e.res.Kind()), statusNotSupported)
}

//export rmm_resource_upstream
func rmm_resource_upstream(mr C.rmm_resource_t, upstream *C.rmm_resource_t) (st status) {
	const fn = "rmm_resource_upstream"
	defer recoverTo(fn, &st)
	if upstream == nil {
		return invalid(fn, "upstream is NULL")
	}
	e, st := lookupFor(fn, mr)
	if st != statusSuccess {
		return st
	}
	a, ok := e.res.(core.Adaptor)
	if !ok || a.Upstream() == nil {
		return invalid(fn, "a %s resource has no upstream", e.res.Kind())
	}
	u, err := reg.handleFor(a.Upstream())
	if err != nil {
		return fail(fn, err, statusInternal)
	}
	putHandle(upstream, u)
	return statusSuccess
}
