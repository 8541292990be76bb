"""LoggingResourceAdaptor (RMM's logging_resource_adaptor), and the functions
that put one on, or take it off, every device's resource."""

import os

from .. import _bindings as _b
from .._bindings import ResourceKind
from ._base import UpstreamResourceAdaptor
from ._handles import _current_device, _flag, _kind, _lib
from ._per_device import _DeviceScope, _known_devices, get_per_device_resource, set_per_device_resource


def _append_device_id(filename, device):
    name, ext = os.path.splitext(filename)
    return "%s.dev%d%s" % (name, device, ext)


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
        self._init_adaptor(upstream_mr, log_file=os.fsencode(log_file_name), auto_flush=_flag(auto_flush))

    def flush(self):
        _lib.rmm_logging_flush(self._handle)

    def get_file_name(self):
        return _b.read_string(_lib.rmm_logging_file_name, self._handle)


def _device_resources():
    """(device, its resource) for every known device."""
    for dev in _known_devices():
        yield dev, get_per_device_resource(dev)


def enable_logging(log_file_name=None):
    """Wrap each known device's resource in a LoggingResourceAdaptor (device 0 if none)."""
    for dev in _known_devices():
        with _DeviceScope(dev):
            current = get_per_device_resource(dev)
            if not isinstance(current, LoggingResourceAdaptor):
                set_per_device_resource(dev, LoggingResourceAdaptor(current, log_file_name))


def disable_logging():
    """Unwrap every device's LoggingResourceAdaptor (flushing and closing its log)."""
    for dev, current in _device_resources():
        if isinstance(current, LoggingResourceAdaptor):
            current.flush()
            set_per_device_resource(dev, current.upstream_mr)


def _flush_logs():
    """Flush every known device's LoggingResourceAdaptor (RMM's private helper, kept for its users)."""
    for _dev, current in _device_resources():
        if isinstance(current, LoggingResourceAdaptor):
            current.flush()


def get_log_filenames():
    """{device: absolute log file name, or None when that device does not log}."""
    return {
        dev: current.get_file_name() if isinstance(current, LoggingResourceAdaptor) else None
        for dev, current in _device_resources()
    }
