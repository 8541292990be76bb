"""The current and per-device resources, which live in the library.

One registry with C: ``get_current_device_resource()`` asks the library, so
a resource made and set current by C (or C++, or Go) comes back here as an
object of the class for its kind, and one set from Python is what C code
gets. Also the exit hook that flushes every device's logs.
"""

import atexit
import threading
import weakref
from ctypes import byref, c_int, c_size_t, c_void_p

from .._bindings import RMMError, ResourceKind
from ._base import _handle_of, _take
from ._handles import _current_device, _exiting, _lib, _query, _used

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
_token = _lib.rmm_current_resource_token
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


def get_current_device_resource():
    """The current device's resource, as the library has it (C and Python alike)."""
    tok = _token()
    obj = _current_by_token.get(tok)
    if obj is None:
        obj = _current_resource_slow(tok)
    return obj


def _set(device, mr, c_set):
    """c_set() makes mr device's resource in the library; keep mr alive for it."""
    with _held_lock:
        c_set()
        _held[device] = mr
        _current_by_token.clear()


def _reset(device, c_reset):
    """c_reset(&previous) restores device's initial resource; returns the previous one."""
    out = c_void_p()
    with _held_lock:
        c_reset(byref(out))
        _held.pop(device, None)
        _current_by_token.clear()
    return _take(out)


def set_current_device_resource(mr):
    """Make mr the current device's resource, for every language in the process."""
    h = _handle_of(mr, "mr")
    _set(_current_device(), mr, lambda: _lib.rmm_set_current_device_resource(h, None))


def reset_current_device_resource():
    """Restore the current device's initial (cuda) resource; returns the previous one."""
    return _reset(_current_device(), _lib.rmm_reset_current_device_resource)


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
    device = int(device)
    _set(device, mr, lambda: _lib.rmm_set_per_device_resource(device, h, None))


def reset_per_device_resource(device):
    """Restore device `device`'s initial resource; returns the previous one."""
    device = int(device)
    return _reset(device, lambda out: _lib.rmm_reset_per_device_resource(device, out))


def available_device_memory():
    """(free, total) bytes of the current device."""
    free, total = c_size_t(), c_size_t()
    _lib.rmm_mem_get_info(byref(free), byref(total))
    return free.value, total.value


def is_initialized():
    """True when the library is loaded and every device's resource is usable."""
    try:
        for dev in range(_query(_lib.rmm_get_device_count, ctype=c_int)):
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
    """The devices Python set resources on, else the current one."""
    with _held_lock:
        devs = sorted(_held)
    return devs or [_current_device()]


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
