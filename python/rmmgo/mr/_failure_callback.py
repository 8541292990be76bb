"""FailureCallbackResourceAdaptor (RMM's failure_callback_resource_adaptor)."""

from .. import _bindings as _b
from .._bindings import ResourceKind
from ._base import UpstreamResourceAdaptor
from ._handles import _keep_forever, _kind


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
        self._init_adaptor(upstream_mr, failure_callback=cb)
