"""Experimental resources (RMM's ``rmm.mr.experimental``)."""

from ._resources import CudaAsyncManagedMemoryResource, CudaAsyncPinnedMemoryResource

__all__ = ["CudaAsyncManagedMemoryResource", "CudaAsyncPinnedMemoryResource"]
