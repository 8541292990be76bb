"""ThreadSafeResourceAdaptor (RMM's thread_safe_resource_adaptor)."""

from .._bindings import ResourceKind
from ._base import UpstreamResourceAdaptor
from ._handles import _kind


@_kind(ResourceKind.THREAD_SAFE)
class ThreadSafeResourceAdaptor(UpstreamResourceAdaptor):
    """One lock around every call to the upstream."""
