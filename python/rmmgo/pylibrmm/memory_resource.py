"""``rmm.pylibrmm.memory_resource``: see rmmgo.mr."""

from .. import mr as _mr

__all__ = list(_mr.__all__)
globals().update({name: getattr(_mr, name) for name in __all__})
