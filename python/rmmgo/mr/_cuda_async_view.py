"""CudaAsyncViewMemoryResource (RMM's cuda_async_view_memory_resource)."""

from .._bindings import ResourceKind, Status
from ._base import DeviceMemoryResource
from ._cuda_async import _PoolHandleMixin
from ._handles import RMMLogicError, _kind


@_kind(ResourceKind.CUDA_ASYNC_VIEW)
class CudaAsyncViewMemoryResource(_PoolHandleMixin, DeviceMemoryResource):
    """cudaMallocFromPoolAsync on a pool it does not own (pool_handle: cudaMemPool_t)."""

    def __init__(self, pool_handle):
        h = getattr(pool_handle, "value", pool_handle)
        h = int(h or 0)
        if not h:
            raise RMMLogicError(Status.ERROR_INVALID_ARGUMENT, "CudaAsyncViewMemoryResource: pool_handle must not be NULL")
        self._make(pool_handle=h)
