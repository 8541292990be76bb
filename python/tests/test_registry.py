"""One registry with C: what C sets current, Python sees, and the other way round.

"C" here is the library's C API called directly through ctypes, with no
rmmgo Python object involved, as a C or C++ program in the same process
would call it.
"""

import gc
import ctypes
from ctypes import byref, c_int, c_void_p

import pytest

import rmmgo as rmm
from rmmgo import _bindings as b
from rmmgo import mr
from conftest import require_devices

lib = b.lib
Kind = b.ResourceKind


def c_create(kind, **fields):
    opts = b.ResourceOptions()
    lib.rmm_resource_options_init_sized(byref(opts), ctypes.sizeof(opts))
    for k, v in fields.items():
        setattr(opts, k, v)
    out = c_void_p()
    lib.rmm_resource_create(int(kind), byref(opts), byref(out))
    return out.value


def c_current():
    out = c_void_p()
    lib.rmm_get_current_device_resource(byref(out))
    return out.value


def c_kind(h):
    k = c_int()
    lib.rmm_resource_kind_of(h, byref(k))
    return k.value


def test_python_sets_c_sees():
    stats = mr.StatisticsResourceAdaptor(mr.CudaMemoryResource())
    mr.set_current_device_resource(stats)
    h = c_current()
    try:
        assert h == stats.handle
        assert c_kind(h) == Kind.STATISTICS
        # C allocates through the current resource; Python's counters see it.
        p = c_void_p()
        lib.rmm_allocate(h, None, 1234, 256, byref(p))
        assert stats.allocation_counts.current_bytes == 1234
        lib.rmm_deallocate(h, None, p, 1234, 256)
        assert stats.allocation_counts.current_bytes == 0
    finally:
        lib.rmm_resource_release(h)


def test_c_sets_python_sees():
    up = c_create(Kind.CUDA)
    h = c_create(Kind.LIMITING, upstream=up, allocation_limit=1 << 20)
    lib.rmm_resource_release(up)  # the adaptor holds its own reference
    lib.rmm_set_current_device_resource(h, None)
    lib.rmm_resource_release(h)  # the per-device slot holds its own
    got = mr.get_current_device_resource()
    assert type(got) is mr.LimitingResourceAdaptor
    assert got.handle == h
    assert got.get_allocation_limit() == 1 << 20
    assert type(got.upstream_mr) is mr.CudaMemoryResource
    # The same handle gives back the same object while it lives.
    assert mr.get_current_device_resource() is got
    buf = rmm.DeviceBuffer(size=1000)
    assert buf.mr is got and got.get_allocated_bytes() == 1024
    with pytest.raises(MemoryError):
        rmm.DeviceBuffer(size=2 << 20)


def test_python_getter_returns_the_object_set():
    pool_like = mr.StatisticsResourceAdaptor(mr.ManagedMemoryResource())
    mr.set_current_device_resource(pool_like)
    assert mr.get_current_device_resource() is pool_like
    h = pool_like.handle
    del pool_like
    gc.collect()
    # Python keeps the object it set alive while it is current, as RMM does.
    again = mr.get_current_device_resource()
    assert again.handle == h and type(again) is mr.StatisticsResourceAdaptor


def test_c_replacing_the_resource_is_seen():
    a = mr.StatisticsResourceAdaptor(mr.CudaMemoryResource())
    mr.set_current_device_resource(a)
    h = c_create(Kind.MANAGED)
    prev = c_void_p()
    lib.rmm_set_current_device_resource(h, byref(prev))
    assert prev.value == a.handle
    lib.rmm_resource_release(prev.value)
    lib.rmm_resource_release(h)
    got = mr.get_current_device_resource()
    assert type(got) is mr.ManagedMemoryResource and got.handle == h


def test_per_device_resources_are_shared():
    require_devices(2)
    lib.rmm_set_device(1)
    try:
        res = mr.CudaMemoryResource()
        assert res.device == 1
    finally:
        lib.rmm_set_device(0)
    mr.set_per_device_resource(1, res)
    out = c_void_p()
    lib.rmm_get_per_device_resource(1, byref(out))
    assert out.value == res.handle
    lib.rmm_resource_release(out.value)
    assert mr.get_per_device_resource(1) is res
    assert mr.get_per_device_resource(0) is not res
    prev = mr.reset_per_device_resource(1)
    assert prev is res
    assert mr.get_per_device_resource(1).handle != res.handle


def test_default_resource_is_cuda():
    got = mr.get_current_device_resource()
    assert type(got) is mr.CudaMemoryResource


def test_reset_returns_previous():
    s = mr.StatisticsResourceAdaptor(mr.CudaMemoryResource())
    mr.set_current_device_resource(s)
    assert mr.reset_current_device_resource() is s
    assert type(mr.get_current_device_resource()) is mr.CudaMemoryResource


def test_from_handle_takes_its_own_reference():
    h = c_create(Kind.CUDA)
    obj = mr.from_handle(h)
    assert mr.from_handle(h) is obj
    lib.rmm_resource_release(h)  # C's reference; the object still holds one
    assert obj.allocate(0) == 0
    p = obj.allocate(100)
    obj.deallocate(p, 100)
    del obj
    gc.collect()
    with pytest.raises(RuntimeError):
        lib.rmm_resource_retain(h)


def test_handles_released_exactly_once():
    res = mr.TrackingResourceAdaptor(mr.CudaMemoryResource())
    h = res.handle
    up = res.upstream_mr.handle
    lib.rmm_resource_retain(h)  # C takes a reference of its own
    del res
    gc.collect()
    # Python gave back its one reference: C's is still good ...
    lib.rmm_resource_retain(h)
    lib.rmm_resource_release(h)
    # ... and the last release ends it (a second Python release would have
    # made this one fail).
    lib.rmm_resource_release(h)
    with pytest.raises(RuntimeError):
        lib.rmm_resource_retain(h)
    with pytest.raises(RuntimeError):
        lib.rmm_resource_retain(up)


def test_objects_for_every_kind_round_trip_through_c():
    factories = [
        lambda: mr.CudaMemoryResource(),
        lambda: mr.ManagedMemoryResource(),
        lambda: mr.PinnedHostMemoryResource(),
        lambda: mr.CudaAsyncMemoryResource(),
        lambda: mr.StatisticsResourceAdaptor(mr.CudaMemoryResource()),
        lambda: mr.TrackingResourceAdaptor(mr.CudaMemoryResource()),
        lambda: mr.LimitingResourceAdaptor(mr.CudaMemoryResource(), 1 << 20),
        lambda: mr.AlignedResourceAdaptor(mr.CudaMemoryResource()),
        lambda: mr.ThreadSafeResourceAdaptor(mr.CudaMemoryResource()),
        lambda: mr.PrefetchResourceAdaptor(mr.CudaMemoryResource()),
        lambda: mr.CallbackMemoryResource(lambda n, s: 0, lambda p, n, s: None),
    ]
    for make in factories:
        res = make()
        cls, h = type(res), res.handle
        lib.rmm_resource_retain(h)  # C keeps it; Python forgets it entirely
        del res
        gc.collect()
        lib.rmm_set_current_device_resource(h, None)
        lib.rmm_resource_release(h)
        back = mr.get_current_device_resource()
        assert type(back) is cls and back.handle == h
        if isinstance(back, mr.UpstreamResourceAdaptor):
            assert type(back.upstream_mr) is mr.CudaMemoryResource
        del back
        mr.reset_current_device_resource()


def test_kept_current_resource_follows_c_at_once():
    # Python keeps the current resource by token (rmm_current_resource_token);
    # a change made from C, with no Python call in between, is honoured by
    # the very next DeviceBuffer().
    a = mr.StatisticsResourceAdaptor(mr.CudaMemoryResource())
    mr.set_current_device_resource(a)
    assert rmm.DeviceBuffer(size=10).mr is a
    assert rmm.DeviceBuffer(size=10).mr is a
    h = c_create(Kind.STATISTICS, upstream=a.upstream_mr.handle)
    lib.rmm_set_current_device_resource(h, None)
    lib.rmm_resource_release(h)
    buf = rmm.DeviceBuffer(size=10)
    assert buf.mr.handle == h and a.allocation_counts.current_count == 0
    del buf
    lib.rmm_reset_current_device_resource(None)
    assert type(rmm.DeviceBuffer(size=10).mr) is mr.CudaMemoryResource
    assert type(mr.get_current_device_resource()) is mr.CudaMemoryResource


def test_kept_current_resource_follows_the_device():
    require_devices(2)
    zero = mr.StatisticsResourceAdaptor(mr.CudaMemoryResource())
    mr.set_per_device_resource(0, zero)
    lib.rmm_set_device(1)
    try:
        one = mr.StatisticsResourceAdaptor(mr.CudaMemoryResource())
        mr.set_per_device_resource(1, one)
        assert rmm.DeviceBuffer(size=10).mr is one
        lib.rmm_set_device(0)  # from C: Python is not told
        assert rmm.DeviceBuffer(size=10).mr is zero
        lib.rmm_set_device(1)
        assert rmm.DeviceBuffer(size=10).mr is one
        assert mr.get_current_device_resource() is one
    finally:
        lib.rmm_set_device(0)
    assert mr.get_current_device_resource() is zero


def test_a_resource_of_another_device_is_refused():
    # RMM leaves it undefined (per_device_resource.hpp: the resource must
    # have been made with that device current); rmmgo refuses it, as
    # docs/rmm-compatibility.md says. Resources of no device are accepted.
    require_devices(2)
    lib.rmm_set_device(1)
    try:
        one = mr.StatisticsResourceAdaptor(mr.CudaMemoryResource())
    finally:
        lib.rmm_set_device(0)
    before = mr.get_per_device_resource(0)
    for set_it in (lambda: mr.set_per_device_resource(0, one), lambda: mr.set_current_device_resource(one)):
        with pytest.raises(RuntimeError) as info:
            set_it()
        assert info.value.status == b.Status.ERROR_WRONG_DEVICE
        assert "belongs to device 1" in str(info.value)
        assert mr.get_per_device_resource(0) is before
    pinned = mr.PinnedHostMemoryResource()
    mr.set_per_device_resource(1, pinned)
    try:
        assert mr.get_per_device_resource(1) is pinned
    finally:
        mr.reset_per_device_resource(1)


def test_kept_current_resource_is_let_go():
    import weakref

    # Set from C and wrapped by Python: once C replaces it, the next lookup
    # drops Python's object, and with it the last reference to the resource.
    h = c_create(Kind.CUDA)
    lib.rmm_set_current_device_resource(h, None)
    lib.rmm_resource_release(h)
    wrapper = weakref.ref(rmm.DeviceBuffer(size=10).mr)
    gc.collect()
    assert wrapper() is not None  # kept while current
    lib.rmm_reset_current_device_resource(None)
    rmm.DeviceBuffer(size=10)
    gc.collect()
    assert wrapper() is None
    with pytest.raises(RuntimeError):
        lib.rmm_resource_retain(h)
    # Set from Python: replacing it from Python lets it go at once.
    s = mr.StatisticsResourceAdaptor(mr.CudaMemoryResource())
    mr.set_current_device_resource(s)
    rmm.DeviceBuffer(size=10)
    ref = weakref.ref(s)
    del s
    mr.reset_current_device_resource()
    gc.collect()
    assert ref() is None
