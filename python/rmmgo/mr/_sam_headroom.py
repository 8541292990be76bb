"""SamHeadroomMemoryResource (RMM's sam_headroom_memory_resource)."""

from .._bindings import ResourceKind
from ._base import DeviceMemoryResource
from ._handles import _kind, _size_option


@_kind(ResourceKind.SAM_HEADROOM)
class SamHeadroomMemoryResource(DeviceMemoryResource):
    """System memory, advised to the device while `headroom` bytes stay free there."""

    def __init__(self, headroom):
        self._make(headroom=_size_option(headroom, "headroom"))
