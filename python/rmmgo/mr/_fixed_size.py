"""FixedSizeMemoryResource (RMM's fixed_size_memory_resource)."""

from .. import _bindings as _b
from .._bindings import ResourceKind
from .._utils import as_size_t
from ._base import UpstreamResourceAdaptor
from ._handles import _kind, _lib, _query, _size_option


@_kind(ResourceKind.FIXED_SIZE)
class FixedSizeMemoryResource(UpstreamResourceAdaptor):
    """Blocks of one size (block_size), fetched blocks_to_preallocate at a time."""

    def __init__(self, upstream_mr, block_size=1 << 20, blocks_to_preallocate=128):
        # None: the default (1 MiB blocks, 128 at a time).
        self._init_adaptor(
            upstream_mr,
            block_size=_size_option(block_size, "block_size"),
            blocks_to_preallocate=_b.SIZE_DEFAULT
            if blocks_to_preallocate is None
            else as_size_t(blocks_to_preallocate, "blocks_to_preallocate"),
        )

    def get_block_size(self):
        return _query(_lib.rmm_fixed_size_block_size, self._handle)

    @property
    def block_size(self):
        return self.get_block_size()
