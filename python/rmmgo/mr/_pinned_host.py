"""PinnedHostMemoryResource (RMM's pinned_host_memory_resource)."""

from .._bindings import ResourceKind
from ._base import DeviceMemoryResource
from ._handles import _kind


@_kind(ResourceKind.PINNED_HOST)
class PinnedHostMemoryResource(DeviceMemoryResource):
    """cudaHostAlloc: page-locked host memory."""
