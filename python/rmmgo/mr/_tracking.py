"""TrackingResourceAdaptor (RMM's tracking_resource_adaptor)."""

import logging

from .. import _bindings as _b
from .._bindings import ResourceKind
from ._base import UpstreamResourceAdaptor
from ._handles import _flag, _kind, _lib, _query

_log = logging.getLogger("rmmgo")

_REPORT_HEADER = "Outstanding Allocations:\n"  # the library's heading; RMM's string has none


@_kind(ResourceKind.TRACKING)
class TrackingResourceAdaptor(UpstreamResourceAdaptor):
    """Tracks outstanding allocations (with call stacks when capture_stacks)."""

    def __init__(self, upstream_mr, capture_stacks=False):
        self._init_adaptor(upstream_mr, capture_stacks=_flag(capture_stacks))

    def get_allocated_bytes(self):
        return _query(_lib.rmm_tracking_allocated_bytes, self._handle)

    def get_outstanding_allocations_count(self):
        return _query(_lib.rmm_tracking_outstanding_count, self._handle)

    def get_outstanding_allocations_str(self):
        """One line per outstanding allocation ("0x...: N B", with its call stack
        when capture_stacks), then any mismatched deallocations; "" when there
        are none, as RMM's."""
        report = _b.read_string(_lib.rmm_tracking_report, self._handle)
        if report.startswith(_REPORT_HEADER):
            report = report[len(_REPORT_HEADER):]
        return report

    def log_outstanding_allocations(self):
        """Log the outstanding allocations at debug level (logger "rmmgo")."""
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug("Outstanding Allocations: %s", self.get_outstanding_allocations_str())
