"""The ctypes binding layer: every function of include/rmmgo.h, declared once.

Each function is declared here with its argtypes and restype, and nowhere
else. Functions that return an ``rmm_status`` carry an ``errcheck`` that turns
a failure into a Python exception carrying the library's message (read from
``rmm_last_error_message`` on the same thread, right after the call):

=============================  ==========================================
status                         exception
=============================  ==========================================
RMM_ERROR_OUT_OF_MEMORY        OutOfMemoryError (MemoryError, RMMError)
RMM_ERROR_BAD_ALLOC,           RMMMemoryError (MemoryError, RMMError)
RMM_ERROR_BAD_ALIGNMENT
RMM_ERROR_INVALID_ARGUMENT     RMMValueError (ValueError, RMMError)
RMM_ERROR_OUT_OF_RANGE         RMMIndexError (IndexError, RMMError)
anything else                  RMMRuntimeError (RuntimeError, RMMError)
=============================  ==========================================

This is RMM's mapping (out_of_memory and bad_alloc -> MemoryError, logic and
CUDA errors -> RuntimeError, out_of_range -> IndexError, invalid_argument ->
ValueError); every exception is also an ``RMMError`` whose ``status`` names
the C status.

ctypes.CDLL releases the GIL around each call, so Python threads allocate in
parallel and callbacks from the library (callback resources, failure
callbacks) can take the GIL from any thread.
"""

import ctypes
import enum
import re
import threading
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char_p,
    c_int,
    c_int64,
    c_size_t,
    c_uint64,
    c_uint,
    c_void_p,
)

from . import _abi_generated as _abi
from . import _lib

__all__ = [
    "lib",
    "Status",
    "ResourceKind",
    "Property",
    "MemHandleType",
    "ResourceOptions",
    "Counter",
    "StatisticsStruct",
    "AllocateCallback",
    "DeallocateCallback",
    "FailureCallback",
    "RMMError",
    "OutOfMemoryError",
    "RMMMemoryError",
    "RMMValueError",
    "RMMIndexError",
    "RMMRuntimeError",
    "raise_for_status",
    "raise_for_last_status",
    "last_error_message",
    "status_string",
    "read_string",
    "DEFAULT_ALIGNMENT",
    "SIZE_DEFAULT",
    "FUNCTIONS",
]

DEFAULT_ALIGNMENT = 256
SIZE_DEFAULT = ctypes.c_size_t(-1).value


# ------------------------------------------------------------------ enums


# Status and ResourceKind: the C ABI's tables, which the library's Go source
# defines (internal/cabi) and _abi_generated.py carries here.
Status = enum.IntEnum("Status", [(name[len("RMM_"):], value) for name, value in _abi.STATUSES])
Status.__doc__ = "rmm_status."

ResourceKind = enum.IntEnum(
    "ResourceKind", [(enum_name[len("RMM_RESOURCE_"):], value) for enum_name, value, _ in _abi.KINDS]
)
ResourceKind.__doc__ = "rmm_resource_kind."


class Property(enum.IntEnum):
    """rmm_property."""

    DEVICE_ACCESSIBLE = 1
    HOST_ACCESSIBLE = 2


class MemHandleType(enum.IntFlag):
    """rmm_mem_handle_type (bits)."""

    NONE = 0
    POSIX_FILE_DESCRIPTOR = 1
    FABRIC = 8


# -------------------------------------------------------------- exceptions


class RMMError(Exception):
    """An error reported by librmmgo.

    ``RMMError(errcode, msg)`` as in RMM, or ``RMMError(msg)``. ``status`` is
    the C status (a ``Status``) when the library raised it, else None.
    """

    def __init__(self, *args):
        status = None
        if len(args) == 2 and isinstance(args[0], int):
            status, args = args[0], (args[1],)
        try:
            status = Status(status) if status is not None else None
        except ValueError:
            pass
        self.status = status
        self.errcode = status
        super().__init__(*args)

    def __reduce__(self):
        return (type(self), (self.status, *self.args) if self.status is not None else self.args)


class RMMMemoryError(RMMError, MemoryError):
    """An allocation failed (RMM's bad_alloc)."""


class OutOfMemoryError(RMMMemoryError):
    """No room for the allocation (RMM's out_of_memory).

    Raised by the library, it carries the report of docs/out-of-memory.md:
    ``report`` (a dict, empty when there is none) and, from it, ``bytes``,
    ``alignment``, ``stream``, ``chain`` (resource kinds, the one called
    first), ``resources`` (a dict of figures per resource: live, reserved,
    maximum, free, free_blocks, largest_free, streams, magazine_held,
    cache_held, note), ``device_free``, ``device_total`` and ``reading`` (the
    one-line explanation). The message itself ends with the report.
    """

    report = {}
    bytes = alignment = stream = device_free = device_total = None
    chain = ()
    resources = ()
    reading = ""

    def _attach(self, report):
        self.report = report
        for key in ("bytes", "alignment", "stream", "device_free", "device_total", "reading"):
            setattr(self, key, report.get(key))
        self.chain = tuple(report.get("chain") or ())
        self.resources = tuple(report.get("resources") or ())


class RMMValueError(RMMError, ValueError):
    """An argument was invalid (RMM's invalid_argument)."""


class RMMIndexError(RMMError, IndexError):
    """Out of range (RMM's out_of_range), e.g. popping the last statistics level."""


class RMMRuntimeError(RMMError, RuntimeError):
    """A logic or CUDA error (RMM's logic_error and cuda_error)."""


_EXCEPTIONS = {
    Status.ERROR_OUT_OF_MEMORY: OutOfMemoryError,
    Status.ERROR_BAD_ALLOC: RMMMemoryError,
    Status.ERROR_BAD_ALIGNMENT: RMMMemoryError,
    Status.ERROR_INVALID_ARGUMENT: RMMValueError,
    Status.ERROR_OUT_OF_RANGE: RMMIndexError,
}


# ----------------------------------------------------------- structures


class Counter(Structure):
    """rmm_counter."""

    _fields_ = [("value", c_int64), ("peak", c_int64), ("total", c_int64)]


class StatisticsStruct(Structure):
    """rmm_statistics."""

    _fields_ = [("struct_size", c_size_t), ("bytes", Counter), ("count", Counter)]

    def __init__(self):
        super().__init__()
        self.struct_size = ctypes.sizeof(StatisticsStruct)


AllocateCallback = CFUNCTYPE(c_void_p, c_size_t, c_void_p, c_void_p)
DeallocateCallback = CFUNCTYPE(None, c_void_p, c_size_t, c_void_p, c_void_p)
FailureCallback = CFUNCTYPE(c_int, c_size_t, c_void_p)


class ResourceOptions(Structure):
    """rmm_resource_options; make one with ``ResourceOptions.defaults()``."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("upstream", c_void_p),
        ("initial_pool_size", c_size_t),
        ("maximum_pool_size", c_size_t),
        ("release_threshold", c_size_t),
        ("export_handle_types", c_uint),
        ("pool_handle", c_void_p),
        ("headroom", c_size_t),
        ("arena_size", c_size_t),
        ("dump_log_on_failure", c_int),
        ("block_size", c_size_t),
        ("blocks_to_preallocate", c_size_t),
        ("min_size_exponent", c_int),
        ("max_size_exponent", c_int),
        ("alignment", c_size_t),
        ("alignment_threshold", c_size_t),
        ("allocation_limit", c_size_t),
        ("log_file", c_char_p),
        ("auto_flush", c_int),
        ("capture_stacks", c_int),
        ("allocate_callback", AllocateCallback),
        ("deallocate_callback", DeallocateCallback),
        ("allocate_arg", c_void_p),
        ("deallocate_arg", c_void_p),
        ("failure_callback", FailureCallback),
        ("failure_arg", c_void_p),
    ]

    @classmethod
    def defaults(cls):
        """Options with struct_size and every default set by the library."""
        opts = cls()
        lib.rmm_resource_options_init_sized(ctypes.byref(opts), ctypes.sizeof(opts))
        return opts


# ------------------------------------------------------------ the library

lib = _lib.load()

_string = c_char_p
_status = c_int
_handle = c_void_p  # rmm_resource_t
_stream = c_void_p  # rmm_stream_t
_pool = c_void_p  # rmm_mem_pool_t
_P = POINTER
# A size_t argument of the hot path (rmm_allocate_direct,
# rmm_deallocate_direct), declared as c_void_p: the same 64-bit integer
# register on every platform rmmgo runs on (LP64), and ctypes converts an int
# to a c_void_p argument in a few instructions while c_size_t first runs an
# isinstance check through the metaclass (about 100 ns more per argument on
# every call). It takes any int from -2**63 to 2**64 - 1, so callers check
# the range themselves (DeviceBuffer does).
_fast_size = c_void_p
assert ctypes.sizeof(c_size_t) == ctypes.sizeof(c_void_p)

# name -> (restype, argtypes). Status-returning functions are checked.
FUNCTIONS = {
    # version and status
    "rmm_version": (_string, []),
    "rmm_version_number": (c_int, []),
    "rmm_status_string": (_string, [c_int]),
    "rmm_last_error_message": (_string, []),
    # backend
    "rmm_backend_name": (_status, [_P(c_char_p)]),
    "rmm_runtime_version": (_status, [_P(c_int)]),
    "rmm_driver_version": (_status, [_P(c_int)]),
    "rmm_get_device_count": (_status, [_P(c_int)]),
    "rmm_get_device": (_status, [_P(c_int)]),
    "rmm_set_device": (_status, [c_int]),
    "rmm_device_get_attribute": (_status, [_P(c_int), c_int, c_int]),
    "rmm_mem_get_info": (_status, [_P(c_size_t), _P(c_size_t)]),
    "rmm_stream_create": (_status, [_P(_stream)]),
    "rmm_stream_create_with_flags": (_status, [_P(_stream), c_uint]),
    "rmm_stream_destroy": (_status, [_stream]),
    "rmm_stream_synchronize": (_status, [_stream]),
    "rmm_device_synchronize": (_status, []),
    "rmm_memcpy": (_status, [c_void_p, c_void_p, c_size_t, _stream]),
    "rmm_memset": (_status, [c_void_p, c_int, c_size_t, _stream]),
    "rmm_prefetch": (_status, [c_void_p, c_size_t, c_int, _stream]),
    # resources
    "rmm_resource_options_init_sized": (_status, [_P(ResourceOptions), ctypes.c_size_t]),
    "rmm_resource_create": (_status, [c_int, _P(ResourceOptions), _P(_handle)]),
    "rmm_resource_retain": (_status, [_handle]),
    "rmm_resource_release": (_status, [_handle]),
    "rmm_allocate": (_status, [_handle, _stream, c_size_t, c_size_t, _P(c_void_p)]),
    "rmm_deallocate": (_status, [_handle, _stream, c_void_p, c_size_t, c_size_t]),
    "rmm_allocate_sync": (_status, [_handle, c_size_t, c_size_t, _P(c_void_p)]),
    "rmm_deallocate_sync": (_status, [_handle, c_void_p, c_size_t, c_size_t]),
    "rmm_resource_has_property": (_status, [_handle, c_int, _P(c_int)]),
    "rmm_resource_is_equal": (_status, [_handle, _handle, _P(c_int)]),
    "rmm_resource_kind_of": (_status, [_handle, _P(c_int)]),
    "rmm_resource_name": (_status, [_handle, _P(c_char_p)]),
    "rmm_resource_device": (_status, [_handle, _P(c_int)]),
    "rmm_resource_upstream": (_status, [_handle, _P(_handle)]),
    # External resources (rmm_resource_create_external): made from C and
    # C++; Python sees them as DeviceMemoryResource.
    "rmm_resource_create_external": (_status, [c_void_p, _P(_handle)]),
    "rmm_resource_external_self": (_status, [_handle, _P(c_void_p), _P(c_void_p)]),
    # per-device resources
    "rmm_get_current_device_resource": (_status, [_P(_handle)]),
    "rmm_set_current_device_resource": (_status, [_handle, _P(_handle)]),
    "rmm_reset_current_device_resource": (_status, [_P(_handle)]),
    "rmm_get_per_device_resource": (_status, [c_int, _P(_handle)]),
    "rmm_set_per_device_resource": (_status, [c_int, _handle, _P(_handle)]),
    "rmm_reset_per_device_resource": (_status, [c_int, _P(_handle)]),
    # resource-specific
    "rmm_pool_size": (_status, [_handle, _P(c_size_t)]),
    "rmm_pool_used_bytes": (_status, [_handle, _P(c_size_t)]),
    "rmm_pool_peak_size": (_status, [_handle, _P(c_size_t)]),
    "rmm_pool_release": (_status, [_handle]),
    "rmm_fixed_size_block_size": (_status, [_handle, _P(c_size_t)]),
    "rmm_binning_add_bin": (_status, [_handle, c_size_t, _handle]),
    "rmm_cuda_async_pool_handle": (_status, [_handle, _P(_pool)]),
    "rmm_limiting_allocated_bytes": (_status, [_handle, _P(c_size_t)]),
    "rmm_limiting_allocation_limit": (_status, [_handle, _P(c_size_t)]),
    "rmm_logging_flush": (_status, [_handle]),
    "rmm_logging_file_name": (_status, [_handle, c_void_p, c_size_t, _P(c_size_t)]),
    "rmm_statistics_get": (_status, [_handle, _P(StatisticsStruct)]),
    "rmm_statistics_push": (_status, [_handle, _P(StatisticsStruct)]),
    "rmm_statistics_pop": (_status, [_handle, _P(StatisticsStruct)]),
    "rmm_tracking_allocated_bytes": (_status, [_handle, _P(c_size_t)]),
    "rmm_tracking_outstanding_count": (_status, [_handle, _P(c_size_t)]),
    "rmm_tracking_report": (_status, [_handle, c_void_p, c_size_t, _P(c_size_t)]),
    "rmm_tracking_outstanding": (_status, [_handle, _P(c_void_p), _P(c_size_t), c_size_t, _P(c_size_t)]),
    # calls for bindings: the allocation hot path
    "rmm_allocate_direct": (c_void_p, [_handle, _stream, _fast_size]),
    "rmm_deallocate_direct": (_status, [_handle, _stream, c_void_p, _fast_size]),
    "rmm_last_error_status": (c_int, []),
    "rmm_current_resource_token": (c_uint64, []),
    # framework allocators (no status: NULL / nothing on failure)
    "rmm_cupy_malloc": (c_void_p, [c_void_p, c_size_t, c_int]),
    "rmm_cupy_free": (None, [c_void_p, c_void_p, c_int]),
    "rmm_torch_allocate": (c_void_p, [c_size_t, c_int, c_void_p]),
    "rmm_torch_deallocate": (None, [c_void_p, c_size_t, c_int, c_void_p]),
    # out of memory: reports, snapshots, pressure (docs/out-of-memory.md)
    "rmm_last_out_of_memory_report": (_string, []),
    "rmm_memory_snapshot": (_status, [_handle, c_char_p]),
    "rmm_memory_snapshot_json": (_status, [_handle, _P(c_void_p)]),
    "rmm_string_free": (None, [c_void_p]),
    "rmm_pressure_resource_create": (
        _status,
        [_handle, _P(c_size_t), c_size_t, c_void_p, c_void_p, c_void_p, c_size_t, _P(_handle)],
    ),
    "rmm_pressure_live_bytes": (_status, [_handle, _P(c_size_t)]),
}

_UNCHECKED = {
    "rmm_allocate_direct",
    "rmm_deallocate_direct",
    "rmm_last_error_status",
    "rmm_current_resource_token",
    "rmm_version",
    "rmm_version_number",
    "rmm_status_string",
    "rmm_last_error_message",
    "rmm_last_out_of_memory_report",
    "rmm_string_free",
    "rmm_cupy_malloc",
    "rmm_cupy_free",
    "rmm_torch_allocate",
    "rmm_torch_deallocate",
}


def last_error_message():
    """The calling thread's last error message from the library ("" if none)."""
    msg = lib.rmm_last_error_message()
    return msg.decode("utf-8", "replace") if msg else ""


def status_string(status):
    """The library's name for a status, e.g. "RMM_ERROR_OUT_OF_MEMORY"."""
    s = lib.rmm_status_string(int(status))
    return s.decode() if s else str(int(status))


# An exception that Python code called back by the library (a
# CallbackMemoryResource's allocate_func, a FailureCallbackResourceAdaptor's
# callback) raised on this thread. The callback reported failure to the
# library instead, and the allocation that failed raises this exception's
# equivalent, as RMM does: a MemoryError as out of memory, anything else as
# RuntimeError, with the same message and chained to the original.
callback_error = threading.local()

# Statuses that are a failed allocation when an allocation reports them: RMM
# raises bad_alloc for a CUDA error while allocating (a MemoryError), e.g.
# from a memory pool that was destroyed under a view.
_ALLOCATION_FAILURES = {
    Status.ERROR_OUT_OF_MEMORY: OutOfMemoryError,
    Status.ERROR_BAD_ALLOC: RMMMemoryError,
    Status.ERROR_BAD_ALIGNMENT: RMMMemoryError,
    Status.ERROR_CUDA: RMMMemoryError,
}


def take_callback_error():
    """The exception a callback raised on this thread (None if none), cleared."""
    exc = getattr(callback_error, "exc", None)
    if exc is not None:
        callback_error.exc = None
    return exc


# The library's messages are written for C callers and may name the C
# header's constants; a Python caller reads, and writes, other words.
C_CONSTANTS_IN_PYTHON = {
    "RMM_SIZE_DEFAULT": "None",
    "RMM_STREAM_SYNC_DEFAULT": "CudaStreamFlags.SYNC_DEFAULT",
    "RMM_STREAM_NON_BLOCKING": "CudaStreamFlags.NON_BLOCKING",
}
# Names the same in every language: environment variables.
C_NAMES_KEPT = frozenset({"RMM_LOG_FILE"})
_C_CONSTANT = re.compile(r"\bRMM_[A-Z0-9_]+\b")


def python_words(msg):
    """msg with the C constants it names in Python's spelling.

    RMM_SIZE_DEFAULT ("the default" in a C options struct) is None in
    Python; a status (RMM_ERROR_OUT_OF_MEMORY) is a Status member
    (Status.ERROR_OUT_OF_MEMORY), as an exception's ``status`` holds it.
    """

    def word(m):
        name = m.group(0)
        if name in C_CONSTANTS_IN_PYTHON:
            return C_CONSTANTS_IN_PYTHON[name]
        if name.startswith("RMM_ERROR_") or name == "RMM_SUCCESS":
            return "Status." + name[len("RMM_"):]
        return name

    return _C_CONSTANT.sub(word, msg)


def raise_for_status(status, what=None, allocating=False):
    """Raise the exception for a nonzero status, with the thread's last message.

    Call it on the thread that made the failed call, before that thread calls
    into the library again. allocating: the call allocated memory, so that
    every failure to allocate is a MemoryError (see _ALLOCATION_FAILURES) and
    an exception raised by a callback during it is raised in its place.
    """
    if not status:
        return
    msg = python_words(last_error_message() or status_string(status))
    if what and what not in msg:
        msg = "%s: %s" % (what, msg)
    try:
        st = Status(status)
    except ValueError:
        st = status
    if allocating and st in _ALLOCATION_FAILURES:
        cause = take_callback_error()
        if cause is not None:
            text = str(cause) or type(cause).__name__
            if isinstance(cause, MemoryError):
                raise OutOfMemoryError(Status.ERROR_OUT_OF_MEMORY, text) from cause
            raise RMMRuntimeError(Status.ERROR_INTERNAL, text) from cause
        raise _with_report(_ALLOCATION_FAILURES[st](st, msg))
    raise _with_report(_EXCEPTIONS.get(st, RMMRuntimeError)(st, msg))


def last_out_of_memory_report():
    """The calling thread's last out-of-memory report as a dict ({} if none)."""
    import json

    raw = lib.rmm_last_out_of_memory_report()
    if not raw:
        return {}
    try:
        return json.loads(raw.decode("utf-8", "replace"))
    except ValueError:
        return {}


def _with_report(exc):
    """exc, with the thread's out-of-memory report attached when it is one."""
    if isinstance(exc, OutOfMemoryError):
        exc._attach(last_out_of_memory_report())
    return exc


def raise_for_last_status(what=None, allocating=False):
    """After a call that returns no status gave NULL: raise for the thread's last status.

    For rmm_allocate_direct and the framework allocators. Call it on the same
    thread right after the call, as raise_for_status; it returns quietly
    when that call succeeded (NULL for 0 bytes).
    """
    st = lib.rmm_last_error_status()
    if st:
        raise_for_status(st, what, allocating)


def backend_name():
    """"cuda" or "simulated": the backend the library runs on (opening it if needed)."""
    name = c_char_p()
    lib.rmm_backend_name(ctypes.byref(name))
    return name.value.decode()


def _errcheck(result, func, args):
    if result:
        raise_for_status(result)
    return result


def _declare():
    for name, (restype, argtypes) in FUNCTIONS.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
        if name not in _UNCHECKED:
            fn.errcheck = _errcheck


_declare()


def unchecked(name):
    """A second, unchecked function object for a hot path: returns the raw status.

    Same declaration as ``lib.<name>`` (from FUNCTIONS), without the
    errcheck; the caller checks the status with ``raise_for_status``.
    """
    restype, argtypes = FUNCTIONS[name]
    fn = lib[name]  # a new function object each time
    fn.restype = restype
    fn.argtypes = argtypes
    return fn


def read_string(fn, handle):
    """Call a (mr, buf, buf_size, needed) function and return the whole string."""
    needed = c_size_t(0)
    size = 256
    while True:
        buf = ctypes.create_string_buffer(size)
        fn(handle, buf, size, ctypes.byref(needed))
        if needed.value <= size:
            return buf.value.decode("utf-8", "replace")
        size = needed.value


def _version_check():
    import warnings

    from . import _version

    major = lib.rmm_version_number() // 10000
    if major != _version.MAJOR:
        warnings.warn(
            "rmmgo: librmmgo.so (%s at %s) has major version %d, this package expects %d"
            % (lib.rmm_version().decode(), _lib.path(), major, _version.MAJOR),
            RuntimeWarning,
            stacklevel=3,
        )


_version_check()
