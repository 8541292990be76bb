"""RMM's ``rmm.pylibrmm.memory_resource.experimental``: see rmmgo.mr.experimental."""

from ...mr.experimental import CudaAsyncManagedMemoryResource, CudaAsyncPinnedMemoryResource

__all__ = ["CudaAsyncManagedMemoryResource", "CudaAsyncPinnedMemoryResource"]
