"""Every resource and adaptor under RMM's names and constructor parameters."""

import gc
import os

import pytest

import rmmgo as rmm
from rmmgo import _bindings as b
from rmmgo import mr
from conftest import ON_GPU, run_threads, simulated_only

Kind = b.ResourceKind


def _exercise(res, sizes=(0, 1, 1000, 1 << 20)):
    """Allocate and free a few sizes, write through a DeviceBuffer, check alignment."""
    ptrs = [(res.allocate(n), n) for n in sizes]
    for p, n in ptrs:
        assert (p == 0) == (n == 0)
        assert p % 256 == 0
    for p, n in ptrs:
        res.deallocate(p, n)
    buf = rmm.DeviceBuffer(size=4096, mr=res)
    buf.copy_from_host(b"\x5a" * 4096)
    assert buf.tobytes() == b"\x5a" * 4096


BASE = [
    ("cuda", lambda: mr.CudaMemoryResource(), Kind.CUDA),
    ("managed", lambda: mr.ManagedMemoryResource(), Kind.MANAGED),
    ("pinned_host", lambda: mr.PinnedHostMemoryResource(), Kind.PINNED_HOST),
    ("cuda_async", lambda: mr.CudaAsyncMemoryResource(), Kind.CUDA_ASYNC),
    ("cuda_async_sized", lambda: mr.CudaAsyncMemoryResource(initial_pool_size="4MiB", release_threshold=1 << 30), Kind.CUDA_ASYNC),
]

UPSTREAM = [
    ("pool", lambda up: mr.PoolMemoryResource(up, initial_pool_size="8MiB", maximum_pool_size="64MiB"), Kind.POOL),
    ("pool_lazy", lambda up: mr.PoolMemoryResource(up, initial_pool_size=0), Kind.POOL),
    ("arena", lambda up: mr.ArenaMemoryResource(up, arena_size="32MiB"), Kind.ARENA),
    ("fixed_size", lambda up: mr.FixedSizeMemoryResource(up, block_size=1 << 20, blocks_to_preallocate=4), Kind.FIXED_SIZE),
    ("binning", lambda up: mr.BinningMemoryResource(up, 10, 20), Kind.BINNING),
    ("aligned", lambda up: mr.AlignedResourceAdaptor(up, alignment=4096), Kind.ALIGNED),
    ("failure_callback", lambda up: mr.FailureCallbackResourceAdaptor(up, lambda n: False), Kind.FAILURE_CALLBACK),
    ("limiting", lambda up: mr.LimitingResourceAdaptor(up, allocation_limit="64MiB"), Kind.LIMITING),
    ("prefetch", lambda up: mr.PrefetchResourceAdaptor(up), Kind.PREFETCH),
    ("statistics", lambda up: mr.StatisticsResourceAdaptor(up), Kind.STATISTICS),
    ("thread_safe", lambda up: mr.ThreadSafeResourceAdaptor(up), Kind.THREAD_SAFE),
    ("tracking", lambda up: mr.TrackingResourceAdaptor(up, capture_stacks=True), Kind.TRACKING),
]


@pytest.mark.parametrize("name, make, kind", BASE, ids=[x[0] for x in BASE])
def test_base_resources(name, make, kind):
    res = make()
    assert res.kind == kind and isinstance(res, mr.DeviceMemoryResource)
    assert res.device == 0
    assert res.device_accessible
    assert res.name.endswith("memory_resource")
    _exercise(res)


def test_host_accessibility():
    assert mr.ManagedMemoryResource().host_accessible
    assert mr.PinnedHostMemoryResource().host_accessible
    assert not mr.CudaMemoryResource().host_accessible


@pytest.mark.parametrize("name, make, kind", UPSTREAM, ids=[x[0] for x in UPSTREAM])
def test_upstream_resources(name, make, kind):
    up = mr.CudaMemoryResource()
    res = make(up)
    assert res.kind == kind
    assert isinstance(res, mr.UpstreamResourceAdaptor)
    assert res.upstream_mr is up and res.get_upstream() is up
    _exercise(res)


def test_adaptor_keeps_python_upstream_alive():
    stats = mr.StatisticsResourceAdaptor(mr.CudaMemoryResource())
    lim = mr.LimitingResourceAdaptor(stats, allocation_limit=1 << 30)
    del stats
    gc.collect()
    p = lim.allocate(512)
    assert lim.upstream_mr.allocation_counts.current_bytes == 512
    lim.deallocate(p, 512)


def test_cuda_async_pool_handle_and_view():
    a = mr.CudaAsyncMemoryResource()
    h = a.pool_handle()
    assert h != 0
    v = mr.CudaAsyncViewMemoryResource(h)
    assert v.pool_handle() == h
    assert v.is_equal(v)
    _exercise(v)
    with pytest.raises(RuntimeError):
        mr.CudaAsyncViewMemoryResource(0)


def test_cuda_async_managed():
    try:
        r = mr.experimental.CudaAsyncManagedMemoryResource()
    except RuntimeError as exc:  # needs CUDA 13 and concurrent managed access
        pytest.skip(str(exc))
    assert r.host_accessible and r.pool_handle() != 0
    _exercise(r)


def test_system_and_sam_headroom():
    try:
        s = mr.SystemMemoryResource()
    except RuntimeError as exc:
        if ON_GPU:
            pytest.skip("no pageable memory access here: %s" % exc)
        raise
    assert s.host_accessible
    _exercise(s)
    _exercise(mr.SamHeadroomMemoryResource(headroom="64MiB"))


def test_pool_sizes_and_release():
    pool = mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size="2MiB", maximum_pool_size="8MiB")
    assert pool.pool_size() == 2 << 20
    p = pool.allocate(3 << 20)
    assert pool.pool_size() > 2 << 20 and pool.used_bytes() >= 3 << 20
    with pytest.raises(MemoryError):
        pool.allocate(16 << 20)
    pool.deallocate(p, 3 << 20)
    assert pool.used_bytes() == 0
    pool.release()


@pytest.mark.parametrize(
    "kwargs",
    [dict(initial_pool_size=1000), dict(initial_pool_size=1 << 20, maximum_pool_size=1 << 19)],
)
def test_pool_bad_sizes_are_logic_errors(kwargs):
    with pytest.raises(RuntimeError) as info:
        mr.PoolMemoryResource(mr.CudaMemoryResource(), **kwargs)
    assert isinstance(info.value, ValueError) and isinstance(info.value, rmm.RMMError)


def test_upstream_must_be_a_resource():
    with pytest.raises(TypeError):
        mr.PoolMemoryResource(None)
    with pytest.raises(TypeError):
        mr.StatisticsResourceAdaptor("cuda")


def test_aligned_adaptor_alignment():
    a = mr.AlignedResourceAdaptor(mr.CudaMemoryResource(), alignment=1 << 16, alignment_threshold=1024)
    big = a.allocate(4096)
    assert big % (1 << 16) == 0
    a.deallocate(big, 4096)
    with pytest.raises(RuntimeError):
        mr.AlignedResourceAdaptor(mr.CudaMemoryResource(), alignment=1000)


def test_fixed_size_block_size():
    f = mr.FixedSizeMemoryResource(mr.CudaMemoryResource(), block_size=4096, blocks_to_preallocate=2)
    assert f.get_block_size() == 4096 == f.block_size
    with pytest.raises(MemoryError):
        f.allocate(8192)


def test_binning_add_bin():
    up = mr.CudaMemoryResource()
    binning = mr.BinningMemoryResource(up)
    pool = mr.PoolMemoryResource(up, initial_pool_size=1 << 20)
    binning.add_bin(1024)
    binning.add_bin(1 << 16, pool)
    assert binning.bin_mrs == [pool]
    p = binning.allocate(40000)
    assert pool.used_bytes() >= 40000
    binning.deallocate(p, 40000)
    assert pool.used_bytes() == 0
    _exercise(binning)


def test_limiting_adaptor():
    lim = mr.LimitingResourceAdaptor(mr.CudaMemoryResource(), allocation_limit=1 << 20)
    assert lim.get_allocation_limit() == 1 << 20
    p = lim.allocate(1000)
    assert lim.get_allocated_bytes() == 1024  # rounded to 256
    with pytest.raises(MemoryError) as info:
        lim.allocate(1 << 20)
    assert isinstance(info.value, rmm.OutOfMemoryError) and str(info.value)
    lim.deallocate(p, 1000)
    assert lim.get_allocated_bytes() == 0


def test_statistics_adaptor_counters():
    s = mr.StatisticsResourceAdaptor(mr.CudaMemoryResource())
    p1 = s.allocate(1000)
    p2 = s.allocate(0)
    c = s.allocation_counts
    assert (c.current_bytes, c.current_count, c.peak_bytes, c.total_bytes) == (1000, 2, 1000, 1000)
    top = s.push_counters()
    assert top.current_bytes == 1000
    p3 = s.allocate(500)
    inner = s.pop_counters()
    assert (inner.current_bytes, inner.peak_bytes, inner.total_count) == (500, 500, 1)
    c = s.allocation_counts
    assert (c.current_bytes, c.peak_bytes, c.total_bytes) == (1500, 1500, 1500)
    with pytest.raises(IndexError):
        s.pop_counters()
    for p, n in ((p1, 1000), (p2, 0), (p3, 500)):
        s.deallocate(p, n)
    assert s.allocation_counts.current_bytes == 0


def test_tracking_adaptor():
    t = mr.TrackingResourceAdaptor(mr.CudaMemoryResource(), capture_stacks=False)
    p = t.allocate(3000)
    assert t.get_allocated_bytes() == 3000
    assert t.get_outstanding_allocations_count() == 1
    report = t.get_outstanding_allocations_str()
    assert "3000" in report
    t.log_outstanding_allocations()
    t.deallocate(p, 3000)
    assert t.get_allocated_bytes() == 0 and t.get_outstanding_allocations_count() == 0


def test_logging_adaptor_file_name_and_contents(tmp_path):
    name = tmp_path / "log.csv"
    log = mr.LoggingResourceAdaptor(mr.CudaMemoryResource(), log_file_name=str(name))
    expected = str(tmp_path / "log.dev0.csv")
    assert log.get_file_name() == expected
    p = log.allocate(777)
    log.deallocate(p, 777)
    log.flush()
    with open(expected) as f:
        text = f.read().splitlines()
    assert text[0] == "Thread,Time,Action,Pointer,Size,Stream"
    assert [ln.split(",")[2] for ln in text[1:]] == ["allocate", "free"]
    assert text[1].split(",")[4] == "777"


def test_logging_adaptor_makes_the_folders_of_its_file(tmp_path):
    # RMM's logger makes them (its file sink creates the parent directories).
    log = mr.LoggingResourceAdaptor(mr.CudaMemoryResource(), log_file_name=str(tmp_path / "a" / "b" / "log.csv"))
    log.deallocate(log.allocate(10), 10)
    log.flush()
    with open(tmp_path / "a" / "b" / "log.dev0.csv") as f:
        assert len(f.read().splitlines()) == 3


def test_logging_adaptor_needs_a_file_name(monkeypatch, tmp_path):
    monkeypatch.delenv("RMM_LOG_FILE", raising=False)
    with pytest.raises(ValueError):
        mr.LoggingResourceAdaptor(mr.CudaMemoryResource())
    monkeypatch.setenv("RMM_LOG_FILE", str(tmp_path / "env.txt"))
    log = mr.LoggingResourceAdaptor(mr.CudaMemoryResource())
    assert log.get_file_name() == str(tmp_path / "env.dev0.txt")


def test_logging_file_closed_when_released(tmp_path):
    log = mr.LoggingResourceAdaptor(mr.CudaMemoryResource(), log_file_name=str(tmp_path / "x.csv"))
    fname = log.get_file_name()
    log.deallocate(log.allocate(10), 10)
    del log
    gc.collect()
    with open(fname) as f:
        assert len(f.read().splitlines()) == 3


def test_callback_resource():
    backing = mr.CudaMemoryResource()
    calls = []

    def alloc(size, stream):
        calls.append(("alloc", size, stream))
        return backing.allocate(size, stream)

    def dealloc(ptr, size, stream):
        calls.append(("free", size, stream))
        backing.deallocate(ptr, size, stream)

    cb = mr.CallbackMemoryResource(alloc, dealloc)
    buf = rmm.DeviceBuffer(size=100, mr=cb)
    buf.copy_from_host(b"z" * 100)
    assert buf.tobytes() == b"z" * 100
    del buf
    assert [c[:2] for c in calls] == [("alloc", 100), ("free", 100)]
    assert isinstance(calls[0][2], rmm.Stream)


def test_callback_errors_map_as_in_rmm():
    def oom(size, stream):
        raise MemoryError("no memory in python")

    def boom(size, stream):
        raise KeyError("broken")

    with pytest.raises(MemoryError) as info:
        rmm.DeviceBuffer(size=10, mr=mr.CallbackMemoryResource(oom, lambda *a: None))
    assert isinstance(info.value.__cause__, MemoryError)
    with pytest.raises(RuntimeError) as info:
        mr.CallbackMemoryResource(boom, lambda *a: None).allocate(10)
    assert isinstance(info.value.__cause__, KeyError) and "broken" in str(info.value)
    # The pending error is consumed: a later, unrelated failure is plain.
    lim = mr.LimitingResourceAdaptor(mr.CudaMemoryResource(), allocation_limit=256)
    with pytest.raises(MemoryError) as info:
        lim.allocate(1024)
    assert info.value.__cause__ is None


def test_failure_callback_retries():
    lim = mr.LimitingResourceAdaptor(mr.CudaMemoryResource(), allocation_limit=4096)
    held = [lim.allocate(4096)]
    seen = []

    def on_failure(nbytes):
        seen.append(nbytes)
        if held:
            lim.deallocate(held.pop(), 4096)
            return True
        return False

    fc = mr.FailureCallbackResourceAdaptor(lim, on_failure)
    p = fc.allocate(2048)
    assert seen == [2048]
    with pytest.raises(MemoryError):
        fc.allocate(4096)
    assert seen == [2048, 4096]
    fc.deallocate(p, 2048)


def test_resources_are_usable_from_many_threads():
    pool = mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size="16MiB")
    stats = mr.StatisticsResourceAdaptor(pool)

    def work(_k):
        for i in range(300):
            buf = rmm.DeviceBuffer(size=(i % 17 + 1) * 100, mr=stats)
            del buf

    run_threads(8, work)
    c = stats.allocation_counts
    assert c.current_bytes == 0 and c.total_count == 8 * 300


def test_repr_and_equality():
    a = mr.CudaMemoryResource()
    assert "CudaMemoryResource" in repr(a)
    assert a == a and a != mr.CudaMemoryResource()
    assert a.is_equal(mr.CudaMemoryResource())  # stateless: interchangeable
    assert hash(a) == hash(a.handle)


def test_available_device_memory():
    free, total = mr.available_device_memory()
    assert 0 < free <= total


@simulated_only
def test_simulated_device_capacity():
    assert mr.available_device_memory()[1] == rmm.parse_bytes(os.environ.get("RMMGO_SIM_MEMORY", "1GiB"))


@pytest.mark.parametrize(
    "make, argument",
    [
        (lambda up: mr.FixedSizeMemoryResource(up, block_size=0), "block_size"),
        (lambda up: mr.FixedSizeMemoryResource(up, blocks_to_preallocate=0), "blocks_to_preallocate"),
        (lambda up: mr.ArenaMemoryResource(up, arena_size=0), "arena_size"),
        (lambda up: mr.PoolMemoryResource(up, initial_pool_size=0, maximum_pool_size=0), "maximum_pool_size"),
    ],
)
def test_creation_errors_speak_python(make, argument):
    # The library's message names the C call, its options struct and
    # RMM_SIZE_DEFAULT; a Python caller reads its class, its argument and None.
    with pytest.raises(ValueError) as info:
        make(mr.CudaMemoryResource())
    msg = str(info.value)
    assert "%s is 0: give a size, or None for the default" % argument in msg, msg
    assert msg.split(":")[0].endswith("MemoryResource"), msg
    for c_word in ("RMM_", "rmm_resource_create", "options."):
        assert c_word not in msg, msg


def test_fixed_size_takes_none_for_the_defaults():
    f = mr.FixedSizeMemoryResource(mr.CudaMemoryResource(), block_size=None, blocks_to_preallocate=None)
    assert f.get_block_size() == 1 << 20
    f.deallocate(f.allocate(1000), 1000)
