"""The pure-Python parts of python/bench/realwork/run.py, without a GPU or torch:
argument parsing, the table, paired times, the max-batch search, and the
subprocess protocol (its hidden "selftest" workload). Cheap: three short
subprocesses."""

import json
import subprocess
import sys

import pytest

import benchscript

rw = benchscript.load("realwork/run.py", "realwork_run")
_path = rw.__file__


def test_parse_args():
    a = rw.parse_args(["--quick", "--out", "x"])
    assert a.allocators == rw.QUICK_ALLOCATORS
    assert a.workloads == [w for w in rw.WORKLOADS if w != "gpt2-generate"], "--quick leaves the long one out"
    assert rw.parse_args(["--out", "x"]).workloads == rw.WORKLOADS
    assert rw.steps_for(a, "gpt2-train") == rw.STEPS["gpt2-train"][1]
    assert not a.no_stats and rw.parse_args(["--no-stats"]).no_stats
    a = rw.parse_args(["--allocators", "all", "--workloads", "cupy-pipeline", "--steps", "7"])
    assert a.allocators == rw.ALLOCATORS and rw.steps_for(a, "cupy-pipeline") == 7
    for bad in (["--workloads", "bert"], ["--allocators", "jemalloc"], ["--steps", "0"]):
        with pytest.raises(SystemExit):
            rw.parse_args(bad)
    assert rw.applies("cupy-pipeline", "cupy") and not rw.applies("gpt2-train", "cupy")
    assert rw.applies("gpt2-train", "torch-async") and not rw.applies("cupy-pipeline", "torch")
    assert rw.applies("cupy-pipeline", "rmm-expandable")


def test_help_without_torch():
    out = subprocess.run([sys.executable, _path, "--help"], capture_output=True, text=True, check=True).stdout
    assert "--max-batch" in out and "--quick" in out


def test_paired_time_and_table():
    base = {"workload": "gpt2-train", "allocator": "torch", "step_times": [1.0, 2.0, 4.0], "peak_live": 2 << 30, "peak_reserved": 3 << 30}
    other = {"workload": "gpt2-train", "allocator": "rmm-pool", "step_times": [2.0, None, 8.0], "peak_live": 2 << 30,
             "peak_reserved": 4 << 30, "device_used": 5 << 30, "oom": 1}
    rw.summarize([base, other])
    assert other["time_vs_baseline"] == pytest.approx(2.0), "failed steps (None) left out"
    assert other["reserved_over_live"] == pytest.approx(2.0)
    assert base["time_vs_baseline"] == pytest.approx(1.0)
    t = rw.table([base, other])
    assert "| gpt2-train | rmm-pool | 2.00 | 4.00 | 2.00x | 5.00 | 2.50x | 1 | 2.00x |" in t


def test_search_max():
    for limit, best in ((256, 40), (30, 30), (256, 0), (256, 1)):
        n, tried = rw.search_max(lambda b: b <= best, limit)
        assert n == best, (limit, best, tried)
        assert len(tried) <= 2 * limit.bit_length() + 2
    n, tried = rw.search_max(lambda b: b <= 100, 101, first=100)
    assert (n, tried) == (100, [(100, True), (101, False)]), "a known answer checked in two probes"
    n, _ = rw.search_max(lambda b: b <= 97, 101, first=100)
    assert n == 97


def test_subprocess_protocol(tmp_path):
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, _path, "--workloads", "selftest", "--allocators", "rmm-pool,rmm-arena",
                        "--out", str(out)], capture_output=True, text=True)
    assert p.returncode == 1, "rmm-arena's selftest fails: " + p.stdout + p.stderr
    res = json.loads((out / "results.json").read_text())["records"]
    assert [r["allocator"] for r in res] == ["torch", "rmm-pool", "rmm-arena"], "the baseline runs first, added when not asked"
    assert res[1]["time_vs_baseline"] > 1 and "error" not in res[1]
    assert res[2]["oom"] == 1 and "out of memory" in res[2]["error"]
    assert "| selftest | rmm-pool |" in (out / "table.md").read_text()
    assert (out / "selftest.rmm-pool.json").exists()


def test_rounds_pair_with_their_own_baseline():
    recs = []
    for rnd, (bt, ot) in enumerate([(1.0, 1.5), (2.0, 2.0), (1.0, 0.5)]):
        recs.append({"workload": "gpt2-train", "allocator": "torch", "round": rnd, "step_times": [bt, bt]})
        recs.append({"workload": "gpt2-train", "allocator": "rmm-expandable", "round": rnd, "step_times": [ot, ot],
                     "peak_live": 4, "peak_reserved": 5})
    rw.summarize(recs)
    assert [r["time_vs_baseline"] for r in recs[1::2]] == pytest.approx([1.5, 1.0, 0.5]), "each round paired with its own"
    t = rw.rounds_table(recs)
    assert "| gpt2-train | rmm-expandable | 1.00x | 1.50 1.00 0.50 | 1.25x |" in t
    assert "3 rounds" in t


def test_repeat_interleaves_cases(tmp_path):
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, _path, "--workloads", "selftest", "--allocators", "rmm-pool", "--repeat", "2",
                        "--out", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    res = json.loads((out / "results.json").read_text())["records"]
    assert [(r["allocator"], r["round"]) for r in res] == [("torch", 0), ("rmm-pool", 0), ("torch", 1), ("rmm-pool", 1)]
    assert "2 rounds" in (out / "table.md").read_text()


def test_direct_async_control_builds(tmp_path):
    """The torch-pluggable-async control: a torch allocator name, built once
    per output directory, exporting the two functions PyTorch loads."""
    import ctypes
    import shutil

    assert "torch-pluggable-async" in rw.TORCH_ALLOCATORS
    assert rw.applies("gpt2-train", "torch-pluggable-async") and not rw.applies("cupy-pipeline", "torch-pluggable-async")
    if shutil.which("c++") is None:
        pytest.skip("no C++ compiler here")
    lib = rw.build_direct_async(str(tmp_path))
    mtime = (tmp_path / "direct_async.so").stat().st_mtime_ns
    assert rw.build_direct_async(str(tmp_path)) == lib and (tmp_path / "direct_async.so").stat().st_mtime_ns == mtime
    so = ctypes.CDLL(lib)
    assert so.direct_async_allocate and so.direct_async_deallocate


def test_oom_report_of_the_worker():
    """A case that runs out of memory under rmmgo keeps rmmgo's report of it
    (what the resource held, live and free) in its record."""
    rmm = pytest.importorskip("rmmgo")
    MiB = 1 << 20
    pool = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), 8 * MiB, 8 * MiB)
    live = rmm.DeviceBuffer(size=6 * MiB, mr=pool)
    with pytest.raises(MemoryError):
        rmm.DeviceBuffer(size=4 * MiB, mr=pool)
    report = rw.rmm_oom_report()
    assert report["bytes"] == 4 * MiB and report["resources"][0]["kind"] == "pool", report
    del live


def test_note_oom_keeps_the_first_message_whole():
    rec = {"oom": 0}
    rw.note_oom(rec, 3, MemoryError("out of memory: 8 MiB\n  pool: 6 MiB live"), False)
    rw.note_oom(rec, 4, MemoryError("out of memory again\n  more"), False)
    assert rec["oom"] == 2
    assert rec["oom_errors"] == ["step 3: out of memory: 8 MiB", "step 4: out of memory again"]
    assert rec["oom_message"] == "out of memory: 8 MiB\n  pool: 6 MiB live", "the first, whole"
    assert "oom_report" not in rec


def test_rmm_case_writes_an_event_log(tmp_path):
    """--log: an rmmgo case's allocations and frees go to RMM's CSV log."""
    rmm = pytest.importorskip("rmmgo")
    log = str(tmp_path / "case.csv")
    prev = rmm.mr.get_current_device_resource()
    try:
        r = rw.Rmm("rmm-pool0", log=log)
        buf = rmm.DeviceBuffer(size=1 << 20)
        del buf
        r.top.flush()
    finally:
        rmm.mr.set_current_device_resource(prev)
    with open(r.top.get_file_name()) as f:  # RMM's name: case.dev0.csv
        rows = f.read().splitlines()
    assert rows[0].startswith("Thread,Time,Action,Pointer,Size,Stream"), rows[:1]
    actions = [row.split(",")[2] for row in rows[1:]]
    assert actions == ["allocate", "free"], rows
