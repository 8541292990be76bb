"""CudaAsyncMemoryResource (RMM's cuda_async_memory_resource), and pool_handle,
which every resource over a CUDA memory pool has."""

from ctypes import byref, c_int, c_void_p

from .. import _bindings as _b
from .._bindings import RMMError, ResourceKind, Status
from ._base import DeviceMemoryResource
from ._handles import _current_device, _kind, _lib, _size_option


class _PoolHandleMixin:
    def pool_handle(self):
        """The cudaMemPool_t as an int."""
        out = c_void_p()
        _lib.rmm_cuda_async_pool_handle(self._handle, byref(out))
        return out.value or 0


@_kind(ResourceKind.CUDA_ASYNC)
class CudaAsyncMemoryResource(_PoolHandleMixin, DeviceMemoryResource):
    """cudaMallocFromPoolAsync on a CUDA memory pool of its own.

    initial_pool_size primes the pool; release_threshold is what the pool
    keeps when idle (None: everything); enable_ipc / enable_fabric let the
    pool export POSIX file descriptors / fabric handles.
    """

    def __init__(self, initial_pool_size=None, release_threshold=None, enable_ipc=False, enable_fabric=False):
        types = _b.MemHandleType.NONE
        if enable_ipc:
            types |= _b.MemHandleType.POSIX_FILE_DESCRIPTOR
        if enable_fabric:
            types |= _b.MemHandleType.FABRIC
        try:
            self._make(
                initial_pool_size=_size_option(initial_pool_size, "initial_pool_size"),
                release_threshold=_size_option(release_threshold, "release_threshold"),
                export_handle_types=int(types),
            )
        except RMMError as exc:
            if types and exc.status == Status.ERROR_NOT_SUPPORTED and not _exportable(types):
                # RMM's words end the message, as RMM's own do.
                raise type(exc)(exc.status, "%s: Requested IPC memory handle type not supported" % exc) from None
            raise


_DEV_ATTR_MEMORY_POOL_SUPPORTED_HANDLE_TYPES = 119  # cudaDevAttrMemoryPoolSupportedHandleTypes


def _exportable(types):
    """Whether the current device's memory pools can export every handle type in `types`."""
    v = c_int()
    try:
        _lib.rmm_device_get_attribute(byref(v), _DEV_ATTR_MEMORY_POOL_SUPPORTED_HANDLE_TYPES, _current_device())
    except RMMError:
        return False
    return int(types) & ~v.value == 0
