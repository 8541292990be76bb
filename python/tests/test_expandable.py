"""rmm.mr.ExpandableMemoryResource: one reserved address range, mapped in granules."""

import pytest

import rmmgo as rmm
from rmmgo import _bindings as b
from rmmgo import mr

MiB = 1 << 20


def test_kind_name_and_buffers():
    e = mr.ExpandableMemoryResource(maximum_pool_size="64MiB")
    assert mr.from_handle(e._handle) is e
    assert e.pool_size() == 0 and e.used_bytes() == 0
    buf = rmm.DeviceBuffer(size=4096, mr=e)
    buf.copy_from_host(b"\x33" * 4096)
    assert buf.tobytes() == b"\x33" * 4096
    assert e.used_bytes() == 4096
    assert e.pool_size() >= 2 * MiB
    del buf
    assert e.used_bytes() == 0
    e.release()
    assert e.pool_size() == 0


def test_current_device_resource_round_trip():
    e = mr.ExpandableMemoryResource()
    prev = mr.get_current_device_resource()
    mr.set_current_device_resource(e)
    try:
        assert mr.get_current_device_resource() is e
        assert mr.get_current_device_resource_type() is mr.ExpandableMemoryResource
        buf = rmm.DeviceBuffer(size=1 << 20)
        assert e.used_bytes() == 1 << 20
        del buf
    finally:
        mr.set_current_device_resource(prev)


def test_fragmentation_both_serve():
    """The issue's case: 512 MiB at most, 100 blocks of 4 MiB, every other freed, then 150 MiB.

    The expandable resource maps the request beside its live blocks; the pool
    gives back its wholly free chunks before it grows, so its maximum has room.
    """

    def scenario(res):
        ptrs = [res.allocate(4 * MiB) for _ in range(100)]
        for p in ptrs[1::2]:
            res.deallocate(p, 4 * MiB)
        try:
            big = res.allocate(150 * MiB)
        except MemoryError:
            big = None
        for p in ptrs[::2]:
            res.deallocate(p, 4 * MiB)
        if big is not None:
            res.deallocate(big, 150 * MiB)
        return big

    pool = mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size=0, maximum_pool_size="512MiB")
    assert scenario(pool) is not None
    assert pool.pool_size() <= 512 * MiB
    del pool
    e = mr.ExpandableMemoryResource(maximum_pool_size="512MiB")
    assert scenario(e) is not None
    assert e.pool_size() <= 512 * MiB
    e.release()
    assert e.pool_size() == 0


def test_maximum_and_threshold():
    e = mr.ExpandableMemoryResource(maximum_pool_size="8MiB", release_threshold="4MiB")
    p = e.allocate(8 * MiB)
    with pytest.raises(MemoryError):
        e.allocate(256)
    e.deallocate(p, 8 * MiB)
    q = e.allocate(6 * MiB)
    e.deallocate(q, 6 * MiB)


@pytest.mark.parametrize("kwargs", [dict(maximum_pool_size=1000), dict(maximum_pool_size="1MiB"), dict(maximum_pool_size=0)])
def test_bad_sizes_are_logic_errors(kwargs):
    with pytest.raises(RuntimeError) as info:
        mr.ExpandableMemoryResource(**kwargs)
    assert isinstance(info.value, ValueError) and isinstance(info.value, rmm.RMMError)


def test_kind_value():
    assert b.ResourceKind.EXPANDABLE == 24


@pytest.mark.parametrize("make", [
    lambda: mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size=0),
    lambda: mr.ExpandableMemoryResource(),
])
def test_peak_pool_size_stays_after_release(make):
    res = make()
    p = res.allocate(8 * MiB)
    q = res.allocate(8 * MiB)
    peak = res.peak_pool_size()
    assert peak >= 16 * MiB and peak == res.pool_size()
    res.deallocate(p, 8 * MiB)
    res.deallocate(q, 8 * MiB)
    res.release()
    assert res.pool_size() == 0
    assert res.peak_pool_size() == peak
