"""Experimental resources (RMM's ``rmm.mr.experimental``)."""

from ._cuda_async_managed import CudaAsyncManagedMemoryResource
from ._cuda_async_pinned import CudaAsyncPinnedMemoryResource

__all__ = ["CudaAsyncManagedMemoryResource", "CudaAsyncPinnedMemoryResource"]
