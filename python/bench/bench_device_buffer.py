#!/usr/bin/env python3
"""DeviceBuffer allocation + free per op on the random-allocations workload.

The workload is /work/shared/bench/random-allocations.md (RMM's
RANDOM_ALLOCATIONS shape): num_allocations allocations over 2 *
num_allocations steps, sizes uniform in [1, max_size], allocate with
probability 73 % while under max_usage, otherwise free a random live one;
what is live at the end is freed. Every allocation and every free is one op.

The sequence of operations is drawn once per case from a fixed seed and
replayed identically for every allocator, so the loop does nothing but
allocate and free. In the same run, when available: PyTorch's caching
allocator (torch.cuda.caching_allocator_alloc / caching_allocator_delete)
and CuPy's MemoryPool (malloc, freed by dropping the pointer). Prints a
markdown table: the median per-op time over --reps repetitions after one
warm-up repetition (whose time is shown as "first run"), and the ratio to
rmmgo's DeviceBuffer on cuda_async (cudaMallocAsync) from the same run.

    RMMGO_BACKEND=cuda python3 python/bench/bench_device_buffer.py
    RMMGO_BACKEND=simulated python3 python/bench/bench_device_buffer.py --scale 0.05 --reps 3
"""

import argparse
import datetime
import gc
import os
import platform
import random
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

CASES = {  # name: (num_allocations, max_size)
    "small": (100_000, 4 << 10),
    "medium": (20_000, 1 << 20),
    "large": (2_000, 64 << 20),
}
MiB = 1 << 20
NOTES = []  # messages of failed runs, printed under the table


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


# Each runner replays the plan once and returns elapsed seconds.


def run_noop(plan, nslots):
    slots = [None] * nslots
    t0 = time.perf_counter()
    for slot, size in plan:
        if size:
            slots[slot] = size
        else:
            slots[slot] = None
    return time.perf_counter() - t0


def make_rmm_buffer_runner(rmm, res):
    DeviceBuffer = rmm.DeviceBuffer
    stream = rmm.DEFAULT_STREAM

    if res is None:  # the current device resource, looked up per allocation

        def run(plan, nslots):
            slots = [None] * nslots
            t0 = time.perf_counter()
            for slot, size in plan:
                if size:
                    slots[slot] = DeviceBuffer(size=size, stream=stream)
                else:
                    slots[slot] = None
            return time.perf_counter() - t0

        return run

    def run(plan, nslots):
        slots = [None] * nslots
        t0 = time.perf_counter()
        for slot, size in plan:
            if size:
                slots[slot] = DeviceBuffer(size=size, stream=stream, mr=res)
            else:
                slots[slot] = None
        return time.perf_counter() - t0

    return run


def make_rmm_raw_runner(rmm, res):
    """mr.allocate / mr.deallocate: the ctypes calls without a DeviceBuffer object."""
    allocate, deallocate = res.allocate, res.deallocate
    stream = rmm.DEFAULT_STREAM

    def run(plan, nslots):
        ptrs = [0] * nslots
        sizes = [0] * nslots
        t0 = time.perf_counter()
        for slot, size in plan:
            if size:
                ptrs[slot] = allocate(size, stream)
                sizes[slot] = size
            else:
                deallocate(ptrs[slot], sizes[slot], stream)
        return time.perf_counter() - t0

    return run


def make_torch_runner(torch):
    alloc = torch.cuda.caching_allocator_alloc
    delete = torch.cuda.caching_allocator_delete
    dev = torch.cuda.current_device()
    stream = torch.cuda.default_stream(dev)

    def run(plan, nslots):
        ptrs = [0] * nslots
        t0 = time.perf_counter()
        for slot, size in plan:
            if size:
                ptrs[slot] = alloc(size, dev, stream)
            else:
                delete(ptrs[slot])
        torch.cuda.synchronize()
        return time.perf_counter() - t0

    return run


def make_cupy_runner(cupy):
    pool = cupy.cuda.MemoryPool()
    malloc = pool.malloc

    def run(plan, nslots):
        slots = [None] * nslots
        t0 = time.perf_counter()
        for slot, size in plan:
            if size:
                slots[slot] = malloc(size)
            else:
                slots[slot] = None
        cupy.cuda.Device().synchronize()
        return time.perf_counter() - t0

    run.pool = pool
    return run


def measure(run, plan, nslots, reps):
    """(first, median, min) seconds per op; a MemoryError gives its message instead."""
    gc.collect()
    gc.disable()
    try:
        first = run(plan, nslots)
        times = [run(plan, nslots) for _ in range(reps)]
    except MemoryError as exc:
        NOTES.append(str(exc))
        return ("out of memory (note %d)" % len(NOTES),) * 3
    finally:
        gc.enable()
        gc.collect()
    ops = len(plan)
    return first / ops, statistics.median(times) / ops, min(times) / ops


def fmt_us(seconds):
    if isinstance(seconds, str):
        return seconds
    return "%.2f us" % (seconds * 1e6) if seconds >= 1e-6 else "%.0f ns" % (seconds * 1e9)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="small,medium,large")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply num_allocations (quick runs)")
    ap.add_argument("--max-usage-mib", type=float, default=None,
                    help="live-bytes cap (default 16000 MiB on the GPU, 60%% of device memory otherwise)")
    ap.add_argument("--resources", default="cuda_async,pool,binning,cuda",
                    help="rmmgo resources under DeviceBuffer: cuda, cuda_async, pool, arena, binning")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-cupy", action="store_true")
    args = ap.parse_args()

    import ctypes

    import rmmgo as rmm
    from rmmgo import _bindings
    from rmmgo import mr

    backend = rmm.backend()
    free, total = mr.available_device_memory()
    if args.max_usage_mib is not None:
        max_usage = int(args.max_usage_mib * MiB)
    elif backend == "cuda":
        max_usage = min(16000 * MiB, int(free * 0.4))
    else:
        max_usage = int(total * 0.6)

    torch = cupy = None
    if not args.no_torch and backend == "cuda":
        try:
            import torch

            if not torch.cuda.is_available():
                torch = None
        except ImportError:
            torch = None
    if not args.no_cupy and backend == "cuda":
        try:
            import cupy
        except ImportError:
            cupy = None

    rv, dv = ctypes.c_int(), ctypes.c_int()
    _bindings.lib.rmm_runtime_version(ctypes.byref(rv))
    _bindings.lib.rmm_driver_version(ctypes.byref(dv))
    device = "simulated device"
    if torch is not None:
        device = torch.cuda.get_device_name(0)
    elif backend == "cuda":
        try:
            import subprocess

            device = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", "0"],
                                    capture_output=True, text=True).stdout.strip() or "GPU"
        except OSError:
            device = "GPU"

    print("# DeviceBuffer allocation + free per op, random-allocations workload\n")
    print("- date: %s" % datetime.datetime.now().strftime("%Y-%m-%d %H:%M"))
    print("- backend: %s (%s), CUDA runtime %d, driver %d" % (backend, device, rv.value, dv.value))
    print("- python %s, rmmgo %s (%s)" % (platform.python_version(), rmm.__version__, rmm.library_path()))
    if torch is not None:
        print("- torch %s" % torch.__version__)
    if cupy is not None:
        print("- cupy %s" % cupy.__version__)
    print("- max_usage %d MiB, seed %d, median of %d repetitions after one warm-up (\"first run\")"
          % (max_usage // MiB, args.seed, args.reps))
    print("- per op = elapsed / (allocations + frees), including the Python loop (shown as \"loop only\")\n")

    def rmm_resource(name):
        if name == "cuda":
            return mr.CudaMemoryResource()
        if name == "cuda_async":
            return mr.CudaAsyncMemoryResource()
        if name == "pool":
            return mr.PoolMemoryResource(mr.CudaMemoryResource())
        if name == "arena":
            return mr.ArenaMemoryResource(mr.CudaMemoryResource())
        if name == "binning":
            return mr.BinningMemoryResource(mr.PoolMemoryResource(mr.CudaMemoryResource()), 18, 22)
        raise SystemExit("unknown resource %r" % name)

    rows = []
    for case in [c for c in args.cases.split(",") if c]:
        num, max_size = CASES[case]
        num = max(1, int(num * args.scale))
        plan, nslots = make_plan(num, max_size, max_usage, args.seed)
        results = []  # (label, first, median, min)
        results.append(("Python loop only (no allocation)",) + measure(run_noop, plan, nslots, args.reps))
        for name in [r for r in args.resources.split(",") if r]:
            try:
                res = rmm_resource(name)
            except (RuntimeError, MemoryError) as exc:
                print("<!-- %s skipped: %s -->" % (name, exc))
                continue
            results.append(("rmmgo DeviceBuffer(mr=%s)" % name,) + measure(make_rmm_buffer_runner(rmm, res), plan, nslots, args.reps))
            if name == "cuda_async":
                mr.set_current_device_resource(res)
                results.append(("rmmgo DeviceBuffer() on current resource (%s)" % name,)
                               + measure(make_rmm_buffer_runner(rmm, None), plan, nslots, args.reps))
                mr.reset_current_device_resource()
                results.append(("rmmgo %s mr.allocate/deallocate (no DeviceBuffer)" % name,)
                               + measure(make_rmm_raw_runner(rmm, res), plan, nslots, args.reps))
            del res
            gc.collect()
        if cupy is not None:
            run = make_cupy_runner(cupy)
            results.append(("CuPy MemoryPool",) + measure(run, plan, nslots, args.reps))
            run.pool.free_all_blocks()
        if torch is not None:
            results.append(("PyTorch caching allocator",) + measure(make_torch_runner(torch), plan, nslots, args.reps))
            torch.cuda.empty_cache()
        base = {r[0]: r[2] for r in results}.get("rmmgo DeviceBuffer(mr=cuda_async)")
        if isinstance(base, str):
            base = None
        for label, first, med, best in results:
            ratio = "%.2f" % (med / base) if base and not isinstance(med, str) else "-"
            rows.append((case, num, len(plan), label, fmt_us(med), fmt_us(best), fmt_us(first), ratio))

    print("| case | allocations | ops | allocator | per op (median) | min | first run | vs DeviceBuffer(cuda_async) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print("| %s | %d | %d | %s | %s | %s | %s | %s |" % r)
    for i, note in enumerate(NOTES, 1):
        print("\nnote %d: %s" % (i, note))


if __name__ == "__main__":
    main()
