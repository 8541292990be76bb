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

__all__ = [
    "Stream",
    "CudaStreamFlags",
    "CudaStreamPool",
    "DEFAULT_STREAM",
    "LEGACY_DEFAULT_STREAM",
    "PER_THREAD_DEFAULT_STREAM",
    "as_stream",
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


class _OwnedStream:
    """Owns one stream the library created; destroys it when collected."""

    __slots__ = ("handle", "__weakref__")

    def __init__(self, handle):
        self.handle = handle
        # Not at interpreter exit: buffers still alive then are freed on this
        # stream afterwards, and the process's end reclaims streams anyway.
        weakref.finalize(self, _destroy_stream, handle).atexit = False


def _handle_of(obj):
    """(handle, keep-alive owner) for any object that names a CUDA stream."""
    if isinstance(obj, Stream):
        return obj._handle, obj._owner
    if isinstance(obj, bool):
        raise TypeError("a bool is not a stream")
    if isinstance(obj, int):
        return obj, None
    proto = getattr(obj, "__cuda_stream__", None)
    if proto is not None:
        info = proto() if callable(proto) else proto
        version, handle = info
        if version != 0:
            raise TypeError("unsupported __cuda_stream__ protocol version %r" % (version,))
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
    raise TypeError("cannot make a Stream from %s" % type(obj).__name__)


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
            flags = CudaStreamFlags.SYNC_DEFAULT if flags is None else CudaStreamFlags(flags)
            out = ctypes.c_void_p()
            _b.lib.rmm_stream_create_with_flags(ctypes.byref(out), int(flags))
            owned = _OwnedStream(out.value or 0)
            self._handle, self._owner = owned.handle, owned
        else:
            if flags is not None:
                raise ValueError("flags apply only to a new stream (obj=None)")
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
        return "<rmmgo.Stream 0x%x%s>" % (self._handle, " owned" if isinstance(self._owner, _OwnedStream) else "")


DEFAULT_STREAM = Stream._from_handle(0)
LEGACY_DEFAULT_STREAM = Stream._from_handle(1)
PER_THREAD_DEFAULT_STREAM = Stream._from_handle(2)


def as_stream(stream):
    """A Stream for an argument; None is refused (TypeError), as in RMM."""
    if isinstance(stream, Stream):
        return stream
    if stream is None:
        raise TypeError("stream must be a Stream (or an object naming a CUDA stream), not None")
    return Stream(stream)


class CudaStreamPool:
    """A fixed set of owned streams handed out round robin."""

    def __init__(self, pool_size=16, flags=CudaStreamFlags.SYNC_DEFAULT):
        if pool_size <= 0:
            raise ValueError("pool_size must be positive")
        self._streams = [Stream(flags=flags) for _ in range(pool_size)]
        self._next = itertools.count()
        self._lock = threading.Lock()

    def get_stream(self, stream_id=None):
        """The next stream, or the one at stream_id (modulo the pool size)."""
        if stream_id is None:
            with self._lock:
                stream_id = next(self._next)
        return self._streams[stream_id % len(self._streams)]

    def get_pool_size(self):
        return len(self._streams)
