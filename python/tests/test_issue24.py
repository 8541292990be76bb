"""Issue 24: fork's children, KeyboardInterrupt during allocation, foreign pointers."""

import gc
import multiprocessing
import os
import signal
import threading
import time

import pytest

import rmmgo as rmm
from rmmgo import mr

SIMULATED = os.environ.get("RMMGO_BACKEND", "").startswith("sim")


# ------------------------------------------------------------------ fork


def _child_allocates(queue):
    try:
        buf = rmm.DeviceBuffer(size=256)
        queue.put(("ok", buf.size))
    except BaseException as e:  # noqa: BLE001 - report whatever it was
        queue.put((type(e).__name__, str(e)))


def test_fork_child_gets_a_clear_error_not_a_hang():
    """A child forked while threads allocate refuses its calls with a message, at once."""
    stats = mr.StatisticsResourceAdaptor(mr.CudaMemoryResource())
    stop = threading.Event()

    def busy():
        while not stop.is_set():
            bufs = [rmm.DeviceBuffer(size=256 << (i % 10), mr=stats) for i in range(16)]
            assert len(bufs) == 16
            del bufs

    threads = [threading.Thread(target=busy) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        ctx = multiprocessing.get_context("fork")
        for _ in range(3):
            time.sleep(0.01)
            q = ctx.Queue()
            p = ctx.Process(target=_child_allocates, args=(q,))
            p.start()
            p.join(30)
            if p.is_alive():
                p.kill()
                p.join()
                pytest.fail("the forked child hung in its first library call")
            kind, msg = q.get(timeout=10)
            assert kind != "ok", "a fork's child allocated: %r" % msg
            assert "cannot be used in a child process created by fork()" in msg, msg
            assert "spawn" in msg, msg
    finally:
        stop.set()
        for t in threads:
            t.join()
    # The parent goes on.
    assert rmm.DeviceBuffer(size=64, mr=stats).size == 64


def test_fork_child_error_is_not_supported():
    from rmmgo import _bindings as b

    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()

    def child(q):
        try:
            mr.CudaMemoryResource()
            q.put(None)
        except b.RMMError as e:
            q.put((int(e.status), isinstance(e, RuntimeError), str(e)))

    p = ctx.Process(target=child, args=(q,))
    p.start()
    p.join(30)
    assert not p.is_alive()
    status, runtime_error, msg = q.get(timeout=10)
    assert status == b.Status.ERROR_NOT_SUPPORTED and runtime_error, msg
    assert "fork()" in msg


# ----------------------------------------------------- KeyboardInterrupt


def test_keyboard_interrupt_during_allocation_loses_no_memory():
    """30 SIGINTs land while buffers are made and dropped; nothing stays allocated.

    An interrupt raised as an allocation's call returns used to lose the
    block (30 of 30 here), and so did a signal pending exactly as a Python
    __del__ began ("Exception ignored in DeviceBuffer.__del__"). The
    finalizer runs no Python code now: no interrupt is raised in it, and no
    block may be lost. The buffers live in a function's frame, which the
    interrupt takes with it (locals of the test itself would still hold the
    last round's buffers at the end).
    """
    import sys

    stats = mr.StatisticsResourceAdaptor(mr.CudaMemoryResource())
    lock = threading.Lock()
    active = [True]
    caught = [0]
    in_del = [0]

    def sender():
        rnd = 1
        while True:
            rnd = (rnd * 1103515245 + 12345) & 0x7FFFFFFF
            time.sleep(0.0005 + (rnd % 1000) / 1e6)
            with lock:
                if not active[0]:
                    return
                os.kill(os.getpid(), signal.SIGINT)

    def hook(u):
        if isinstance(u.exc_value, KeyboardInterrupt) and "DeviceBuffer.__del__" in repr(u.object):
            in_del[0] += 1
        else:
            prev_hook(u)

    prev_hook = sys.unraisablehook
    sys.unraisablehook = hook
    def churn():
        while caught[0] + in_del[0] < 30:
            a = rmm.DeviceBuffer(size=256, mr=stats)
            b = rmm.DeviceBuffer(size=4096, mr=stats)
            c = [rmm.DeviceBuffer(size=512, mr=stats) for _ in range(4)]
            b.resize(8192)
            assert a.size == 256 and len(c) == 4
            del a, b, c

    t = threading.Thread(target=sender)
    t.start()
    try:
        while caught[0] + in_del[0] < 30:
            try:
                churn()
            except KeyboardInterrupt:
                caught[0] += 1
    finally:
        with lock:
            active[0] = False
        t.join()
        # A signal sent just before the sender stopped goes to a no-op.
        old = signal.signal(signal.SIGINT, lambda *_: None)
        time.sleep(0.05)
        signal.signal(signal.SIGINT, old)
        sys.unraisablehook = prev_hook
    gc.collect()
    counts = stats.allocation_counts
    assert in_del[0] == 0, "%d interrupts were raised in DeviceBuffer.__del__" % in_del[0]
    assert counts.current_count == 0, "%d allocations leaked by %d interrupts" % (counts.current_count, caught[0])


# ------------------------------------------------------- foreign pointers


@pytest.mark.skipif(not SIMULATED, reason="a foreign pointer is undefined behaviour in CUDA")
def test_buffer_from_unknown_device_pointer_is_an_error():
    """The simulated device refuses a copy from memory it did not hand out (it used to fault)."""
    with pytest.raises(rmm.RMMError) as e:
        rmm.DeviceBuffer(ptr=0xDEADBEEF00, size=16)
    assert "0xdeadbeef00" in str(e.value).lower()
    from rmmgo import _bindings as b
    from rmmgo.device_buffer import copy_device_to_ptr

    buf = rmm.DeviceBuffer(size=256)
    with pytest.raises(rmm.RMMError):
        copy_device_to_ptr(buf.ptr + 128, buf.ptr, 256)  # runs past the end of the allocation
    with pytest.raises(rmm.RMMError):
        b.lib.rmm_memset(0xDEADBEEF00, 0, 16, None)
    with pytest.raises(rmm.RMMError):
        b.lib.rmm_memcpy(0xDEADBEEF00, buf.ptr, 16, None)
    # What the simulator handed out still copies.
    rmm.DeviceBuffer(ptr=buf.ptr, size=256)
