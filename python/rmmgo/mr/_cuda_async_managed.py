"""CudaAsyncManagedMemoryResource (RMM's cuda_async_managed_memory_resource)."""

from .._bindings import ResourceKind
from ._base import DeviceMemoryResource
from ._cuda_async import _PoolHandleMixin
from ._handles import _kind


@_kind(ResourceKind.CUDA_ASYNC_MANAGED)
class CudaAsyncManagedMemoryResource(_PoolHandleMixin, DeviceMemoryResource):
    """Stream-ordered managed memory from a managed memory pool (CUDA 13.0 or later)."""
