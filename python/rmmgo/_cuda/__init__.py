"""RMM's ``rmm._cuda``: device queries over librmmgo.so (see ``gpu``)."""

from . import gpu

__all__ = ["gpu"]
