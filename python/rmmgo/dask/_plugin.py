"""RMMSetup: the worker plugin that gives each Dask worker's device its memory resource."""

import logging
import os

from distributed.diagnostics.plugin import WorkerPlugin

from .. import mr as _mr
from ..mr._handles import _current_device
from . import _stats
from ._options import resolve_settings

__all__ = ["RMMSetup", "log_file_name"]

logger = logging.getLogger("rmmgo.dask")


def log_file_name(log_directory, worker=None):
    """The log a worker writes under log_directory: rmm_log_<worker name>.txt (dask-cuda's name).

    The LoggingResourceAdaptor then puts ".dev<N>" before ".txt", as RMM's does.
    Without a worker (RMMSetup applied in the process itself): rmm_log_pid<pid>.txt.
    """
    name = getattr(worker, "name", None)
    if name is None:
        name = "pid%d" % os.getpid()
    elif isinstance(name, str):
        name = name.split("/")[-1]
    return os.path.join(log_directory, "rmm_log_%s.txt" % name)


class RMMSetup(WorkerPlugin):
    """Sets up each worker's device memory resource when the worker starts, and after a restart.

    The arguments mean what dask-cuda's ``RMMSetup`` (and ``LocalCUDACluster``'s
    ``rmm_*`` arguments) mean:

    initial_pool_size
        A pool of this size over cudaMalloc (or managed memory): a
        PoolMemoryResource. With async_allocator, the size that primes the
        async allocator's pool instead.
    maximum_pool_size
        The pool's maximum; with async_allocator, a LimitingResourceAdaptor
        with this limit over it.
    managed_memory
        Take memory from cudaMallocManaged (ManagedMemoryResource).
    pool_allocator
        Use a pool even without initial_pool_size (it then starts at half
        the free device memory, as rmm.reinitialize does).
    async_allocator
        A CudaAsyncMemoryResource (cudaMallocAsync); not with
        managed_memory or pool_allocator.
    release_threshold
        What the async allocator's pool keeps when idle (async_allocator only).
    log_directory
        Log every allocation to log_directory/rmm_log_<worker name>.dev<N>.txt
        (a LoggingResourceAdaptor; the folder is made if missing).
    track_allocations
        A TrackingResourceAdaptor on top (outstanding bytes, for the
        dashboard's figures), as dask-cuda's rmm_track_allocations.
    statistics
        A StatisticsResourceAdaptor outermost: the counters memory_statistics
        and the worker metrics report.

    Sizes are bytes (int), a fraction of the device's memory (a float in
    (0, 1]), or strings: "4GiB", "500MB", "90%" (of the device's memory).
    0 counts as not given, as in dask-cuda. An argument left None is read
    from the Dask config (``rmmgo.pool-size``, ``rmmgo.maximum-pool-size``,
    ``rmmgo.managed-memory``, ``rmmgo.pool-allocator``, ``rmmgo.async``,
    ``rmmgo.release-threshold``, ``rmmgo.log-directory``,
    ``rmmgo.track-allocations``, ``rmmgo.statistics``) where the plugin is
    made. Settings that are wrong in themselves or together raise
    ValueError or TypeError here, on the client; fractions are worked out on
    each worker, against its own device.

    On the worker, the plugin builds the whole resource chain first and
    only then makes it the device's resource (the worker's current device:
    its GPU, as CUDA_VISIBLE_DEVICES puts it first), so a failure (no room
    for the pool) leaves the device as it was and reaches the client as
    the registration's error. The plugin is named "rmmgo-setup": registering
    another replaces it (teardown gives the device its initial resource
    back). It adds two worker metrics, "rmmgo" (memory_statistics' dict) and
    "rmm" (the figures Dask's RMM dashboard plot reads).
    """

    name = "rmmgo-setup"

    def __init__(
        self,
        initial_pool_size=None,
        maximum_pool_size=None,
        managed_memory=None,
        pool_allocator=None,
        async_allocator=None,
        release_threshold=None,
        log_directory=None,
        track_allocations=None,
        statistics=None,
    ):
        arguments = dict(locals())  # exactly the settings above, by name
        del arguments["self"]
        self.settings = resolve_settings(**arguments)
        self._reset_state()

    def _reset_state(self):
        self.device = None  # the device set up, once setup has run
        self.resource = None
        self._worker = None

    # Only the settings travel: the resources belong to the process that made them.
    def __getstate__(self):
        return {"settings": self.settings}

    def __setstate__(self, state):
        self.settings = state["settings"]
        self._reset_state()

    def __repr__(self):
        return "RMMSetup(%s)" % self.settings.describe()

    def make_resource(self, worker=None):
        """The resource chain for the current device, built but not installed.

        Raises what the resources raise (OutOfMemoryError when the device has
        no room for the pool, ValueError for a fraction that comes to nothing).
        """
        s = self.settings
        device = _current_device()
        total = _mr.available_device_memory()[1]

        def size(name):
            v = getattr(s, name)
            if v is None:
                return None
            n = v.resolve(total)
            if n == 0:
                raise ValueError("%s=%r is 0 bytes on device %d (%d bytes)" % (name, str(v), device, total))
            return n

        initial, maximum = size("initial_pool_size"), size("maximum_pool_size")
        if initial is not None and maximum is not None and initial > maximum:
            raise ValueError(
                "initial_pool_size=%r (%d bytes) exceeds maximum_pool_size=%r (%d bytes) on device %d"
                % (str(s.initial_pool_size), initial, str(s.maximum_pool_size), maximum, device)
            )
        if s.async_allocator:
            res = _mr.CudaAsyncMemoryResource(initial_pool_size=initial, release_threshold=size("release_threshold"))
            if maximum is not None:
                res = _mr.LimitingResourceAdaptor(res, allocation_limit=maximum)
        else:
            res = _mr.ManagedMemoryResource() if s.managed_memory else _mr.CudaMemoryResource()
            if s.pool_allocator:
                res = _mr.PoolMemoryResource(res, initial_pool_size=initial, maximum_pool_size=maximum)
        if s.log_directory is not None:
            os.makedirs(s.log_directory, exist_ok=True)
            res = _mr.LoggingResourceAdaptor(res, log_file_name=log_file_name(s.log_directory, worker))
        if s.track_allocations:
            res = _mr.TrackingResourceAdaptor(res)
        if s.statistics:
            res = _mr.StatisticsResourceAdaptor(res)
        return res

    def setup(self, worker=None):
        """Give the current device its resource; add the worker metrics (with a worker)."""
        device = _current_device()
        try:
            res = self.make_resource(worker)
        except Exception:
            logger.exception("rmmgo: setting up device %d with %r failed; it keeps its resource", device, self)
            raise
        _mr.set_per_device_resource(device, res)
        self.device, self.resource, self._worker = device, res, worker
        metrics = getattr(worker, "metrics", None)
        if isinstance(metrics, dict):
            metrics[_stats.METRIC] = self._metric
            metrics[_stats.DASHBOARD_METRIC] = self._dashboard_metric
        logger.info(
            "rmmgo: device %d (%s) uses %s (%s)",
            device,
            _stats.device_uuid(device) or "UUID unknown",
            type(res).__name__,
            self.settings.describe() or "defaults",
        )

    def teardown(self, worker=None):
        """Remove the metrics and give the device its initial resource back, if it still has ours."""
        metrics = getattr(worker if worker is not None else self._worker, "metrics", None)
        if isinstance(metrics, dict):
            for key, fn in ((_stats.METRIC, self._metric), (_stats.DASHBOARD_METRIC, self._dashboard_metric)):
                if metrics.get(key) == fn:
                    del metrics[key]
        if self.device is not None and self.resource is not None:
            if _mr.get_per_device_resource(self.device) == self.resource:
                _mr.reset_per_device_resource(self.device)
        self._reset_state()

    def _metric(self, worker=None):
        return _stats.device_memory_statistics(self.device)

    def _dashboard_metric(self, worker=None):
        return _stats.dashboard_figures(_stats.device_memory_statistics(self.device))
