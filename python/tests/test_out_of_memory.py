"""Out-of-memory reports, snapshots, pressure hooks and PyTorch's numbers (docs/out-of-memory.md)."""

import json
import pickle
import threading

import pytest

import rmmgo as rmm
from rmmgo.allocators import torch as rt

MiB = 1 << 20


def fragmented_pool():
    pool = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), 64 * MiB, 64 * MiB)
    bufs = [rmm.DeviceBuffer(size=2 * MiB, mr=pool) for _ in range(32)]
    live = bufs[1::2]
    del bufs
    return pool, live


def test_out_of_memory_error_carries_the_report():
    pool, live = fragmented_pool()
    with pytest.raises(MemoryError) as info:
        rmm.DeviceBuffer(size=4 * MiB, mr=pool)
    e = info.value
    assert isinstance(e, rmm.OutOfMemoryError)
    msg = str(e)
    assert "Maximum pool size exceeded" in msg
    assert "reading: 32.0 MiB free in the pool but the largest block is 2.0 MiB: fragmentation" in msg
    assert e.bytes == 4 * MiB and e.alignment == 256 and e.stream == 0
    assert e.chain == ("pool", "cuda")
    p = e.resources[0]
    assert p["kind"] == "pool"
    assert p["reserved"] == pool.pool_size() == 64 * MiB
    assert p["live"] == pool.used_bytes() == 32 * MiB
    assert p["free"] == 32 * MiB and p["largest_free"] == 2 * MiB and p["free_blocks"] == 16
    assert e.device_total > 0 and e.reading.endswith("fragmentation")
    assert rmm.last_out_of_memory_report()["bytes"] == 4 * MiB
    del live


def test_memory_snapshot_torch_layout(tmp_path):
    pool, live = fragmented_pool()
    snap = rmm.memory_snapshot(pool, path=tmp_path / "s.pickle")
    segs = snap["segments"]
    assert sum(s["total_size"] for s in segs) == pool.pool_size()
    for s in segs:
        addr = s["address"]
        for b in s["blocks"]:
            assert b["address"] == addr  # blocks tile the segment, as _memory_viz expects
            assert b["state"] in ("active_allocated", "inactive")
            addr += b["size"]
        assert addr == s["address"] + s["total_size"]
    active = sum(b["size"] for s in segs for b in s["blocks"] if b["state"] == "active_allocated")
    assert active == 32 * MiB
    with open(tmp_path / "s.pickle", "rb") as f:
        loaded = pickle.load(f)
    assert loaded["segments"] == snap["segments"] and loaded["device_traces"] == snap["device_traces"]
    rmm.memory_snapshot(pool, path=tmp_path / "s.json")
    assert json.loads((tmp_path / "s.json").read_text())["segments"] == segs
    del live


def test_pressure_thresholds_16_threads():
    pool = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), 64 * MiB)
    events = {}
    lock = threading.Lock()

    def on_cross(threshold, live, up):
        with lock:
            events.setdefault(threshold, []).append(up)

    pr = rmm.PressureResourceAdaptor(pool, thresholds=["4MiB", 8 * MiB, 16 * MiB], on_cross=on_cross)
    barrier = threading.Barrier(16)

    def work():
        for _ in range(4):
            bufs = [rmm.DeviceBuffer(size=512 << 10, mr=pr) for _ in range(8)]
            barrier.wait()
            del bufs
            barrier.wait()

    ts = [threading.Thread(target=work) for _ in range(16)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert pr.live_bytes == 0
    assert sorted(events) == [4 * MiB, 8 * MiB, 16 * MiB]
    for th, evs in events.items():
        assert evs == [True, False] * (len(evs) // 2), (th, evs)


def test_pressure_on_failure_retry_and_spill():
    pool = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), 16 * MiB, 16 * MiB)
    spill = []
    seen = []

    def on_failure(nbytes, retry):
        seen.append(retry)
        if retry == 0:
            return True
        if spill:
            spill.pop()
            return True
        return False

    pr = rmm.PressureResourceAdaptor(pool, on_failure=on_failure, history=16)
    spill.extend(rmm.DeviceBuffer(size=MiB, mr=pr) for _ in range(16))
    b = rmm.DeviceBuffer(size=MiB, mr=pr)
    assert seen == [0, 1] and len(spill) == 15
    snap = rmm.memory_snapshot(pr)
    actions = {e["action"] for e in snap["device_traces"][0]}
    assert {"alloc", "oom", "free_completed"} <= actions
    del b, spill[:]

    def raising(nbytes, retry):
        raise MemoryError("spill failed")

    pr2 = rmm.PressureResourceAdaptor(pool, on_failure=raising)
    with pytest.raises(MemoryError, match="spill failed"):
        rmm.DeviceBuffer(size=32 * MiB, mr=pr2)


def test_torch_stats_helpers():
    prev = rmm.mr.get_current_device_resource()
    pool = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), 32 * MiB)
    st = rmm.mr.StatisticsResourceAdaptor(pool)
    rmm.mr.set_current_device_resource(st)
    try:
        a = rmm.DeviceBuffer(size=3 * MiB)
        b = rmm.DeviceBuffer(size=MiB)
        assert rt.memory_allocated() == 4 * MiB
        assert rt.memory_reserved() == pool.pool_size() >= 32 * MiB
        del b
        assert rt.memory_allocated() == 3 * MiB
        assert rt.max_memory_allocated() == 4 * MiB
        rt.reset_peak_memory_stats()
        assert rt.max_memory_allocated() == 3 * MiB
        c = rmm.DeviceBuffer(size=2 * MiB)
        assert rt.max_memory_allocated() == 5 * MiB and rt.memory_allocated() == 5 * MiB
        s = rt.memory_stats()
        assert s["allocated_bytes.all.current"] == 5 * MiB and s["allocation.all.current"] == 2
        assert s["reserved_bytes.all.current"] == pool.pool_size()
        assert rt.max_memory_reserved() >= rt.memory_reserved()
        del a, c
        assert rt.memory_allocated() == 0
    finally:
        rmm.mr.set_current_device_resource(prev)
    # Without a statistics adaptor: the pool's used bytes.
    rmm.mr.set_current_device_resource(pool)
    try:
        d = rmm.DeviceBuffer(size=2 * MiB)
        assert rt.memory_allocated() == pool.used_bytes() == 2 * MiB
        del d
    finally:
        rmm.mr.set_current_device_resource(prev)
