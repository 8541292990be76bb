"""RMM's ``rmm.pylibrmm`` module paths, for code that imports from them."""

from . import device_buffer, memory_resource, stream
from .device_buffer import DeviceBuffer

__all__ = ["device_buffer", "memory_resource", "stream", "DeviceBuffer"]
