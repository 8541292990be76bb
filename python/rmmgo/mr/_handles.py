"""What every resource module shares: the handle registry, making a C resource
from keyword options, and reading the library's out-parameters.

Every resource object owns one reference to a C resource handle and gives it
back exactly once (a ``weakref.finalize``, which also runs at interpreter
exit while the library is whole). A handle the library hands out is wrapped
through a handle -> object weak map (``_base.from_handle``), so while a Python
object for that handle is alive the very same object comes back.
"""

import re
import sys
import threading
import traceback
import weakref
from ctypes import byref, c_int, c_size_t, c_void_p

from .. import _bindings as _b
from .._bindings import RMMError, RMMRuntimeError, ResourceKind, Status
from .._utils import SIZE_MAX, as_size_t, parse_bytes

_lib = _b.lib


class RMMLogicError(RMMRuntimeError, ValueError):
    """A resource could not be made from these arguments.

    RMM raises ``RuntimeError`` (its logic_error) for bad constructor
    arguments; the library reports them as invalid arguments. This error is
    both a RuntimeError and a ValueError.
    """


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


def _kind(kind):
    """Class decorator: the class is the one from_handle makes for `kind`."""

    def register(cls):
        cls._kind = kind
        _kind_classes[int(kind)] = cls
        return cls

    return register


def _query(fn, *args, ctype=c_size_t):
    """The value a library getter ``fn(*args, &out)`` writes."""
    out = ctype()
    fn(*args, byref(out))
    return out.value


def _current_device():
    return _query(_lib.rmm_get_device, ctype=c_int)


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


def _flag(value):
    """A bool argument as the options struct's int."""
    return 1 if value else 0


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
