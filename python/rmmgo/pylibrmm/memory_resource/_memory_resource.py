"""RMM's ``rmm.pylibrmm.memory_resource._memory_resource``: the resources and
the private helpers RMM's own code and tests import from here."""

from ... import mr as _mr
from ...mr import __all__ as _public
from ...mr import _flush_logs
from ..._rmm import _initialize

__all__ = [name for name in _public if name != "experimental"]
globals().update({name: getattr(_mr, name) for name in __all__})
