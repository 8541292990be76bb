"""ArenaMemoryResource (RMM's arena_memory_resource)."""

from .._bindings import ResourceKind
from ._base import UpstreamResourceAdaptor
from ._handles import _flag, _kind, _size_option


@_kind(ResourceKind.ARENA)
class ArenaMemoryResource(UpstreamResourceAdaptor):
    """Per-thread and per-stream arenas over one global arena (None: half the free memory)."""

    def __init__(self, upstream_mr, arena_size=None, dump_log_on_failure=False):
        self._init_adaptor(
            upstream_mr,
            arena_size=_size_option(arena_size, "arena_size"),
            dump_log_on_failure=_flag(dump_log_on_failure),
        )
