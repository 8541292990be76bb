"""python -m rmmgo.dask worker: one Dask worker per GPU of this machine, set up by RMMSetup.

    python -m rmmgo.dask worker tcp://scheduler:8786 --pool-size 90% --statistics

starts, for each visible GPU, a Nanny and its worker process with
CUDA_VISIBLE_DEVICES listing that GPU first (as dask-cuda's
``dask cuda worker`` does) and the RMMSetup plugin made from the options
(options left out come from the Dask config, rmmgo.*). A worker whose setup
fails is not started, and the command exits 1; SIGINT or SIGTERM closes the
workers and exits 0.
"""

import argparse
import asyncio
import logging
import signal
import sys

from . import RMMSetup, visible_devices
from ._cluster import rotated_devices

logger = logging.getLogger("rmmgo.dask")


def _parser():
    p = argparse.ArgumentParser(prog="python -m rmmgo.dask", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    w = sub.add_parser("worker", help="start one worker per GPU", description=__doc__.split("\n\n")[0])
    w.add_argument("scheduler", nargs="?", help="the scheduler's address, e.g. tcp://host:8786")
    w.add_argument("--scheduler-file", help="a scheduler file instead of an address")
    w.add_argument("--devices", help="the GPUs, e.g. 0,1 (default: $CUDA_VISIBLE_DEVICES, else all)")
    w.add_argument("--nthreads", type=int, default=1, help="threads per worker (default 1)")
    w.add_argument("--name", help="worker names are NAME-<device> (default: their addresses)")
    w.add_argument("--memory-limit", default="auto", help="host memory per worker (default: the machine's, shared)")
    w.add_argument("--local-directory", help="the workers' scratch folder")
    w.add_argument("--death-timeout", type=float, help="seconds to wait for the scheduler before giving up")
    rmm = w.add_argument_group("memory resource (RMMSetup; left out: the Dask config rmmgo.*)")
    rmm.add_argument("--pool-size", dest="initial_pool_size", metavar="SIZE", help="initial pool size: 4GiB, 90%%, 0.9")
    rmm.add_argument("--maximum-pool-size", metavar="SIZE")
    rmm.add_argument("--managed-memory", action="store_const", const=True, help="use managed memory")
    rmm.add_argument("--pool-allocator", action="store_const", const=True, help="use a pool")
    rmm.add_argument("--async", dest="async_allocator", action="store_const", const=True,
                     help="use the CUDA async allocator")
    rmm.add_argument("--release-threshold", metavar="SIZE", help="what the async pool keeps when idle")
    rmm.add_argument("--log-directory", metavar="DIR", help="log allocations to DIR/rmm_log_<name>.dev0.txt")
    rmm.add_argument("--track-allocations", action="store_const", const=True)
    rmm.add_argument("--statistics", action="store_const", const=True, help="count allocations (memory_statistics)")
    return p


_SETTINGS = ("initial_pool_size", "maximum_pool_size", "managed_memory", "pool_allocator", "async_allocator",
             "release_threshold", "log_directory", "track_allocations", "statistics")


async def _run_workers(args, setup, devices):
    from distributed import Nanny
    from distributed.system import MEMORY_LIMIT

    memory_limit = args.memory_limit
    if memory_limit == "auto":
        memory_limit = MEMORY_LIMIT // len(devices)
    nannies = [
        Nanny(
            args.scheduler,
            scheduler_file=args.scheduler_file,
            nthreads=args.nthreads,
            name=None if args.name is None else "%s-%s" % (args.name, dev),
            memory_limit=memory_limit,
            local_directory=args.local_directory,
            death_timeout=args.death_timeout,
            env={"CUDA_VISIBLE_DEVICES": rotated_devices(i, devices)},
            plugins=[setup],
        )
        for i, dev in enumerate(devices)
    ]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await asyncio.gather(*nannies)
        for dev, n in zip(devices, nannies):
            print("rmmgo.dask: worker %s on GPU %s (%r)" % (n.worker_address, dev, setup), flush=True)
        finished = asyncio.ensure_future(asyncio.gather(*(n.finished() for n in nannies)))
        stopped = asyncio.ensure_future(stop.wait())
        await asyncio.wait([finished, stopped], return_when=asyncio.FIRST_COMPLETED)
        for f in (finished, stopped):
            f.cancel()
    finally:
        await asyncio.gather(*(n.close(timeout=30) for n in nannies), return_exceptions=True)


def main(argv=None):
    args = _parser().parse_args(argv)
    if not args.scheduler and not args.scheduler_file:
        print("python -m rmmgo.dask worker: give the scheduler's address or --scheduler-file", file=sys.stderr)
        return 2
    try:
        setup = RMMSetup(**{k: getattr(args, k) for k in _SETTINGS})
        devices = visible_devices(args.devices)
        if not devices:
            raise ValueError("no visible GPU")
    except (TypeError, ValueError) as exc:
        print("python -m rmmgo.dask worker: %s" % exc, file=sys.stderr)
        return 2
    try:
        asyncio.run(_run_workers(args, setup, devices))
    except Exception as exc:
        print("python -m rmmgo.dask worker: %s: %s" % (type(exc).__name__, exc), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
