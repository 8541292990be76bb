"""CUDA streams: RMM's ``Stream``, the default streams and a stream pool.

A Stream is a cudaStream_t value (an int; 0 is the default stream) and,
for a stream this package created, its owner: an owned stream is destroyed
once, when the last Stream sharing it goes.
"""

import ctypes
import enum
import itertools
import threading
import weakref

from . import _bindings as _b
from ._utils import as_size_t

__all__ = [
    "Stream",
    "CudaStreamFlags",
    "CudaStreamPool",
    "DEFAULT_STREAM",
    "LEGACY_DEFAULT_STREAM",
    "PER_THREAD_DEFAULT_STREAM",
    "as_stream",
    "STREAM_NONE_MESSAGE",
]


class CudaStreamFlags(enum.IntEnum):
    """Flags for a new stream (cudaStreamDefault / cudaStreamNonBlocking)."""

    SYNC_DEFAULT = 0
    NON_BLOCKING = 1


def _destroy_stream(handle, destroy=_b.lib.rmm_stream_destroy):
    try:
        destroy(handle)
    except Exception:  # finalizer: never raise
        pass


class _OwningStream:
    """A new CUDA stream, destroyed when this object is collected (RMM's _OwningStream).

    flags: a CudaStreamFlags (SYNC_DEFAULT: the stream synchronizes with the
    legacy default stream; NON_BLOCKING: it does not).
    """

    __slots__ = ("handle", "__weakref__")

    def __init__(self, flags=CudaStreamFlags.SYNC_DEFAULT):
        flags = CudaStreamFlags(flags)
        out = ctypes.c_void_p()
        _b.lib.rmm_stream_create_with_flags(ctypes.byref(out), int(flags))
        self.handle = out.value or 0
        # Not at interpreter exit: buffers still alive then are freed on this
        # stream afterwards, and the process's end reclaims streams anyway.
        weakref.finalize(self, _destroy_stream, self.handle).atexit = False

    def value(self):
        """The cudaStream_t as an int."""
        return self.handle


def _handle_of(obj):
    """(handle, keep-alive owner) for any object that names a CUDA stream."""
    if isinstance(obj, Stream):
        return obj._handle, obj._owner
    if isinstance(obj, bool):
        raise TypeError("Cannot create stream from %s" % type(obj))
    if isinstance(obj, int):
        return obj, None
    proto = getattr(obj, "__cuda_stream__", None)
    if proto is not None:
        info = proto() if callable(proto) else proto
        version, handle = info
        if version != 0:
            raise NotImplementedError(
                "rmmgo supports the CUDA Stream Protocol version 0, not version: '%s'." % (version,)
            )
        return int(handle), obj
    for attr in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        v = getattr(obj, attr, None)
        if isinstance(v, int) and not isinstance(v, bool):
            return v, obj
    h = getattr(obj, "handle", None)  # numba streams: ctypes c_void_p or CUstream
    if h is not None:
        v = getattr(h, "value", h)
        try:
            return int(v or 0), obj
        except (TypeError, ValueError):
            pass
    raise TypeError("Cannot create stream from %s" % type(obj))


class Stream:
    """A CUDA stream.

    ``Stream()`` creates a new stream that this object owns, synchronizing
    with the legacy default stream as RMM's does (``flags=`` a
    ``CudaStreamFlags``: ``NON_BLOCKING`` for one that does not);
    ``Stream(obj)`` wraps an existing stream: another Stream, an object with
    ``__cuda_stream__`` (protocol version 0), a CuPy, Numba or PyTorch stream,
    or a raw ``cudaStream_t`` value as an int.
    """

    __slots__ = ("_handle", "_owner", "__weakref__")

    def __init__(self, obj=None, flags=None):
        if obj is None:
            owned = _OwningStream(CudaStreamFlags.SYNC_DEFAULT if flags is None else flags)
            self._handle, self._owner = owned.handle, owned
        else:
            if flags is not None:
                raise ValueError(
                    "flags may only be specified when obj is None; "
                    "flags cannot be applied to an existing stream."
                )
            self._handle, self._owner = _handle_of(obj)

    @classmethod
    def _from_handle(cls, handle, owner=None):
        s = cls.__new__(cls)
        s._handle = int(handle or 0)
        s._owner = owner
        return s

    @property
    def handle(self):
        """The cudaStream_t value as an int."""
        return self._handle

    def __cuda_stream__(self):
        return (0, self._handle)

    def __int__(self):
        return self._handle

    def synchronize(self):
        """Wait until all work on the stream is done."""
        _b.lib.rmm_stream_synchronize(self._handle)

    def is_default(self):
        """True for the default stream (0) and the legacy default stream."""
        return self._handle in (0, 1)

    def __eq__(self, other):
        if isinstance(other, Stream):
            return self._handle == other._handle
        return NotImplemented

    def __hash__(self):
        return hash(self._handle)

    def __repr__(self):
        return "<rmmgo.Stream 0x%x%s>" % (self._handle, " owned" if isinstance(self._owner, _OwningStream) else "")


DEFAULT_STREAM = Stream._from_handle(0)
LEGACY_DEFAULT_STREAM = Stream._from_handle(1)
PER_THREAD_DEFAULT_STREAM = Stream._from_handle(2)


# RMM's words for a stream argument of None, wherever a stream is taken.
STREAM_NONE_MESSAGE = "stream argument cannot be None. Please provide a valid Stream instance."


def as_stream(stream):
    """A Stream for an argument; None is refused with RMM's TypeError."""
    if stream.__class__ is Stream:
        return stream
    if stream is None:
        raise TypeError(STREAM_NONE_MESSAGE)
    if isinstance(stream, Stream):
        return stream
    return Stream(stream)


class CudaStreamPool:
    """A fixed set of owned streams handed out round robin (RMM's cuda_stream_pool).

    CudaStreamPool(pool_size=16, flags=CudaStreamFlags.SYNC_DEFAULT); the
    streams live as long as the pool or a Stream taken from it.
    """

    def __init__(self, pool_size=16, flags=CudaStreamFlags.SYNC_DEFAULT):
        pool_size = as_size_t(pool_size, "pool_size")
        if pool_size == 0:
            raise ValueError("Stream pool size must be greater than zero")
        self._streams = [Stream(flags=flags) for _ in range(pool_size)]
        self._next = itertools.count()
        self._lock = threading.Lock()

    def get_stream(self, stream_id=None):
        """The next stream round robin, or the one at stream_id (modulo the pool size)."""
        if stream_id is None:
            with self._lock:
                stream_id = next(self._next)
        else:
            stream_id = as_size_t(stream_id, "stream_id")
        return self._streams[stream_id % len(self._streams)]

    def get_pool_size(self):
        """The number of streams."""
        return len(self._streams)
