"""DeviceBuffer: allocation, copies, lifetimes, RMM's interface."""

import array
import copy
import gc
import pickle

import pytest

import rmmgo as rmm
from rmmgo import mr

try:
    import numpy as np
except ImportError:  # the package works without NumPy; so do most tests
    np = None

needs_numpy = pytest.mark.skipif(np is None, reason="needs numpy")


@pytest.fixture
def stats_mr():
    s = mr.StatisticsResourceAdaptor(mr.CudaMemoryResource())
    mr.set_current_device_resource(s)
    return s


def test_empty_buffer_allocates_nothing(stats_mr):
    buf = rmm.DeviceBuffer()
    assert buf.size == 0 and buf.ptr == 0 and len(buf) == 0 and buf.nbytes == 0
    assert buf.tobytes() == b""
    assert stats_mr.allocation_counts.total_count == 0


@pytest.mark.parametrize("size", [1, 255, 256, 4097, 1 << 20])
def test_allocates_from_the_current_resource(stats_mr, size):
    buf = rmm.DeviceBuffer(size=size)
    assert buf.size == size and len(buf) == size and buf.nbytes == size
    assert buf.ptr % 256 == 0 and buf.ptr != 0
    assert buf.mr is stats_mr
    c = stats_mr.allocation_counts
    assert (c.current_bytes, c.current_count) == (size, 1)
    del buf
    c = stats_mr.allocation_counts
    assert (c.current_bytes, c.current_count, c.total_bytes) == (0, 0, size)


def test_explicit_resource_and_stream():
    pool = mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size=1 << 20)
    s = rmm.Stream()
    buf = rmm.DeviceBuffer(size=1000, stream=s, mr=pool)
    assert buf.mr is pool and buf.stream is s
    assert pool.used_bytes() >= 1000


def test_stream_none_is_type_error():
    with pytest.raises(TypeError):
        rmm.DeviceBuffer(size=8, stream=None)


def test_negative_size_is_overflow_error():
    with pytest.raises(OverflowError):
        rmm.DeviceBuffer(size=-1)


def test_buffer_keeps_its_resource_alive():
    up = mr.CudaMemoryResource()
    stats = mr.StatisticsResourceAdaptor(up)
    buf = rmm.DeviceBuffer(size=4096, mr=stats)
    handle = stats.handle
    del stats, up
    gc.collect()
    assert buf.mr.handle == handle
    assert buf.mr.allocation_counts.current_bytes == 4096
    buf.copy_from_host(b"x" * 4096)
    assert buf.tobytes() == b"x" * 4096
    s = buf.mr
    del buf
    gc.collect()
    assert s.allocation_counts.current_bytes == 0


@pytest.mark.parametrize(
    "host",
    [b"hello device", bytearray(b"\x00\x01\x02\xff" * 300), memoryview(b"abc" * 1000), array.array("B", range(100))],
)
def test_round_trip_without_numpy(host):
    buf = rmm.DeviceBuffer.to_device(host)
    raw = bytes(memoryview(host))
    assert buf.size == len(raw)
    assert buf.tobytes() == raw
    assert bytes(buf) == raw
    out = bytearray(len(raw))
    assert buf.copy_to_host(out) is out
    assert bytes(out) == raw


def test_copy_from_pointer_and_between_buffers():
    src = rmm.to_device(b"0123456789abcdef" * 64)
    dup = rmm.DeviceBuffer(ptr=src.ptr, size=src.size)
    assert dup.ptr != src.ptr and dup.tobytes() == src.tobytes()
    dst = rmm.DeviceBuffer(size=2048)
    dst.copy_from_device(src)
    assert dst.tobytes()[: src.size] == src.tobytes()
    with pytest.raises(ValueError):
        rmm.DeviceBuffer(size=10).copy_from_device(src)


def test_copy_from_host_checks_size():
    buf = rmm.DeviceBuffer(size=4)
    with pytest.raises(ValueError):
        buf.copy_from_host(b"12345")
    buf.copy_from_host(b"12")
    assert buf.tobytes()[:2] == b"12"
    with pytest.raises(ValueError):
        buf.copy_to_host(bytearray(3))


def test_copy_to_read_only_host_buffer_is_refused():
    buf = rmm.to_device(b"abcd")
    with pytest.raises(ValueError):
        buf.copy_to_host(b"1234")


@needs_numpy
def test_numpy_round_trip():
    a = np.arange(1000, dtype=np.float64)
    buf = rmm.DeviceBuffer.to_device(a.view(np.uint8))
    host = buf.copy_to_host()
    assert isinstance(host, np.ndarray) and host.dtype == np.uint8 and host.size == a.nbytes
    np.testing.assert_array_equal(host.view(np.float64), a)
    ro = np.arange(10, dtype=np.uint8)
    ro.flags.writeable = False
    assert rmm.to_device(ro).tobytes() == ro.tobytes()
    with pytest.raises(ValueError):
        rmm.to_device(np.arange(20, dtype=np.uint8)[::2])


def test_copy_to_host_without_numpy(monkeypatch):
    from rmmgo import device_buffer

    monkeypatch.setattr(device_buffer, "_numpy", False)
    host = rmm.to_device(b"xyz").copy_to_host()
    assert isinstance(host, bytearray) and host == bytearray(b"xyz")


def test_cuda_array_interface():
    buf = rmm.DeviceBuffer(size=100)
    cai = buf.__cuda_array_interface__
    assert cai == {"data": (buf.ptr, False), "shape": (100,), "strides": None, "typestr": "|u1", "version": 0}


def test_copy_and_pickle():
    buf = rmm.to_device(b"pickled contents")
    for other in (buf.copy(), copy.copy(buf), copy.deepcopy(buf), pickle.loads(pickle.dumps(buf))):
        assert other.ptr != buf.ptr and other.tobytes() == b"pickled contents"
    assert buf.copy().mr is buf.mr


def test_resize_and_reserve():
    buf = rmm.to_device(b"abcdefgh")
    buf.resize(4)
    assert buf.size == 4 and buf.capacity() == 8 and buf.tobytes() == b"abcd"
    ptr = buf.ptr
    buf.reserve(4096)
    assert buf.capacity() == 4096 and buf.size == 4 and buf.ptr != ptr
    assert buf.tobytes() == b"abcd"
    buf.resize(5000)
    assert buf.size == 5000 and buf.capacity() == 5000 and buf.tobytes()[:4] == b"abcd"


def test_resize_frees_with_the_allocated_size(stats_mr):
    buf = rmm.DeviceBuffer(size=1000)
    buf.resize(10)
    buf.reserve(3000)
    assert stats_mr.allocation_counts.current_bytes == 3000
    del buf
    c = stats_mr.allocation_counts
    assert c.current_bytes == 0 and c.current_count == 0


def test_allocation_failure_raises_memory_error_with_message():
    lim = mr.LimitingResourceAdaptor(mr.CudaMemoryResource(), allocation_limit=4096)
    with pytest.raises(MemoryError) as info:
        rmm.DeviceBuffer(size=8192, mr=lim)
    assert "DeviceBuffer" in str(info.value) and str(info.value) != "DeviceBuffer: cannot allocate 8192 bytes"
    assert lim.get_allocated_bytes() == 0


def test_prefetch():
    buf = rmm.DeviceBuffer(size=16)  # device memory: a hint with no effect
    buf.prefetch()
    buf.prefetch(device=0, stream=rmm.DEFAULT_STREAM)
    managed = rmm.DeviceBuffer(size=1 << 20, mr=mr.ManagedMemoryResource())
    managed.prefetch()
    managed.prefetch(device=-1)  # to host memory
    managed.prefetch(device=0, stream=rmm.Stream())
    with pytest.raises(ValueError, match="device 9999"):
        managed.prefetch(device=9999)
    rmm.DeviceBuffer(size=0).prefetch()


def test_ptr_helpers():
    from rmmgo.pylibrmm.device_buffer import copy_device_to_ptr, copy_host_to_ptr, copy_ptr_to_host

    a = rmm.DeviceBuffer(size=8)
    b = rmm.DeviceBuffer(size=8)
    copy_host_to_ptr(b"ABCDEFGH", a.ptr)
    copy_device_to_ptr(a.ptr, b.ptr, 8)
    rmm.DEFAULT_STREAM.synchronize()
    out = bytearray(8)
    copy_ptr_to_host(b.ptr, out)
    assert out == b"ABCDEFGH"


def test_many_buffers_free_exactly_once(stats_mr):
    bufs = [rmm.DeviceBuffer(size=i + 1) for i in range(200)]
    assert stats_mr.allocation_counts.current_count == 200
    del bufs
    gc.collect()
    c = stats_mr.allocation_counts
    assert c.current_count == 0 and c.current_bytes == 0 and c.total_count == 200
