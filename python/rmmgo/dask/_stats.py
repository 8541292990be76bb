"""A worker's memory figures: memory_statistics and the worker metrics Dask reports.

The figures are read from the device's current resource and its upstreams:
a StatisticsResourceAdaptor gives the counters (RMMSetup(statistics=True)
puts one on top), a PoolMemoryResource the bytes it holds from the device, a
TrackingResourceAdaptor or LimitingResourceAdaptor the bytes outstanding.
"""

from .. import mr as _mr
from ..mr._handles import _current_device

__all__ = ["device_uuid", "device_memory_statistics", "memory_statistics", "METRIC", "DASHBOARD_METRIC"]

# The worker metrics (Worker.metrics) RMMSetup adds: METRIC holds
# device_memory_statistics(); DASHBOARD_METRIC holds {"rmm-used",
# "rmm-total"}, the names Dask's own RMM dashboard plot reads.
METRIC = "rmmgo"
DASHBOARD_METRIC = "rmm"

_COUNTERS = ("current_bytes", "current_count", "peak_bytes", "peak_count", "total_bytes", "total_count")


def _chain(resource):
    out = []
    while resource is not None:
        out.append(resource)
        resource = getattr(resource, "upstream_mr", None) if isinstance(resource, _mr.UpstreamResourceAdaptor) else None
    return out


_uuids = {}


def device_uuid(device=None):
    """The UUID of `device` (default: the current device), as nvidia-smi -L writes it; None if unknown.

    What identifies a worker's GPU across processes: each worker sees its
    own GPU as device 0, and two GPUs of one machine may share PCI domain
    and bus numbers. Read once per device and process (gpu.deviceGetUUID).
    """
    if device is None:
        device = _current_device()
    device = int(device)
    if device not in _uuids:
        from .._cuda import gpu

        try:
            _uuids[device] = gpu.deviceGetUUID(device)
        except Exception:  # no driver API here: the figures go on without it
            _uuids[device] = None
    return _uuids[device]


def device_memory_statistics(device=None):
    """The memory figures of `device`'s resource (default: the current device), as a dict.

    device: the device. uuid: its UUID (device_uuid; None if unknown), the
    same in every process. resource: the resource chain, outermost first
    ("StatisticsResourceAdaptor > PoolMemoryResource > CudaMemoryResource").
    current_bytes, current_count, peak_bytes, peak_count, total_bytes,
    total_count: a StatisticsResourceAdaptor's counters (None without one).
    reserved_bytes: the bytes a PoolMemoryResource holds from the device
    (None without a pool). used_bytes: bytes handed out, from the first
    layer that counts them (statistics, tracking, limiting, pool; None if
    none does).
    """
    if device is None:
        device = _current_device()
    device = int(device)
    chain = _chain(_mr.get_per_device_resource(device))
    out = {"device": device, "uuid": device_uuid(device), "resource": " > ".join(type(r).__name__ for r in chain)}
    out.update(dict.fromkeys(_COUNTERS))
    out["reserved_bytes"] = None
    used = None
    for r in chain:
        if isinstance(r, _mr.StatisticsResourceAdaptor) and out["current_bytes"] is None:
            s = r.allocation_counts
            out.update({k: getattr(s, k) for k in _COUNTERS})
            used = s.current_bytes if used is None else used
        elif isinstance(r, (_mr.TrackingResourceAdaptor, _mr.LimitingResourceAdaptor)) and used is None:
            used = r.get_allocated_bytes()
        elif isinstance(r, _mr.PoolMemoryResource) and out["reserved_bytes"] is None:
            out["reserved_bytes"] = r.pool_size()
            used = r.used_bytes() if used is None else used
    out["used_bytes"] = used
    return out


def dashboard_figures(stats):
    """{"rmm-used", "rmm-total"} from device_memory_statistics(), as Dask's RMM plot reads them."""
    used = stats["used_bytes"] or 0
    return {"rmm-used": used, "rmm-total": max(stats["reserved_bytes"] or 0, used)}


def _worker_statistics(dask_worker=None):
    """device_memory_statistics() of the device RMMSetup set up on this worker (else the current one)."""
    from ._plugin import RMMSetup

    plugin = (getattr(dask_worker, "plugins", None) or {}).get(RMMSetup.name)
    return device_memory_statistics(getattr(plugin, "device", None))


def memory_statistics(client, workers=None):
    """Each worker's memory figures, gathered to the client: {worker address: dict}.

    The dict is device_memory_statistics() on the worker, for the device
    RMMSetup configured there. The counters need RMMSetup(statistics=True)
    (or another StatisticsResourceAdaptor on the worker's resource); without
    one they are None. workers: addresses to ask (default: all). With an
    asynchronous client, await the result.
    """
    return client.run(_worker_statistics, workers=workers)
