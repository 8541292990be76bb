#!/usr/bin/env python3
"""Real workloads under every allocator: memory held, speed, failures (issue 25).

GPU only. Each case -- one workload under one allocator -- runs in a process of
its own (an allocator is chosen before CUDA starts), with the same seed, so the
per-step shapes are the same under every allocator and step times pair up.

Workloads (models built from configs with random weights: no downloads):

  gpt2-train      transformers GPT2LMHeadModel (124M), bf16 autocast, AdamW,
                  gradient clipping; per step batch 4-16 x seq 128-1024 (seeded)
  resnet50-train  torchvision resnet50, channels_last, bf16 autocast, SGD with
                  momentum; batch 32-128 of 224x224
  gpt2-generate   GPT-2 generate with use_cache (a growing KV cache); per step
                  batch 1-8, prompt 32-512, 32-256 new tokens
  cupy-pipeline   CuPy: temporaries of 0.4-80 MB, FFT, sort, selection,
                  reductions, a matmul of random size in [256, 4096]

Allocators:

  torch           PyTorch's caching allocator (the baseline of torch workloads)
  torch-expandable  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
  torch-async     PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
  torch-pluggable-async  a control: PyTorch's pluggable-allocator path to
                  cudaMallocAsync and nothing else (direct_async.cpp, built
                  here with c++): what that path costs by itself, under
                  every rmm-* case (no peak live or reserved: device used)
  cupy            CuPy's MemoryPool (the baseline of cupy-pipeline)
  rmm-pool        rmmgo pool from 1 GiB (how bench/traces were recorded)
  rmm-pool0       rmmgo pool grown on demand from nothing
  rmm-binning     rmmgo binning over a pool grown on demand
  rmm-expandable  rmmgo expandable (no release threshold)
  rmm-expandable0 rmmgo expandable, release threshold 0
  rmm-async       rmmgo cuda_async (release threshold: keep everything)
  rmm-arena       rmmgo arena (half the free memory, RMM's default)

rmmgo runs through its PyTorch pluggable allocator (rmmgo.allocators.torch) or
its CuPy allocator, with a statistics adaptor on top for peak live bytes.

Per case: per-step times (each step ends with a device synchronization),
peak reserved (torch: max_memory_reserved; CuPy: the pool's total bytes;
rmmgo: the resource's own pool size, for cuda_async the CUDA pool's
ReservedMemHigh), device memory used over the process's baseline (cudaMemGetInfo
after each step, max), peak live (torch: max_memory_allocated; rmmgo: the
statistics adaptor; CuPy pool: a counting wrapper), out-of-memory failures.
"time" is the geometric mean over the same steps of step time / the baseline
allocator's step time.

  python3 python/bench/realwork/run.py --out /tmp/realwork            # ~5 min
  python3 python/bench/realwork/run.py --quick --out /tmp/realwork    # ~4-5 min on an H200
  python3 python/bench/realwork/run.py --workloads gpt2-train --allocators torch,rmm-expandable
  python3 python/bench/realwork/run.py --max-batch --out /tmp/mb      # slow: largest GPT-2 batch per allocator
  python3 python/bench/realwork/run.py --quick --no-stats --out /tmp/t  # time only: rmmgo without the statistics adaptor
  python3 python/bench/realwork/run.py --no-stats --repeat 3 --workloads gpt2-train --allocators torch,rmm-expandable
      # speed: the cases interleaved three times, each round paired with its own baseline, and the median
  python3 python/bench/realwork/run.py --max-batch --log --allocators rmm-expandable --max-batch-first 92 --max-batch-limit 93
      # also OUT/<case>.csv: RMM's event log of each rmmgo case, for cmd/rmmgo-replay

Writes OUT/results.json (every case), OUT/table.md and OUT/<case>.json; prints
the table and one JSON line per case. rmmgo must be importable (PYTHONPATH=python
with RMMGO_LIBRARY, or the wheel installed) with librmmgo_torch.so for torch.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time

WORKLOADS = ["gpt2-train", "resnet50-train", "gpt2-generate", "cupy-pipeline"]
TORCH_ALLOCATORS = ["torch", "torch-expandable", "torch-async", "torch-pluggable-async"]
RMM_ALLOCATORS = ["rmm-pool", "rmm-pool0", "rmm-binning", "rmm-expandable", "rmm-expandable0", "rmm-async", "rmm-arena"]
ALLOCATORS = TORCH_ALLOCATORS + ["cupy"] + RMM_ALLOCATORS
# The default and --quick sets (the full list with --allocators all).
DEFAULT_ALLOCATORS = ["torch", "torch-expandable", "torch-async", "cupy", "rmm-pool", "rmm-pool0",
                      "rmm-binning", "rmm-expandable", "rmm-async", "rmm-arena"]
QUICK_ALLOCATORS = ["torch", "torch-expandable", "torch-async", "cupy", "rmm-pool", "rmm-expandable", "rmm-async"]
# Steps after warm-up, per workload: (default, --quick); warm-up steps.
STEPS = {"gpt2-train": (24, 10), "resnet50-train": (24, 10), "gpt2-generate": (12, 6), "cupy-pipeline": (120, 50)}
WARMUP = {"gpt2-train": 3, "resnet50-train": 3, "gpt2-generate": 2, "cupy-pipeline": 10}
GiB = 1 << 30
SELFTEST = "selftest"  # a hidden workload that needs no GPU: tests the subprocess protocol
STEPS[SELFTEST], WARMUP[SELFTEST] = (4, 2), 0


def baseline_of(workload):
    return "cupy" if workload.startswith("cupy") else "torch"


def applies(workload, allocator):
    """Whether allocator makes sense for workload (torch's for torch, CuPy's for CuPy)."""
    if allocator.startswith("torch"):
        return not workload.startswith("cupy")
    if allocator == "cupy":
        return workload.startswith("cupy")
    return True


def case_name(workload, allocator, batch=None):
    return "%s.%s%s" % (workload, allocator, "" if batch is None else ".b%d" % batch)


# ---------------------------------------------------------------- the parent

def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="See the module docstring (python3 -m pydoc) for what is measured.")
    ap.add_argument("--out", default="realwork-out", help="directory for results.json, table.md and per-case JSON")
    ap.add_argument("--workloads", default=None,
                    help="comma-separated: " + ", ".join(WORKLOADS) + " (default: all; --quick: all but gpt2-generate)")
    ap.add_argument("--allocators", default=None,
                    help="comma-separated, or 'all': " + ", ".join(ALLOCATORS) + " (default: all but rmm-pool0 and rmm-expandable0 "
                         "... see DEFAULT_ALLOCATORS; --quick: QUICK_ALLOCATORS)")
    ap.add_argument("--steps", type=int, default=None, help="timed steps per case (default: per workload; --quick fewer)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--quick", action="store_true", help="fewer steps and allocators: about 2-3 minutes")
    ap.add_argument("--timeout", type=float, default=300, help="seconds a case may take before it is killed")
    ap.add_argument("--max-batch", action="store_true",
                    help="instead: the largest GPT-2 training batch at seq 1024 per allocator (binary search, a process per probe; slow)")
    ap.add_argument("--max-batch-limit", type=int, default=256, help="--max-batch: the largest batch tried")
    ap.add_argument("--max-batch-first", type=int, default=8,
                    help="--max-batch: the first batch tried (doubling from it, then bisecting); a known answer saves probes")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run every workload's cases this many times, interleaved (baseline, a, b, baseline, a, b, ...); "
                         "each time is paired with its own round's baseline, and a second table gives each round's time and the median")
    ap.add_argument("--no-stats", action="store_true",
                    help="rmmgo without the statistics adaptor on top: time only, no peak live (what a user runs)")
    ap.add_argument("--log", action="store_true",
                    help="rmmgo cases also write RMM's CSV event log of every allocation and free (a logging "
                         "adaptor on top) to OUT/<case>.csv, for cmd/rmmgo-replay")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)  # internal: run one case, write JSON to this path
    ap.add_argument("--workload", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--allocator", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--batch", type=int, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.workloads is None:
        # gpt2-generate's steps are long (torch's own case took 85 s on an
        # H200): --quick leaves it out.
        a.workloads = ",".join(w for w in WORKLOADS if not (a.quick and w == "gpt2-generate"))
    a.workloads = [w for w in a.workloads.split(",") if w]
    for w in a.workloads:
        if w not in WORKLOADS and w != SELFTEST:
            ap.error("unknown workload %r (want %s)" % (w, ", ".join(WORKLOADS)))
    if a.allocators is None:
        a.allocators = list(QUICK_ALLOCATORS if a.quick else DEFAULT_ALLOCATORS)
    elif a.allocators == "all":
        a.allocators = list(ALLOCATORS)
    else:
        a.allocators = [x for x in a.allocators.split(",") if x]
    for x in a.allocators:
        if x not in ALLOCATORS:
            ap.error("unknown allocator %r (want %s)" % (x, ", ".join(ALLOCATORS)))
    if a.steps is not None and a.steps < 1:
        ap.error("--steps must be at least 1")
    return a


def steps_for(a, workload):
    if a.steps is not None:
        return a.steps
    return STEPS[workload][1 if a.quick else 0]


def worker_env(allocator):
    env = dict(os.environ)
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    if allocator == "torch-expandable":
        env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    elif allocator == "torch-async":
        env["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
    env.setdefault("RMMGO_BACKEND", "cuda")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    env.setdefault("HF_HUB_OFFLINE", "1")
    return env


def run_case(a, workload, allocator, steps, batch=None):
    """Runs one case in a subprocess; returns its record (a dict), errors included."""
    path = os.path.join(a.out, case_name(workload, allocator, batch) + ".json")
    if os.path.exists(path):
        os.remove(path)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", path, "--workload", workload,
           "--allocator", allocator, "--steps", str(steps), "--seed", str(a.seed)]
    if batch is not None:
        cmd += ["--batch", str(batch)]
    if a.no_stats:
        cmd += ["--no-stats"]
    if a.log and allocator in RMM_ALLOCATORS:
        cmd += ["--log"]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, env=worker_env(allocator), capture_output=True, text=True, timeout=a.timeout)
        rc, tail = p.returncode, (p.stdout + p.stderr)[-2000:]
    except subprocess.TimeoutExpired as e:
        rc, tail = "timeout", str(e)[-2000:]
    rec = read_record(path)
    if rec is None:
        rec = {"workload": workload, "allocator": allocator, "error": "worker exited %s without a result" % rc, "log_tail": tail}
    elif rc != 0 and "error" not in rec:
        rec["error"] = "worker exited %s" % rc
        rec["log_tail"] = tail
    rec["case_seconds"] = round(time.time() - t0, 1)
    return rec


def read_record(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def paired_time(rec, base):
    """Geometric mean over the steps both ran of rec's step time / base's."""
    a, b = rec.get("step_times") or [], (base or {}).get("step_times") or []
    n = min(len(a), len(b))
    if n == 0:
        return None
    logs = [math.log(a[i] / b[i]) for i in range(n) if a[i] and b[i]]  # steps that failed (None) left out
    return math.exp(sum(logs) / len(logs)) if logs else None


def fmt_gib(n):
    return "-" if n is None else "%.2f" % (n / GiB)


def fmt_ratio(x):
    return "-" if x is None else "%.2fx" % x


def summarize(records):
    """Adds the derived figures (ratios, paired time) to each record."""
    base = {}
    for r in records:
        if r.get("allocator") == baseline_of(r.get("workload", "")):
            base[(r["workload"], r.get("round", 0))] = r
    for r in records:
        live = r.get("peak_live")
        r["reserved_over_live"] = r["peak_reserved"] / live if live and r.get("peak_reserved") else None
        r["device_over_live"] = r["device_used"] / live if live and r.get("device_used") else None
        b = base.get((r.get("workload"), r.get("round", 0)))
        r["time_vs_baseline"] = paired_time(r, b) if b is not None and "error" not in b else None
        r["baseline"] = baseline_of(r.get("workload", ""))
    return records


def table(records):
    lines = ["| workload | allocator | peak live GiB | peak reserved GiB | reserved / live | device used GiB | device / live "
             "| OOM | time vs baseline | ms per step | note |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in records:
        st = [t for t in r.get("step_times") or [] if t]
        ms = "%.1f" % (1000 * sorted(st)[len(st) // 2]) if st else "-"
        note = r.get("error", "")
        if note:
            note = note.splitlines()[0][:80]
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r.get("workload"), r.get("allocator"), fmt_gib(r.get("peak_live")), fmt_gib(r.get("peak_reserved")),
            fmt_ratio(r.get("reserved_over_live")), fmt_gib(r.get("device_used")), fmt_ratio(r.get("device_over_live")),
            r.get("oom", 0), fmt_ratio(r.get("time_vs_baseline")), ms, note))
    lines.append("")
    lines.append("time vs baseline: geometric mean over the same steps of step time / the baseline's (torch for torch "
                 "workloads, cupy for cupy-pipeline); device used: cudaMemGetInfo's used memory over the process's "
                 "baseline after CUDA started (max after each step), including the CUDA context's later growth.")
    return "\n".join(lines)


def rounds_table(records):
    """Per workload and allocator, with --repeat: each round's time against
    that round's baseline, their median, and the median reserved / live."""
    cases = {}
    for r in records:
        cases.setdefault((r.get("workload"), r.get("allocator")), []).append(r)
    n = max(r.get("round", 0) for r in records) + 1
    lines = ["| workload | allocator | time vs baseline, median | each round | reserved / live, median | ms per step, median |",
             "| --- | --- | --- | --- | --- | --- |"]
    for (w, alloc), rs in cases.items():
        times = [r.get("time_vs_baseline") for r in sorted(rs, key=lambda r: r.get("round", 0))]
        ok = [t for t in times if t is not None]
        rol = [r["reserved_over_live"] for r in rs if r.get("reserved_over_live")]
        ms = [1000 * median([t for t in r.get("step_times") or [] if t]) for r in rs if any(r.get("step_times") or [])]
        lines.append("| %s | %s | %s | %s | %s | %s |" % (
            w, alloc, fmt_ratio(median(ok)) if ok else "-", " ".join("-" if t is None else "%.2f" % t for t in times),
            fmt_ratio(median(rol)) if rol else "-", "%.1f" % median(ms) if ms else "-"))
    lines.append("")
    lines.append("%d rounds, interleaved: every case of a workload once, then again; each round's times are paired with "
                 "that round's baseline." % n)
    return "\n".join(lines)


def median(xs):
    xs = sorted(xs)
    k = len(xs)
    return xs[k // 2] if k % 2 else (xs[k // 2 - 1] + xs[k // 2]) / 2


def search_max(probe, limit, first=8):
    """The largest n in [1, limit] with probe(n) true (probe monotone), 0 if none:
    doubling from first, then bisection. Returns (n, [(n, ok), ...])."""
    lo, hi, tried = 0, None, []
    n = min(first, limit)
    while True:
        ok = probe(n)
        tried.append((n, ok))
        if ok:
            lo = n
        else:
            hi = n
        if hi is None:
            if lo >= limit:
                break
            n = min(2 * lo, limit)
        else:
            if hi - lo <= 1:
                break
            n = (lo + hi) // 2
    return lo, tried


def max_batch(a, workload="gpt2-train"):
    """The largest GPT-2 training batch at seq 1024 per allocator, a process per probe."""
    out = []
    for alloc in a.allocators:
        if not applies(workload, alloc):
            continue

        def probe(b):
            rec = run_case(a, workload, alloc, steps=2, batch=b)
            ok = "error" not in rec and not rec.get("oom")
            print("max-batch %s: batch %d %s" % (alloc, b, "trains" if ok else "fails: " + str(rec.get("error"))[:80]), flush=True)
            return ok
        best, tried = search_max(probe, a.max_batch_limit, first=a.max_batch_first)
        out.append({"allocator": alloc, "max_batch": best, "seq": 1024, "probes": tried})
    lines = ["| allocator | largest GPT-2 batch at seq 1024 | probes |", "| --- | --- | --- |"]
    lines += ["| %s | %d | %d |" % (r["allocator"], r["max_batch"], len(r["probes"])) for r in out]
    return out, "\n".join(lines)


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    if a.worker:
        return worker_main(a)
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    if a.max_batch:
        res, tab = max_batch(a, SELFTEST if a.workloads == [SELFTEST] else "gpt2-train")
        with open(os.path.join(a.out, "max_batch.json"), "w") as f:
            json.dump(res, f, indent=1)
        with open(os.path.join(a.out, "max_batch.md"), "w") as f:
            f.write(tab + "\n")
        print(tab)
        return 0
    records = []
    for w in a.workloads:
        allocs = [x for x in a.allocators if applies(w, x)]
        b = baseline_of(w)
        if b not in allocs:
            allocs.insert(0, b)  # the paired times need the baseline
        allocs.sort(key=lambda x: x != b)  # baseline first
        for rnd in range(max(1, a.repeat)):
            for alloc in allocs:
                rec = run_case(a, w, alloc, steps_for(a, w))
                rec["round"] = rnd
                records.append(rec)
                print("%-15s %-16s %5.1fs %s" % (w, alloc, rec["case_seconds"], rec.get("error", "ok")), flush=True)
                tab = write_results(a, records, t0)  # after every case: a run cut short keeps what it measured
    tab = write_results(a, records, t0)
    print()
    print(tab)
    print()
    for r in records:
        slim = {k: v for k, v in r.items() if k not in ("step_times", "log_tail", "traceback")}
        print(json.dumps(slim, sort_keys=True))
    print("total %.0f s" % (time.time() - t0))
    return 0 if all("error" not in r for r in records) else 1


def write_results(a, records, t0):
    """Writes results.json and table.md for the records so far; returns the table."""
    summarize(records)
    tab = table(records)
    if any(r.get("round", 0) > 0 for r in records):
        tab += "\n\n" + rounds_table(records)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"records": records, "args": vars(a), "seconds": round(time.time() - t0, 1)}, f, indent=1)
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write(tab + "\n")
    return tab


# ---------------------------------------------------------------- the worker

class Rmm:
    """The rmmgo resource of an allocator name, with a statistics adaptor on
    top unless stats is false (then peak live is not known)."""

    def __init__(self, allocator, stats=True, log=None):
        import rmmgo.mr as mr
        self.kind = allocator
        if allocator == "rmm-pool":
            self.res = mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size="1GiB")
            self.pool = self.res
        elif allocator in ("rmm-pool0", "rmm-binning"):
            self.pool = mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size=0)
            self.res = self.pool if allocator == "rmm-pool0" else mr.BinningMemoryResource(self.pool, 18, 22)
        elif allocator in ("rmm-expandable", "rmm-expandable0"):
            self.res = mr.ExpandableMemoryResource(release_threshold=0 if allocator == "rmm-expandable0" else None)
            self.pool = self.res
        elif allocator == "rmm-async":
            self.res = mr.CudaAsyncMemoryResource()
            self.pool = None
        elif allocator == "rmm-arena":
            self.res = mr.ArenaMemoryResource(mr.CudaMemoryResource())
            self.pool = None
        else:
            raise ValueError(allocator)
        self.stats = mr.StatisticsResourceAdaptor(self.res) if stats else None
        top = self.stats if stats else self.res
        if log:
            top = mr.LoggingResourceAdaptor(top, log_file_name=log)
        self.top = top  # kept alive while the frameworks allocate from it
        mr.set_current_device_resource(top)
        self._cudart = None

    def peak_live(self):
        return None if self.stats is None else self.stats.allocation_counts.peak_bytes

    def reserved(self):
        if self.pool is not None:
            # The peak: a pool gives chunks back before it grows, and the
            # expandable resource unmaps, so the size at the end can be less.
            return self.pool.peak_pool_size()
        if self.kind == "rmm-async":
            return self._pool_reserved_high()
        return None  # the arena: taken whole at creation; the device's used memory tells it

    def _pool_reserved_high(self):
        import ctypes
        if self._cudart is None:
            for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
                try:
                    self._cudart = ctypes.CDLL(name)
                    break
                except OSError:
                    continue
        if not self._cudart:
            return None
        v = ctypes.c_uint64()
        rc = self._cudart.cudaMemPoolGetAttribute(ctypes.c_void_p(self.res.pool_handle()), 6, ctypes.byref(v))  # ReservedMemHigh
        return v.value if rc == 0 else None


class CupyCounter:
    """CuPy's own pool, watched: after each of its allocations, the bytes it
    has handed out (used_bytes: live, rounded to its 512-byte units) and
    holds (total_bytes), so the peaks within a step are seen."""

    def __init__(self, cupy):
        self.pool = cupy.get_default_memory_pool()
        self.peak = self.peak_total = 0

        def malloc(n):
            mp = self.pool.malloc(n)
            self.peak = max(self.peak, self.pool.used_bytes())
            self.peak_total = max(self.peak_total, self.pool.total_bytes())
            return mp
        cupy.cuda.set_allocator(malloc)


def is_oom(exc):
    s = "%s: %s" % (type(exc).__name__, exc)
    return "out of memory" in s.lower() or "OutOfMemory" in s or "RMM_ERROR_OUT_OF_MEMORY" in s or "cudaErrorMemoryAllocation" in s


def worker_main(a):
    rec = {"workload": a.workload, "allocator": a.allocator, "seed": a.seed, "steps": a.steps, "oom": 0,
           "step_times": [], "batch": a.batch}
    try:
        run_worker(a, rec)
    except Exception as e:  # noqa: BLE001 -- every failure goes into the record
        import traceback
        if is_oom(e):
            rec["oom"] = rec.get("oom", 0) + 1
        rec["error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
        rec["traceback"] = traceback.format_exc()[-3000:]
    with open(a.worker, "w") as f:
        json.dump(rec, f)
    return 0


def run_worker(a, rec):
    import random
    rng = random.Random(a.seed)
    w, alloc = a.workload, a.allocator
    if w == SELFTEST:  # the protocol alone, without a GPU (python/tests/test_realwork_bench.py)
        if a.batch is not None and a.batch > 40:
            raise MemoryError("out of memory (selftest batch %d)" % a.batch)
        rec["step_times"] = [0.01 * (1 + rng.random()) * (1.5 if alloc != "torch" else 1) for _ in range(a.steps)]
        rec.update(peak_live=10 * GiB, peak_reserved=(11 if alloc == "torch" else 12) * GiB, device_used=13 * GiB)
        if alloc == "rmm-arena":
            raise MemoryError("out of memory (selftest)")
        return
    is_cupy = w.startswith("cupy")
    if is_cupy:
        import cupy
        cupy.cuda.Device(0).use()
        free0, total = cupy.cuda.runtime.memGetInfo()
        sync = cupy.cuda.Device(0).synchronize

        def mem_used():
            f, _ = cupy.cuda.runtime.memGetInfo()
            return free0 - f
    else:
        import torch
        if alloc.startswith("rmm"):
            # Before CUDA allocates anything: PyTorch refuses to swap an
            # allocator that has served an allocation.
            from rmmgo.allocators.torch import rmm_torch_allocator, torch_allocator_error
            if rmm_torch_allocator is None:
                raise RuntimeError("rmmgo's PyTorch allocator is unavailable: %s" % torch_allocator_error)
            torch.cuda.memory.change_current_allocator(rmm_torch_allocator)
        elif alloc == "torch-pluggable-async":
            torch.cuda.memory.change_current_allocator(torch.cuda.memory.CUDAPluggableAllocator(
                build_direct_async(os.path.dirname(os.path.abspath(a.worker))), "direct_async_allocate", "direct_async_deallocate"))
        torch.cuda.set_device(0)
        free0, total = torch.cuda.mem_get_info()  # the context exists now; nothing allocated yet
        sync = torch.cuda.synchronize

        def mem_used():
            f, _ = torch.cuda.mem_get_info()
            return free0 - f
    rec["device_total"] = total
    rmm = None
    counter = None
    if alloc.startswith("rmm"):
        rmm = Rmm(alloc, stats=not a.no_stats, log=a.worker[:-len(".json")] + ".csv" if a.log else None)  # the current device resource, which both frameworks' rmmgo allocators use
        if is_cupy:
            from rmmgo.allocators.cupy import rmm_cupy_allocator
            cupy.cuda.set_allocator(rmm_cupy_allocator)
    elif alloc == "cupy":
        counter = CupyCounter(cupy)

    step, warm = make_workload(w, rng, a.batch)
    device_used = 0
    for i in range(warm + a.steps):
        t0 = time.perf_counter()
        try:
            step(i)
            sync()
        except Exception as e:  # noqa: BLE001 -- an out-of-memory step is counted, the others re-raised
            if not is_oom(e):
                raise
            note_oom(rec, i, e, rmm is not None)
            if i >= warm:
                rec["step_times"].append(None)
            if rec["oom"] >= 3:
                break
            continue
        dt = time.perf_counter() - t0
        device_used = max(device_used, mem_used())
        if i >= warm:
            rec["step_times"].append(dt)
    rec["device_used"] = device_used
    if rmm is not None:
        rec["peak_live"] = rmm.peak_live()
        rec["peak_reserved"] = rmm.reserved()
        rec["reserved_source"] = "rmmgo resource (peak)" if rec["peak_reserved"] is not None else None
    elif is_cupy:
        rec["peak_live"] = counter.peak
        rec["peak_reserved"] = counter.peak_total
        rec["reserved_source"] = "cupy MemoryPool.total_bytes (peak)"
    elif alloc != "torch-pluggable-async":  # PyTorch keeps no statistics for a pluggable allocator
        rec["peak_live"] = torch.cuda.max_memory_allocated()
        rec["peak_reserved"] = torch.cuda.max_memory_reserved()
        rec["reserved_source"] = "torch.cuda.max_memory_reserved"
    if rec.get("peak_reserved") is None:
        rec["peak_reserved"] = device_used
        rec["reserved_source"] = "device used"


def note_oom(rec, step, e, under_rmm):
    """Counts the out-of-memory error e of step in rec: its first line per
    step, and the first one whole (rmmgo's report, what was live, free and
    mapped, is in the message, also where the failure was on PyTorch's
    autograd thread, whose per-thread report the worker's thread cannot
    read)."""
    rec["oom"] += 1
    rec.setdefault("oom_errors", []).append("step %d: %s" % (step, str(e).splitlines()[0][:200] if str(e) else type(e).__name__))
    rec.setdefault("oom_message", str(e)[:8000])
    if under_rmm and "oom_report" not in rec:
        rec["oom_report"] = rmm_oom_report()


def rmm_oom_report():
    """rmmgo's report of this thread's last out-of-memory error (what was
    live, free and mapped when it failed), or a note why there is none: a
    failure on PyTorch's autograd thread leaves none on this one."""
    try:
        from rmmgo.oom import last_out_of_memory_report
        return last_out_of_memory_report() or {"note": "no report on the worker's main thread"}
    except Exception as e:  # noqa: BLE001 -- a report is a diagnosis; the benchmark goes on without it
        return {"note": "no report: %s" % e}


def build_direct_async(out):
    """Builds the torch-pluggable-async control (direct_async.cpp) into out,
    once per run; returns the library's path."""
    lib = os.path.join(out, "direct_async.so")
    if not os.path.exists(lib):
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "direct_async.cpp")
        cxx = os.environ.get("CXX", "c++")
        subprocess.run([cxx, "-O2", "-shared", "-fPIC", "-o", lib + ".tmp", src, "-ldl"], check=True)
        os.replace(lib + ".tmp", lib)
    return lib


def make_workload(w, rng, batch=None):
    """Returns step(i) for workload w, and its warm-up count. Shapes per step come from rng."""
    if w in ("gpt2-train", "gpt2-generate"):
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel
        torch.manual_seed(0)
        cfg = GPT2Config(n_layer=12, n_embd=768, n_head=12, n_positions=1024, vocab_size=50257)
        model = GPT2LMHeadModel(cfg).cuda()
        if w == "gpt2-train":
            model.train()
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

            def step(i):
                b = batch or rng.randint(4, 16)
                s = 1024 if batch else rng.randint(128, 1024)
                x = torch.randint(0, cfg.vocab_size, (b, s), device="cuda")
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = model(input_ids=x, labels=x).loss
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                opt.zero_grad(set_to_none=True)
            return step, WARMUP[w]
        model.eval()
        model.generation_config.pad_token_id = 0

        def step(i):
            b, p, n = rng.randint(1, 8), rng.randint(32, 512), rng.randint(32, 256)
            x = torch.randint(0, cfg.vocab_size, (b, p), device="cuda")
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
                model.generate(input_ids=x, attention_mask=torch.ones_like(x), max_new_tokens=n, min_new_tokens=n,
                               do_sample=False, use_cache=True)
        return step, WARMUP[w]
    if w == "resnet50-train":
        import torch
        import torchvision
        torch.manual_seed(0)
        model = torchvision.models.resnet50(weights=None).cuda().to(memory_format=torch.channels_last)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        lossf = torch.nn.CrossEntropyLoss()

        def step(i):
            b = rng.randint(32, 128)
            x = torch.randn(b, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
            y = torch.randint(0, 1000, (b,), device="cuda")
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = lossf(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        return step, WARMUP[w]
    if w == "cupy-pipeline":
        import cupy
        cupy.random.seed(0)

        def step(i):
            n = rng.randint(100_000, 20_000_000)  # float32: 0.4-80 MB per temporary
            x = cupy.random.random(n, dtype=cupy.float32)
            y = cupy.sin(x) * 2 + cupy.cos(x) ** 2
            f = cupy.fft.rfft(y)
            z = cupy.fft.irfft(f * cupy.conj(f), n)
            s = cupy.sort(z)
            sel = s[s > s.mean()]
            total = float(sel.sum()) + float(cupy.abs(z).max())
            m = rng.randint(256, 4096)
            a = cupy.random.random((m, m), dtype=cupy.float32)
            c = a @ a.T
            total += float(c.trace())
            del x, y, f, z, s, sel, a, c
            return total
        return step, WARMUP[w]
    raise ValueError(w)


if __name__ == "__main__":
    sys.exit(main())
