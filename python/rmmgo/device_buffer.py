"""DeviceBuffer: untyped device memory from a memory resource (RMM's ``rmm.DeviceBuffer``).

Host copies go through ``rmm_memcpy`` and accept any object with the buffer
protocol (bytes, bytearray, memoryview, array.array, NumPy arrays);
``copy_to_host`` returns a NumPy uint8 array when NumPy is installed and a
bytearray otherwise.
"""

import ctypes
import pickle
from ctypes import c_void_p
from functools import partial as _partial
from operator import attrgetter as _attrgetter
from operator import index as _index

from . import _bindings as _b
from ._utils import SIZE_MAX as _SIZE_MAX
from ._utils import as_size_t
from .mr import _per_device
from .mr._base import DeviceMemoryResource as _DMR
from .stream import DEFAULT_STREAM, Stream, as_stream

__all__ = [
    "DeviceBuffer",
    "to_device",
    "copy_ptr_to_host",
    "copy_host_to_ptr",
    "copy_device_to_ptr",
]

_lib = _b.lib
_numpy = None


def _np():
    """NumPy, or None when it is not installed (imported once, lazily)."""
    global _numpy
    if _numpy is None:
        try:
            import numpy
        except ImportError:
            numpy = False
        _numpy = numpy
    return _numpy or None


# Buffer formats of unsigned bytes, with any byte-order prefix ('<B' from
# ctypes arrays, 'B' from bytes, bytearray, array('B'), uint8 arrays).
_BYTE_FORMATS = frozenset(("B", "@B", "=B", "<B", ">B", "!B"))


def _host_buffer(obj, writable):
    """(address, nbytes, keep-alive) of a host buffer of bytes.

    As RMM's ``const unsigned char[::1]`` arguments: anything without the
    buffer protocol is a TypeError; a buffer that is not of unsigned bytes
    (format "B"), not one-dimensional, or not contiguous is a ValueError, as
    is a read-only buffer to be written.
    """
    try:
        mv = memoryview(obj)
    except TypeError:
        raise TypeError("a bytes-like object (with the buffer protocol) is required, not %s" % type(obj).__name__) from None
    if mv.format not in _BYTE_FORMATS:
        raise ValueError("Buffer dtype mismatch: expected unsigned bytes (format 'B'), got format %r" % mv.format)
    if mv.ndim != 1:
        raise ValueError("Buffer has wrong number of dimensions (expected 1, got %d)" % mv.ndim)
    if mv.strides[0] != 1 and mv.shape[0] > 1:
        raise ValueError("the host buffer is not contiguous (stride %d, expected 1)" % mv.strides[0])
    n = mv.nbytes
    if writable and mv.readonly:
        raise ValueError("the host buffer is read-only")
    if n == 0:
        return 0, 0, None
    ai = getattr(obj, "__array_interface__", None)
    if ai is not None:  # NumPy and friends: no copy even when read-only
        return ai["data"][0], n, obj
    if not mv.readonly:
        arr = (ctypes.c_char * n).from_buffer(mv)
        return ctypes.addressof(arr), n, (arr, mv)
    if isinstance(obj, bytes):
        p = ctypes.c_char_p(obj)
        return ctypes.cast(p, c_void_p).value, n, (p, obj)
    copy = bytearray(mv)  # a read-only buffer we cannot address: copy it once
    arr = (ctypes.c_char * n).from_buffer(copy)
    return ctypes.addressof(arr), n, (arr, copy)


def _device_array(obj):
    """(pointer, nbytes) of a 1-D contiguous __cuda_array_interface__ object."""
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is None:
        raise TypeError("expected an object with __cuda_array_interface__, got %s" % type(obj).__name__)
    shape = tuple(cai["shape"])
    itemsize = int(cai["typestr"][2:])
    strides = cai.get("strides")
    if len(shape) > 1 or (strides is not None and tuple(strides) not in ((itemsize,), ())):
        raise ValueError("only 1-D contiguous arrays can be copied")
    n = (shape[0] if shape else 1) * itemsize
    return int(cai["data"][0] or 0), n


# Allocation and free that a KeyboardInterrupt cannot make lose a block
# (issue 24). Python checks for signals right after a call returns (and
# between other bytecodes), so a pointer a C call *returns* is lost when
# SIGINT arrived during the call, and a Python __del__ checks as it starts,
# so an interrupt there skipped the free. So each buffer has a cell of its
# own that the library writes the pointer into (rmm_allocate's out
# parameter), and, made before the allocation, its free bound to that cell
# (_release: functools.partial of rmm_deallocate_direct, C all the way);
# __del__ runs no Python code (see DeviceBuffer.__del__).
_allocate = _lib["rmm_allocate"]  # a function object of its own: no errcheck
_allocate.restype = ctypes.c_int
# (mr, stream, bytes, alignment, &ptr): a c_void_p passed for &ptr is passed by reference.
_allocate.argtypes = [c_void_p, c_void_p, c_void_p, c_void_p, ctypes.POINTER(c_void_p)]
_ALIGNMENT = 256
# What a buffer that holds no memory runs when it goes: a C callable that
# does nothing.
_NOTHING = int


class DeviceBuffer:
    """``size`` bytes of device memory from ``mr`` (default: the current device resource).

    ``DeviceBuffer(*, ptr=0, size=0, stream=DEFAULT_STREAM, mr=None)``: with
    ``ptr`` (host or device memory) the new buffer is a copy of the ``size``
    bytes there. The buffer keeps its resource and stream alive and frees its
    memory on that stream when it goes. ``size == 0`` allocates nothing.

    ``ptr`` is read as it is: on a GPU it must be valid memory (device
    memory, or host memory CUDA can copy from) of at least ``size`` bytes,
    which the caller keeps alive until the copy is done (on return for the
    default stream, else until ``stream`` is synchronized); CUDA may crash
    the process, or copy garbage, for any other address. The simulated
    device checks it and raises ``RMMError`` (cudaErrorInvalidValue) for an
    address that is neither its memory nor mapped host memory.
    """

    __slots__ = ("_ptr", "_size", "_capacity", "_mr", "_stream", "_release", "__weakref__")

    # The allocation path, bound here: one C call to allocate (rmm_allocate,
    # into the buffer's own cell: see _take) and one to free (_release), and
    # for the current resource one more that stays in C (the token that the
    # kept resource is looked up by).
    _alloc = _allocate
    _free = _lib.rmm_deallocate_direct
    _token = _per_device._token
    _current = _per_device._current_by_token

    def __init__(self, *, ptr=0, size=0, stream=DEFAULT_STREAM, mr=None):
        self._release = _NOTHING
        if stream.__class__ is not Stream:
            stream = as_stream(stream)
        if size.__class__ is not int or size < 0 or size > _SIZE_MAX:
            size = as_size_t(size, "size")
        if ptr:
            ptr = as_size_t(ptr, "ptr")
        if mr is None:
            tok = self._token()
            mr = self._current.get(tok)
            if mr is None:
                mr = _per_device._current_resource_slow(tok)
        elif not isinstance(mr, _DMR):
            raise TypeError("mr must be a memory resource, not %s" % type(mr).__name__)
        self._mr = mr
        self._stream = stream
        self._size = self._capacity = size
        if not size:
            self._ptr = 0
            return
        self._ptr = 0
        st = _take(self, mr._handle, stream._handle, size)
        if st:
            _allocation_failed(self, size, status=st)
        p = self._ptr
        if ptr:
            _lib.rmm_memcpy(p, ptr, size, stream._handle)
            if stream.is_default():
                _lib.rmm_stream_synchronize(stream._handle)

    # The finalizer runs no Python code, so that no interrupt can stop it
    # between the buffer's death and the free: looking __del__ up calls the
    # property's getter, a C function, with the buffer, and what it returns
    # is called with no arguments: _release (the free bound to the buffer's
    # cell), or _NOTHING. A Python __del__ checks for pending signals as it
    # starts: a KeyboardInterrupt there skipped the free and lost the block.
    __del__ = property(_attrgetter("_release"))

    # -- properties

    @property
    def ptr(self):
        """The device pointer as an int (0 when empty)."""
        return self._ptr

    @property
    def size(self):
        """Size in bytes."""
        return self._size

    @property
    def nbytes(self):
        """Size in bytes."""
        return self._size

    @property
    def stream(self):
        """The stream the buffer was allocated on (and is freed on)."""
        return self._stream

    @property
    def mr(self):
        """The memory resource the memory came from."""
        return self._mr

    def capacity(self):
        """Bytes allocated (at least size)."""
        return self._capacity

    def __len__(self):
        return self._size

    def __sizeof__(self):
        """The buffer's size in bytes, as RMM's (sys.getsizeof adds the object's own)."""
        return self._size

    @property
    def __cuda_array_interface__(self):
        return {
            "data": (self._ptr, False),
            "shape": (self._size,),
            "strides": None,
            "typestr": "|u1",
            "version": 0,
        }

    def __repr__(self):
        return "<rmmgo.DeviceBuffer size=%d ptr=0x%x mr=%s>" % (self._size, self._ptr, type(self._mr).__name__)

    # -- copies

    @staticmethod
    def to_device(b, stream=DEFAULT_STREAM, mr=None):
        """A new DeviceBuffer holding a copy of host buffer `b`."""
        return to_device(b, stream=stream, mr=mr)

    def copy_to_host(self, ary=None, stream=DEFAULT_STREAM):
        """Copy to host memory: into `ary` (a writable buffer of bytes, at least size long) or a new one.

        Returns `ary`, or a new NumPy uint8 array (a bytearray without NumPy).
        """
        s = as_stream(stream)
        if ary is None:
            np = _np()
            ary = np.empty(self._size, dtype=np.uint8) if np is not None else bytearray(self._size)
        addr, n, keep = _host_buffer(ary, writable=True)
        if n < self._size:
            raise ValueError("Argument `ary` is too small. Need space for %d bytes." % self._size)
        if self._size:
            _lib.rmm_memcpy(addr, self._ptr, self._size, s._handle)
            _lib.rmm_stream_synchronize(s._handle)
        del keep
        return ary

    def copy_from_host(self, ary, stream=DEFAULT_STREAM):
        """Copy a host buffer of bytes (at most size long) to the start of this buffer."""
        s = as_stream(stream)
        addr, n, keep = _host_buffer(ary, writable=False)
        if n > self._size:
            raise ValueError("Argument `ary` is too large: %d bytes, the DeviceBuffer holds %d." % (n, self._size))
        if n:
            _lib.rmm_memcpy(self._ptr, addr, n, s._handle)
            _lib.rmm_stream_synchronize(s._handle)
        del keep

    def copy_from_device(self, cuda_ary, stream=DEFAULT_STREAM):
        """Copy a 1-D contiguous device array (__cuda_array_interface__) to the start of this buffer."""
        s = as_stream(stream)
        src, n = _device_array(cuda_ary)
        if n > self._size:
            raise ValueError("Argument `cuda_ary` is too large: %d bytes, the DeviceBuffer holds %d." % (n, self._size))
        if n:
            _lib.rmm_memcpy(self._ptr, src, n, s._handle)

    def tobytes(self, stream=DEFAULT_STREAM):
        """The contents as bytes."""
        out = bytearray(self._size)
        self.copy_to_host(out, stream)
        return bytes(out)

    def __bytes__(self):
        return self.tobytes()

    def copy(self):
        """A new buffer with the same contents, from the same resource and on the same stream."""
        return DeviceBuffer(ptr=self._ptr, size=self._size, stream=self._stream, mr=self._mr)

    __copy__ = copy

    def __deepcopy__(self, memo):
        return self.copy()

    def __reduce_ex__(self, protocol):
        # Protocol 5 hands the bytes out of band, as one PickleBuffer, when the
        # pickler takes buffers (in band it writes them as a bytearray).
        # Loading copies them to a new buffer from the current resource.
        if protocol >= 5:
            return (to_device, (pickle.PickleBuffer(self.copy_to_host(bytearray(self._size))),))
        return (to_device, (self.tobytes(),))

    # -- capacity

    def reserve(self, new_capacity, stream=DEFAULT_STREAM):
        """Grow the allocation to at least new_capacity bytes, keeping the contents."""
        s = as_stream(stream)
        new_capacity = as_size_t(new_capacity, "new_capacity")
        if new_capacity <= self._capacity:
            return
        # The new block belongs to a buffer of its own until the two swap,
        # so that an interrupt anywhere loses neither block (it frees what it
        # holds when it goes).
        new = _new_buffer(DeviceBuffer)
        new._release = _NOTHING
        new._mr, new._stream, new._ptr = self._mr, s, 0
        new._size = new._capacity = new_capacity
        st = _take(new, self._mr._handle, s._handle, new_capacity)
        if st:
            _allocation_failed(new, new_capacity, "DeviceBuffer.reserve", status=st)
        if self._size:
            _lib.rmm_memcpy(new._ptr, self._ptr, self._size, s._handle)
        # The old block is freed in stream order on the copy's stream, after
        # the copy.
        old_free = _partial(self._free, self._mr._handle, s._handle, self._ptr, self._capacity) if self._ptr else _NOTHING
        # The swap: loads and stores only, no call (where an interrupt could
        # land).
        self._ptr, self._capacity, self._stream, self._release, new._ptr, new._release = (
            new._ptr, new._capacity, new._stream, new._release, self._ptr, old_free)
        free = new._release
        new._release = _NOTHING
        st = free()
        del new
        if st:
            _b.raise_for_status(st, "DeviceBuffer.reserve: cannot free the old memory")

    def resize(self, new_size, stream=DEFAULT_STREAM):
        """Change the size; shrinking keeps the allocation, growing reallocates and copies."""
        s = as_stream(stream)
        new_size = as_size_t(new_size, "new_size")
        if new_size > self._capacity:
            self.reserve(new_size, s)
        self._size = new_size

    def prefetch(self, device=None, stream=None):
        """Prefetch the buffer to a device (rmm_prefetch, cudaMemPrefetchAsync).

        device: a device id, None for the current device, or -1 for host
        memory. stream: where the migration is ordered, None for the buffer's
        stream. A hint: for memory that is not managed, or a device without
        concurrent managed access, it does nothing (as RMM's does).
        RMMValueError (a ValueError) for a device that does not exist.
        """
        s = self._stream if stream is None else as_stream(stream)
        if device is None:
            d = ctypes.c_int()
            _lib.rmm_get_device(ctypes.byref(d))
            device = d.value
        device = _index(device)
        if not self._ptr or self._capacity == 0:
            return
        _lib.rmm_prefetch(self._ptr, self._size, device, s._handle)


def _allocation_failed(buf, size, what="DeviceBuffer", status=None):
    """Raise for a failed allocation (a MemoryError), leaving buf empty when given.

    status: what rmm_allocate returned; None: a call that returns no status
    (rmm_allocate_direct) failed, and the thread's last status says.
    """
    if buf is not None:
        buf._ptr = 0
        buf._size = buf._capacity = 0
    msg = "%s: cannot allocate %d bytes" % (what, size)
    if status is not None:
        _b.raise_for_status(status, msg, allocating=True)
    else:
        _b.raise_for_last_status(msg, allocating=True)
    # NULL for a nonzero size with no failure recorded: still no memory.
    raise _b.RMMMemoryError(_b.Status.ERROR_BAD_ALLOC, msg + ": the library returned NULL")


_new_buffer = object.__new__


def _take(buf, h, sh, size):
    """Allocate size bytes for buf (whose _ptr is 0 and _release _NOTHING)
    from resource handle h on stream handle sh; rmm_allocate's status.

    The pointer lands in a cell of buf's own, which buf's _release, made
    before the allocation, frees: an interrupt at any point (at the
    allocation's return above all, before the pointer is stored in
    Python) leaves the block with buf, freed when buf goes.
    """
    cell = c_void_p()
    buf._release = _partial(_free, h, sh, cell, size)
    st = _alloc(h, sh, size, _ALIGNMENT, cell)
    buf._ptr = cell.value or 0
    return st


def _buffer(size, stream, mr=None):
    """DeviceBuffer(size=size, stream=stream, mr=mr) for the package's allocators.

    size: an int already in range; stream: a Stream; mr: a resource or None
    for the current one. The same steps as DeviceBuffer.__init__ without its
    keyword call and argument checks (about a fifth of a DeviceBuffer's own
    cost), for the CuPy allocator's per-allocation path.
    """
    buf = _new_buffer(DeviceBuffer)
    buf._release = _NOTHING
    if mr is None:
        tok = _token()
        mr = _current.get(tok)
        if mr is None:
            mr = _per_device._current_resource_slow(tok)
    buf._mr = mr
    buf._stream = stream
    buf._size = buf._capacity = size
    buf._ptr = 0
    if not size:
        return buf
    st = _take(buf, mr._handle, stream._handle, size)
    if st:
        _allocation_failed(buf, size, status=st)
    return buf


_alloc = DeviceBuffer._alloc
_free = DeviceBuffer._free
_token = DeviceBuffer._token
_current = DeviceBuffer._current


def to_device(b, stream=DEFAULT_STREAM, mr=None):
    """A new DeviceBuffer holding a copy of host buffer `b` (bytes-like, format "B", 1-D contiguous)."""
    s = as_stream(stream)
    addr, n, keep = _host_buffer(b, writable=False)
    buf = DeviceBuffer(size=n, stream=s, mr=mr)
    if n:
        _lib.rmm_memcpy(buf._ptr, addr, n, s._handle)
        _lib.rmm_stream_synchronize(s._handle)
    del keep
    return buf


def _copy_with_host(db, hb, stream, to_host):
    """Copy between device pointer db and host buffer hb (all of hb), then synchronize."""
    s = as_stream(stream)
    db = as_size_t(db, "db")
    addr, n, keep = _host_buffer(hb, writable=to_host)
    if n:
        _lib.rmm_memcpy(addr if to_host else db, db if to_host else addr, n, s._handle)
        _lib.rmm_stream_synchronize(s._handle)
    del keep


def copy_ptr_to_host(db, hb, stream=DEFAULT_STREAM):
    """Copy len(hb) bytes from device pointer db into host buffer hb."""
    _copy_with_host(db, hb, stream, to_host=True)


def copy_host_to_ptr(hb, db, stream=DEFAULT_STREAM):
    """Copy host buffer hb to device pointer db."""
    _copy_with_host(db, hb, stream, to_host=False)


def copy_device_to_ptr(d_src, d_dst, count, stream=DEFAULT_STREAM):
    """Copy count bytes between device pointers, in stream order (no sync)."""
    s = as_stream(stream)
    d_src, d_dst = as_size_t(d_src, "d_src"), as_size_t(d_dst, "d_dst")
    count = as_size_t(count, "count")
    if count:
        _lib.rmm_memcpy(d_dst, d_src, count, s._handle)
