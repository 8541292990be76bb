"""RMM's ``rmm.pylibrmm.utils``: as_stream (None is a TypeError)."""

from ..stream import as_stream

__all__ = ["as_stream"]
