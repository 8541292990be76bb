"""PoolMemoryResource (RMM's pool_memory_resource)."""

from .._bindings import ResourceKind
from ._base import UpstreamResourceAdaptor, _PoolSizes
from ._handles import RMMLogicError, _kind, _size_option


@_kind(ResourceKind.POOL)
class PoolMemoryResource(_PoolSizes, UpstreamResourceAdaptor):
    """A coalescing best-fit pool over an upstream resource.

    initial_pool_size None: half the free device memory; 0: grow on first use.
    maximum_pool_size None: no maximum. Sizes are ints or strings ("1GiB").
    pool_size() counts the bytes taken from the upstream; release() gives
    wholly free upstream chunks back to it.
    """

    def __init__(self, upstream_mr, initial_pool_size=None, maximum_pool_size=None):
        initial = _size_option(initial_pool_size, "initial_pool_size")
        maximum = _size_option(maximum_pool_size, "maximum_pool_size")
        try:
            self._init_adaptor(upstream_mr, initial_pool_size=initial, maximum_pool_size=maximum)
        except RMMLogicError as exc:
            if initial_pool_size is not None and maximum_pool_size is not None and initial > maximum:
                # RMM's message first: code written for RMM looks for it.
                raise RMMLogicError(exc.status, "Initial pool size exceeds the maximum pool size! (%s)" % exc) from None
            raise
