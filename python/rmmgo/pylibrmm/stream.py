"""``rmm.pylibrmm.stream``: see rmmgo.stream."""

from ..stream import (
    DEFAULT_STREAM,
    LEGACY_DEFAULT_STREAM,
    PER_THREAD_DEFAULT_STREAM,
    CudaStreamFlags,
    CudaStreamPool,
    Stream,
    _OwningStream,
)

__all__ = [
    "DEFAULT_STREAM",
    "LEGACY_DEFAULT_STREAM",
    "PER_THREAD_DEFAULT_STREAM",
    "CudaStreamFlags",
    "CudaStreamPool",
    "Stream",
]
