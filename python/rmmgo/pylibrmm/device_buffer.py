"""``rmm.pylibrmm.device_buffer``: see rmmgo.device_buffer."""

from ..device_buffer import (
    DeviceBuffer,
    copy_device_to_ptr,
    copy_host_to_ptr,
    copy_ptr_to_host,
    to_device,
)

__all__ = ["DeviceBuffer", "copy_device_to_ptr", "copy_host_to_ptr", "copy_ptr_to_host", "to_device"]
