"""rmmgo.dask: RMMSetup, LocalGPUCluster, memory_statistics, the config keys, the preload and the CLI.

Needs Dask's distributed (skipped without it). One LocalGPUCluster is shared
by the cluster tests (process start-up is most of their time): on the
simulated device it has two worker processes, each with simulated devices
of its own; on the GPU, one worker per visible GPU. The tests that change
the shared cluster's plugin come last, in file order.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

# RMMGO_TEST_DASK=1 (make test-python, run.sh's dask section): distributed
# must be there, and its absence fails the run instead of skipping it.
if os.environ.get("RMMGO_TEST_DASK") == "1":
    import distributed
else:
    distributed = pytest.importorskip("distributed")

import cloudpickle  # noqa: E402  (a dependency of distributed)
import dask.config  # noqa: E402

import rmmgo  # noqa: E402
from rmmgo import mr  # noqa: E402
from rmmgo.dask import (  # noqa: E402
    LocalGPUCluster,
    RMMSetup,
    device_memory_statistics,
    memory_statistics,
    parse_device_size,
    visible_devices,
)
from rmmgo.dask import __main__ as cli  # noqa: E402
from conftest import ON_GPU, PYTHON_DIR  # noqa: E402

# Task functions travel by value: a worker started by the command line
# cannot import this module.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

MiB = 1 << 20
POOL = 8 * MiB
DEADLINE = 120  # seconds: generous for a loaded 2-core machine, yet bounded
DASHBOARD = ":0"  # any free port: never 8787, which another cluster may hold


def wait_until(predicate, what, timeout=DEADLINE, interval=0.1):
    end = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))
        time.sleep(interval)


def register(client, plugin):
    """client.register_plugin (distributed >= 2023.9) or register_worker_plugin (older)."""
    if hasattr(client, "register_plugin"):
        return client.register_plugin(plugin)
    return client.register_worker_plugin(plugin)


# ------------------------------------------------------------ tasks (run on workers)


def allocate(nbytes):
    """A DeviceBuffer from the worker's current resource (the task's result, held by the worker)."""
    buf = rmmgo.DeviceBuffer(size=nbytes)
    assert buf.mr == mr.get_current_device_resource()
    return buf


def worker_facts(dask_worker):
    return {
        "name": dask_worker.name,
        "pid": os.getpid(),
        "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "backend": rmmgo.backend(),
        "resource": device_memory_statistics()["resource"],
        "uuid": device_memory_statistics()["uuid"],
    }


# ------------------------------------------------------------ settings (no cluster)


@pytest.mark.parametrize(
    "value, nbytes, fraction",
    [
        (4096, 4096, None),
        ("4GiB", 4 << 30, None),
        ("5000M", 5 * 10**9, None),
        ("1.5 GB", 15 * 10**8, None),
        (4e9, 4 * 10**9, None),
        ("1e9", 10**9, None),
        ("90%", None, 0.9),
        (" 100% ", None, 1.0),
        (0.5, None, 0.5),
        (1.0, None, 1.0),
        ("0.25", None, 0.25),
    ],
)
def test_sizes(value, nbytes, fraction):
    s = parse_device_size(value, "x")
    assert (s.nbytes, s.fraction) == (nbytes, fraction)
    assert str(s) == str(value)


def test_sizes_resolve_against_the_device_and_align():
    assert parse_device_size("50%").resolve(1000 * 1024) == 512000
    assert parse_device_size(0.3).resolve(1 << 30) == int((1 << 30) * 0.3) // 256 * 256
    assert parse_device_size(1000).resolve(1 << 30) == 768
    for none in (None, 0, 0.0, "0", "0 B"):
        assert parse_device_size(none) is None


@pytest.mark.parametrize(
    "value, error, words",
    [
        (True, TypeError, "not True"),
        ([1], TypeError, "a number of bytes"),
        ("abc", ValueError, "'abc'"),
        ("150%", ValueError, "(0%, 100%]"),
        ("-5%", ValueError, "(0%, 100%]"),
        ("x%", ValueError, "percentage"),
        (-1, ValueError, "negative"),
        ("-1GiB", ValueError, "negative"),
        (float("nan"), ValueError, "negative or infinite"),
        (1.5, ValueError, "whole number"),
        (100, ValueError, "below 256"),
        ("1", ValueError, "below 256"),
    ],
)
def test_bad_sizes(value, error, words):
    with pytest.raises(error, match="initial_pool_size") as info:
        parse_device_size(value, "initial_pool_size")
    assert words in str(info.value)


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        (dict(async_allocator=True, managed_memory=True), ValueError, "cannot be combined with managed_memory"),
        (dict(async_allocator=True, pool_allocator=True), ValueError, "cannot be combined with pool_allocator"),
        (dict(release_threshold="1GiB"), ValueError, "needs async_allocator=True"),
        (dict(maximum_pool_size="1GiB"), ValueError, "needs a pool"),
        (dict(managed_memory=True, maximum_pool_size="1GiB"), ValueError, "needs a pool"),
        (dict(initial_pool_size="2GiB", maximum_pool_size="1GiB"), ValueError, "exceeds maximum_pool_size"),
        (dict(initial_pool_size="60%", maximum_pool_size=0.5), ValueError, "exceeds maximum_pool_size"),
        (dict(initial_pool_size="lots"), ValueError, "initial_pool_size='lots'"),
        (dict(statistics="maybe"), TypeError, "statistics must be True or False"),
        (dict(log_directory=42), TypeError, "log_directory must be a path"),
    ],
)
def test_bad_settings_fail_on_the_client(kwargs, error, words):
    with pytest.raises(error) as info:
        RMMSetup(**kwargs)
    assert words in str(info.value)


def test_bad_settings_fail_before_a_cluster_starts():
    t0 = time.monotonic()
    with pytest.raises(ValueError, match="cannot be combined with managed_memory"):
        LocalGPUCluster(rmm_async=True, rmm_managed_memory=True, dashboard_address=DASHBOARD)
    with pytest.raises(TypeError, match="both initial_pool_size and rmm_pool_size"):
        LocalGPUCluster(initial_pool_size="1GiB", rmm_pool_size="1GiB", dashboard_address=DASHBOARD)
    with pytest.raises(ValueError, match="processes=True"):
        LocalGPUCluster(processes=False, dashboard_address=DASHBOARD)
    with pytest.raises(ValueError, match="n_workers=3"):
        LocalGPUCluster(CUDA_VISIBLE_DEVICES="0,1", n_workers=3, dashboard_address=DASHBOARD)
    assert time.monotonic() - t0 < 10  # refused at once: no scheduler, no worker process


def test_a_worker_whose_setup_fails_stops_the_cluster_start():
    # Only the worker can tell its device has no room for the pool: it does
    # not start, and neither does the cluster (nothing is left running).
    with pytest.raises(RuntimeError, match="failed to start"):
        LocalGPUCluster(n_workers=1, initial_pool_size="64TiB", dashboard_address=DASHBOARD)


def test_pool_implied_and_settings_travel_without_resources():
    p = RMMSetup(initial_pool_size="1GiB")
    assert p.settings.pool_allocator and not p.settings.async_allocator
    assert RMMSetup(async_allocator=True, initial_pool_size="1GiB").settings.pool_allocator is False
    assert repr(p) == "RMMSetup(initial_pool_size='1GiB', pool_allocator=True)"
    p.setup()
    try:
        clone = cloudpickle.loads(cloudpickle.dumps(p))  # the resources stay behind
        assert clone.settings == p.settings and clone.resource is None
    finally:
        p.teardown()


def test_config_keys_fill_what_is_not_given():
    with dask.config.set({"rmmgo.pool-size": "16MiB", "rmmgo.statistics": True, "rmmgo.async": False}):
        s = RMMSetup().settings
        assert (s.initial_pool_size.nbytes, s.pool_allocator, s.statistics) == (16 * MiB, True, True)
        s = RMMSetup(initial_pool_size="32MiB", statistics=False).settings  # arguments win
        assert (s.initial_pool_size.nbytes, s.statistics) == (32 * MiB, False)
    # The environment's form: DASK_RMMGO__POOL_SIZE and friends.
    env = dask.config.collect_env(
        {"DASK_RMMGO__POOL_SIZE": "90%", "DASK_RMMGO__TRACK_ALLOCATIONS": "True", "DASK_RMMGO__ASYNC": "false"}
    )
    with dask.config.set(env):
        s = RMMSetup().settings
        assert (s.initial_pool_size.fraction, s.track_allocations, s.async_allocator) == (0.9, True, False)
    with dask.config.set({"rmmgo.pool-size": "plenty"}):
        with pytest.raises(ValueError, match="Dask config rmmgo.pool-size='plenty'"):
            RMMSetup()
    with dask.config.set({"rmmgo.release-threshold": "1GiB"}):
        with pytest.raises(ValueError, match="Dask config rmmgo.release-threshold applies to the async"):
            RMMSetup()
    assert dask.config.get("rmmgo.pool-size") is None  # the registered default


# ------------------------------------------------------------ setup in this process


def test_setup_builds_the_chain_on_the_current_device(tmp_path):
    total = mr.available_device_memory()[1]
    p = RMMSetup(initial_pool_size="1%", maximum_pool_size="2%", statistics=True, track_allocations=True,
                 log_directory=str(tmp_path / "logs"))
    before = mr.get_current_device_resource()
    p.setup()
    try:
        stats = device_memory_statistics()
        assert stats["resource"] == (
            "StatisticsResourceAdaptor > TrackingResourceAdaptor > LoggingResourceAdaptor > "
            "PoolMemoryResource > CudaMemoryResource"
        )
        assert stats["reserved_bytes"] == int(total * 0.01) // 256 * 256
        buf = rmmgo.DeviceBuffer(size=MiB)
        stats = device_memory_statistics()
        assert (stats["current_bytes"], stats["current_count"], stats["used_bytes"]) == (MiB, 1, MiB)
        del buf
        stats = device_memory_statistics()
        assert (stats["current_bytes"], stats["peak_bytes"], stats["total_count"]) == (0, MiB, 1)
        log = mr.get_per_device_resource(p.device).upstream_mr.upstream_mr
        log.flush()
        assert log.get_file_name() == str(tmp_path / "logs" / ("rmm_log_pid%d.dev%d.txt" % (os.getpid(), p.device)))
        assert os.path.getsize(log.get_file_name()) > 0
    finally:
        p.teardown()
    assert mr.get_current_device_resource() != p.resource and p.resource is None
    assert type(mr.get_current_device_resource()) is type(before)


def test_setup_async_with_limit():
    p = RMMSetup(async_allocator=True, release_threshold="4MiB", maximum_pool_size="16MiB", statistics=True)
    p.setup()
    try:
        assert device_memory_statistics()["resource"] == (
            "StatisticsResourceAdaptor > LimitingResourceAdaptor > CudaAsyncMemoryResource"
        )
        keep = rmmgo.DeviceBuffer(size=12 * MiB)
        with pytest.raises(MemoryError):
            rmmgo.DeviceBuffer(size=8 * MiB)  # past the 16 MiB limit
        assert device_memory_statistics()["used_bytes"] == 12 * MiB
        del keep
    finally:
        p.teardown()


def test_setup_failure_leaves_the_device_as_it_was():
    before = mr.get_current_device_resource()
    p = RMMSetup(initial_pool_size="64TiB")  # more than any device
    with pytest.raises(MemoryError):
        p.setup()
    assert mr.get_current_device_resource() == before and p.resource is None


def test_command_line_refuses_bad_settings(capsys):
    assert cli.main(["worker", "tcp://127.0.0.1:1", "--pool-size", "lots"]) == 2
    assert "initial_pool_size='lots'" in capsys.readouterr().err
    assert cli.main(["worker", "tcp://127.0.0.1:1", "--async", "--managed-memory"]) == 2
    assert cli.main(["worker"]) == 2


def test_visible_devices():
    assert visible_devices("0,2") == [0, 2]
    assert visible_devices([3, "GPU-ab"]) == [3, "GPU-ab"]
    assert visible_devices("") == []
    with pytest.raises(ValueError, match="twice"):
        visible_devices("1,1")


# ------------------------------------------------------------ the shared cluster


# ------------------------------------------------------------ distributed's NVML diagnostics

# A pynvml whose device names are str, as pynvml 11.5 and nvidia-ml-py 11.515 on return them
# (the GPU machine's): distributed releases before February 2023 call .decode() on them.
FAKE_PYNVML = """
class NVMLError(Exception): pass
class NVMLError_NotSupported(NVMLError): pass
class NVMLError_LibraryNotFound(NVMLError): pass
class NVMLError_DriverNotLoaded(NVMLError): pass
class NVMLError_Unknown(NVMLError): pass
NVML_DEVICE_MIG_DISABLE = 0
NAME = "NVIDIA H100 80GB HBM3"
class _Info: total, used, gpu = 80 << 30, 1 << 30, 0
def nvmlInit(): pass
def nvmlShutdown(): pass
def nvmlDeviceGetCount(): return 1
def nvmlDeviceGetHandleByIndex(i): return i
def nvmlDeviceGetName(h): return NAME
def nvmlSystemGetDriverVersion(): return "580.159.04"
def nvmlDeviceGetMemoryInfo(h): return _Info()
def nvmlDeviceGetUtilizationRates(h): return _Info()
def nvmlDeviceGetMigMode(h): raise NVMLError_NotSupported()
def nvmlDeviceGetComputeRunningProcesses(h): return []
"""


def _distributed_decodes_names():
    import inspect

    from distributed.diagnostics import nvml

    return hasattr(nvml, "_get_name") and ".decode()" in inspect.getsource(nvml._get_name)


@pytest.mark.parametrize("name", ["NVIDIA H100 80GB HBM3", b"NVIDIA H100 80GB HBM3"])
def test_broken_nvml_diagnostics_are_detected(monkeypatch, name):
    import types

    from distributed.diagnostics import nvml

    from rmmgo.dask import _nvml

    fake = types.ModuleType("pynvml")
    exec(FAKE_PYNVML, fake.__dict__)
    fake.NAME = name
    monkeypatch.setattr(nvml, "pynvml", fake)
    assert _nvml.distributed_nvml_broken() == (isinstance(name, str) and _distributed_decodes_names())
    monkeypatch.setattr(nvml, "pynvml", None)
    assert not _nvml.distributed_nvml_broken(), "no pynvml: distributed turns its diagnostics off itself"


@pytest.mark.parametrize("rmmgo_first", [True, False])
def test_clusters_start_where_distributed_nvml_is_broken(tmp_path, rmmgo_first):
    """A scheduler starts in a process with a pynvml that breaks distributed's NVML diagnostics
    once rmmgo.dask is imported (the GPU machine: 'str' object has no attribute 'decode');
    without rmmgo.dask, distributed itself fails there (the check that the fake is faithful)."""
    if not rmmgo_first and not _distributed_decodes_names():
        pytest.skip("this distributed reads str device names")
    (tmp_path / "pynvml.py").write_text(FAKE_PYNVML)
    script = (
        "import dask.config, distributed\n"
        + ("import rmmgo.dask\n" if rmmgo_first else "")
        + "print('nvml diagnostics:', dask.config.get('distributed.diagnostics.nvml'))\n"
        "with distributed.LocalCluster(n_workers=0, dashboard_address=':0') as c:\n"
        "    print('scheduler', c.scheduler_address)\n"
    )
    env = _env()
    env["PYTHONPATH"] = str(tmp_path) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         timeout=DEADLINE)
    if rmmgo_first:
        assert out.returncode == 0, out.stdout + out.stderr
        assert "nvml diagnostics: False" in out.stdout and "scheduler tcp://" in out.stdout, out.stdout
    else:
        assert out.returncode != 0 and "has no attribute 'decode'" in out.stderr, out.stdout + out.stderr


@pytest.fixture(scope="module")
def cluster():
    with LocalGPUCluster(initial_pool_size=POOL, statistics=True, dashboard_address=DASHBOARD) as c:
        yield c


@pytest.fixture(scope="module")
def client(cluster):
    with distributed.Client(cluster) as c:
        c.wait_for_workers(len(cluster.cuda_visible_devices), timeout=DEADLINE)
        yield c


def test_one_worker_per_gpu(client, cluster):
    devices = cluster.cuda_visible_devices
    if not ON_GPU:
        assert len(devices) == 2  # the simulated device's default count: two worker processes
    facts = client.run(worker_facts)
    assert sorted(f["name"] for f in facts.values()) == sorted(devices)
    assert len({f["pid"] for f in facts.values()}) == len(devices)
    for f in facts.values():
        assert f["backend"] == rmmgo.backend()
        visible = f["visible"].split(",")
        assert visible[0] == str(f["name"]) and sorted(visible) == sorted(str(d) for d in devices)
        assert f["resource"] == "StatisticsResourceAdaptor > PoolMemoryResource > CudaMemoryResource"
    # Each worker has a GPU of its own: told apart by UUID, the same in every
    # process (PCI domain and bus may be the same for two GPUs of one host).
    uuids = {f["name"]: f["uuid"] for f in facts.values()}
    assert all(re.fullmatch(r"(GPU|MIG)-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", u or "") for u in uuids.values()), uuids
    assert len(set(uuids.values())) == len(devices), uuids
    if ON_GPU and shutil.which("nvidia-smi"):
        # The UUIDs NVML reports (nvidia-smi), for the GPUs the workers were given.
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
        assert all(u in listed for u in uuids.values() if u.startswith("GPU-")), (uuids, listed)


def test_tasks_allocate_from_the_worker_resource(client):
    workers = sorted(client.scheduler_info()["workers"])
    futures = [client.submit(allocate, MiB * (i + 1), workers=[w], pure=False) for i, w in enumerate(workers)]
    distributed.wait(futures, timeout=DEADLINE)
    assert [f.status for f in futures] == ["finished"] * len(workers)
    stats = memory_statistics(client)
    assert sorted(stats) == workers
    for i, w in enumerate(workers):
        s = stats[w]
        assert s["device"] == 0 and s["reserved_bytes"] == POOL
        assert s["current_bytes"] == MiB * (i + 1) and s["current_count"] == 1
        assert s["peak_bytes"] >= s["current_bytes"] and s["total_count"] >= 1
    # A buffer fetched to the client arrives as a DeviceBuffer of this process.
    data = client.submit(rmmgo.to_device, b"rmmgo on dask", workers=[workers[0]], pure=False).result()
    assert isinstance(data, rmmgo.DeviceBuffer) and data.tobytes() == b"rmmgo on dask"
    del futures
    wait_until(lambda: all(s["current_bytes"] == 0 for s in memory_statistics(client).values()),
               "the workers to free the buffers")


def test_statistics_in_the_worker_metrics(client):
    workers = sorted(client.scheduler_info()["workers"])
    keep = [client.submit(allocate, 3 * MiB, workers=[w], pure=False) for w in workers]
    distributed.wait(keep, timeout=DEADLINE)

    def reported():
        m = {a: w["metrics"] for a, w in client.scheduler_info()["workers"].items()}
        ok = all(v.get("rmmgo", {}).get("current_bytes") == 3 * MiB for v in m.values())
        return m if ok and len(m) == len(workers) else None

    metrics = wait_until(reported, "the heartbeats to carry the rmmgo metric")
    for m in metrics.values():
        assert m["rmmgo"]["reserved_bytes"] == POOL
        assert m["rmm"] == {"rmm-used": 3 * MiB, "rmm-total": POOL}
    del keep


def test_worker_failure_reaches_the_client(client):
    with pytest.raises(MemoryError):
        register(client, RMMSetup(initial_pool_size="64TiB"))


def test_registered_plugin_replaces_and_survives_restart(client, tmp_path):
    logs = tmp_path / "logs"
    register(client, RMMSetup(async_allocator=True, release_threshold="4MiB", maximum_pool_size="64MiB",
                              log_directory=str(logs), track_allocations=True, statistics=True))
    chain = ("StatisticsResourceAdaptor > TrackingResourceAdaptor > LoggingResourceAdaptor > "
             "LimitingResourceAdaptor > CudaAsyncMemoryResource")
    before = client.run(worker_facts)
    assert {f["resource"] for f in before.values()} == {chain}
    keep = [client.submit(allocate, MiB, workers=[w], pure=False) for w in before]
    distributed.wait(keep, timeout=DEADLINE)
    assert all(s["used_bytes"] == MiB for s in memory_statistics(client).values())
    del keep

    client.restart()  # new worker processes: the plugin is applied again
    client.wait_for_workers(len(before), timeout=DEADLINE)
    # A new worker applies the LocalGPUCluster's plugin as it starts, then the
    # registered one, which the scheduler hands it as it joins.
    after = wait_until(lambda: (lambda f: f if {x["resource"] for x in f.values()} == {chain} else None)(
        client.run(worker_facts)), "the restarted workers to apply the registered plugin")
    assert not {f["pid"] for f in before.values()} & {f["pid"] for f in after.values()}
    assert sorted(f["name"] for f in after.values()) == sorted(f["name"] for f in before.values())
    for s in memory_statistics(client).values():
        assert s["total_count"] == 0 and s["current_bytes"] == 0  # fresh counters
    names = sorted(os.listdir(logs))
    assert names == sorted("rmm_log_%s.dev0.txt" % f["name"] for f in before.values()), names


# ------------------------------------------------------------ workers started from the command line


def _env():
    env = dict(os.environ)
    if PYTHON_DIR:
        env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_preload_reads_the_config():
    with dask.config.set({"rmmgo.pool-size": "4MiB", "rmmgo.statistics": True}):
        with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=DASHBOARD,
                                      preload=["rmmgo.dask"]) as c, distributed.Client(c) as client:
            (stats,) = memory_statistics(client).values()
    assert stats["resource"] == "StatisticsResourceAdaptor > PoolMemoryResource > CudaMemoryResource"
    assert stats["reserved_bytes"] == 4 * MiB


def test_command_line_worker(tmp_path):
    log = open(tmp_path / "worker.log", "w+")  # a file, not a pipe: a full pipe would stall the worker
    with distributed.LocalCluster(n_workers=0, dashboard_address=DASHBOARD) as c, distributed.Client(c) as client:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rmmgo.dask", "worker", c.scheduler_address, "--devices", "0",
             "--name", "cli", "--pool-size", "4MiB", "--statistics"],
            env=_env(), stdout=log, stderr=subprocess.STDOUT,
        )
        try:
            client.wait_for_workers(1, timeout=DEADLINE)
            (addr, stats), = memory_statistics(client).items()
            assert stats["resource"] == "StatisticsResourceAdaptor > PoolMemoryResource > CudaMemoryResource"
            assert stats["reserved_bytes"] == 4 * MiB
            assert client.scheduler_info()["workers"][addr]["name"] == "cli-0"
            assert client.submit(allocate, MiB, pure=False).result().size == MiB
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=DEADLINE)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.seek(0)
            out = log.read()
            log.close()
    assert proc.returncode == 0, out
    assert "rmmgo.dask: worker tcp://" in out and "on GPU 0" in out, out
