#!/usr/bin/env python3
"""rmmgo's memory in PyTorch's memory viewer: train a small model through
rmmgo's PyTorch allocator, snapshot mid-step, draw it with _memory_viz.

On a GPU machine with PyTorch (CUDA) and rmmgo installed (or PYTHONPATH=python
and RMMGO_LIBRARY pointing at build/librmmgo.so, with librmmgo_torch.so from
`make torch-shim`):

    python3 python/bench/oom_snapshot_demo.py --out /tmp/rmmgo-viz

writes into the --out directory:
  snapshot.pickle        rmmgo.memory_snapshot(): the file torch.cuda.memory._dump_snapshot writes
  snapshot.json          the same as JSON
  segments.html          torch.cuda._memory_viz.segment_plot(snapshot)
  trace.html             torch.cuda._memory_viz.trace_plot(snapshot) (allocations over time,
                         from a PressureResourceAdaptor with history)
  oom.txt                the out-of-memory report of a request that cannot fit, and its
                         figures, the pressure callbacks' crossings, and the report of a
                         fragmented pool (64 MiB, every other 2 MiB block free, 4 MiB asked)
  stats.txt              rmmgo.allocators.torch.memory_stats() next to torch.cuda.memory_stats()

The pickle also opens at https://pytorch.org/memory_viz (drag and drop), or
`python -m torch.cuda._memory_viz trace_plot snapshot.pickle -o trace.html`.
"""

import argparse
import os
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="directory for the snapshot and the HTML files")
    ap.add_argument("--steps", type=int, default=6, help="training steps (the snapshot is taken mid-step in the last)")
    ap.add_argument("--width", type=int, default=4096, help="hidden width of the MLP")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--pool", default="2GiB", help="initial pool size")
    ap.add_argument("--history", type=int, default=200000, help="events kept for trace_plot")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    import torch

    import rmmgo as rmm
    from rmmgo.allocators import torch as rt

    if rt.rmm_torch_allocator is None:
        sys.exit("rmmgo's PyTorch allocator is unavailable: %s" % rt.torch_allocator_error)

    # pool <- statistics (PyTorch's numbers) <- pressure (thresholds, failure hook, trace)
    crossings = []
    pool = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), initial_pool_size=args.pool)
    stats = rmm.mr.StatisticsResourceAdaptor(pool)
    pressure = rmm.PressureResourceAdaptor(
        stats,
        thresholds=["256MiB", "512MiB", "1GiB"],
        on_cross=lambda t, live, up: crossings.append((t, live, up)),
        history=args.history,
    )
    rmm.mr.set_current_device_resource(pressure)
    torch.cuda.memory.change_current_allocator(rt.rmm_torch_allocator)

    w = args.width
    model = torch.nn.Sequential(
        torch.nn.Linear(w, w), torch.nn.ReLU(), torch.nn.Linear(w, w), torch.nn.ReLU(), torch.nn.Linear(w, 10)
    ).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(args.batch, w, device="cuda")
    y = torch.randint(0, 10, (args.batch,), device="cuda")

    snap = None
    for step in range(args.steps):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if step == args.steps - 1:
            torch.cuda.synchronize()
            # Mid-step: activations and gradients live, the optimizer not run yet.
            snap = rmm.memory_snapshot(pressure, path=os.path.join(args.out, "snapshot.pickle"))
            rmm.memory_snapshot(pressure, path=os.path.join(args.out, "snapshot.json"))
        opt.step()
    torch.cuda.synchronize()

    from torch.cuda import _memory_viz

    with open(os.path.join(args.out, "segments.html"), "w") as f:
        f.write(_memory_viz.segment_plot(snap))
    with open(os.path.join(args.out, "trace.html"), "w") as f:
        f.write(_memory_viz.trace_plot(snap))

    with open(os.path.join(args.out, "stats.txt"), "w") as f:
        f.write("rmmgo.allocators.torch.memory_stats():\n")
        for k, v in rt.memory_stats().items():
            f.write("  %-32s %d\n" % (k, v))
        f.write("memory_allocated %d, max_memory_allocated %d, memory_reserved %d, max_memory_reserved %d\n"
                % (rt.memory_allocated(), rt.max_memory_allocated(), rt.memory_reserved(), rt.max_memory_reserved()))
        try:
            f.write("torch.cuda.memory_allocated() through the pluggable allocator: %d\n" % torch.cuda.memory_allocated())
        except RuntimeError as exc:  # torch 2.11: "CUDAPluggableAllocator does not yet support getDeviceStats"
            f.write("torch.cuda.memory_allocated() through the pluggable allocator: %s\n" % exc)

    # A request that cannot fit: the report.
    free, total = torch.cuda.mem_get_info()
    with open(os.path.join(args.out, "oom.txt"), "w") as f:
        try:
            torch.empty(int(total * 2), dtype=torch.uint8, device="cuda")
        except (RuntimeError, MemoryError) as exc:
            f.write("PyTorch raised %s:\n%s\n\n" % (type(exc).__name__, exc))
        try:
            rmm.DeviceBuffer(size=int(total * 2))
        except MemoryError as exc:
            f.write("rmmgo raised %s:\n%s\n\nreading: %s\nresources: %r\n\n" % (type(exc).__name__, exc, exc.reading, exc.resources))
        f.write("pressure crossings (threshold, live, up): %r\n\n" % crossings)
        # A fragmented pool (docs/out-of-memory.md): 64 MiB at most, filled with
        # 2 MiB blocks, every other one freed, then asked for 4 MiB.
        MiB = 1 << 20
        small = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), 64 * MiB, 64 * MiB)
        bufs = [rmm.DeviceBuffer(size=2 * MiB, mr=small) for _ in range(32)]
        kept = bufs[1::2]
        del bufs
        try:
            rmm.DeviceBuffer(size=4 * MiB, mr=small)
        except MemoryError as exc:
            f.write("a fragmented pool: rmmgo raised %s:\n%s\n" % (type(exc).__name__, exc))
        del kept

    segs = snap["segments"]
    live = sum(b["size"] for s in segs for b in s["blocks"] if b["state"] == "active_allocated")
    print("snapshot: %d segments, %d blocks, %.1f MiB live of %.1f MiB; %d trace events"
          % (len(segs), sum(len(s["blocks"]) for s in segs), live / 2**20,
             sum(s["total_size"] for s in segs) / 2**20, len(snap["device_traces"][torch.cuda.current_device()])))
    print("wrote", ", ".join(sorted(os.listdir(args.out))), "in", args.out)


if __name__ == "__main__":
    main()
