"""RMM's ``rmm.pylibrmm.memory_resource``: the same objects as rmmgo.mr."""

from ... import mr as _mr
from . import _memory_resource, experimental

__all__ = list(_mr.__all__)
globals().update({name: getattr(_mr, name) for name in __all__ if name != "experimental"})
