"""Route CuPy's allocations through rmmgo.

    import cupy
    from rmmgo.allocators.cupy import rmm_cupy_allocator
    cupy.cuda.set_allocator(rmm_cupy_allocator)

CuPy calls the library's C functions ``rmm_cupy_malloc`` / ``rmm_cupy_free``
through ``cupy.cuda.memory.CFunctionAllocator``: allocating and freeing run
no Python code of ours except one check. That check is needed because CuPy
does not look at the pointer a C allocator returns: without it, running out of
memory would hand CuPy a NULL pointer instead of raising. The check raises
``rmmgo.OutOfMemoryError`` (a MemoryError) with the library's message.
``make_cupy_allocator(checked=False)`` gives the bare C allocator for those who
want no Python at all and accept that risk.

The C entry points take no stream: memory is allocated and freed in the
order of the default stream. With a CuPy version that lacks
CFunctionAllocator, a Python allocator (a DeviceBuffer on CuPy's current
stream, as RMM's) is used instead.
"""

import ctypes

from .. import _bindings as _b
from ..device_buffer import DeviceBuffer
from ..stream import Stream

try:
    import cupy
except ImportError:
    cupy = None

__all__ = ["rmm_cupy_allocator", "make_cupy_allocator", "rmm_cupy_python_allocator"]


def _require_cupy():
    if cupy is None:
        raise ModuleNotFoundError("No module named 'cupy'")


def rmm_cupy_python_allocator(nbytes):
    """The Python allocator: a DeviceBuffer from the current resource on CuPy's current stream."""
    _require_cupy()
    stream = Stream(obj=cupy.cuda.get_current_stream())
    buf = DeviceBuffer(size=nbytes, stream=stream)
    dev_id = -1 if buf.ptr else cupy.cuda.device.get_device_id()
    mem = cupy.cuda.UnownedMemory(ptr=buf.ptr, size=buf.size, owner=buf, device_id=dev_id)
    return cupy.cuda.memory.MemoryPointer(mem, 0)


def _c_function(name):
    return ctypes.cast(getattr(_b.lib, name), ctypes.c_void_p).value


def make_cupy_allocator(mr=None, checked=True):
    """An allocator for ``cupy.cuda.set_allocator``.

    mr: a memory resource to allocate from (kept alive by the allocator);
    None: the current device's resource at each allocation. checked=False
    returns CuPy's bare C allocator (see the module docstring).
    """
    _require_cupy()
    cfa = getattr(cupy.cuda.memory, "CFunctionAllocator", None)
    if cfa is None:
        if mr is not None:
            def python_allocator(nbytes):
                buf = DeviceBuffer(size=nbytes, stream=Stream(obj=cupy.cuda.get_current_stream()), mr=mr)
                dev_id = -1 if buf.ptr else cupy.cuda.device.get_device_id()
                mem = cupy.cuda.UnownedMemory(ptr=buf.ptr, size=buf.size, owner=buf, device_id=dev_id)
                return cupy.cuda.memory.MemoryPointer(mem, 0)

            return python_allocator
        return rmm_cupy_python_allocator
    param = 0 if mr is None else mr.handle
    owner = (_b.lib, mr)
    malloc = cfa(param, _c_function("rmm_cupy_malloc"), _c_function("rmm_cupy_free"), owner).malloc
    if not checked:
        return malloc
    last_error = _b.last_error_message
    oom = _b.OutOfMemoryError
    status = _b.Status.ERROR_OUT_OF_MEMORY

    def rmm_cupy_allocator(nbytes):
        mp = malloc(nbytes)
        if nbytes and not mp.ptr:
            raise oom(status, last_error() or "rmm_cupy_malloc: cannot allocate %d bytes" % nbytes)
        return mp

    rmm_cupy_allocator.__doc__ = "CuPy allocator over librmmgo's rmm_cupy_malloc/rmm_cupy_free."
    return rmm_cupy_allocator


if cupy is not None:
    rmm_cupy_allocator = make_cupy_allocator()
else:

    def rmm_cupy_allocator(nbytes):
        """A CuPy allocator that makes use of rmmgo (CuPy is not installed)."""
        _require_cupy()
