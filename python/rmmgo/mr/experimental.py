"""Experimental resources (RMM's ``rmm.mr.experimental``)."""

from ._resources import CudaAsyncManagedMemoryResource

__all__ = ["CudaAsyncManagedMemoryResource"]
