"""ManagedMemoryResource (RMM's managed_memory_resource)."""

from .._bindings import ResourceKind
from ._base import DeviceMemoryResource
from ._handles import _kind


@_kind(ResourceKind.MANAGED)
class ManagedMemoryResource(DeviceMemoryResource):
    """cudaMallocManaged: memory both device and host can use."""
