"""CudaAsyncPinnedMemoryResource (RMM's experimental cuda_async_pinned_memory_resource)."""

from .._bindings import RMMRuntimeError, Status
from ._base import DeviceMemoryResource
from ._cuda_async import _PoolHandleMixin


class CudaAsyncPinnedMemoryResource(_PoolHandleMixin, DeviceMemoryResource):
    """Stream-ordered pinned host memory from a pinned memory pool (RMM's experimental one).

    Not available in rmmgo yet: librmmgo.so has no pinned-pool resource, so
    making one raises RMMRuntimeError (status ERROR_NOT_SUPPORTED) saying so.
    PinnedHostMemoryResource gives pinned host memory, not stream-ordered.
    """

    def __init__(self):
        raise RMMRuntimeError(
            Status.ERROR_NOT_SUPPORTED,
            "CudaAsyncPinnedMemoryResource: not supported by rmmgo: librmmgo.so has no "
            "stream-ordered pinned-memory pool resource (use PinnedHostMemoryResource for "
            "pinned host memory)",
        )
