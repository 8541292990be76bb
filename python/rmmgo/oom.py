"""When memory runs out, say why: snapshots and pressure hooks (docs/out-of-memory.md).

``rmmgo.memory_snapshot()`` returns every block of the current resource (or
of ``mr``) in the layout of ``torch.cuda.memory._snapshot()``, so PyTorch's
memory viewer draws it::

    snap = rmmgo.memory_snapshot()                    # a dict
    rmmgo.memory_snapshot(path="snap.pickle")         # the file _memory_viz.py reads
    from torch.cuda import _memory_viz
    open("segments.html", "w").write(_memory_viz.segment_plot(snap))

``PressureResourceAdaptor`` calls back when live bytes cross thresholds (up
and down) and when an allocation fails, with the retry count, so a program
can spill and retry. ``OutOfMemoryError`` carries the failure's report
(``.reading``, ``.resources``, ...). ``RMMGO_OOM_SNAPSHOT=path`` writes a
snapshot at the first out-of-memory error.
"""

import ctypes
import json
from ctypes import CFUNCTYPE, byref, c_int, c_size_t, c_void_p

from . import _bindings as _b
from ._utils import parse_bytes
from .mr import _per_device
from .mr._base import UpstreamResourceAdaptor, _handle_of
from .mr._handles import _keep_forever

__all__ = [
    "memory_snapshot",
    "PressureResourceAdaptor",
    "last_out_of_memory_report",
]

last_out_of_memory_report = _b.last_out_of_memory_report

_lib = _b.lib

PressureCallback = CFUNCTYPE(None, c_size_t, c_size_t, c_int, c_void_p)
PressureFailureCallback = CFUNCTYPE(c_int, c_size_t, c_int, c_void_p)


def memory_snapshot(mr=None, path=None):
    """The memory of ``mr`` (default: the current device's resource) and its upstreams.

    Returns a dict shaped as ``torch.cuda.memory._snapshot()``: ``segments``
    (each with ``device``, ``address``, ``total_size``, ``stream``,
    ``blocks`` that tile it: ``address``, ``size``, ``requested_size``,
    ``state`` "active_allocated" or "inactive", ``frames``, and rmmgo's
    ``where``: live, free, magazine, front, unmapped) and ``device_traces``
    (the events of a PressureResourceAdaptor with history). With ``path``
    it is also written there: JSON when the name ends in ".json", else the
    pickle that ``torch.cuda.memory._dump_snapshot`` writes.
    """
    if mr is None:
        mr = _per_device.get_current_device_resource()
    h = _handle_of(mr, "mr")
    out = c_void_p()
    _lib.rmm_memory_snapshot_json(h, byref(out))
    try:
        data = json.loads(ctypes.string_at(out.value).decode("utf-8"))
    finally:
        _lib.rmm_string_free(out)
    if path is not None:
        _lib.rmm_memory_snapshot(h, str(path).encode())
    return data


class PressureResourceAdaptor(UpstreamResourceAdaptor):
    """Watches live bytes through it: callbacks at thresholds and on failure.

    ``on_cross(threshold, live_bytes, up)`` is called when live bytes reach a
    threshold (``up`` True) or fall below it again (False).
    ``on_failure(nbytes, retry) -> bool`` is called when the upstream runs
    out of memory (``retry`` counts the retries of this allocation, 0
    first); True retries (after spilling, say). Callbacks run on the thread
    whose call crossed, one at a time, and may allocate through the adaptor.
    An exception in ``on_failure`` ends the allocation and comes out of it.
    ``history`` keeps that many events for ``memory_snapshot``'s trace.
    """

    _kind = None

    def __init__(self, upstream_mr, thresholds=(), on_cross=None, on_failure=None, history=0):
        thresholds = [int(parse_bytes(t)) if isinstance(t, str) else int(t) for t in thresholds]
        if thresholds and not callable(on_cross):
            raise TypeError("thresholds need a callable on_cross")
        if on_failure is not None and not callable(on_failure):
            raise TypeError("on_failure must be callable")
        cross_cb = fail_cb = None
        if on_cross is not None:

            def _cross(threshold, live, up, _arg):
                try:
                    on_cross(threshold, live, bool(up))
                except BaseException:  # noqa: BLE001 - a callback cannot raise into C
                    import traceback

                    traceback.print_exc()

            cross_cb = PressureCallback(_cross)
        if on_failure is not None:

            def _fail(nbytes, retry, _arg):
                try:
                    return 1 if on_failure(nbytes, retry) else 0
                except BaseException as exc:  # noqa: BLE001 - raised by the allocation
                    _b.callback_error.exc = exc
                    return 0

            fail_cb = PressureFailureCallback(_fail)
        self._callbacks = (cross_cb, fail_cb)  # alive as long as the adaptor
        _keep_forever(cross_cb, fail_cb)  # and the handle, which C code may hold longer
        arr = (c_size_t * max(len(thresholds), 1))(*thresholds)
        out = c_void_p()
        _lib.rmm_pressure_resource_create(
            _handle_of(upstream_mr),
            arr,
            len(thresholds),
            ctypes.cast(cross_cb, c_void_p) if cross_cb else None,
            ctypes.cast(fail_cb, c_void_p) if fail_cb else None,
            None,
            int(history),
            byref(out),
        )
        self._upstream = upstream_mr
        self.thresholds = tuple(sorted(t for t in thresholds if t))
        self._own(out.value)

    @property
    def live_bytes(self):
        """Bytes allocated through the adaptor and not freed."""
        n = c_size_t()
        _lib.rmm_pressure_live_bytes(self._handle, byref(n))
        return n.value
