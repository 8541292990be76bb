"""DeviceMemoryResource and UpstreamResourceAdaptor, the classes every resource
derives from, and from_handle, which turns a C handle into the object of its
kind's class."""

import ctypes
import weakref
from ctypes import byref, c_int, c_void_p

from .. import _bindings as _b
from .._bindings import ResourceKind
from .._utils import SIZE_MAX, as_size_t
from ..stream import DEFAULT_STREAM, Stream, as_stream
from ._handles import _by_handle, _create, _exiting, _kind_classes, _lib, _query, _registry_lock, _release, _used


def from_handle(handle, *, new_reference=False):
    """The Python object for a C resource handle (an int, e.g. from C code).

    With ``new_reference=True`` the caller hands over one reference (as the
    library's getters return); otherwise a reference of its own is taken.
    While a Python object for the handle is alive, that same object is
    returned.
    """
    handle = int(handle or 0)
    if not handle:
        raise ValueError("a resource handle cannot be NULL")
    obj = _by_handle.get(handle)  # holding obj keeps its reference alive
    if obj is not None and not _exiting[0]:
        if new_reference:
            _lib.rmm_resource_release(handle)
        return obj
    with _registry_lock:
        if not new_reference:
            _lib.rmm_resource_retain(handle)
        try:
            k = c_int()
            _lib.rmm_resource_kind_of(handle, byref(k))
            cls = _kind_classes.get(k.value, DeviceMemoryResource)
        except BaseException:
            _release(handle)
            raise
        obj = cls.__new__(cls)
        obj._own(handle)
        return obj


def _take(out):
    """Wrap the new reference in a c_void_p out-parameter (None when NULL)."""
    h = out.value
    return from_handle(h, new_reference=True) if h else None


def _handle_of(mr, what="upstream_mr"):
    if not isinstance(mr, DeviceMemoryResource):
        if mr is None:
            raise TypeError("%s must be a memory resource, not None" % what)
        raise TypeError("%s must be a memory resource, not %s" % (what, type(mr).__name__))
    return mr._handle


class DeviceMemoryResource:
    """A memory resource: owns one reference to a librmmgo resource handle.

    A concrete class is registered for its kind with ``@_kind``; one whose
    constructor takes no arguments needs no ``__init__`` of its own.
    """

    _kind = None

    def __init__(self):
        self._abstract()
        self._make()

    def _abstract(self):
        if self._kind is None:
            raise TypeError(
                "%s is abstract; use a concrete resource such as CudaMemoryResource" % type(self).__name__
            )

    def _make(self, **fields):
        """Make the C resource of this class's kind from option fields and own it."""
        self._own(_create(self._kind, **fields))

    def _own(self, handle):
        """Take over one reference to `handle` and register this object for it."""
        self._handle = handle
        _used[0] = True
        self._finalizer = weakref.finalize(self, _release, handle)
        with _registry_lock:
            _by_handle[handle] = self

    # -- identity and queries

    @property
    def handle(self):
        """The C handle (rmm_resource_t) as an int, for passing to C code."""
        return self._handle

    def __eq__(self, other):
        if isinstance(other, DeviceMemoryResource):
            return self._handle == other._handle
        return NotImplemented

    def __hash__(self):
        return hash(self._handle)

    def is_equal(self, other):
        """True when memory from one can be deallocated by the other (RMM's ==)."""
        eq = c_int()
        _lib.rmm_resource_is_equal(self._handle, _handle_of(other, "other"), byref(eq))
        return bool(eq.value)

    @property
    def kind(self):
        """The ResourceKind."""
        return ResourceKind(_query(_lib.rmm_resource_kind_of, self._handle, ctype=c_int))

    @property
    def name(self):
        """RMM's C++ class name for this kind, e.g. "pool_memory_resource"."""
        return _query(_lib.rmm_resource_name, self._handle, ctype=ctypes.c_char_p).decode()

    @property
    def device(self):
        """The device that was current when the resource was made."""
        return _query(_lib.rmm_resource_device, self._handle, ctype=c_int)

    def has_property(self, prop):
        """Whether the memory is device_accessible / host_accessible (Property)."""
        has = c_int()
        _lib.rmm_resource_has_property(self._handle, int(prop), byref(has))
        return bool(has.value)

    @property
    def device_accessible(self):
        return self.has_property(_b.Property.DEVICE_ACCESSIBLE)

    @property
    def host_accessible(self):
        return self.has_property(_b.Property.HOST_ACCESSIBLE)

    # -- allocation

    _allocate_fn = _lib.rmm_allocate_direct
    _deallocate_fn = _lib.rmm_deallocate_direct

    def allocate(self, nbytes, stream=DEFAULT_STREAM):
        """Allocate nbytes in stream order; returns the pointer as an int (0 for 0 bytes).

        Every failure to allocate is a MemoryError (OutOfMemoryError when
        there is no room); nbytes that is negative or above 2**64 - 1 is an
        OverflowError.
        """
        if stream.__class__ is not Stream:
            stream = as_stream(stream)
        if nbytes.__class__ is not int or nbytes < 0 or nbytes > SIZE_MAX:
            nbytes = as_size_t(nbytes, "nbytes")
        p = self._allocate_fn(self._handle, stream._handle, nbytes)
        if p is None:
            _b.raise_for_last_status(allocating=True)
            return 0
        return p

    def deallocate(self, ptr, nbytes, stream=DEFAULT_STREAM):
        """Give back memory from allocate (same nbytes) in stream order."""
        if stream.__class__ is not Stream:
            stream = as_stream(stream)
        if nbytes.__class__ is not int or nbytes < 0 or nbytes > SIZE_MAX:
            nbytes = as_size_t(nbytes, "nbytes")
        if ptr.__class__ is not int or ptr < 0 or ptr > SIZE_MAX:
            ptr = as_size_t(ptr, "ptr")
        st = self._deallocate_fn(self._handle, stream._handle, ptr, nbytes)
        if st:
            _b.raise_for_status(st)

    def __repr__(self):
        try:
            return "<rmmgo.mr.%s handle=0x%x device=%d>" % (type(self).__name__, self._handle, self.device)
        except Exception:
            return "<rmmgo.mr.%s (released)>" % type(self).__name__

    def __reduce__(self):
        raise TypeError("memory resources cannot be pickled")


class UpstreamResourceAdaptor(DeviceMemoryResource):
    """A resource that takes memory from an upstream resource.

    A concrete adaptor whose only argument is the upstream needs no
    ``__init__`` of its own.
    """

    def __init__(self, upstream_mr):
        self._abstract()
        self._init_adaptor(upstream_mr)

    def _init_adaptor(self, upstream_mr, **fields):
        self._make(upstream=_handle_of(upstream_mr), **fields)
        self._upstream = upstream_mr  # keep the Python upstream alive

    @property
    def upstream_mr(self):
        """The upstream resource's Python object."""
        up = getattr(self, "_upstream", None)
        if up is None:  # made by C: ask the library once and keep it
            out = c_void_p()
            _lib.rmm_resource_upstream(self._handle, byref(out))
            up = _take(out)
            self._upstream = up
        return up

    def get_upstream(self):
        return self.upstream_mr


class _PoolSizes:
    """pool_size, peak_pool_size, used_bytes and release, for the resources
    that hold memory of their own (a pool's chunks from its upstream, an
    expandable resource's mapped granules)."""

    def pool_size(self):
        """Bytes the resource holds (taken from the upstream, or mapped)."""
        return _query(_lib.rmm_pool_size, self._handle)

    def peak_pool_size(self):
        """The most bytes the resource has held at once."""
        return _query(_lib.rmm_pool_peak_size, self._handle)

    def used_bytes(self):
        """Bytes handed out."""
        return _query(_lib.rmm_pool_used_bytes, self._handle)

    def release(self):
        """Give back what is wholly free: a pool's free upstream chunks, an
        expandable resource's free granules (which synchronizes the device)."""
        _lib.rmm_pool_release(self._handle)
