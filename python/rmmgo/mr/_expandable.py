"""ExpandableMemoryResource (rmmgo's own: PyTorch's expandable segments)."""

from .._bindings import ResourceKind
from ._base import DeviceMemoryResource, _PoolSizes
from ._handles import _kind, _size_option


@_kind(ResourceKind.EXPANDABLE)
class ExpandableMemoryResource(_PoolSizes, DeviceMemoryResource):
    """A stream-ordered sub-allocator over one reserved range of device addresses.

    It maps device memory into the range in granules (2 MiB on current GPUs)
    as it grows, so free memory never splits across separate chunks, and
    gives wholly free granules back without moving live memory: what
    PyTorch's ``expandable_segments`` does. Needs CUDA 12.5 or later.

    maximum_pool_size None: the device's memory. release_threshold None:
    give memory back only at the maximum (or on release()); else the mapped
    size above which it gives back free granules before it maps more. Sizes
    are ints or strings ("1GiB"). pool_size() counts the bytes mapped;
    release() gives every wholly free granule back (and synchronizes the
    device).
    """

    def __init__(self, maximum_pool_size=None, release_threshold=None):
        self._make(
            maximum_pool_size=_size_option(maximum_pool_size, "maximum_pool_size"),
            release_threshold=_size_option(release_threshold, "release_threshold"),
        )
