"""LimitingResourceAdaptor (RMM's limiting_resource_adaptor)."""

from .._bindings import ResourceKind
from .._utils import as_size_t, parse_bytes
from ._base import UpstreamResourceAdaptor
from ._handles import _kind, _lib, _query


@_kind(ResourceKind.LIMITING)
class LimitingResourceAdaptor(UpstreamResourceAdaptor):
    """Refuses (out of memory) allocations past allocation_limit bytes outstanding."""

    def __init__(self, upstream_mr, allocation_limit):
        self._init_adaptor(upstream_mr, allocation_limit=as_size_t(parse_bytes(allocation_limit), "allocation_limit"))

    def get_allocated_bytes(self):
        return _query(_lib.rmm_limiting_allocated_bytes, self._handle)

    def get_allocation_limit(self):
        return _query(_lib.rmm_limiting_allocation_limit, self._handle)
