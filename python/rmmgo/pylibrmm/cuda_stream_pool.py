"""RMM's ``rmm.pylibrmm.cuda_stream_pool``: see rmmgo.stream.CudaStreamPool."""

from ..stream import CudaStreamPool

__all__ = ["CudaStreamPool"]
