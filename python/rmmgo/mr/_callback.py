"""CallbackMemoryResource (RMM's callback_memory_resource)."""

from .. import _bindings as _b
from .._bindings import ResourceKind
from ..stream import Stream
from ._base import DeviceMemoryResource
from ._handles import _keep_forever, _kind, _report_callback_error


@_kind(ResourceKind.CALLBACK)
class CallbackMemoryResource(DeviceMemoryResource):
    """A resource whose allocate and deallocate are Python functions.

    ``allocate_func(size, stream) -> int`` returns a pointer;
    ``deallocate_func(ptr, size, stream)`` frees it. An exception from
    allocate_func comes out of the allocation: a MemoryError as out of memory
    (MemoryError), any other exception as RuntimeError, with its message and
    chained to the original, as in RMM.

    The functions are kept for the life of the process: C code may still hold
    the resource after this object is gone.
    """

    def __init__(self, allocate_func, deallocate_func):
        if not callable(allocate_func) or not callable(deallocate_func):
            raise TypeError("allocate_func and deallocate_func must be callable")

        def alloc(nbytes, stream, _arg):
            try:
                ptr = allocate_func(nbytes, Stream._from_handle(stream))
                _b.callback_error.exc = None
                return int(ptr or 0) or None
            except BaseException as exc:  # noqa: BLE001 - raised by the caller
                _b.callback_error.exc = exc
                return None

        def dealloc(ptr, nbytes, stream, _arg):
            try:
                deallocate_func(ptr or 0, nbytes, Stream._from_handle(stream))
            except BaseException:  # noqa: BLE001
                _report_callback_error("CallbackMemoryResource deallocate_func")

        ca = _b.AllocateCallback(alloc)
        cd = _b.DeallocateCallback(dealloc)
        _keep_forever(ca, cd)
        self._allocate_func = allocate_func
        self._deallocate_func = deallocate_func
        self._make(allocate_callback=ca, deallocate_callback=cd)
