#!/usr/bin/env python3
"""Where one DeviceBuffer allocate + release spends its time.

Times each piece of the path on its own, as CPU time of the calling thread
(time.thread_time, so that other processes on a busy machine count less),
the best of --repeat runs of --number calls each:

- the Python statement alone, a ctypes call of no arguments (the floor of a
  foreign call), the DeviceBuffer object without memory (size 0);
- the foreign calls as the package makes them, with the allocation in the
  C per-thread cache (pool, binning) or in Go (cuda_async, cuda);
- DeviceBuffer(size=n) + its release, per resource and on the current
  resource.

The rows that name a library call are skipped when the library lacks it, so
that the same script measures an older checkout:

    RMMGO_BACKEND=simulated python3 python/bench/profile_device_buffer.py
    RMMGO_BACKEND=cuda python3 python/bench/profile_device_buffer.py --bytes 4096
"""

import argparse
import ctypes
import os
import sys
import time
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bytes", type=int, default=1024, help="allocation size (default 1024)")
    ap.add_argument("--number", type=int, default=100_000, help="calls per run")
    ap.add_argument("--repeat", type=int, default=7, help="runs; the best is shown")
    ap.add_argument("--package", default=os.path.dirname(HERE), help="the directory holding rmmgo/")
    args = ap.parse_args()
    sys.path.insert(0, args.package)

    import rmmgo as rmm
    from rmmgo import _bindings as b
    from rmmgo import mr

    lib = b.lib
    n = args.bytes
    S = rmm.DEFAULT_STREAM
    DeviceBuffer = rmm.DeviceBuffer
    pool = mr.PoolMemoryResource(mr.CudaMemoryResource(), 256 << 20)
    binning = mr.BinningMemoryResource(mr.PoolMemoryResource(mr.CudaMemoryResource(), 256 << 20), 10, 16)
    casync = mr.CudaAsyncMemoryResource()
    cuda = mr.CudaMemoryResource()
    env = dict(globals(), **locals())

    def row(label, stmt, setup="pass"):
        t = timeit.Timer(stmt, setup, timer=time.thread_time, globals=env)
        best = min(t.repeat(repeat=args.repeat, number=args.number)) / args.number
        print("| %s | %.0f |" % (label, best * 1e9))

    print("# DeviceBuffer allocate + release: where the time goes\n")
    print("- %s backend, python %s, %d bytes, ns per statement (CPU time of the thread, best of %d x %d)\n"
          % (rmm.backend(), sys.version.split()[0], n, args.repeat, args.number))
    print("| statement | ns |")
    print("| --- | --- |")
    row("`pass` (the timing loop)", "pass")
    vn = lib.rmm_version_number
    env["vn"] = vn
    row("ctypes call, no arguments (`rmm_version_number()`)", "vn()")
    row("`DeviceBuffer(size=0, mr=pool)` (the object, no foreign call)", "DeviceBuffer(size=0, mr=pool)")
    row("`DeviceBuffer(size=0)` (the object + the current resource)", "DeviceBuffer(size=0)")
    row("`mr.get_current_device_resource()`", "mr.get_current_device_resource()")

    h = pool.handle
    env["h"] = h
    alloc5 = b.unchecked("rmm_allocate")
    free5 = b.unchecked("rmm_deallocate")
    env.update(alloc5=alloc5, free5=free5, c_void_p=ctypes.c_void_p)
    row("`rmm_allocate` + `rmm_deallocate` on pool (5 arguments, c_size_t, out-parameter)",
        "o = c_void_p(); alloc5(h, 0, n, 256, o); free5(h, 0, o.value, n, 256)")
    if hasattr(lib, "rmm_allocate_direct"):
        try:
            ad, fd = lib.rmm_allocate_direct, lib.rmm_deallocate_direct
            ad.argtypes  # noqa: B018
        except AttributeError:
            ad = None
        if ad is not None and ad.argtypes:
            env.update(ad=ad, fd=fd)
            row("`rmm_allocate_direct` + `rmm_deallocate_direct` on pool (3 and 4 arguments)",
                "fd(h, 0, ad(h, 0, n), n)")
            tok = lib.rmm_current_resource_token
            env["tok"] = tok
            row("`rmm_current_resource_token()`", "tok()")
    gcur = b.unchecked("rmm_get_current_device_resource")
    rel = b.unchecked("rmm_resource_release")
    env.update(gcur=gcur, rel=rel)
    row("`rmm_get_current_device_resource` + `rmm_resource_release`", "o = c_void_p(); gcur(o); rel(o.value)")
    row("`pool.allocate` + `pool.deallocate`", "pool.deallocate(pool.allocate(n, S), n, S)")
    for name in ("pool", "binning", "casync", "cuda"):
        row("`DeviceBuffer(size=n, mr=%s)` + release" % name, "DeviceBuffer(size=n, stream=S, mr=%s)" % name)
    mr.set_current_device_resource(pool)
    row("`DeviceBuffer(size=n)` + release, current resource = pool", "DeviceBuffer(size=n)")
    mr.reset_current_device_resource()


if __name__ == "__main__":
    main()
