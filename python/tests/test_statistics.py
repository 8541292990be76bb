"""rmm.statistics: enable/get/push/pop, the statistics() context and the profiler."""

import pytest

import rmmgo as rmm
from rmmgo import mr
from rmmgo.statistics import (
    ProfilerRecords,
    Statistics,
    enable_statistics,
    get_statistics,
    pop_statistics,
    profiler,
    push_statistics,
    statistics,
)


def test_without_statistics_everything_is_none():
    assert get_statistics() is None
    assert push_statistics() is None
    assert pop_statistics() is None


def test_enable_is_idempotent_and_counts():
    enable_statistics()
    first = mr.get_current_device_resource()
    enable_statistics()
    assert mr.get_current_device_resource() is first
    assert isinstance(first, mr.StatisticsResourceAdaptor)
    assert type(first.upstream_mr) is mr.CudaMemoryResource
    b1 = rmm.DeviceBuffer(size=1000)
    b2 = rmm.DeviceBuffer(size=24)
    assert get_statistics() == Statistics(
        current_bytes=1024, current_count=2, peak_bytes=1024, peak_count=2, total_bytes=1024, total_count=2
    )
    del b1, b2
    s = get_statistics()
    assert (s.current_bytes, s.peak_bytes, s.total_count) == (0, 1024, 2)


def test_push_pop_and_last_level():
    enable_statistics()
    keep = rmm.DeviceBuffer(size=100)
    push_statistics()
    b = rmm.DeviceBuffer(size=50)
    inner = pop_statistics()
    assert (inner.current_bytes, inner.total_count) == (50, 1)
    assert get_statistics().current_bytes == 150
    with pytest.raises(IndexError):
        pop_statistics()
    del keep, b


def test_statistics_context_installs_and_restores():
    before = mr.get_current_device_resource()
    with statistics():
        assert isinstance(mr.get_current_device_resource(), mr.StatisticsResourceAdaptor)
        b = rmm.DeviceBuffer(size=300)
        assert get_statistics().current_bytes == 300
        del b
    assert mr.get_current_device_resource() is before


def test_statistics_context_nests_by_pushing():
    enable_statistics()
    outer = mr.get_current_device_resource()
    a = rmm.DeviceBuffer(size=10)
    with statistics():
        assert mr.get_current_device_resource() is outer
        b = rmm.DeviceBuffer(size=20)
        assert get_statistics().current_bytes == 20
        del b
    assert get_statistics().current_bytes == 10 and get_statistics().total_bytes == 30
    del a


def test_statistics_context_refuses_a_changed_resource():
    with pytest.raises(ValueError):
        with statistics():
            mr.set_current_device_resource(mr.CudaMemoryResource())


def test_profiler_decorator_and_context():
    enable_statistics()
    records = ProfilerRecords()

    @profiler(records=records)
    def work(n):
        return rmm.DeviceBuffer(size=n)

    keep = [work(100), work(300)]
    with profiler(records=records, name="block"):
        rmm.DeviceBuffer(size=1000)
    recs = records.records
    names = sorted(recs)
    assert "block" in names
    fn = [n for n in names if "work" in n][0]
    assert ":" in fn and "test_statistics.py" in fn
    assert (recs[fn].num_calls, recs[fn].memory_total, recs[fn].memory_peak) == (2, 400, 300)
    assert (recs["block"].num_calls, recs["block"].memory_peak) == (1, 1000)
    report = records.report()
    assert report.startswith("Memory Profiling") and "block" in report
    assert report.index("block") < report.index(fn)  # ordered by peak
    with pytest.raises(ValueError):
        with profiler(records=records):
            pass
    del keep


def test_empty_report():
    assert "No data" in ProfilerRecords().report()
