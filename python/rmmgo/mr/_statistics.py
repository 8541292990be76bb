"""StatisticsResourceAdaptor (RMM's statistics_resource_adaptor)."""

from ctypes import byref

from .. import _bindings as _b
from .._bindings import ResourceKind
from ._base import UpstreamResourceAdaptor
from ._handles import _kind, _lib


def _counters(fn, handle):
    """The counters a library call ``fn(handle, &stats)`` writes, as a Statistics."""
    from ..statistics import Statistics

    s = _b.StatisticsStruct()
    fn(handle, byref(s))
    return Statistics(
        current_bytes=s.bytes.value,
        current_count=s.count.value,
        peak_bytes=s.bytes.peak,
        peak_count=s.count.peak,
        total_bytes=s.bytes.total,
        total_count=s.count.total,
    )


@_kind(ResourceKind.STATISTICS)
class StatisticsResourceAdaptor(UpstreamResourceAdaptor):
    """Counts bytes and allocations (current, peak, total) on a stack of levels."""

    @property
    def allocation_counts(self):
        """The innermost level's counters as a Statistics."""
        return _counters(_lib.rmm_statistics_get, self._handle)

    def push_counters(self):
        """Start a new level at zero; returns the level that was innermost."""
        return _counters(_lib.rmm_statistics_push, self._handle)

    def pop_counters(self):
        """End the innermost level, fold it into its parent and return it.

        IndexError when only one level is left.
        """
        try:
            return _counters(_lib.rmm_statistics_pop, self._handle)
        except IndexError as exc:
            raise _b.RMMIndexError(exc.status, "cannot pop the last counter pair (%s)" % exc) from None
