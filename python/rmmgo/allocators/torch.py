"""PyTorch's pluggable CUDA allocator pointed at rmmgo.

    import torch
    from rmmgo.allocators.torch import rmm_torch_allocator
    torch.cuda.memory.change_current_allocator(rmm_torch_allocator)

(before PyTorch allocates any CUDA memory). Allocations are served by each
device's current resource in librmmgo.so, through librmmgo_torch.so: a thin
C++ layer whose ``rmmgo_torch_allocate`` throws a C++ exception carrying the
library's message when an allocation fails. PyTorch lets that exception
through its pluggable allocator and turns it into a Python RuntimeError, so
running out of memory raises instead of crashing or handing out NULL.

``rmm_torch_allocator`` is None when PyTorch (with CUDA) is not available or
librmmgo_torch.so is missing (``make torch-shim`` builds it); then
``torch_allocator_error`` says why.
"""

from .. import _lib

__all__ = ["rmm_torch_allocator", "torch_shim_path", "torch_allocator_error"]

rmm_torch_allocator = None
torch_allocator_error = None


def torch_shim_path():
    """The path of librmmgo_torch.so (LibraryNotFoundError naming the places tried)."""
    return _lib.torch_shim_path()


try:
    from torch.cuda.memory import CUDAPluggableAllocator
except ImportError as exc:
    torch_allocator_error = "PyTorch with CUDAPluggableAllocator is not installed (%s)" % exc
else:
    from torch.cuda import is_available

    if not is_available():
        torch_allocator_error = "torch.cuda.is_available() is False"
    else:
        try:
            _lib.load()  # librmmgo.so first, so the shim binds to this copy
            _path = torch_shim_path()
        except _lib.LibraryNotFoundError as exc:
            torch_allocator_error = str(exc)
        else:
            rmm_torch_allocator = CUDAPluggableAllocator(
                _path, alloc_fn_name="rmmgo_torch_allocate", free_fn_name="rmmgo_torch_deallocate"
            )
            del _path
    del is_available


# ------------------------------------------------------- PyTorch's numbers
#
# With rmmgo as PyTorch's allocator, torch.cuda.memory_stats(),
# memory_allocated(), max_memory_allocated(), memory_reserved() and friends
# report zeros: PyTorch keeps those figures in its own caching allocator,
# which a pluggable allocator replaces. These functions give the same
# figures from rmmgo, under PyTorch's names and keys (docs/out-of-memory.md).
#
# allocated: bytes live in the device's current resource: a statistics
#   adaptor's counters when the chain has one (exact current and peak, and
#   allocation counts), else the pool's or expandable resource's used bytes.
# reserved: bytes the chain holds from the device (pool size, mapped bytes
#   of an expandable resource, an arena's size); without a sub-allocator,
#   the allocated bytes.
# Peaks without a statistics adaptor (or for reserved bytes, without an
# expandable resource's own peak) are the largest values these functions
# have seen since reset_peak_memory_stats(); wrap the resource in a
# StatisticsResourceAdaptor (rmmgo.statistics.enable_statistics()) for
# exact ones.

import threading as _threading

_peaks_lock = _threading.Lock()
_peaks = {}  # device -> {"allocated": n, "reserved": n}: the largest seen since the reset
_stat_base = {}  # device -> (bytes, count) live when reset_peak_memory_stats pushed the counters


def _device_index(device):
    if device is None:
        from .. import _cuda  # noqa: F401 - keeps the import cheap when unused
        from ..mr._handles import _current_device

        return _current_device()
    if isinstance(device, int):
        return device
    idx = getattr(device, "index", None)  # torch.device
    if idx is not None:
        return idx
    if isinstance(device, str) and ":" in device:
        return int(device.rsplit(":", 1)[1])
    return _device_index(None)


def _chain(device):
    from .. import mr as _r

    mr = _r.get_per_device_resource(device)
    out = []
    while mr is not None and len(out) < 64:
        out.append(mr)
        mr = getattr(mr, "upstream_mr", None) if hasattr(type(mr), "upstream_mr") else None
    return out


def _figures(device):
    from .. import mr as _r

    stats = reserved = used = peak_reserved = None
    for mr in _chain(device):
        if stats is None and isinstance(mr, _r.StatisticsResourceAdaptor):
            stats = mr.allocation_counts
        if reserved is None and hasattr(mr, "pool_size"):
            reserved = mr.pool_size()
            if hasattr(mr, "used_bytes"):
                used = mr.used_bytes()
            peak = getattr(mr, "peak_pool_size", None)
            if callable(peak):
                peak_reserved = peak()
        if reserved is None and isinstance(mr, _r.ArenaMemoryResource):
            reserved = getattr(mr, "arena_size", lambda: None)()
    base = _stat_base.get(device)
    if stats is not None and base is not None:
        # Counters pushed by reset_peak_memory_stats: the level counts from
        # the bytes and allocations live at the reset.
        b, c = base
        stats = type(stats)(
            current_bytes=b + stats.current_bytes,
            current_count=c + stats.current_count,
            peak_bytes=b + stats.peak_bytes,
            peak_count=c + stats.peak_count,
            total_bytes=stats.total_bytes,
            total_count=stats.total_count,
        )
    allocated = stats.current_bytes if stats is not None else (used or 0)
    if reserved is None:
        reserved = allocated
    return stats, allocated, reserved, peak_reserved


def _update_peaks(device, allocated, reserved):
    with _peaks_lock:
        p = _peaks.setdefault(device, {"allocated": 0, "reserved": 0})
        p["allocated"] = max(p["allocated"], allocated)
        p["reserved"] = max(p["reserved"], reserved)
        return dict(p)


def memory_stats(device=None):
    """PyTorch's torch.cuda.memory_stats() keys, from rmmgo's figures.

    Filled: "allocated_bytes.all.{current,peak,allocated,freed}",
    "allocation.all.{current,peak,allocated,freed}" (with a statistics
    adaptor), "reserved_bytes.all.{current,peak}", "active_bytes.all.*"
    (= allocated), "num_ooms" is not counted (see the pressure adaptor).
    """
    dev = _device_index(device)
    stats, allocated, reserved, peak_reserved = _figures(dev)
    p = _update_peaks(dev, allocated, reserved)
    if stats is not None:
        peak_alloc = stats.peak_bytes
        out = {
            "allocated_bytes.all.current": stats.current_bytes,
            "allocated_bytes.all.peak": peak_alloc,
            "allocated_bytes.all.allocated": stats.total_bytes,
            "allocated_bytes.all.freed": stats.total_bytes - stats.current_bytes,
            "allocation.all.current": stats.current_count,
            "allocation.all.peak": stats.peak_count,
            "allocation.all.allocated": stats.total_count,
            "allocation.all.freed": stats.total_count - stats.current_count,
        }
    else:
        out = {"allocated_bytes.all.current": allocated, "allocated_bytes.all.peak": p["allocated"]}
    out["reserved_bytes.all.current"] = reserved
    out["reserved_bytes.all.peak"] = max(p["reserved"], peak_reserved or 0)
    for k in ("current", "peak", "allocated", "freed"):
        if "allocated_bytes.all." + k in out:
            out["active_bytes.all." + k] = out["allocated_bytes.all." + k]
    return dict(sorted(out.items()))


def memory_allocated(device=None):
    """Bytes live in the device's current resource (torch.cuda.memory_allocated)."""
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device=None):
    """Peak live bytes (torch.cuda.max_memory_allocated); see the module's notes."""
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device=None):
    """Bytes held from the device (torch.cuda.memory_reserved)."""
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device=None):
    """Peak bytes held (torch.cuda.max_memory_reserved); see the module's notes."""
    return memory_stats(device)["reserved_bytes.all.peak"]


def reset_peak_memory_stats(device=None):
    """Start the peaks afresh (torch.cuda.reset_peak_memory_stats).

    With a statistics adaptor, its counters start a new level (push_counters),
    so its peak starts from the current bytes.
    """
    from .. import mr as _r

    dev = _device_index(device)
    for mr in _chain(dev):
        if isinstance(mr, _r.StatisticsResourceAdaptor):
            if dev in _stat_base:
                mr.pop_counters()  # fold the previous reset's level back
            outer = mr.push_counters()
            _stat_base[dev] = (outer.current_bytes, outer.current_count)
            break
    _, allocated, reserved, _ = _figures(dev)
    with _peaks_lock:
        _peaks[dev] = {"allocated": allocated, "reserved": reserved}


__all__ += [
    "memory_stats",
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "reset_peak_memory_stats",
]
