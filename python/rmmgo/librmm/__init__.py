"""RMM's ``rmm.librmm``: in RMM the C++ library's declarations for Cython.

rmmgo has no Cython layer; the one Python-visible piece, ``_logger`` (the
logging levels), is here for code that imports it from this path.
"""

from . import _logger

__all__ = ["_logger"]
