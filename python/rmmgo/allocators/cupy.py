"""Route CuPy's allocations through rmmgo.

    import cupy
    from rmmgo.allocators.cupy import rmm_cupy_allocator
    cupy.cuda.set_allocator(rmm_cupy_allocator)

``rmm_cupy_allocator`` is RMM's: each allocation is a DeviceBuffer from the
current device resource, on CuPy's current stream, and the CuPy memory
object owns it (``MemoryPointer.mem._owner`` is the DeviceBuffer), so the
memory is freed on the stream CuPy used it on, whatever stream that is.

``make_cupy_allocator(mr=None, c_function=False)`` gives the same allocator
for a chosen resource; with ``c_function=True`` CuPy calls the library's C
functions ``rmm_cupy_malloc`` / ``rmm_cupy_free`` through
``cupy.cuda.memory.CFunctionAllocator`` instead, running no Python of ours
per allocation but one check. Those take no stream: memory is allocated
and freed in the order of the default stream, so use that allocator only
with CuPy's default stream. Running out of memory raises
``rmmgo.OutOfMemoryError`` (a MemoryError) with the library's message.
"""

import ctypes

from .. import _bindings as _b
from .._utils import SIZE_MAX, as_size_t
from ..device_buffer import _buffer
from ..mr import DeviceMemoryResource
from ..stream import DEFAULT_STREAM, Stream

try:
    import cupy
except ImportError:
    cupy = None

__all__ = ["rmm_cupy_allocator", "make_cupy_allocator", "rmm_cupy_python_allocator"]

if cupy is not None:
    # Looked up once: each allocation is then a handful of calls.
    _get_current_stream = cupy.cuda.get_current_stream
    _get_device_id = cupy.cuda.device.get_device_id
    _UnownedMemory = cupy.cuda.UnownedMemory
    _MemoryPointer = cupy.cuda.memory.MemoryPointer


def _require_cupy():
    if cupy is None:
        raise ModuleNotFoundError("No module named 'cupy'")


def _allocate(nbytes, mr):
    """A MemoryPointer to a new DeviceBuffer of nbytes on CuPy's current stream.

    The DeviceBuffer is made without its keyword call (device_buffer._buffer)
    and CuPy's null stream is rmmgo's DEFAULT_STREAM (both are stream 0), so
    that no Stream object is made for it. The memory is on the current
    device (the resource is the current device's, or one the caller must use
    with its device current, RMM's rule), so its id is given to CuPy, which
    otherwise asks CUDA about the pointer (cudaPointerGetAttributes) on every
    allocation.
    """
    cs = _get_current_stream()
    h = cs.ptr
    stream = DEFAULT_STREAM if h == 0 else Stream._from_handle(h, cs)
    if nbytes.__class__ is not int or nbytes < 0 or nbytes > SIZE_MAX:
        nbytes = as_size_t(nbytes, "nbytes")
    buf = _buffer(nbytes, stream, mr)
    mem = _UnownedMemory(buf._ptr, nbytes, buf, _get_device_id())
    return _MemoryPointer(mem, 0)


def rmm_cupy_allocator(nbytes):
    """A CuPy allocator over rmmgo: a DeviceBuffer from the current resource on CuPy's current stream."""
    if cupy is None:
        _require_cupy()
    return _allocate(nbytes, None)


# The name this module used before rmm_cupy_allocator became RMM's Python
# allocator; the same function.
rmm_cupy_python_allocator = rmm_cupy_allocator


def _c_function(name):
    return ctypes.cast(getattr(_b.lib, name), ctypes.c_void_p).value


def make_cupy_allocator(mr=None, c_function=False):
    """An allocator for ``cupy.cuda.set_allocator``.

    mr: the resource to allocate from (kept alive by the allocator); None:
    the current device's resource at each allocation. c_function: CuPy's C
    function allocator over the library instead (see the module docstring).
    """
    _require_cupy()
    if mr is not None and not isinstance(mr, DeviceMemoryResource):
        raise TypeError("mr must be a memory resource, not %s" % type(mr).__name__)
    cfa = getattr(cupy.cuda.memory, "CFunctionAllocator", None)
    if not c_function or cfa is None:
        if mr is None:
            return rmm_cupy_allocator

        def allocator(nbytes):
            return _allocate(nbytes, mr)

        return allocator
    param = 0 if mr is None else mr.handle
    owner = (_b.lib, mr)
    malloc = cfa(param, _c_function("rmm_cupy_malloc"), _c_function("rmm_cupy_free"), owner).malloc
    last_error = _b.last_error_message
    oom = _b.OutOfMemoryError
    status = _b.Status.ERROR_OUT_OF_MEMORY

    def rmm_cupy_c_allocator(nbytes):
        # CuPy does not look at the pointer a C allocator returns: without this
        # check, running out of memory would give CuPy NULL instead of raising.
        mp = malloc(nbytes)
        if nbytes and not mp.ptr:
            raise oom(status, last_error() or "rmm_cupy_malloc: cannot allocate %d bytes" % nbytes)
        return mp

    return rmm_cupy_c_allocator
