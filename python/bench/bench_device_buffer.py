#!/usr/bin/env python3
"""Python allocation + free per op on the random-allocations workload: rmmgo against CuPy and PyTorch.

The workload is bench/README.md's random-allocations workload (RMM's
RANDOM_ALLOCATIONS shape): num_allocations allocations over 2 *
num_allocations steps, sizes uniform in [1, max_size], allocate with
probability 73 % while under max_usage, otherwise free a random live one;
what is live at the end is freed. Every allocation and every free is one op.
The sequence is drawn once per case from a fixed seed and replayed
identically by every row, so the loop does nothing but allocate and free.

Rows, all in one run:

- rmmgo DeviceBuffer(size=n, mr=...) on pool, binning and cuda_async, and
  DeviceBuffer(size=n) on the current resource (a pool); and
  mr.allocate/deallocate on a pool (no DeviceBuffer object);
- CuPy: MemoryPool.malloc called directly, cudaMallocAsync/cudaFreeAsync
  through cupy.cuda.runtime (the default pool, no Python object), and
  cupy.cuda.alloc with CuPy's MemoryPool as the allocator against
  cupy.cuda.alloc with rmmgo's rmm_cupy_allocator (current resource: a pool);
- PyTorch: torch.empty(n, dtype=torch.uint8) with PyTorch's caching allocator
  against the same with rmmgo's pluggable allocator (current resource: a
  pool). PyTorch takes its allocator once per process, so each of these two
  rows runs in a child process of this one, on the same sequence.

Each row has a baseline: DeviceBuffer and mr.allocate rows CuPy's
MemoryPool.malloc, the CuPy allocator row cupy.cuda.alloc over CuPy's pool,
the PyTorch allocator row PyTorch's caching allocator. The table gives the
ratio to it and to cudaMallocAsync (cupy.cuda.runtime) from the same run;
a framework that is not installed (or a simulated device) makes its rows
"absent". Figures: the median per-op time over --reps repetitions after one
warm-up repetition (shown as "first run"), including the Python loop.

    RMMGO_BACKEND=cuda python3 python/bench/bench_device_buffer.py
    RMMGO_BACKEND=simulated python3 python/bench/bench_device_buffer.py --scale 0.05 --reps 3 --timer cpu
"""

import argparse
import datetime
import gc
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

CASES = {  # name: (num_allocations, max_size)
    "small": (100_000, 4 << 10),
    "medium": (20_000, 1 << 20),
    "large": (2_000, 64 << 20),
}
MiB = 1 << 20
NOTES = []  # messages of failed runs, printed under the table
ABSENT = "absent"

# Row labels (the goals and the child processes name rows by them).
DB = "rmmgo DeviceBuffer(mr=%s)"
DB_CURRENT = "rmmgo DeviceBuffer() on the current resource (pool)"
RAW = "rmmgo pool mr.allocate/deallocate (no DeviceBuffer)"
CUPY_POOL = "CuPy MemoryPool.malloc"
CUPY_ASYNC = "cudaMallocAsync/cudaFreeAsync (cupy.cuda.runtime)"
CUPY_ALLOC_POOL = "cupy.cuda.alloc, CuPy's MemoryPool"
CUPY_ALLOC_RMM = "cupy.cuda.alloc, rmmgo rmm_cupy_allocator (pool)"
TORCH_CACHING = "torch.empty, PyTorch's caching allocator"
TORCH_RMM = "torch.empty, rmmgo's pluggable allocator (pool)"
BASELINE = {  # row -> the row it is compared with
    RAW: CUPY_POOL,
    DB_CURRENT: CUPY_POOL,
    CUPY_ALLOC_RMM: CUPY_ALLOC_POOL,
    TORCH_RMM: TORCH_CACHING,
}


def make_plan(num_allocations, max_size, max_usage, seed):
    """[(slot, size)]: size > 0 allocates into slot, size == 0 frees slot."""
    rng = random.Random(seed)
    live = []  # slots in use
    sizes = {}  # slot -> size
    free_slots = []
    next_slot = 0
    plan = []
    made = 0
    used = 0
    for _ in range(2 * num_allocations):
        alloc = not live or rng.random() < 0.73
        size = rng.randint(1, max_size)
        if alloc and made < num_allocations and used + size <= max_usage:
            if free_slots:
                slot = free_slots.pop()
            else:
                slot, next_slot = next_slot, next_slot + 1
            live.append(slot)
            sizes[slot] = size
            used += size
            made += 1
            plan.append((slot, size))
        elif live:
            i = rng.randrange(len(live))
            live[i], live[-1] = live[-1], live[i]
            slot = live.pop()
            used -= sizes.pop(slot)
            free_slots.append(slot)
            plan.append((slot, 0))
    while live:
        slot = live.pop()
        sizes.pop(slot)
        plan.append((slot, 0))
    return plan, next_slot


# Each runner replays the plan once and returns the time it took (wall
# clock or the thread's CPU time: the clock argument).


def run_noop(clock):
    def run(plan, nslots):
        slots = [None] * nslots
        t0 = clock()
        for slot, size in plan:
            if size:
                slots[slot] = size
            else:
                slots[slot] = None
        return clock() - t0

    return run


def objects_runner(clock, make, sync=None):
    """Replay with make(size) -> an object whose release frees the memory."""

    def run(plan, nslots):
        slots = [None] * nslots
        t0 = clock()
        for slot, size in plan:
            if size:
                slots[slot] = make(size)
            else:
                slots[slot] = None
        if sync is not None:
            sync()
        return clock() - t0

    return run


def rmm_buffer_runner(clock, rmm, res, sync):
    DeviceBuffer = rmm.DeviceBuffer
    stream = rmm.DEFAULT_STREAM

    if res is None:  # the current device resource, looked up per allocation

        def run(plan, nslots):
            slots = [None] * nslots
            t0 = clock()
            for slot, size in plan:
                if size:
                    slots[slot] = DeviceBuffer(size=size, stream=stream)
                else:
                    slots[slot] = None
            sync()
            return clock() - t0

        return run

    def run(plan, nslots):
        slots = [None] * nslots
        t0 = clock()
        for slot, size in plan:
            if size:
                slots[slot] = DeviceBuffer(size=size, stream=stream, mr=res)
            else:
                slots[slot] = None
        sync()
        return clock() - t0

    return run


def pointer_runner(clock, allocate, deallocate, sync):
    """Replay with allocate(size) -> ptr and deallocate(ptr, size)."""

    def run(plan, nslots):
        ptrs = [0] * nslots
        sizes = [0] * nslots
        t0 = clock()
        for slot, size in plan:
            if size:
                ptrs[slot] = allocate(size)
                sizes[slot] = size
            else:
                deallocate(ptrs[slot], sizes[slot])
        sync()
        return clock() - t0

    return run


def measure(run, plan, nslots, reps):
    """(first, median, min) seconds per op; a failure gives its message (as a note) instead."""
    gc.collect()
    gc.disable()
    try:
        first = run(plan, nslots)
        times = [run(plan, nslots) for _ in range(reps)]
    except (MemoryError, RuntimeError) as exc:
        NOTES.append(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        return ("failed (note %d)" % len(NOTES),) * 3
    finally:
        gc.enable()
        gc.collect()
    ops = len(plan)
    return first / ops, statistics.median(times) / ops, min(times) / ops


def fmt_us(seconds):
    if isinstance(seconds, str):
        return seconds
    return "%.2f us" % (seconds * 1e6) if seconds >= 1e-6 else "%.0f ns" % (seconds * 1e9)


def plans(args, max_usage):
    for case in [c for c in args.cases.split(",") if c]:
        num, max_size = CASES[case]
        num = max(1, int(num * args.scale))
        plan, nslots = make_plan(num, max_size, max_usage, args.seed)
        yield case, num, plan, nslots


# ----------------------------------------------------------- PyTorch (child)


def torch_child(args, clock):
    """Measure one PyTorch row for every case; print one JSON object per case."""
    import torch

    import rmmgo as rmm
    from rmmgo import mr

    pool = None
    if args.child == "torch-rmmgo":
        from rmmgo.allocators.torch import rmm_torch_allocator, torch_allocator_error

        if rmm_torch_allocator is None:
            print(json.dumps({"error": torch_allocator_error}))
            return
        torch.cuda.memory.change_current_allocator(rmm_torch_allocator)
        pool = mr.PoolMemoryResource(mr.CudaMemoryResource())
        mr.set_current_device_resource(pool)
    empty, u8, dev = torch.empty, torch.uint8, torch.device("cuda", torch.cuda.current_device())

    def make(size):
        return empty(size, dtype=u8, device=dev)

    run = objects_runner(clock, make, torch.cuda.synchronize)
    for case, _, plan, nslots in plans(args, args.max_usage_bytes):
        first, med, best = measure(run, plan, nslots, args.reps)
        print(json.dumps({"case": case, "first": first, "median": med, "min": best, "notes": NOTES[:]}))
        torch.cuda.empty_cache()
    del pool, rmm


def torch_rows(args, which):
    """{case: (first, median, min)} from a child process, or a string saying why not."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", which, "--cases", args.cases,
           "--scale", str(args.scale), "--reps", str(args.reps), "--seed", str(args.seed),
           "--max-usage-bytes", str(args.max_usage_bytes), "--timer", args.timer, "--package", args.package]
    res = subprocess.run(cmd, capture_output=True, text=True)
    out = {}
    for line in res.stdout.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if "error" in row:
            return row["error"]
        for note in row.get("notes", []):
            if note not in NOTES:
                NOTES.append(note)
        out[row["case"]] = (row["first"], row["median"], row["min"])
    if res.returncode != 0 or not out:
        return "child failed: " + (res.stderr.strip().splitlines() or ["rc %d" % res.returncode])[-1]
    return out


# ---------------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="small,medium,large")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply num_allocations (quick runs)")
    ap.add_argument("--max-usage-mib", type=float, default=None,
                    help="live-bytes cap (default 16000 MiB on the GPU, at most 40%% of free memory; "
                         "60%% of device memory on the simulated device)")
    ap.add_argument("--max-usage-bytes", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--timer", choices=("wall", "cpu"), default="wall",
                    help="wall clock (default; the GPU's figures), or the thread's CPU time "
                         "(steadier on a busy machine; simulated device only)")
    ap.add_argument("--package", default=os.path.dirname(HERE), help="the directory holding rmmgo/ (default: this checkout's)")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-cupy", action="store_true")
    ap.add_argument("--child", choices=("torch-caching", "torch-rmmgo"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.package = os.path.abspath(args.package)
    sys.path.insert(0, args.package)
    clock = time.perf_counter if args.timer == "wall" else time.thread_time
    if os.environ.get("RMMGO_BACKEND", "").startswith("sim"):
        # The binning resource preallocates its bins (512 MiB for 4 MiB
        # blocks): give the simulated device room (its memory is mapped
        # lazily, so this costs nothing until used).
        os.environ.setdefault("RMMGO_SIM_MEMORY", "16GiB")

    if args.child:
        torch_child(args, clock)
        return

    import ctypes

    import rmmgo as rmm
    from rmmgo import _bindings
    from rmmgo import mr

    backend = rmm.backend()
    free, total = mr.available_device_memory()
    if args.max_usage_bytes is not None:
        max_usage = args.max_usage_bytes
    elif args.max_usage_mib is not None:
        max_usage = int(args.max_usage_mib * MiB)
    elif backend == "cuda":
        max_usage = min(16000 * MiB, int(free * 0.4))
    else:
        max_usage = int(total * 0.6)
    args.max_usage_bytes = max_usage

    torch = cupy = None
    absent = {}  # framework -> why
    if args.no_torch:
        absent["torch"] = "--no-torch"
    elif backend != "cuda":
        absent["torch"] = "simulated device"
    else:
        try:
            import torch

            if not torch.cuda.is_available():
                torch, absent["torch"] = None, "torch.cuda.is_available() is False"
        except ImportError:
            absent["torch"] = "not installed"
    if args.no_cupy:
        absent["cupy"] = "--no-cupy"
    elif backend != "cuda":
        absent["cupy"] = "simulated device"
    else:
        try:
            import cupy
        except ImportError:
            absent["cupy"] = "not installed"

    rv, dv = ctypes.c_int(), ctypes.c_int()
    _bindings.lib.rmm_runtime_version(ctypes.byref(rv))
    _bindings.lib.rmm_driver_version(ctypes.byref(dv))
    device = "simulated device"
    if torch is not None:
        device = torch.cuda.get_device_name(0)
    elif backend == "cuda":
        try:
            device = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", "0"],
                                    capture_output=True, text=True).stdout.strip() or "GPU"
        except OSError:
            device = "GPU"

    print("# Python allocation + free per op, random-allocations workload\n")
    env = ["%s=%s" % (k, os.environ[k]) for k in ("RMMGO_BACKEND", "RMMGO_SIM_MEMORY")
           if k in os.environ and (k == "RMMGO_BACKEND" or backend != "cuda")]
    print("- command: `%s`" % " ".join(env + ["python3", os.path.relpath(os.path.abspath(__file__))] + sys.argv[1:]))
    print("- date: %s" % datetime.datetime.now().strftime("%Y-%m-%d %H:%M"))
    if backend == "cuda":
        print("- backend: %s (%s), CUDA runtime %d, driver %d" % (backend, device, rv.value, dv.value))
    else:  # the versions are the simulator's stand-ins, not a CUDA that ran
        print("- backend: %s (%s), CUDA: none (it reports runtime %d, driver %d)" % (backend, device, rv.value, dv.value))
    print("- python %s, rmmgo %s (%s)" % (platform.python_version(), rmm.__version__, rmm.library_path()))
    print("- torch: %s; cupy: %s" % (torch.__version__ if torch is not None else "absent (%s)" % absent["torch"],
                                     cupy.__version__ if cupy is not None else "absent (%s)" % absent["cupy"]))
    print("- max_usage %d MiB, seed %d, median of %d repetitions after one warm-up (\"first run\"), %s"
          % (max_usage // MiB, args.seed, args.reps,
             "wall clock" if args.timer == "wall" else "CPU time of the thread"))
    print("- per op = time / (allocations + frees), including the Python loop (shown as \"loop only\")\n")

    def sync():
        _bindings.lib.rmm_device_synchronize()

    def rmm_resource(name):
        if name == "cuda_async":
            return mr.CudaAsyncMemoryResource()
        if name == "pool":
            return mr.PoolMemoryResource(mr.CudaMemoryResource())
        if name == "binning":
            return mr.BinningMemoryResource(mr.PoolMemoryResource(mr.CudaMemoryResource()), 18, 22)
        raise SystemExit("unknown resource %r" % name)

    torch_results = {}
    if torch is not None:
        for which, label in (("torch-caching", TORCH_CACHING), ("torch-rmmgo", TORCH_RMM)):
            torch_results[label] = torch_rows(args, which)

    rows = []  # (case, num, ops, label, first, median, min)
    for case, num, plan, nslots in plans(args, max_usage):
        results = [("Python loop only (no allocation)",) + measure(run_noop(clock), plan, nslots, args.reps)]
        for name in ("pool", "binning", "cuda_async"):
            try:
                res = rmm_resource(name)
            except (RuntimeError, MemoryError) as exc:
                NOTES.append("%s: %s" % (name, exc))
                results.append((DB % name,) + ("failed (note %d)" % len(NOTES),) * 3)
                continue
            results.append((DB % name,) + measure(rmm_buffer_runner(clock, rmm, res, sync), plan, nslots, args.reps))
            del res
            gc.collect()
        res = rmm_resource("pool")
        mr.set_current_device_resource(res)
        results.append((DB_CURRENT,) + measure(rmm_buffer_runner(clock, rmm, None, sync), plan, nslots, args.reps))
        mr.reset_current_device_resource()
        S = rmm.DEFAULT_STREAM
        results.append((RAW,) + measure(
            pointer_runner(clock, lambda n, a=res.allocate: a(n, S), lambda p, n, d=res.deallocate: d(p, n, S), sync),
            plan, nslots, args.reps))
        del res
        gc.collect()
        if cupy is not None:
            csync = cupy.cuda.Device().synchronize
            pool = cupy.cuda.MemoryPool()
            results.append((CUPY_POOL,) + measure(objects_runner(clock, pool.malloc, csync), plan, nslots, args.reps))
            rt, s0 = cupy.cuda.runtime, 0
            results.append((CUPY_ASYNC,) + measure(
                pointer_runner(clock, lambda n: rt.mallocAsync(n, s0), lambda p, n: rt.freeAsync(p, s0), csync),
                plan, nslots, args.reps))
            cupy.cuda.set_allocator(pool.malloc)
            results.append((CUPY_ALLOC_POOL,) + measure(objects_runner(clock, cupy.cuda.alloc, csync), plan, nslots, args.reps))
            pool.free_all_blocks()
            from rmmgo.allocators.cupy import rmm_cupy_allocator

            rpool = mr.PoolMemoryResource(mr.CudaMemoryResource())
            mr.set_current_device_resource(rpool)
            cupy.cuda.set_allocator(rmm_cupy_allocator)
            results.append((CUPY_ALLOC_RMM,) + measure(objects_runner(clock, cupy.cuda.alloc, csync), plan, nslots, args.reps))
            cupy.cuda.set_allocator(None)
            mr.reset_current_device_resource()
            del rpool, pool
            gc.collect()
        else:
            for label in (CUPY_POOL, CUPY_ASYNC, CUPY_ALLOC_POOL, CUPY_ALLOC_RMM):
                results.append((label,) + (ABSENT,) * 3)
        for label in (TORCH_CACHING, TORCH_RMM):
            got = torch_results.get(label)
            if got is None:
                results.append((label,) + (ABSENT,) * 3)
            elif isinstance(got, str):
                NOTES.append("%s: %s" % (label, got))
                results.append((label,) + ("failed (note %d)" % len(NOTES),) * 3)
            else:
                results.append((label,) + got.get(case, ("failed",) * 3))
        for r in results:
            rows.append((case, num, len(plan)) + r)

    cases = [c for c in args.cases.split(",") if c]
    labels = []
    for r in rows:
        if r[3] not in labels:
            labels.append(r[3])
    cell = {(r[0], r[3]): r[4:] for r in rows}  # (case, label) -> (first, median, min)
    size = {r[0]: (r[1], r[2]) for r in rows}

    def median(case, label):
        return cell.get((case, label), (None, None, None))[1]

    def ratio(case, label, base):
        med, b = median(case, label), median(case, base)
        if isinstance(med, str) or isinstance(b, str) or med is None or b is None:
            return ABSENT if ABSENT in (med, b) else "-"
        return "%.2f" % (med / b)

    def baseline(label):
        if label.startswith("rmmgo DeviceBuffer"):
            return CUPY_POOL
        return BASELINE.get(label)

    print("Per op, median (min / first run); %s\n" % ", ".join(
        "%s: %d allocations, %d ops" % (c, size[c][0], size[c][1]) for c in cases))
    print("| allocator | %s |" % " | ".join(cases))
    print("| --- |%s" % (" --- |" * len(cases)))
    for label in labels:
        out = []
        for case in cases:
            first, med, best = cell.get((case, label), ("-", "-", "-"))
            out.append(fmt_us(med) if isinstance(med, str) else "%s (%s / %s)" % (fmt_us(med), fmt_us(best), fmt_us(first)))
        print("| %s | %s |" % (label, " | ".join(out)))

    # One line per goal (issue 17): each case's ratio to the row's baseline.
    print("\nRatios of medians in this run: to the row's baseline (the goal: at most 1.00), and to "
          "cudaMallocAsync through cupy.cuda.runtime\n")
    print("| row | baseline | %s | goal | %s |" % (" | ".join(cases), " | ".join("%s / cudaMallocAsync" % c for c in cases)))
    print("| --- | --- |%s --- |%s" % (" --- |" * len(cases), " --- |" * len(cases)))
    for label in labels:
        base = baseline(label)
        if base is None:
            continue
        rs = [ratio(case, label, base) for case in cases]
        nums = [float(r) for r in rs if r not in (ABSENT, "-")]
        if len(nums) != len(rs):
            goal = "not measured"
        else:
            goal = "%s (worst %.2fx)" % ("met" if max(nums) <= 1.0 else "not met", max(nums))
        print("| %s | %s | %s | %s | %s |" % (label, base, " | ".join(rs), goal,
                                             " | ".join(ratio(case, label, CUPY_ASYNC) for case in cases)))
    for i, note in enumerate(NOTES, 1):
        print("\nnote %d: %s" % (i, note))


if __name__ == "__main__":
    main()
