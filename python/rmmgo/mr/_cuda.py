"""CudaMemoryResource (RMM's cuda_memory_resource)."""

from .._bindings import ResourceKind
from ._base import DeviceMemoryResource
from ._handles import _kind


@_kind(ResourceKind.CUDA)
class CudaMemoryResource(DeviceMemoryResource):
    """cudaMalloc / cudaFree on the current device."""
