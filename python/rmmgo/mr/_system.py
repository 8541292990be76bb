"""SystemMemoryResource (RMM's system_memory_resource)."""

from .._bindings import ResourceKind
from ._base import DeviceMemoryResource
from ._handles import _kind


@_kind(ResourceKind.SYSTEM)
class SystemMemoryResource(DeviceMemoryResource):
    """Host memory the device uses directly (needs HMM or ATS)."""
