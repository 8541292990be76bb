"""AlignedResourceAdaptor (RMM's aligned_resource_adaptor)."""

from .. import _bindings as _b
from .._bindings import ResourceKind
from .._utils import as_size_t, parse_bytes
from ._base import UpstreamResourceAdaptor
from ._handles import _kind


@_kind(ResourceKind.ALIGNED)
class AlignedResourceAdaptor(UpstreamResourceAdaptor):
    """Allocations of at least alignment_threshold bytes aligned to `alignment` (a power of two)."""

    def __init__(self, upstream_mr, alignment=_b.DEFAULT_ALIGNMENT, alignment_threshold=0):
        self._init_adaptor(
            upstream_mr,
            alignment=as_size_t(parse_bytes(alignment), "alignment"),
            alignment_threshold=as_size_t(parse_bytes(alignment_threshold), "alignment_threshold"),
        )
