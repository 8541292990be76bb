"""Numba's External Memory Management plugin for rmmgo.

    from numba import cuda
    from rmmgo.allocators.numba import RMMNumbaManager
    cuda.set_memory_manager(RMMNumbaManager)

or set ``NUMBA_CUDA_MEMORY_MANAGER=rmmgo.allocators.numba`` before Numba
initialises CUDA. Device memory comes from the current device resource as
DeviceBuffers; host (pinned, mapped) memory stays with Numba.
"""

import ctypes

from numba import cuda
from numba.cuda import HostOnlyCUDAMemoryManager, IpcHandle, MemoryPointer

from ..device_buffer import DeviceBuffer
from ..mr import available_device_memory

try:
    from numba.cuda.cudadrv.driver import MemoryInfo
except ImportError:  # pragma: no cover - very old or very new Numba
    from collections import namedtuple

    MemoryInfo = namedtuple("MemoryInfo", "free,total")

__all__ = ["RMMNumbaManager"]


def _use_nvidia_binding():
    # Ask the CUDA driver layer Numba actually uses. numba-cuda keeps its own
    # switch (driver.USE_NV_BINDING) and newer releases support only NVIDIA's
    # cuda-python binding; numba.core.config's CUDA_USE_NVIDIA_BINDING can
    # still read False there, which would hand Numba a ctypes pointer it
    # cannot use (seen with numba-cuda 0.68 on the GPU machine).
    try:
        from numba.cuda.cudadrv import driver
    except ImportError:  # pragma: no cover
        driver = None
    if driver is not None:
        flag = getattr(driver, "USE_NV_BINDING", None)
        if flag is not None:
            return bool(flag)
        if getattr(driver, "binding", None) is not None:
            return True
    try:
        from numba.core import config
    except ImportError:  # pragma: no cover
        return True
    return bool(getattr(config, "CUDA_USE_NVIDIA_BINDING", True))


def _device_pointer(value):
    if _use_nvidia_binding():
        try:
            from cuda.bindings.driver import CUdeviceptr
        except ImportError:  # cuda-python before 12.6
            from cuda.cuda import CUdeviceptr
        return CUdeviceptr(value)
    return ctypes.c_uint64(value)


def _make_finalizer(ptr, allocations):
    def finalizer():
        # At exit Numba may already have reset the context (clearing
        # allocations) before the weakref finalizers run; only a non-empty map
        # that lacks ptr would be a bug worth an error.
        if allocations:
            allocations.pop(ptr, None)

    return finalizer


class RMMNumbaManager(HostOnlyCUDAMemoryManager):
    """Numba EMM plugin: device allocations from rmmgo's current device resource."""

    def initialize(self):
        # Nothing to set up per context: the resources live in librmmgo.so.
        # Touch the current resource so a broken setup fails here, early.
        from ..mr import get_current_device_resource

        get_current_device_resource()

    def memalloc(self, size):
        """Allocate `size` bytes of device memory as a DeviceBuffer kept until Numba frees it."""
        buf = DeviceBuffer(size=size)
        ptr = buf.ptr
        finalizer = None
        if ptr:
            # allocations is made by HostOnlyCUDAMemoryManager and cleared on
            # context reset, which releases the buffers.
            self.allocations[ptr] = buf
            finalizer = _make_finalizer(ptr, self.allocations)
        return MemoryPointer(self.context, _device_pointer(ptr), size, finalizer=finalizer)

    def get_memory_info(self):
        """(free, total) bytes of the device; pools may hold more free memory than this shows."""
        free, total = available_device_memory()
        return MemoryInfo(free=free, total=total)

    def get_ipc_handle(self, memory):
        """An IPC handle for `memory`, with its offset inside the underlying allocation.

        Sub-allocators (pools, arenas) hand out pieces of larger CUDA
        allocations; CUDA exports whole allocations, so the handle carries the
        piece's offset from the allocation's start.
        """
        start, _ = cuda.cudadrv.driver.device_extents(memory)
        if _use_nvidia_binding():
            try:
                from cuda.bindings.driver import cuIpcGetMemHandle
            except ImportError:  # cuda-python before 12.6
                from cuda.cuda import cuIpcGetMemHandle
            err, ipc_handle = cuIpcGetMemHandle(start)
            if int(err) != 0:
                raise RuntimeError("cuIpcGetMemHandle failed: %s" % (err,))
            base = int(start)
        else:
            from numba.cuda.cudadrv import drvapi
            from numba.cuda.cudadrv.driver import driver

            ipc_handle = drvapi.cu_ipc_mem_handle()
            driver.cuIpcGetMemHandle(ctypes.byref(ipc_handle), start)
            base = start.value if hasattr(start, "value") else int(start)
        handle = memory.handle
        addr = int(handle.value if hasattr(handle, "value") and not isinstance(handle, int) else handle)
        offset = addr - base
        source_info = cuda.current_context().device.get_device_identity()
        return IpcHandle(memory, ipc_handle, memory.size, source_info, offset=offset)

    def reset(self):
        """Drop every allocation of this context (the DeviceBuffers free their memory)."""
        super().reset()

    def defer_cleanup(self):
        """A context manager that defers Numba's own deallocations (as the base class does)."""
        return super().defer_cleanup()

    @property
    def interface_version(self):
        return 1


# NUMBA_CUDA_MEMORY_MANAGER=rmmgo.allocators.numba finds the plugin here.
_numba_memory_manager = RMMNumbaManager
