"""Issue 24 from Python: interrupts must not lose blocks, foreign pointers must
not kill the process, and a child made by fork() is refused, not hung."""

import _thread
import gc
import multiprocessing
import os
import random
import subprocess
import sys
import threading
import time

import pytest

import rmmgo as rmm
from rmmgo import mr
from rmmgo._bindings import backend_name


def _interrupted_loops(res, interrupts, sizes, seed):
    """Allocation and free loops on res, each ended by a KeyboardInterrupt
    from another thread at a random moment; returns how many interrupts
    landed in them."""
    rng = random.Random(seed)
    landed = 0
    for _ in range(interrupts):
        timer = threading.Timer(rng.uniform(0.0005, 0.004), _thread.interrupt_main)
        keep = []
        try:
            timer.start()
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline:
                b = rmm.DeviceBuffer(size=rng.choice(sizes), mr=res)
                keep.append(b)
                if len(keep) > 8:
                    keep.pop(0)
                b.resize(b.size + 512)
                del b
        except KeyboardInterrupt:
            landed += 1
        finally:
            timer.cancel()
            timer.join()
        del keep
    return landed


@pytest.mark.parametrize("upstream", ["cuda", "pool"])
def test_keyboard_interrupt_loses_no_block(upstream):
    """After interrupts between the library's call and the buffer taking the
    block (15-18 of 30 blocks were lost), every buffer dropped, nothing is
    outstanding."""
    base = mr.CudaMemoryResource()
    up = base if upstream == "cuda" else mr.PoolMemoryResource(base, initial_pool_size=64 << 20)
    stats = mr.StatisticsResourceAdaptor(up)
    landed = _interrupted_loops(stats, 30, [256, 1000, 4096, 20000, 70000], seed=24)
    gc.collect()
    assert landed >= 25, "the interrupts landed in the loops"
    s = stats.allocation_counts
    assert s.total_count > 100
    assert (s.current_count, s.current_bytes) == (0, 0), "blocks lost to interrupts: %s" % (s,)


_CHILD = r"""
import rmmgo as rmm
try:
    rmm.DeviceBuffer(ptr=0xdeadbeef00, size=16)
except rmm.RMMError as e:
    print("refused:", type(e).__name__, e)
else:
    print("accepted")
"""


@pytest.mark.skipif(backend_name() != "simulated", reason="a foreign pointer must be valid on a GPU")
def test_foreign_pointer_is_an_error():
    """DeviceBuffer(ptr=<nothing mapped>, size=16) killed the process on the
    simulated device (Go's 'fatal error: fault' in the simulator's copy). It
    is an error now, and the buffer's block goes back."""
    r = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("refused:"), r.stdout
    # And in this process: the block allocated for the copy is not leaked.
    stats = mr.StatisticsResourceAdaptor(mr.CudaMemoryResource())
    with pytest.raises(rmm.RMMError):
        rmm.DeviceBuffer(ptr=0xDEADBEEF00, size=16, mr=stats)
    gc.collect()
    assert stats.allocation_counts.current_count == 0


def _child_allocates(q):
    try:
        rmm.DeviceBuffer(size=1000)
    except rmm.RMMError as e:
        q.put(("refused", str(e)))
    else:
        q.put(("allocated", ""))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_fork_child_is_refused_not_hung():
    """multiprocessing with the fork start method, while threads of the
    parent allocate: the child's call fails with a message that says why."""
    stop = threading.Event()

    def busy():
        while not stop.is_set():
            rmm.DeviceBuffer(size=4096)

    threads = [threading.Thread(target=busy) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        ctx = multiprocessing.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=_child_allocates, args=(q,))
        p.start()
        got = q.get(timeout=60)
        p.join(timeout=60)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert got[0] == "refused", got
    assert "fork" in got[1]
    assert p.exitcode == 0
    rmm.DeviceBuffer(size=1000)  # the parent goes on
