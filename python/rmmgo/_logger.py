"""RMM's debug-logger functions.

librmmgo.so has no debug log of its own (errors come back as exceptions with
the library's message), so these keep RMM's API working over the Python
logger named "rmmgo", which rmmgo uses for its own debug messages.
"""

import enum
import logging as _logging

__all__ = [
    "level_enum",
    "set_logging_level",
    "get_logging_level",
    "should_log",
    "flush_logger",
    "set_flush_level",
    "get_flush_level",
]

_log = _logging.getLogger("rmmgo")


class level_enum(enum.IntEnum):
    """RMM's logging levels."""

    trace = 0
    debug = 1
    info = 2
    warn = 3
    error = 4
    critical = 5
    off = 6


_TO_PY = {
    level_enum.trace: 5,
    level_enum.debug: _logging.DEBUG,
    level_enum.info: _logging.INFO,
    level_enum.warn: _logging.WARNING,
    level_enum.error: _logging.ERROR,
    level_enum.critical: _logging.CRITICAL,
    level_enum.off: _logging.CRITICAL + 10,
}
_level = level_enum.info
_flush_level = level_enum.warn


def set_logging_level(level):
    global _level
    _level = level_enum(level)
    _log.setLevel(_TO_PY[_level])


def get_logging_level():
    return _level


def should_log(level):
    return level_enum(level) >= _level and _level != level_enum.off


def flush_logger():
    for h in _log.handlers:
        h.flush()


def set_flush_level(level):
    global _flush_level
    _flush_level = level_enum(level)


def get_flush_level():
    return _flush_level
