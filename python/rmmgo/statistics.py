"""Allocation statistics and the memory profiler (RMM's ``rmm.statistics``).

Statistics come from a StatisticsResourceAdaptor that is the current device
resource; since the current resource lives in librmmgo.so, the counters see
every allocation made through it, from Python, C, C++, Go, CuPy, Numba or
PyTorch alike.
"""

import inspect
import threading
from collections import defaultdict
from contextlib import ContextDecorator, contextmanager
from dataclasses import dataclass

from . import mr

__all__ = [
    "Statistics",
    "enable_statistics",
    "get_statistics",
    "push_statistics",
    "pop_statistics",
    "statistics",
    "ProfilerRecords",
    "default_profiler_records",
    "profiler",
]


@dataclass
class Statistics:
    """Bytes and number of allocations: now, at the peak, and in total."""

    current_bytes: int
    current_count: int
    peak_bytes: int
    peak_count: int
    total_bytes: int
    total_count: int


def enable_statistics():
    """Wrap the current device resource in a StatisticsResourceAdaptor (once)."""
    current = mr.get_current_device_resource()
    if not isinstance(current, mr.StatisticsResourceAdaptor):
        mr.set_current_device_resource(mr.StatisticsResourceAdaptor(current))


def _stats_mr():
    current = mr.get_current_device_resource()
    return current if isinstance(current, mr.StatisticsResourceAdaptor) else None


def get_statistics():
    """The current counters, or None when the current resource keeps no statistics."""
    s = _stats_mr()
    return s.allocation_counts if s is not None else None


def push_statistics():
    """Start a new level of counters; returns the level that was innermost (None without statistics)."""
    s = _stats_mr()
    return s.push_counters() if s is not None else None


def pop_statistics():
    """End the innermost level and return it (None without statistics); IndexError on the last level."""
    s = _stats_mr()
    return s.pop_counters() if s is not None else None


@contextmanager
def statistics():
    """Collect statistics for a block.

    Pushes a level when statistics are on; otherwise installs a
    StatisticsResourceAdaptor for the block and restores the previous
    resource afterwards. ValueError if the current resource was changed
    inside the block.
    """
    prior = None
    if push_statistics() is None:
        prior = mr.get_current_device_resource()
        enable_statistics()
    current = mr.get_current_device_resource()
    try:
        yield
    finally:
        if current is not mr.get_current_device_resource():
            raise ValueError("RMM memory source stack was changed while in the statistics context")
        if prior is None:
            pop_statistics()
        else:
            mr.set_current_device_resource(prior)


class ProfilerRecords:
    """Memory statistics per named function or code block."""

    @dataclass
    class MemoryRecord:
        """Calls, total bytes allocated and peak bytes of one name."""

        num_calls: int = 0
        memory_total: int = 0
        memory_peak: int = 0

        def add(self, memory_total, memory_peak):
            self.num_calls += 1
            self.memory_total += memory_total
            self.memory_peak = max(self.memory_peak, memory_peak)

    def __init__(self):
        self._lock = threading.Lock()
        self._records = defaultdict(ProfilerRecords.MemoryRecord)

    def add(self, name, data):
        """Add one call's Statistics under `name`."""
        with self._lock:
            self._records[name].add(memory_total=data.total_bytes, memory_peak=data.peak_bytes)

    @property
    def records(self):
        """{name: MemoryRecord}."""
        with self._lock:
            return dict(self._records)

    def report(self, ordered_by="memory_peak"):
        """A readable table of the records, largest first by `ordered_by`."""
        lines = ["Memory Profiling", "================", ""]
        records = self.records
        if not records:
            lines.append("No data, maybe profiling wasn't enabled?")
            return "\n".join(lines)
        lines += [
            "Legends:",
            "  ncalls       - number of times the function or code block was called",
            "  memory_peak  - peak memory allocated in function or code block (in bytes)",
            "  memory_total - total memory allocated in function or code block (in bytes)",
            "",
            "Ordered by: %s" % ordered_by,
            "",
            "ncalls     memory_peak    memory_total  filename:lineno(function)",
        ]
        for name, rec in sorted(records.items(), key=lambda kv: getattr(kv[1], ordered_by), reverse=True):
            lines.append("%6s %15s %15s  %s" % (format(rec.num_calls, ","), format(rec.memory_peak, ","),
                                                format(rec.memory_total, ","), name))
        return "\n".join(lines)

    def __repr__(self):
        return self.report()


default_profiler_records = ProfilerRecords()


def _describe(obj):
    """'file:line(qualname)' for a function."""
    try:
        fname = inspect.getsourcefile(obj) or inspect.getfile(obj)
        _, line = inspect.getsourcelines(obj)
    except (OSError, TypeError):
        fname, line = "?", 0
    return "%s:%d(%s)" % (fname, line, getattr(obj, "__qualname__", repr(obj)))


class profiler(ContextDecorator):
    """Record memory statistics of a function (decorator) or a named block (context manager).

    Needs statistics enabled (``enable_statistics()``); records go to
    ``records`` (default: ``default_profiler_records``).
    """

    def __init__(self, *, records=default_profiler_records, name=""):
        self._records = records
        self._name = name

    def __call__(self, func):
        self._name = _describe(func)
        return super().__call__(func)

    def __enter__(self):
        if not self._name:
            raise ValueError("When profiler is used as a context manager, a name must be given")
        push_statistics()
        return self

    def __exit__(self, *exc):
        stats = pop_statistics()
        if stats is not None:
            self._records.add(name=self._name, data=stats)
        return False
