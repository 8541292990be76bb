"""LocalGPUCluster: a distributed.LocalCluster with one worker process per visible GPU."""

import copy
import os

from distributed import LocalCluster
from distributed.system import MEMORY_LIMIT

from ._options import CONFIG_KEYS
from ._plugin import RMMSetup

__all__ = ["LocalGPUCluster", "visible_devices", "rotated_devices", "DASK_CUDA_ALIASES"]

# LocalCUDACluster's rmm_* arguments, accepted under their dask-cuda names too.
DASK_CUDA_ALIASES = {
    "rmm_pool_size": "initial_pool_size",
    "rmm_maximum_pool_size": "maximum_pool_size",
    "rmm_managed_memory": "managed_memory",
    "rmm_async": "async_allocator",
    "rmm_release_threshold": "release_threshold",
    "rmm_log_directory": "log_directory",
    "rmm_track_allocations": "track_allocations",
}


def _device_id(text):
    text = str(text).strip()
    if not text:
        raise ValueError("CUDA_VISIBLE_DEVICES has an empty entry")
    return int(text) if text.isdigit() else text  # an index, or a GPU-/MIG- UUID


def visible_devices(CUDA_VISIBLE_DEVICES=None):
    """The GPUs to use, as a list of indices (or UUID strings).

    The argument (a "0,1" string or a list), else $CUDA_VISIBLE_DEVICES,
    else every device librmmgo.so sees (on the simulated device: its
    RMMGO_SIM_DEVICES devices).
    """
    spec = CUDA_VISIBLE_DEVICES
    if spec is None:
        spec = os.environ.get("CUDA_VISIBLE_DEVICES")
        if spec is None:
            from .._cuda import gpu

            return list(range(gpu.getDeviceCount()))
    if isinstance(spec, (str, bytes)):
        spec = os.fsdecode(spec).split(",") if spec.strip() else []
    devices = [_device_id(d) for d in spec]
    if len(set(devices)) != len(devices):
        raise ValueError("CUDA_VISIBLE_DEVICES=%r names a device twice" % (CUDA_VISIBLE_DEVICES,))
    return devices


def rotated_devices(i, devices):
    """CUDA_VISIBLE_DEVICES for the worker of devices[i]: its GPU first, then the others (as dask-cuda)."""
    return ",".join(str(d) for d in devices[i:] + devices[:i])


class LocalGPUCluster(LocalCluster):
    """A LocalCluster with one worker process per GPU, each set up by RMMSetup.

    Worker i is named after its device and started with
    CUDA_VISIBLE_DEVICES listing its device first (so it is device 0 in that
    process), as dask-cuda's LocalCUDACluster does; the RMMSetup plugin made
    from the RMM arguments is passed to every worker, so it is applied when
    each starts and again after each restart.

    CUDA_VISIBLE_DEVICES: the GPUs ("0,1" or a list; default: the variable,
    else every device). n_workers: use the first n of them (default: all).
    threads_per_worker: default 1. memory_limit: host memory per worker;
    "auto" divides the machine's memory among the workers.
    initial_pool_size ... statistics: RMMSetup's arguments, by keyword (also accepted
    under LocalCUDACluster's names: rmm_pool_size, rmm_maximum_pool_size,
    rmm_managed_memory, rmm_async, rmm_release_threshold,
    rmm_log_directory, rmm_track_allocations). Other keyword arguments go
    to LocalCluster (dashboard_address, protocol, ...); processes=False is
    refused: each GPU needs a process of its own.

    Invalid RMM settings raise before any process is started. On the
    simulated device (RMMGO_BACKEND=simulated) every worker process has
    simulated devices of its own and uses its device 0.
    """

    def __init__(
        self,
        CUDA_VISIBLE_DEVICES=None,
        n_workers=None,
        threads_per_worker=1,
        memory_limit="auto",
        **kwargs
    ):
        settings = {name: kwargs.pop(name) for name in CONFIG_KEYS if name in kwargs}
        for alias, arg in DASK_CUDA_ALIASES.items():
            if alias in kwargs:
                value = kwargs.pop(alias)
                if settings.get(arg) is not None and value is not None:
                    raise TypeError("LocalGPUCluster got both %s and %s (the same setting)" % (arg, alias))
                if value is not None:
                    settings[arg] = value
        self.rmm_setup = RMMSetup(**settings)
        if not kwargs.pop("processes", True):
            raise ValueError("LocalGPUCluster needs processes=True: each GPU gets a worker process of its own")
        if threads_per_worker < 1:
            raise ValueError("threads_per_worker must be at least 1, not %r" % (threads_per_worker,))
        devices = visible_devices(CUDA_VISIBLE_DEVICES)
        if not devices:
            raise ValueError("LocalGPUCluster: no visible GPU (CUDA_VISIBLE_DEVICES is empty, or no device)")
        if n_workers is None:
            n_workers = len(devices)
        if not 1 <= n_workers <= len(devices):
            raise ValueError(
                "n_workers=%r: LocalGPUCluster runs 1 to %d workers, one per visible GPU %s"
                % (n_workers, len(devices), devices)
            )
        self.cuda_visible_devices = devices
        if memory_limit == "auto":
            memory_limit = MEMORY_LIMIT // n_workers
        super().__init__(
            n_workers=0,
            threads_per_worker=threads_per_worker,
            memory_limit=memory_limit,
            processes=True,
            **kwargs
        )
        self.scale(n_workers)
        if not self.asynchronous:
            try:
                self.sync(self._correct_state)
            except BaseException:
                self.close()  # a worker failed to start (its setup failed): no scheduler left behind
                raise

    def new_worker_spec(self):
        free = [d for d in self.cuda_visible_devices if d not in self.worker_spec]
        if not free:
            raise ValueError("LocalGPUCluster cannot scale beyond its %d GPUs %s" % (
                len(self.cuda_visible_devices), self.cuda_visible_devices))
        name = free[0]
        spec = copy.deepcopy(self.new_spec)
        options = spec["options"]
        env = dict(options.get("env") or {})
        env["CUDA_VISIBLE_DEVICES"] = rotated_devices(self.cuda_visible_devices.index(name), self.cuda_visible_devices)
        options["env"] = env
        options["plugins"] = list(options.get("plugins") or ()) + [self.rmm_setup]
        return {name: spec}
