#!/usr/bin/env python3
"""The fragmentation workload on PyTorch's caching allocator, for comparison.

The workload is the one of bench/README.md ("The fragmentation workload"),
with the same draws as bench/random_allocations.c --case fragmentation and
bench/workload (splitmix64 from the seed): under a maximum size `cap`, 32
rounds; each round allocates 16 small (1 .. cap/320 bytes) and large
(cap/64 .. cap/32 bytes) blocks, interleaved; frees the round's large blocks
and asks for one block as large as all of them; small blocks live 4 rounds.
A big request that fails while live bytes plus its size fit the cap "failed
with room".

PyTorch is capped with torch.cuda.set_per_process_memory_fraction(cap /
total memory). The allocator's configuration (PYTORCH_CUDA_ALLOC_CONF) must
be set before CUDA starts, so each configuration runs in a process of its
own; by default both run:

    python3 python/bench/torch_fragmentation.py                  # 8 GiB cap, both modes
    python3 python/bench/torch_fragmentation.py --cap 4GiB --reps 5
    python3 python/bench/torch_fragmentation.py --mode expandable  # one mode, this process

Prints a markdown table in the columns of random_allocations' fragmentation
table: ops/s (median of --reps timed runs, allocations and frees, the device
synchronized at the end of each), big requests served, failed with room,
failed small/large allocations, peak reserved (torch.cuda.max_memory_reserved
over all runs), peak live (requested bytes), reserved/live.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

MiB = 1 << 20
MASK = (1 << 64) - 1
ROUNDS, PAIRS, WINDOW = 32, 16, 4
SEED = 42


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def parse_bytes(s):
    s = s.strip()
    for suffix, mult in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10), ("B", 1)):
        if s.endswith(suffix):
            return int(float(s[: -len(suffix)]) * mult)
    return int(s)


def sizes(cap):
    """The draws: per round, PAIRS (small, large) sizes."""
    max_small, max_large = cap // 320, cap // 32
    state = SEED
    out = []
    for _ in range(ROUNDS):
        pairs = []
        for _ in range(PAIRS):
            state, x = splitmix64(state)
            small = 1 + x % max_small
            state, x = splitmix64(state)
            large = max_large // 2 + 1 + x % (max_large - max_large // 2)
            pairs.append((small, large))
        out.append(pairs)
    return out


def run_once(torch, draws, cap):
    """One run; returns (ops, seconds, big, served, with_room, failed, peak_live)."""
    oom = torch.cuda.OutOfMemoryError
    live = peak = 0
    ops = big = served = with_room = failed = 0
    smalls = [[] for _ in range(ROUNDS)]

    def alloc(n):
        nonlocal live, peak, ops
        try:
            t = torch.empty((n,), dtype=torch.uint8, device="cuda")
        except oom:
            return None
        ops += 1
        live += n
        peak = max(peak, live)
        return t

    t0 = time.perf_counter()
    for r, pairs in enumerate(draws):
        larges = []
        for small, large in pairs:
            t = alloc(small)
            if t is None:
                failed += 1
            else:
                smalls[r].append(t)
            t = alloc(large)
            if t is None:
                failed += 1
            else:
                larges.append(t)
        freed = sum(t.numel() for t in larges)
        ops += len(larges)
        live -= freed
        del larges, t
        if freed:
            big += 1
            b = alloc(freed)
            if b is not None:
                served += 1
                del b
                ops += 1
                live -= freed
            elif live + freed <= cap:
                with_room += 1
        old = r - WINDOW + 1
        if old >= 0:
            ops += len(smalls[old])
            live -= sum(t.numel() for t in smalls[old])
            smalls[old] = []
    for ts in smalls:
        ops += len(ts)
        live -= sum(t.numel() for t in ts)
    smalls = None
    torch.cuda.synchronize()
    return ops, time.perf_counter() - t0, big, served, with_room, failed, peak


def human(v):
    if v >= 1 << 30:
        return "%.2f GiB" % (v / (1 << 30))
    return "%.1f MiB" % (v / MiB)


def run_mode(mode, cap, reps):
    """Runs in this process: the allocator configuration is set here, before torch starts CUDA."""
    conf = "expandable_segments:True" if mode == "expandable" else "expandable_segments:False"
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = conf
    import torch

    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(min(1.0, cap / total))
    draws = sizes(cap)
    torch.cuda.reset_peak_memory_stats()
    rates, last = [], None
    for _ in range(reps):
        last = run_once(torch, draws, cap)
        ops, secs = last[0], last[1]
        rates.append(ops / secs if secs > 0 else 0)
    _, _, big, served, with_room, failed, peak_live = last
    reserved = torch.cuda.max_memory_reserved()
    med = statistics.median(rates)
    print(
        "| PyTorch, %s | %.2f M/s | %.0f ns | %.2f M/s..%.2f M/s | %d of %d | %d | %d | %s | %s | %.2f |"
        % (conf, med / 1e6, 1e9 / med, min(rates) / 1e6, max(rates) / 1e6, served, big, with_room, failed,
           human(reserved), human(peak_live), reserved / peak_live if peak_live else 0)
    )
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cap", default="8GiB", help="maximum size (default 8GiB)")
    ap.add_argument("--reps", type=int, default=5, help="timed runs, median reported (default 5)")
    ap.add_argument("--mode", choices=["both", "native", "expandable"], default="both")
    args = ap.parse_args()
    cap = parse_bytes(args.cap) & ~((2 << 20) - 1)
    if args.mode != "both":
        run_mode(args.mode, cap, args.reps)
        return
    print("## fragmentation workload on PyTorch: maximum size %s, %d rounds of %d small/large pairs, small sizes up to"
          " %d B, large up to %d B, small blocks live %d rounds\n" % (human(cap), ROUNDS, PAIRS, cap // 320, cap // 32, WINDOW))
    print("| allocator | ops/s (median) | per op | min..max | big requests served | failed with room | failed small/large"
          " | peak reserved | peak live | reserved/live |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    sys.stdout.flush()
    for mode in ("native", "expandable"):
        rc = subprocess.call([sys.executable, __file__, "--cap", str(cap), "--reps", str(args.reps), "--mode", mode])
        if rc != 0:
            print("| PyTorch, %s | failed (exit status %d) | | | | | | | | |" % (mode, rc))


if __name__ == "__main__":
    main()
