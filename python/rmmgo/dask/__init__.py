"""rmmgo on Dask workers, set up the way dask-cuda sets up RMM.

Needs Dask's ``distributed`` (``pip install 'rmmgo[dask]'``); the rest of
rmmgo does not::

    from distributed import Client
    from rmmgo.dask import LocalGPUCluster, memory_statistics

    cluster = LocalGPUCluster(initial_pool_size="90%", statistics=True)
    client = Client(cluster)
    ...
    memory_statistics(client)   # {worker address: {"current_bytes": ..., ...}}

- RMMSetup: the worker plugin (dask-cuda's RMMSetup arguments); for a
  cluster started another way, ``client.register_plugin(RMMSetup(...))``
  (``register_worker_plugin`` before distributed 2023.9).
- LocalGPUCluster: a LocalCluster with one worker process per GPU.
- memory_statistics: each worker's counters and pool size, and its GPU's
  UUID (device_uuid: what tells the workers' GPUs apart), on the client;
  the same figures are the workers' "rmmgo" metric, and "rmm" holds those
  Dask's RMM dashboard plot shows.
- The Dask config keys rmmgo.pool-size, rmmgo.maximum-pool-size,
  rmmgo.managed-memory, rmmgo.pool-allocator, rmmgo.async,
  rmmgo.release-threshold, rmmgo.log-directory, rmmgo.track-allocations
  and rmmgo.statistics fill RMMSetup's arguments left out (also as
  DASK_RMMGO__POOL_SIZE=4GiB and so on in the environment).
- ``dask worker SCHEDULER --preload rmmgo.dask`` sets a worker up from the
  config; ``python -m rmmgo.dask worker SCHEDULER --pool-size 90%`` starts
  one worker per GPU.

Where Dask's distributed cannot read GPU names from the installed pynvml
(distributed before its February 2023 fix, with pynvml 11.5 or nvidia-ml-py
11.515 and later), importing rmmgo.dask sets distributed.diagnostics.nvml to
False, so that clusters start.

docs/dask.md in the repository shows each next to its dask-cuda equivalent.
"""

try:
    import dask.config
    import distributed  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "rmmgo.dask needs Dask's distributed package (pip install 'rmmgo[dask]', or Debian's "
        "python3-distributed); the rest of rmmgo works without it (%s)" % exc
    ) from exc

from ._options import CONFIG_DEFAULTS, CONFIG_KEYS, DeviceSize, Settings, parse_device_size
from ._plugin import RMMSetup
from ._stats import device_memory_statistics, device_uuid, memory_statistics
from ._cluster import LocalGPUCluster, visible_devices

dask.config.update_defaults({"rmmgo": dict(CONFIG_DEFAULTS)})

# Before any Scheduler, Nanny or Worker of this process starts its system
# monitor (preloads are imported before that): see _nvml.
from ._nvml import turn_off_broken_nvml as _turn_off_broken_nvml  # noqa: E402

_turn_off_broken_nvml()

__all__ = [
    "RMMSetup",
    "LocalGPUCluster",
    "memory_statistics",
    "device_memory_statistics",
    "device_uuid",
    "visible_devices",
    "parse_device_size",
    "DeviceSize",
    "Settings",
    "CONFIG_KEYS",
    "dask_setup",
]


def dask_setup(worker):
    """The preload hook: ``dask worker ADDRESS --preload rmmgo.dask``.

    Applies RMMSetup() made from the Dask config (rmmgo.* keys, or
    DASK_RMMGO__* variables) on the worker, before it takes any task. A
    setting that is wrong, or a device without room, fails the preload,
    and distributed only logs that ("Failed to start preload") and starts
    the worker with the device's initial resource: read the worker's log,
    or start workers with ``python -m rmmgo.dask worker``, which refuses
    to start a worker whose setup failed.
    """
    from distributed import Worker

    if not isinstance(worker, Worker):
        raise TypeError(
            "rmmgo.dask is a worker preload (dask worker --preload rmmgo.dask), not one for %s"
            % type(worker).__name__
        )
    return worker.plugin_add(plugin=RMMSetup(), name=RMMSetup.name, catch_errors=False)
