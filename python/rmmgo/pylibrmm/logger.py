"""RMM's debug-logger functions (``rmm.pylibrmm.logger``).

librmmgo.so keeps no debug log of its own: its errors come back as
exceptions carrying the library's message. These functions keep RMM's API
and its rules (levels must be ``level_enum`` members, TypeError otherwise)
over the Python logger named "rmmgo", which the package uses for its own
debug messages: the logging level is that logger's level, and flushing
flushes its handlers.
"""

import logging as _logging
import threading
import warnings

from ..librmm._logger import level_enum

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

# level_enum -> the Python logging level of logger "rmmgo".
_TO_PY = {
    level_enum.trace: 5,
    level_enum.debug: _logging.DEBUG,
    level_enum.info: _logging.INFO,
    level_enum.warn: _logging.WARNING,
    level_enum.error: _logging.ERROR,
    level_enum.critical: _logging.CRITICAL,
    level_enum.off: _logging.CRITICAL + 10,
    level_enum.n_levels: _logging.CRITICAL + 10,
}

_lock = threading.Lock()
_level = level_enum.info
_flush_level = level_enum.warn


def _validate_level_type(level):
    if not isinstance(level, level_enum):
        raise TypeError("level must be an instance of the level_enum enum, not %s" % type(level).__name__)


def should_log(level):
    """True when a message at `level` (a level_enum) would be logged: level >= the logging level."""
    _validate_level_type(level)
    return level >= _level


def _warn_if_silent(level):
    if not should_log(level):
        warnings.warn(
            "RMM will not log level_enum.%s. This may be because the current logging "
            "level is less verbose." % level.name,
            stacklevel=3,
        )


def set_logging_level(level):
    """Set the debug logging level (a level_enum); TypeError for anything else."""
    global _level
    _validate_level_type(level)
    with _lock:
        _level = level
        _log.setLevel(_TO_PY[level])
    _warn_if_silent(level)


def get_logging_level():
    """The debug logging level, a level_enum."""
    return _level


def flush_logger():
    """Flush the debug logger's handlers."""
    for h in _log.handlers:
        h.flush()


def set_flush_level(level):
    """Set the level (a level_enum) from which messages are flushed at once."""
    global _flush_level
    _validate_level_type(level)
    _flush_level = level
    _warn_if_silent(level)


def get_flush_level():
    """The flush level, a level_enum."""
    return _flush_level
