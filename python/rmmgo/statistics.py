"""Allocation statistics and the memory profiler (RMM's ``rmm.statistics``).

Statistics come from a StatisticsResourceAdaptor that is the current device
resource; since the current resource lives in librmmgo.so, the counters see
every allocation made through it, from Python, C, C++, Go, CuPy, Numba or
PyTorch alike.
"""

import functools
import inspect
import threading
from collections import defaultdict
from contextlib import contextmanager
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
    "ProfilerContext",
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
        return "%s(%r)" % (type(self).__name__, self.records)

    def __str__(self):
        return self.report()


default_profiler_records = ProfilerRecords()


def _get_descriptive_name_of_object(obj):
    """'file:line(qualname)' of a function (unwrapping decorators), the name
    a profiled function's records go under."""
    unwrapped = inspect.unwrap(obj)
    _, line = inspect.getsourcelines(unwrapped)
    return "%s:%d(%s)" % (inspect.getfile(unwrapped), line, unwrapped.__qualname__)


class ProfilerContext:
    """Records memory statistics of a function (as a decorator) or a block (as a context manager).

    Records go to `records` under `name`; a decorated function's name
    defaults to _get_descriptive_name_of_object(func). Needs statistics
    enabled (the current resource a StatisticsResourceAdaptor); otherwise
    it records nothing.
    """

    def __init__(self, records, name):
        self._records = records
        self._name = name

    def __call__(self, func):
        name = self._name or _get_descriptive_name_of_object(func)
        records = self._records

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            push_statistics()
            try:
                return func(*args, **kwargs)
            finally:
                stats = pop_statistics()
                if stats is not None:
                    records.add(name=name, data=stats)

        return wrapper

    def __enter__(self):
        if not self._name:
            raise ValueError("When profiler is used as a context manager, a name must be provided")
        push_statistics()
        return self

    def __exit__(self, *exc):
        stats = pop_statistics()
        if stats is not None:
            self._records.add(name=self._name, data=stats)
        return False


def profiler(*, records=default_profiler_records, name=""):
    """A decorator and context manager that records memory statistics (see ProfilerContext).

    name: the record's name; required as a context manager, optional as a
    decorator (then file:line(function)).
    """
    return ProfilerContext(records, name)
