"""PrefetchResourceAdaptor (RMM's prefetch_resource_adaptor)."""

from .._bindings import ResourceKind
from ._base import UpstreamResourceAdaptor
from ._handles import _kind


@_kind(ResourceKind.PREFETCH)
class PrefetchResourceAdaptor(UpstreamResourceAdaptor):
    """Prefetches each (managed) allocation to the current device."""
