"""Memory resources and adaptors over librmmgo's handles, under RMM's names.

Every resource object owns one reference to a C resource handle and gives it
back exactly once (a ``weakref.finalize``, which also runs at interpreter
exit while the library is whole). A sub-allocator or adaptor keeps its
upstream's Python object alive; the C library keeps the C upstream alive on
its own, so dropping Python objects early never leaves anything dangling.

One registry with C: the current and per-device resources live in the
library. ``get_current_device_resource()`` asks the library, and a handle the
library hands out is wrapped through a handle -> object weak map, so while a
Python object for that handle is alive the very same object comes back; a
resource made and set current by C (or C++, or Go) comes back as an object of
the class for its kind.
"""

import atexit
import ctypes
import logging
import os
import re
import sys
import threading
import traceback
import weakref
from ctypes import byref, c_int, c_size_t, c_void_p

from .. import _bindings as _b
from .._bindings import RMMError, RMMRuntimeError, ResourceKind, Status
from .._utils import SIZE_MAX, as_size_t, parse_bytes
from ..stream import DEFAULT_STREAM, Stream, as_stream

__all__ = [
    "DeviceMemoryResource",
    "UpstreamResourceAdaptor",
    "CudaMemoryResource",
    "ManagedMemoryResource",
    "SystemMemoryResource",
    "PinnedHostMemoryResource",
    "SamHeadroomMemoryResource",
    "CudaAsyncMemoryResource",
    "CudaAsyncViewMemoryResource",
    "CudaAsyncManagedMemoryResource",
    "CudaAsyncPinnedMemoryResource",
    "PoolMemoryResource",
    "ArenaMemoryResource",
    "FixedSizeMemoryResource",
    "BinningMemoryResource",
    "ExpandableMemoryResource",
    "CallbackMemoryResource",
    "AlignedResourceAdaptor",
    "FailureCallbackResourceAdaptor",
    "LimitingResourceAdaptor",
    "LoggingResourceAdaptor",
    "PrefetchResourceAdaptor",
    "StatisticsResourceAdaptor",
    "ThreadSafeResourceAdaptor",
    "TrackingResourceAdaptor",
    "RMMLogicError",
    "get_current_device_resource",
    "get_current_device_resource_type",
    "set_current_device_resource",
    "reset_current_device_resource",
    "get_per_device_resource",
    "get_per_device_resource_type",
    "set_per_device_resource",
    "reset_per_device_resource",
    "available_device_memory",
    "enable_logging",
    "disable_logging",
    "get_log_filenames",
    "is_initialized",
    "from_handle",
]

_lib = _b.lib
_log = logging.getLogger("rmmgo")


class RMMLogicError(RMMRuntimeError, ValueError):
    """A resource could not be made from these arguments.

    RMM raises ``RuntimeError`` (its logic_error) for bad constructor
    arguments; the library reports them as invalid arguments. This error is
    both a RuntimeError and a ValueError.
    """


# ----------------------------------------------------------------- registry

_registry_lock = threading.RLock()
_by_handle = weakref.WeakValueDictionary()  # handle (int) -> resource object
_kind_classes = {}  # ResourceKind -> class, filled by @_kind


def _release(handle, release=_lib.rmm_resource_release):
    try:
        release(handle)
    except Exception:  # a finalizer never raises; a stale handle is harmless here
        pass


# True once the interpreter exits: weakref.finalize then releases the handles
# of objects that are still alive, so those objects no longer own a reference
# and must not be handed out again for a handle.
_exiting = [False]
_used = [False]  # a resource object was made in this process


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


def _flush_logs_at_exit(lib=_lib, kind_logging=int(ResourceKind.LOGGING)):
    """Flush every device's logging adaptors before the interpreter goes.

    The per-device resources live in the library, which outlives Python and
    closes nothing at exit; without this, rows still buffered in a log that is
    (or sits under) a current resource would be lost. Only the devices this
    process set resources on from Python, and the current one, and only if
    Python made a resource at all (so that importing rmmgo never initialises
    a GPU at exit). Raw C calls only: this runs while Python objects are being
    torn down.
    """
    if not _used[0]:
        _exiting[0] = True
        _current_by_token.clear()
        return  # this process made no resource here: touch no device at exit
    try:
        d = c_int()
        lib.rmm_get_device(byref(d))
        with _held_lock:
            devices = set(_held) | {d.value}
        for dev in sorted(devices):
            h = c_void_p()
            lib.rmm_get_per_device_resource(dev, byref(h))
            h = h.value
            while h:
                k = c_int()
                up = c_void_p()
                try:
                    lib.rmm_resource_kind_of(h, byref(k))
                    if k.value == kind_logging:
                        lib.rmm_logging_flush(h)
                    if k.value >= int(ResourceKind.POOL) and k.value != int(ResourceKind.CALLBACK):
                        lib.rmm_resource_upstream(h, byref(up))
                finally:
                    lib.rmm_resource_release(h)
                h = up.value
    except Exception:  # at exit: best effort, never raise
        pass
    finally:
        _exiting[0] = True
        _current_by_token.clear()  # their handles are released next


# Run the flush before weakref.finalize's own exit hook releases Python's
# references (atexit runs the latest registration first, and finalize
# registers its hook when the first finalize object is made).
_exit_anchor = type("_ExitAnchor", (), {})()
weakref.finalize(_exit_anchor, int)
atexit.register(_flush_logs_at_exit)


def _kind(kind):
    def register(cls):
        cls._kind = kind
        _kind_classes[int(kind)] = cls
        return cls

    return register


def _size_option(value, name, default=_b.SIZE_DEFAULT):
    """A size argument (an int or a string such as "1GiB") as the options struct wants it.

    None: the default. Negative or too large: OverflowError, as RMM's size_t.
    SIZE_MAX itself means "the default" to the library, so it is refused too.
    """
    if value is None:
        return default
    n = as_size_t(parse_bytes(value), name)
    if n == SIZE_MAX:
        raise OverflowError("%s: value %d too large (at most %d)" % (name, n, SIZE_MAX - 1))
    return n


def _handle_of(mr, what="upstream_mr"):
    if not isinstance(mr, DeviceMemoryResource):
        if mr is None:
            raise TypeError("%s must be a memory resource, not None" % what)
        raise TypeError("%s must be a memory resource, not %s" % (what, type(mr).__name__))
    return mr._handle


# What the simulated device needs to offer system memory; added to the error
# a resource over system memory raises there.
_SIM_PAGEABLE_HINT = (
    "on the simulated device, set RMMGO_SIM_PAGEABLE=1 in the environment before "
    "the process starts to give it pageable memory access"
)


def _in_python_words(exc, kind):
    """exc, its message about the C call rmm_resource_create(KIND) and its options
    struct told in the caller's words: the Python class and its arguments
    ("FixedSizeMemoryResource: invalid argument: block_size is 0: ...")."""
    cls = _kind_classes.get(int(kind))
    msg = str(exc)
    if cls is not None:
        msg = re.sub(r"^rmm_resource_create\([a-z_]+\)", cls.__name__, msg)
    msg = re.sub(r"\boptions\.([a-z_]+)", r"\1", msg)
    if msg == str(exc):
        return exc
    new = type(exc)(exc.status, msg) if exc.status is not None else type(exc)(msg)
    new.__traceback__ = exc.__traceback__
    return new


def _create(kind, **fields):
    """A new C resource of `kind`; returns the handle (a new reference)."""
    opts = _b.ResourceOptions.defaults()
    for name, value in fields.items():
        setattr(opts, name, value)
    out = c_void_p()
    try:
        _lib.rmm_resource_create(int(kind), byref(opts), byref(out))
    except RMMError as exc:
        exc = _in_python_words(exc, kind)
        if exc.status in (Status.ERROR_INVALID_ARGUMENT, Status.ERROR_BAD_ALIGNMENT):
            raise RMMLogicError(exc.status, str(exc)) from None
        if (
            exc.status == Status.ERROR_NOT_SUPPORTED
            and kind in (ResourceKind.SYSTEM, ResourceKind.SAM_HEADROOM)
            and _b.backend_name() == "simulated"
        ):
            raise type(exc)(exc.status, "%s (%s)" % (exc, _SIM_PAGEABLE_HINT)) from None
        raise
    return out.value


# Callbacks handed to the library must outlive every C reference to the
# resource that calls them, which Python cannot observe (C code may hold the
# resource, e.g. as a current resource, after the Python object is gone). They
# are therefore kept for the life of the process.
_immortal = []
_immortal_lock = threading.Lock()


def _keep_forever(*objs):
    with _immortal_lock:
        _immortal.extend(objs)


def _report_callback_error(where):
    sys.stderr.write("rmmgo: exception in %s (ignored):\n" % where)
    traceback.print_exc()


# --------------------------------------------------------------- base class


class DeviceMemoryResource:
    """A memory resource: owns one reference to a librmmgo resource handle."""

    _kind = None

    def __init__(self):
        raise TypeError(
            "DeviceMemoryResource is abstract; use a concrete resource such as CudaMemoryResource"
        )

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
        k = c_int()
        _lib.rmm_resource_kind_of(self._handle, byref(k))
        return ResourceKind(k.value)

    @property
    def name(self):
        """RMM's C++ class name for this kind, e.g. "pool_memory_resource"."""
        s = ctypes.c_char_p()
        _lib.rmm_resource_name(self._handle, byref(s))
        return s.value.decode()

    @property
    def device(self):
        """The device that was current when the resource was made."""
        d = c_int()
        _lib.rmm_resource_device(self._handle, byref(d))
        return d.value

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
    """A resource that takes memory from an upstream resource."""

    def _init_adaptor(self, kind, upstream_mr, **fields):
        h = _create(kind, upstream=_handle_of(upstream_mr), **fields)
        self._upstream = upstream_mr  # keep the Python upstream alive
        self._own(h)

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


# ---------------------------------------------------------- base resources


@_kind(ResourceKind.CUDA)
class CudaMemoryResource(DeviceMemoryResource):
    """cudaMalloc / cudaFree on the current device."""

    def __init__(self):
        self._own(_create(self._kind))


@_kind(ResourceKind.MANAGED)
class ManagedMemoryResource(DeviceMemoryResource):
    """cudaMallocManaged: memory both device and host can use."""

    def __init__(self):
        self._own(_create(self._kind))


@_kind(ResourceKind.SYSTEM)
class SystemMemoryResource(DeviceMemoryResource):
    """Host memory the device uses directly (needs HMM or ATS)."""

    def __init__(self):
        self._own(_create(self._kind))


@_kind(ResourceKind.PINNED_HOST)
class PinnedHostMemoryResource(DeviceMemoryResource):
    """cudaHostAlloc: page-locked host memory."""

    def __init__(self):
        self._own(_create(self._kind))


@_kind(ResourceKind.SAM_HEADROOM)
class SamHeadroomMemoryResource(DeviceMemoryResource):
    """System memory, advised to the device while `headroom` bytes stay free there."""

    def __init__(self, headroom):
        self._own(_create(self._kind, headroom=_size_option(headroom, "headroom")))


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
            h = _create(
                self._kind,
                initial_pool_size=_size_option(initial_pool_size, "initial_pool_size"),
                release_threshold=_size_option(release_threshold, "release_threshold"),
                export_handle_types=int(types),
            )
        except RMMError as exc:
            if types and exc.status == Status.ERROR_NOT_SUPPORTED and not _exportable(types):
                # RMM's words end the message, as RMM's own do.
                raise type(exc)(exc.status, "%s: Requested IPC memory handle type not supported" % exc) from None
            raise
        self._own(h)


@_kind(ResourceKind.CUDA_ASYNC_VIEW)
class CudaAsyncViewMemoryResource(_PoolHandleMixin, DeviceMemoryResource):
    """cudaMallocFromPoolAsync on a pool it does not own (pool_handle: cudaMemPool_t)."""

    def __init__(self, pool_handle):
        h = getattr(pool_handle, "value", pool_handle)
        h = int(h or 0)
        if not h:
            raise RMMLogicError(Status.ERROR_INVALID_ARGUMENT, "CudaAsyncViewMemoryResource: pool_handle must not be NULL")
        self._own(_create(self._kind, pool_handle=h))


_DEV_ATTR_MEMORY_POOL_SUPPORTED_HANDLE_TYPES = 119  # cudaDevAttrMemoryPoolSupportedHandleTypes


def _exportable(types):
    """Whether the current device's memory pools can export every handle type in `types`."""
    v = c_int()
    try:
        _lib.rmm_device_get_attribute(byref(v), _DEV_ATTR_MEMORY_POOL_SUPPORTED_HANDLE_TYPES, _current_device())
    except RMMError:
        return False
    return int(types) & ~v.value == 0


@_kind(ResourceKind.CUDA_ASYNC_MANAGED)
class CudaAsyncManagedMemoryResource(_PoolHandleMixin, DeviceMemoryResource):
    """Stream-ordered managed memory from a managed memory pool (CUDA 13.0 or later)."""

    def __init__(self):
        self._own(_create(self._kind))


class CudaAsyncPinnedMemoryResource(_PoolHandleMixin, DeviceMemoryResource):
    """Stream-ordered pinned host memory from a pinned memory pool (RMM's experimental one).

    Not available in rmmgo yet: librmmgo.so has no pinned-pool resource, so
    making one raises RMMRuntimeError (status ERROR_NOT_SUPPORTED) saying so.
    PinnedHostMemoryResource gives pinned host memory, not stream-ordered.
    """

    def __init__(self):
        raise RMMRuntimeError(
            Status.ERROR_NOT_SUPPORTED,
            "CudaAsyncPinnedMemoryResource: not supported by rmmgo: librmmgo.so has no "
            "stream-ordered pinned-memory pool resource (use PinnedHostMemoryResource for "
            "pinned host memory)",
        )


# ----------------------------------------------------------- sub-allocators


@_kind(ResourceKind.POOL)
class PoolMemoryResource(UpstreamResourceAdaptor):
    """A coalescing best-fit pool over an upstream resource.

    initial_pool_size None: half the free device memory; 0: grow on first use.
    maximum_pool_size None: no maximum. Sizes are ints or strings ("1GiB").
    """

    def __init__(self, upstream_mr, initial_pool_size=None, maximum_pool_size=None):
        initial = _size_option(initial_pool_size, "initial_pool_size")
        maximum = _size_option(maximum_pool_size, "maximum_pool_size")
        try:
            self._init_adaptor(self._kind, upstream_mr, initial_pool_size=initial, maximum_pool_size=maximum)
        except RMMLogicError as exc:
            if initial_pool_size is not None and maximum_pool_size is not None and initial > maximum:
                # RMM's message first: code written for RMM looks for it.
                raise RMMLogicError(exc.status, "Initial pool size exceeds the maximum pool size! (%s)" % exc) from None
            raise

    def pool_size(self):
        """Bytes taken from the upstream."""
        n = c_size_t()
        _lib.rmm_pool_size(self._handle, byref(n))
        return n.value

    def peak_pool_size(self):
        """The most bytes taken from the upstream at once."""
        n = c_size_t()
        _lib.rmm_pool_peak_size(self._handle, byref(n))
        return n.value

    def used_bytes(self):
        """Bytes handed out."""
        n = c_size_t()
        _lib.rmm_pool_used_bytes(self._handle, byref(n))
        return n.value

    def release(self):
        """Give wholly free upstream chunks back to the upstream."""
        _lib.rmm_pool_release(self._handle)


@_kind(ResourceKind.ARENA)
class ArenaMemoryResource(UpstreamResourceAdaptor):
    """Per-thread and per-stream arenas over one global arena (None: half the free memory)."""

    def __init__(self, upstream_mr, arena_size=None, dump_log_on_failure=False):
        self._init_adaptor(
            self._kind,
            upstream_mr,
            arena_size=_size_option(arena_size, "arena_size"),
            dump_log_on_failure=1 if dump_log_on_failure else 0,
        )


@_kind(ResourceKind.FIXED_SIZE)
class FixedSizeMemoryResource(UpstreamResourceAdaptor):
    """Blocks of one size (block_size), fetched blocks_to_preallocate at a time."""

    def __init__(self, upstream_mr, block_size=1 << 20, blocks_to_preallocate=128):
        # None: the default (1 MiB blocks, 128 at a time).
        self._init_adaptor(
            self._kind,
            upstream_mr,
            block_size=_size_option(block_size, "block_size"),
            blocks_to_preallocate=_b.SIZE_DEFAULT
            if blocks_to_preallocate is None
            else as_size_t(blocks_to_preallocate, "blocks_to_preallocate"),
        )

    def get_block_size(self):
        n = c_size_t()
        _lib.rmm_fixed_size_block_size(self._handle, byref(n))
        return n.value

    @property
    def block_size(self):
        return self.get_block_size()


@_kind(ResourceKind.BINNING)
class BinningMemoryResource(UpstreamResourceAdaptor):
    """Bins of resources by size; larger requests go to the upstream.

    With exponents, fixed-size bins 2**min_size_exponent .. 2**max_size_exponent
    are made (-1, -1: none; add them with add_bin).
    """

    def __init__(self, upstream_mr, min_size_exponent=-1, max_size_exponent=-1):
        self._bin_mrs = []
        self._init_adaptor(
            self._kind,
            upstream_mr,
            min_size_exponent=int(min_size_exponent),
            max_size_exponent=int(max_size_exponent),
        )

    def add_bin(self, allocation_size, bin_resource=None):
        """Serve allocations up to allocation_size from bin_resource (None: a new fixed-size bin).

        Not safe while other threads allocate from this resource.
        """
        bh = None if bin_resource is None else _handle_of(bin_resource, "bin_resource")
        _lib.rmm_binning_add_bin(self._handle, as_size_t(parse_bytes(allocation_size), "allocation_size"), bh)
        if bin_resource is not None:
            self._bin_mrs.append(bin_resource)

    @property
    def bin_mrs(self):
        """The bin resources given to add_bin (not the ones made for exponents)."""
        return list(getattr(self, "_bin_mrs", []))


# ------------------------------------------------------------------ adaptors


@_kind(ResourceKind.EXPANDABLE)
class ExpandableMemoryResource(DeviceMemoryResource):
    """A stream-ordered sub-allocator over one reserved range of device addresses.

    It maps device memory into the range in granules (2 MiB on current GPUs)
    as it grows, so free memory never splits across separate chunks, and
    gives wholly free granules back without moving live memory: what
    PyTorch's ``expandable_segments`` does. Needs CUDA 12.5 or later.

    maximum_pool_size None: the device's memory. release_threshold None:
    give memory back only at the maximum (or on release()); else the mapped
    size above which it gives back free granules before it maps more. Sizes
    are ints or strings ("1GiB").
    """

    def __init__(self, maximum_pool_size=None, release_threshold=None):
        self._own(
            _create(
                self._kind,
                maximum_pool_size=_size_option(maximum_pool_size, "maximum_pool_size"),
                release_threshold=_size_option(release_threshold, "release_threshold"),
            )
        )

    def pool_size(self):
        """Bytes of device memory mapped."""
        n = c_size_t()
        _lib.rmm_pool_size(self._handle, byref(n))
        return n.value

    def peak_pool_size(self):
        """The most bytes of device memory mapped at once."""
        n = c_size_t()
        _lib.rmm_pool_peak_size(self._handle, byref(n))
        return n.value

    def used_bytes(self):
        """Bytes handed out."""
        n = c_size_t()
        _lib.rmm_pool_used_bytes(self._handle, byref(n))
        return n.value

    def release(self):
        """Give every wholly free granule back to the device (synchronizes it)."""
        _lib.rmm_pool_release(self._handle)


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
        self._own(_create(self._kind, allocate_callback=ca, deallocate_callback=cd))


@_kind(ResourceKind.ALIGNED)
class AlignedResourceAdaptor(UpstreamResourceAdaptor):
    """Allocations of at least alignment_threshold bytes aligned to `alignment` (a power of two)."""

    def __init__(self, upstream_mr, alignment=_b.DEFAULT_ALIGNMENT, alignment_threshold=0):
        self._init_adaptor(
            self._kind,
            upstream_mr,
            alignment=as_size_t(parse_bytes(alignment), "alignment"),
            alignment_threshold=as_size_t(parse_bytes(alignment_threshold), "alignment_threshold"),
        )


@_kind(ResourceKind.FAILURE_CALLBACK)
class FailureCallbackResourceAdaptor(UpstreamResourceAdaptor):
    """Calls ``callback(nbytes) -> bool`` when the upstream runs out of memory; True retries.

    An exception the callback raises ends the allocation and comes out of it
    (a MemoryError as out of memory, anything else as RuntimeError with the
    same message), as in RMM.
    """

    def __init__(self, upstream_mr, callback):
        if not callable(callback):
            raise TypeError("callback must be callable")

        def on_failure(nbytes, _arg):
            try:
                return 1 if callback(nbytes) else 0
            except BaseException as exc:  # noqa: BLE001 - raised by the allocation
                _b.callback_error.exc = exc
                return 0

        cb = _b.FailureCallback(on_failure)
        _keep_forever(cb)
        self._callback = callback
        self._init_adaptor(self._kind, upstream_mr, failure_callback=cb)


@_kind(ResourceKind.LIMITING)
class LimitingResourceAdaptor(UpstreamResourceAdaptor):
    """Refuses (out of memory) allocations past allocation_limit bytes outstanding."""

    def __init__(self, upstream_mr, allocation_limit):
        self._init_adaptor(
            self._kind, upstream_mr, allocation_limit=as_size_t(parse_bytes(allocation_limit), "allocation_limit")
        )

    def get_allocated_bytes(self):
        n = c_size_t()
        _lib.rmm_limiting_allocated_bytes(self._handle, byref(n))
        return n.value

    def get_allocation_limit(self):
        n = c_size_t()
        _lib.rmm_limiting_allocation_limit(self._handle, byref(n))
        return n.value


def _append_device_id(filename, device):
    name, ext = os.path.splitext(filename)
    return "%s.dev%d%s" % (name, device, ext)


def _current_device():
    d = c_int()
    _lib.rmm_get_device(byref(d))
    return d.value


@_kind(ResourceKind.LOGGING)
class LoggingResourceAdaptor(UpstreamResourceAdaptor):
    """Writes every allocation and free to a CSV file (RMM's format).

    log_file_name None: $RMM_LOG_FILE, else ValueError. As in RMM, ".dev<N>"
    (the current device) goes before the extension and the name is made
    absolute.
    """

    def __init__(self, upstream_mr, log_file_name=None, auto_flush=False):
        if log_file_name is None:
            log_file_name = os.getenv("RMM_LOG_FILE")
            if not log_file_name:
                raise ValueError(
                    "RMM log file must be specified either using log_file_name= argument "
                    "or RMM_LOG_FILE environment variable"
                )
        log_file_name = os.path.abspath(_append_device_id(os.fspath(log_file_name), _current_device()))
        self._init_adaptor(
            self._kind,
            upstream_mr,
            log_file=os.fsencode(log_file_name),
            auto_flush=1 if auto_flush else 0,
        )

    def flush(self):
        _lib.rmm_logging_flush(self._handle)

    def get_file_name(self):
        return _b.read_string(_lib.rmm_logging_file_name, self._handle)


@_kind(ResourceKind.PREFETCH)
class PrefetchResourceAdaptor(UpstreamResourceAdaptor):
    """Prefetches each (managed) allocation to the current device."""

    def __init__(self, upstream_mr):
        self._init_adaptor(self._kind, upstream_mr)


@_kind(ResourceKind.STATISTICS)
class StatisticsResourceAdaptor(UpstreamResourceAdaptor):
    """Counts bytes and allocations (current, peak, total) on a stack of levels."""

    def __init__(self, upstream_mr):
        self._init_adaptor(self._kind, upstream_mr)

    @staticmethod
    def _to_stats(s):
        from ..statistics import Statistics

        return Statistics(
            current_bytes=s.bytes.value,
            current_count=s.count.value,
            peak_bytes=s.bytes.peak,
            peak_count=s.count.peak,
            total_bytes=s.bytes.total,
            total_count=s.count.total,
        )

    @property
    def allocation_counts(self):
        """The innermost level's counters as a Statistics."""
        s = _b.StatisticsStruct()
        _lib.rmm_statistics_get(self._handle, byref(s))
        return self._to_stats(s)

    def push_counters(self):
        """Start a new level at zero; returns the level that was innermost."""
        s = _b.StatisticsStruct()
        _lib.rmm_statistics_push(self._handle, byref(s))
        return self._to_stats(s)

    def pop_counters(self):
        """End the innermost level, fold it into its parent and return it.

        IndexError when only one level is left.
        """
        s = _b.StatisticsStruct()
        try:
            _lib.rmm_statistics_pop(self._handle, byref(s))
        except IndexError as exc:
            raise _b.RMMIndexError(exc.status, "cannot pop the last counter pair (%s)" % exc) from None
        return self._to_stats(s)


@_kind(ResourceKind.THREAD_SAFE)
class ThreadSafeResourceAdaptor(UpstreamResourceAdaptor):
    """One lock around every call to the upstream."""

    def __init__(self, upstream_mr):
        self._init_adaptor(self._kind, upstream_mr)


@_kind(ResourceKind.TRACKING)
class TrackingResourceAdaptor(UpstreamResourceAdaptor):
    """Tracks outstanding allocations (with call stacks when capture_stacks)."""

    def __init__(self, upstream_mr, capture_stacks=False):
        self._init_adaptor(self._kind, upstream_mr, capture_stacks=1 if capture_stacks else 0)

    def get_allocated_bytes(self):
        n = c_size_t()
        _lib.rmm_tracking_allocated_bytes(self._handle, byref(n))
        return n.value

    def get_outstanding_allocations_count(self):
        n = c_size_t()
        _lib.rmm_tracking_outstanding_count(self._handle, byref(n))
        return n.value

    def get_outstanding_allocations_str(self):
        """One line per outstanding allocation ("0x...: N B", with its call stack
        when capture_stacks), then any mismatched deallocations; "" when there
        are none, as RMM's."""
        report = _b.read_string(_lib.rmm_tracking_report, self._handle)
        if report.startswith(_REPORT_HEADER):  # the library's heading; RMM's string has none
            report = report[len(_REPORT_HEADER):]
        return report

    def log_outstanding_allocations(self):
        """Log the outstanding allocations at debug level (logger "rmmgo")."""
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug("Outstanding Allocations: %s", self.get_outstanding_allocations_str())


_REPORT_HEADER = "Outstanding Allocations:\n"


# ------------------------------------------------------ per-device resources

# Python objects set from Python stay alive while they are the device's
# resource (as RMM's Python per-device map keeps them), so the getter returns
# the very object that was set even when the caller dropped it. The library
# is the registry; these are only keep-alives, dropped as soon as the library
# says another resource is current.
_held = {}
_held_lock = threading.RLock()


# The current resource, kept by token. rmm_current_resource_token names what
# the library's current resource is for the calling thread (its device in the
# low 16 bits, above them a generation that every set and reset advances,
# from any language), so the object found for a token stays right while the
# token is the same: DeviceBuffer() and get_current_device_resource() read a
# token and look it up, one C call that does not cross into Go, instead of
# taking a new reference, wrapping it and releasing it. Only the newest
# generation's objects are kept (one per device); a set or reset from Python
# drops them at once, one from C at the next lookup.
_token = _b.lib.rmm_current_resource_token
_TOKEN_DEVICE_BITS = 16
_current_by_token = {}
_current_generation = [0]


def _current_resource_slow(tok):
    """Ask the library for the current resource and keep it for token tok."""
    out = c_void_p()
    _lib.rmm_get_current_device_resource(byref(out))
    obj = _take(out)
    gen = tok >> _TOKEN_DEVICE_BITS
    if gen and not _exiting[0] and gen >= _current_generation[0]:
        if gen > _current_generation[0]:
            _current_by_token.clear()
            _current_generation[0] = gen
        _current_by_token[tok] = obj
    return obj


def _forget_current():
    _current_by_token.clear()


def get_current_device_resource():
    """The current device's resource, as the library has it (C and Python alike)."""
    tok = _token()
    obj = _current_by_token.get(tok)
    if obj is None:
        obj = _current_resource_slow(tok)
    return obj


def set_current_device_resource(mr):
    """Make mr the current device's resource, for every language in the process."""
    h = _handle_of(mr, "mr")
    dev = _current_device()
    with _held_lock:
        _lib.rmm_set_current_device_resource(h, None)
        _held[dev] = mr
        _forget_current()


def reset_current_device_resource():
    """Restore the current device's initial (cuda) resource; returns the previous one."""
    dev = _current_device()
    out = c_void_p()
    with _held_lock:
        _lib.rmm_reset_current_device_resource(byref(out))
        _held.pop(dev, None)
        _forget_current()
    return _take(out)


def get_per_device_resource(device):
    """Device `device`'s resource."""
    out = c_void_p()
    _lib.rmm_get_per_device_resource(int(device), byref(out))
    return _take(out)


def get_current_device_resource_type():
    """The class of the current device's resource."""
    return type(get_current_device_resource())


def get_per_device_resource_type(device):
    """The class of device `device`'s resource."""
    return type(get_per_device_resource(device))


def set_per_device_resource(device, mr):
    """Make mr device `device`'s resource (mr must have been made on that device)."""
    h = _handle_of(mr, "mr")
    with _held_lock:
        _lib.rmm_set_per_device_resource(int(device), h, None)
        _held[int(device)] = mr
        _forget_current()


def reset_per_device_resource(device):
    """Restore device `device`'s initial resource; returns the previous one."""
    out = c_void_p()
    with _held_lock:
        _lib.rmm_reset_per_device_resource(int(device), byref(out))
        _held.pop(int(device), None)
        _forget_current()
    return _take(out)


def _device_count():
    n = c_int()
    _lib.rmm_get_device_count(byref(n))
    return n.value


def available_device_memory():
    """(free, total) bytes of the current device."""
    free, total = c_size_t(), c_size_t()
    _lib.rmm_mem_get_info(byref(free), byref(total))
    return free.value, total.value


def is_initialized():
    """True when the library is loaded and every device's resource is usable."""
    try:
        for dev in range(_device_count()):
            get_per_device_resource(dev)
    except RMMError:
        return False
    return True


class _DeviceScope:
    """Make `device` current for a block, then restore the previous device."""

    def __init__(self, device):
        self.device = int(device)

    def __enter__(self):
        self.prev = _current_device()
        if self.prev != self.device:
            _lib.rmm_set_device(self.device)
        return self

    def __exit__(self, *exc):
        if self.prev != self.device:
            _lib.rmm_set_device(self.prev)
        return False


def _known_devices():
    with _held_lock:
        devs = sorted(_held)
    return devs or [_current_device()]


def enable_logging(log_file_name=None):
    """Wrap each known device's resource in a LoggingResourceAdaptor (device 0 if none)."""
    for dev in _known_devices():
        with _DeviceScope(dev):
            current = get_per_device_resource(dev)
            if not isinstance(current, LoggingResourceAdaptor):
                set_per_device_resource(dev, LoggingResourceAdaptor(current, log_file_name))


def disable_logging():
    """Unwrap every device's LoggingResourceAdaptor (flushing and closing its log)."""
    for dev in _known_devices():
        current = get_per_device_resource(dev)
        if isinstance(current, LoggingResourceAdaptor):
            current.flush()
            set_per_device_resource(dev, current.upstream_mr)


def _flush_logs():
    """Flush every known device's LoggingResourceAdaptor (RMM's private helper, kept for its users)."""
    for dev in _known_devices():
        current = get_per_device_resource(dev)
        if isinstance(current, LoggingResourceAdaptor):
            current.flush()


def get_log_filenames():
    """{device: absolute log file name, or None when that device does not log}."""
    out = {}
    for dev in _known_devices():
        current = get_per_device_resource(dev)
        out[dev] = current.get_file_name() if isinstance(current, LoggingResourceAdaptor) else None
    return out

