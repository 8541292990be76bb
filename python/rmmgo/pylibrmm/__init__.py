"""RMM's ``rmm.pylibrmm`` module paths, for code that imports from them.

Each module here is the same objects as its rmmgo counterpart: a
DeviceBuffer from ``rmm.pylibrmm.device_buffer`` is ``rmmgo.DeviceBuffer``.
The deprecated ``cuda_stream`` module is imported only when asked for.
"""

from . import (
    cuda_stream_pool,
    device_buffer,
    helper,
    logger,
    memory_resource,
    stream,
    utils,
)
from .cuda_stream_pool import CudaStreamPool
from .device_buffer import DeviceBuffer
from .stream import CudaStreamFlags

__all__ = ["CudaStreamPool", "CudaStreamFlags", "DeviceBuffer", "memory_resource"]
