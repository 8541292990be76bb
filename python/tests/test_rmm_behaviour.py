"""Behaviour that code written for RMM relies on, as RMM's Python API has it.

Each test here is one rule of RMM's API (names, messages, exception types)
that rmmgo once broke; RMM's own sources are the reference.
"""

import array
import gc
import os
import pickle
import re
import shutil
import subprocess
import sys
import warnings

import pytest

import rmmgo as rmm
from rmmgo import mr
from rmmgo.pylibrmm.device_buffer import copy_device_to_ptr, copy_host_to_ptr, copy_ptr_to_host
from conftest import ON_GPU, run_python, simulated_only

STREAM_NONE = "stream argument cannot be None"


# ------------------------------------------------------------- stream=None


def _stream_none_calls():
    db = rmm.DeviceBuffer.to_device(b"abcdefghij")
    src = rmm.DeviceBuffer.to_device(b"abc")
    res = mr.get_current_device_resource()
    ptr = res.allocate(64)
    calls = {
        "DeviceBuffer()": lambda: rmm.DeviceBuffer(size=10, stream=None),
        "DeviceBuffer.to_device": lambda: rmm.DeviceBuffer.to_device(b"abc", stream=None),
        "to_device": lambda: rmm.to_device(b"abc", stream=None),
        "copy_to_host": lambda: db.copy_to_host(stream=None),
        "copy_from_host": lambda: db.copy_from_host(b"abc", stream=None),
        "copy_from_device": lambda: db.copy_from_device(src, stream=None),
        "tobytes": lambda: db.tobytes(stream=None),
        "reserve": lambda: db.reserve(100, stream=None),
        "reserve (no growth)": lambda: db.reserve(1, stream=None),
        "resize": lambda: db.resize(4, stream=None),
        "copy_ptr_to_host": lambda: copy_ptr_to_host(db.ptr, bytearray(3), stream=None),
        "copy_host_to_ptr": lambda: copy_host_to_ptr(b"abc", db.ptr, stream=None),
        "copy_device_to_ptr": lambda: copy_device_to_ptr(src.ptr, db.ptr, 3, stream=None),
        "mr.allocate": lambda: res.allocate(64, stream=None),
        "mr.deallocate": lambda: res.deallocate(ptr, 64, stream=None),
    }
    return calls, (db, src, res, ptr)


def test_stream_none_is_rmms_type_error_everywhere():
    calls, keep = _stream_none_calls()
    for name, call in calls.items():
        with pytest.raises(TypeError, match=STREAM_NONE):
            call()
    db, _, res, ptr = keep
    assert db.tobytes() == b"abcdefghij", "a refused call changed nothing"
    res.deallocate(ptr, 64)


# ------------------------------------------------------------- DeviceBuffer


@pytest.mark.parametrize("size", [0, 5, 4096])
def test_sizeof_is_the_size(size):
    assert rmm.DeviceBuffer(size=size).__sizeof__() == size
    assert sys.getsizeof(rmm.DeviceBuffer(size=size)) >= size


@pytest.mark.parametrize(
    "host, error",
    [
        (None, TypeError),
        ("abc", TypeError),
        (123, TypeError),
        (array.array("H", [1, 2]), ValueError),  # not bytes
        (array.array("d", [1.0]), ValueError),
        (memoryview(bytearray(4)).cast("B", (2, 2)), ValueError),  # 2-D
        (memoryview(b"abcd")[::2], ValueError),  # not contiguous
    ],
    ids=["None", "str", "int", "uint16", "float64", "2-D", "strided"],
)
def test_to_device_takes_one_dimensional_bytes(host, error):
    with pytest.raises(error):
        rmm.DeviceBuffer.to_device(host)
    with pytest.raises(error):
        rmm.DeviceBuffer(size=8).copy_from_host(host)


@pytest.mark.parametrize("host", [b"", b"abc", bytearray(b"xyz"), memoryview(b"12345"), array.array("B", [7, 8])])
def test_to_device_round_trips_bytes(host):
    db = rmm.DeviceBuffer.to_device(host)
    assert db.tobytes() == bytes(host) and bytes(db) == bytes(host)


@pytest.mark.parametrize("payload", [b"", b"123", bytes(range(256)) * 4])
def test_pickle_protocol_5_hands_one_buffer_out_of_band(payload):
    db = rmm.DeviceBuffer.to_device(payload)
    buffers = []
    data = pickle.dumps(db, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1 and isinstance(buffers[0], pickle.PickleBuffer)
    assert bytes(buffers[0]) == payload
    assert len(data) < 200, "the bytes went out of band, not into the pickle"
    back = pickle.loads(data, buffers=buffers)
    assert isinstance(back, rmm.DeviceBuffer) and back.tobytes() == payload
    # In band (protocol 5 without a callback, and older protocols) too.
    for proto in (2, 4, 5):
        assert pickle.loads(pickle.dumps(db, protocol=proto)).tobytes() == payload


# --------------------------------------------------------------- bad sizes

BAD_SIZES = [(-1, OverflowError), (2**64, OverflowError), (2**70, OverflowError), (1.5, TypeError), ("8", TypeError)]


@pytest.mark.parametrize("size, error", BAD_SIZES, ids=["-1", "2**64", "2**70", "float", "str"])
def test_bad_sizes_are_refused_at_every_entry_point(size, error):
    res = mr.CudaMemoryResource()
    db = rmm.DeviceBuffer(size=16)
    stats = mr.StatisticsResourceAdaptor(res)
    calls = [
        lambda: rmm.DeviceBuffer(size=size),
        lambda: rmm.DeviceBuffer(size=size, mr=stats),
        lambda: res.allocate(size),
        lambda: stats.allocate(size),
        lambda: res.deallocate(0, size),
        lambda: db.reserve(size),
        lambda: db.resize(size),
        lambda: copy_device_to_ptr(db.ptr, db.ptr, size),
        lambda: mr.FixedSizeMemoryResource(res, blocks_to_preallocate=size),
    ]
    if isinstance(size, int):  # arguments that also take strings ("1GiB")
        calls += [
            lambda: mr.LimitingResourceAdaptor(res, allocation_limit=size),
            lambda: mr.PoolMemoryResource(res, initial_pool_size=size),
            lambda: mr.ArenaMemoryResource(res, arena_size=size),
            lambda: mr.CudaAsyncMemoryResource(release_threshold=size),
        ]
    for call in calls:
        with pytest.raises(error):
            call()
    assert stats.allocation_counts.total_count == 0, "nothing was allocated"
    assert db.size == 16


def test_the_largest_size_is_out_of_memory_not_a_wrap():
    with pytest.raises(MemoryError):
        rmm.DeviceBuffer(size=2**64 - 1)
    with pytest.raises(MemoryError):
        mr.CudaMemoryResource().allocate(2**64 - 1)


# ------------------------------------------- allocation failures and callbacks


@pytest.mark.parametrize(
    "raised, caught",
    [(MemoryError, MemoryError), (RuntimeError, RuntimeError), (Exception, RuntimeError), (BaseException, RuntimeError)],
)
def test_callback_resource_exceptions_come_out_of_the_allocation(raised, caught):
    def allocate_func(size, stream):
        raise raised("My alloc error")

    res = mr.CallbackMemoryResource(allocate_func, lambda p, n, s: None)
    with pytest.raises(caught, match="My alloc error") as info:
        rmm.DeviceBuffer(size=256, mr=res)
    assert isinstance(info.value.__cause__, raised)
    with pytest.raises(caught, match="My alloc error"):
        res.allocate(256)
    # Under an adaptor the exception comes out just the same.
    with pytest.raises(caught, match="My alloc error"):
        rmm.DeviceBuffer(size=256, mr=mr.StatisticsResourceAdaptor(res))


def test_failure_callback_exception_comes_out_of_the_allocation():
    def callback(nbytes):
        raise RuntimeError("MyError")

    def allocate_func(size, stream):
        raise MemoryError("Intentional allocation failure")

    adaptor = mr.FailureCallbackResourceAdaptor(mr.CallbackMemoryResource(allocate_func, lambda p, n, s: None), callback)
    mr.set_current_device_resource(adaptor)
    with pytest.raises(RuntimeError, match="MyError") as info:
        rmm.DeviceBuffer(size=256)
    assert not isinstance(info.value, MemoryError)
    # The next failure is its own: nothing stale is left behind.
    mr.set_current_device_resource(mr.LimitingResourceAdaptor(mr.CudaMemoryResource(), allocation_limit=1024))
    with pytest.raises(MemoryError, match="limit"):
        rmm.DeviceBuffer(size=4096)


def test_failure_callback_retries_then_memory_error():
    calls = []

    def callback(nbytes):
        calls.append(nbytes)
        return len(calls) < 3

    def allocate_func(size, stream):
        raise MemoryError("Intentional allocation failure")

    adaptor = mr.FailureCallbackResourceAdaptor(mr.CallbackMemoryResource(allocate_func, lambda p, n, s: None), callback)
    with pytest.raises(MemoryError, match="Intentional allocation failure"):
        rmm.DeviceBuffer(size=256, mr=adaptor)
    assert calls == [256, 256, 256]


def test_allocating_from_a_destroyed_pool_is_a_memory_error():
    owner = mr.CudaAsyncMemoryResource()
    view = mr.CudaAsyncViewMemoryResource(owner.pool_handle())
    rmm.DeviceBuffer(size=100, mr=view)
    del owner
    gc.collect()  # the pool is destroyed with its owner
    with pytest.raises(MemoryError):
        rmm.DeviceBuffer(size=100, mr=view)
    with pytest.raises(MemoryError):
        view.allocate(100)


# ------------------------------------------------------------ resources


def test_resource_type_getters():
    pool = mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size=1 << 20)
    mr.set_current_device_resource(pool)
    assert mr.get_current_device_resource_type() is mr.PoolMemoryResource
    assert mr.get_per_device_resource_type(0) is mr.PoolMemoryResource


def test_pool_initial_above_maximum_says_so_as_rmm():
    with pytest.raises(RuntimeError, match="Initial pool size exceeds the maximum pool size"):
        mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size=2048, maximum_pool_size=1024)


def test_tracking_is_empty_once_every_buffer_is_gone():
    tracked = mr.TrackingResourceAdaptor(mr.CudaMemoryResource(), capture_stacks=True)
    mr.set_current_device_resource(tracked)
    bufs = [rmm.DeviceBuffer(size=1000) for _ in range(3)]
    report = tracked.get_outstanding_allocations_str()
    assert report.count(": 1000 B") == 3 and "Outstanding" not in report
    del bufs
    gc.collect()
    assert tracked.get_allocated_bytes() == 0
    assert tracked.get_outstanding_allocations_str() == ""


def test_popping_the_last_counters_is_rmms_index_error():
    stats = mr.StatisticsResourceAdaptor(mr.CudaMemoryResource())
    with pytest.raises(IndexError, match="cannot pop the last counter pair"):
        stats.pop_counters()


def test_async_pinned_resource_says_it_is_not_supported():
    with pytest.raises(RuntimeError, match="not supported by rmmgo"):
        mr.experimental.CudaAsyncPinnedMemoryResource()


@simulated_only
def test_system_memory_on_the_simulated_device_names_the_switch():
    code = (
        "import rmmgo\n"
        "for make in (rmmgo.mr.SystemMemoryResource, lambda: rmmgo.mr.SamHeadroomMemoryResource(1 << 20)):\n"
        "    try:\n        make()\n    except RuntimeError as e:\n        print('ERR', e)\n"
        "    else:\n        print('MADE')\n"
    )
    r = run_python(code, env={"RMMGO_SIM_PAGEABLE": "0"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 2 and all(ln.startswith("ERR") and "RMMGO_SIM_PAGEABLE=1" in ln for ln in lines), lines


# ------------------------------------------------------------ statistics


def test_profiler_decorator_records_under_its_name():
    from rmmgo.statistics import ProfilerRecords, _get_descriptive_name_of_object, profiler, statistics

    records = ProfilerRecords()

    @profiler(records=records, name="named")
    def named():
        return rmm.DeviceBuffer(size=10)

    @profiler(records=records)
    def unnamed():
        return rmm.DeviceBuffer(size=20)

    with statistics():
        named(), named(), unnamed()
    assert set(records.records) == {"named", _get_descriptive_name_of_object(unnamed)}
    assert records.records["named"] == ProfilerRecords.MemoryRecord(num_calls=2, memory_total=20, memory_peak=10)
    assert unnamed.__name__ == "unnamed", "the decorator keeps the function's name"
    assert ":" in _get_descriptive_name_of_object(unnamed) and "(" in _get_descriptive_name_of_object(unnamed)
    with pytest.raises(ValueError, match="name"):
        with profiler(records=records):
            pass


# ------------------------------------------------------------ streams


def test_stream_protocol_version_1_is_not_implemented():
    class V1:
        def __cuda_stream__(self):
            return (1, 2)

    with pytest.raises(NotImplementedError, match="version: '1'"):
        rmm.Stream(V1())


def test_stream_flags_need_a_new_stream():
    with pytest.raises(ValueError, match="flags may only be specified when obj is None"):
        rmm.Stream(rmm.Stream(), flags=rmm.CudaStreamFlags.NON_BLOCKING)


def test_cuda_stream_pool_from_its_module():
    from rmmgo.pylibrmm.cuda_stream_pool import CudaStreamPool

    pool = CudaStreamPool(pool_size=4, flags=rmm.CudaStreamFlags.NON_BLOCKING)
    assert pool.get_pool_size() == 4
    streams = [pool.get_stream() for _ in range(4)]
    assert len(set(streams)) == 4 and all(not s.is_default() for s in streams)
    assert [pool.get_stream(i) for i in range(4)] == streams
    with pytest.raises(ValueError):
        CudaStreamPool(pool_size=0)


def test_deprecated_cuda_stream_module_warns():
    sys.modules.pop("rmmgo.pylibrmm.cuda_stream", None)
    with pytest.warns(DeprecationWarning, match="cuda_stream is deprecated"):
        import rmmgo.pylibrmm.cuda_stream as cs
    s = cs.CudaStream()
    assert s.value() != 0 and cs.CudaStreamFlags is rmm.CudaStreamFlags


# ------------------------------------------------------------ logger


@pytest.mark.parametrize("level", ["INFO", 3, "invalid", 100, None, 1.5, [1]])
def test_logging_levels_must_be_level_enum(level):
    for fn in (rmm.set_logging_level, rmm.set_flush_level, rmm.should_log):
        with pytest.raises(TypeError):
            fn(level)


def test_logging_levels_round_trip():
    from rmmgo.librmm._logger import level_enum as from_librmm
    from rmmgo.pylibrmm.logger import level_enum

    assert level_enum is from_librmm is rmm.level_enum
    try:
        for level in level_enum:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rmm.set_logging_level(level)
                rmm.set_flush_level(level)
            assert rmm.get_logging_level() == level and rmm.get_flush_level() == level
        rmm.set_logging_level(level_enum.info)
        assert rmm.should_log(level_enum.warn) and not rmm.should_log(level_enum.debug)
        with pytest.warns(UserWarning, match="RMM will not log level_enum.debug"):
            rmm.set_flush_level(level_enum.debug)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            rmm.set_logging_level(level_enum.off)  # as RMM: off logs "off" messages, so no warning
            rmm.set_logging_level(level_enum.n_levels)
    finally:
        rmm.set_logging_level(level_enum.info)
        rmm.set_flush_level(level_enum.warn)


# ------------------------------------------------------------ rmm._cuda.gpu


def test_gpu_queries():
    from rmmgo._cuda import gpu

    n = gpu.getDeviceCount()
    assert n >= 1 and gpu.getDevice() == 0
    assert gpu.runtimeGetVersion() >= 11000 and gpu.driverGetVersion() >= 11000
    pools = gpu.getDeviceAttribute(gpu.cudaDeviceAttr.cudaDevAttrMemoryPoolsSupported, 0)
    assert pools in (0, 1)
    assert gpu.getDeviceAttribute(115, 0) == pools, "a plain int works as the attribute"
    assert isinstance(gpu.deviceGetName(0), str) and gpu.deviceGetName(0)
    if n > 1:
        gpu.setDevice(1)
        try:
            assert gpu.getDevice() == 1
        finally:
            gpu.setDevice(0)


UUID = re.compile(r"(GPU|MIG)-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}")


def test_gpu_uuids():
    from rmmgo._cuda import gpu

    n = gpu.getDeviceCount()
    uuids = [gpu.deviceGetUUID(d) for d in range(n)]
    assert all(UUID.fullmatch(u) for u in uuids), uuids
    assert len(set(uuids)) == n, uuids
    assert gpu._uuid_text(bytes(range(16))) == "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f"
    with pytest.raises(gpu.CUDADriverError):
        gpu.deviceGetUUID(n)
    if n > 1:
        # A GPU keeps its UUID however CUDA_VISIBLE_DEVICES numbers it
        # (swapped here: from the list this process was given, if any).
        given = [e for e in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if e.strip()] or ["0", "1"]
        out = run_python(
            "from rmmgo._cuda import gpu; print(gpu.deviceGetUUID(0), gpu.deviceGetUUID(1))",
            env={"CUDA_VISIBLE_DEVICES": ",".join([given[1], given[0]] + given[2:])},
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == [uuids[1], uuids[0]]
    if ON_GPU and shutil.which("nvidia-smi"):
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
        assert all(u in listed for u in uuids if u.startswith("GPU-")), (uuids, listed)


def test_gpu_errors_are_cuda_runtime_errors():
    from rmmgo._cuda import gpu

    with pytest.raises(gpu.CUDARuntimeError) as info:
        gpu.setDevice(1000)
    assert isinstance(info.value, RuntimeError) and int(info.value.status) == 101  # cudaErrorInvalidDevice
    with pytest.raises(gpu.CUDARuntimeError):
        gpu.getDeviceAttribute(gpu.cudaDeviceAttr.cudaDevAttrIntegrated, 1000)
    with pytest.raises(gpu.CUDADriverError):
        gpu.deviceGetName(1000)
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is gpu.CUDARuntimeError and str(again) == str(info.value)
    assert gpu.getDevice() == 0


@simulated_only
def test_gpu_attributes_follow_the_simulated_device():
    from rmmgo._cuda import gpu

    assert gpu.getDeviceAttribute(gpu.cudaDeviceAttr.cudaDevAttrPageableMemoryAccess, 0) == 1  # the tests' RMMGO_SIM_PAGEABLE=1
    assert gpu.deviceGetName(0) == "rmmgo simulated device"


# ------------------------------------------------------------ versions


def test_version_constants():
    from rmmgo import _version

    assert isinstance(rmm.__version__, str) and rmm.__version__
    assert isinstance(rmm.__git_commit__, str)
    assert _version.__git_commit__ == rmm.__git_commit__
