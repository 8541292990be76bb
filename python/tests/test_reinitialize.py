"""rmm.reinitialize, is_initialized, hooks, parse_bytes."""


import pytest

import rmmgo as rmm
from rmmgo import mr
from conftest import device_count


def test_default_is_cuda_and_initialized():
    assert rmm.is_initialized()
    rmm.reinitialize()
    assert type(mr.get_current_device_resource()) is mr.CudaMemoryResource


def test_managed():
    rmm.reinitialize(managed_memory=True)
    assert type(mr.get_current_device_resource()) is mr.ManagedMemoryResource


def test_pool_with_string_sizes():
    try:
        rmm.reinitialize(pool_allocator=True, initial_pool_size="2MiB", maximum_pool_size="1GiB")
    except RuntimeError as exc:
        if "not built" in str(exc):
            pytest.skip(str(exc))
        raise
    res = mr.get_current_device_resource()
    assert type(res) is mr.PoolMemoryResource and res.pool_size() == 2 << 20
    assert type(res.upstream_mr) is mr.CudaMemoryResource


def test_sizes_without_the_pool_are_ignored():
    # As RMM: initial_pool_size and maximum_pool_size matter only with pool_allocator.
    rmm.reinitialize(initial_pool_size=1 << 20, maximum_pool_size="bad")
    assert type(mr.get_current_device_resource()) is mr.CudaMemoryResource


def test_initial_above_maximum_raises_rmms_message():
    with pytest.raises(RuntimeError, match="Initial pool size exceeds the maximum pool size"):
        rmm.reinitialize(pool_allocator=True, initial_pool_size=1 << 11, maximum_pool_size=1 << 10)


def test_logging_per_device(tmp_path):
    devices = list(range(min(2, device_count())))
    rmm.reinitialize(managed_memory=True, logging=True, log_file_name=str(tmp_path / "rmm.csv"), devices=devices)
    names = rmm.get_log_filenames()
    for d in devices:
        res = mr.get_per_device_resource(d)
        assert isinstance(res, mr.LoggingResourceAdaptor) and res.device == d
        assert type(res.upstream_mr) is mr.ManagedMemoryResource
        assert names[d] == str(tmp_path / ("rmm.dev%d.csv" % d))
    buf = rmm.DeviceBuffer(size=10)
    del buf
    rmm.disable_logging()
    assert type(mr.get_current_device_resource()) is mr.ManagedMemoryResource
    with open(names[0]) as f:
        assert len(f.read().splitlines()) == 3


def test_enable_logging(tmp_path):
    rmm.enable_logging(log_file_name=str(tmp_path / "l.csv"))
    assert rmm.get_log_filenames()[0] == str(tmp_path / "l.dev0.csv")
    rmm.disable_logging()
    assert rmm.get_log_filenames()[0] is None


def test_hooks_run_latest_first():
    seen = []

    def hook(tag, extra=None):
        seen.append((tag, extra))

    rmm.register_reinitialize_hook(hook, "a")
    rmm.register_reinitialize_hook(hook, "b", extra=1)
    try:
        rmm.reinitialize()
        assert seen == [("b", 1), ("a", None)]
    finally:
        rmm.unregister_reinitialize_hook(hook)
    seen.clear()
    rmm.reinitialize()
    assert seen == []


@pytest.mark.parametrize(
    "text, value",
    [
        (1024, 1024),
        ("1024", 1024),
        ("1KiB", 1024),
        ("1 kib", 1024),
        ("1kB", 1000),
        ("1.5GiB", 3 << 29),
        ("2MB", 2_000_000),
        ("10B", 10),
        ("3PiB", 3 << 50),
        ("123456789012345678", 123456789012345678),
    ],
)
def test_parse_bytes(text, value):
    assert rmm.parse_bytes(text) == value


@pytest.mark.parametrize("text", ["2k", "GiB?", "", "-1", "1.5B", "one MB"])
def test_parse_bytes_rejects(text):
    with pytest.raises(ValueError, match="Could not parse"):
        rmm.parse_bytes(text)


def test_logging_level_api():
    old = rmm.get_logging_level()
    rmm.set_logging_level(rmm.level_enum.debug)
    assert rmm.should_log(rmm.level_enum.info) and not rmm.should_log(rmm.level_enum.trace)
    rmm.set_logging_level(old)
    rmm.flush_logger()
    rmm.set_flush_level(rmm.level_enum.error)
    assert rmm.get_flush_level() == rmm.level_enum.error
