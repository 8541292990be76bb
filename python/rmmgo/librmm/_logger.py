"""The debug logger's levels (RMM's ``rmm.librmm._logger.level_enum``)."""

import enum

__all__ = ["level_enum"]


class level_enum(enum.IntEnum):
    """Logging levels, least severe first (rapids-logger's level_enum)."""

    trace = 0
    debug = 1
    info = 2
    warn = 3
    error = 4
    critical = 5
    off = 6
    n_levels = 7
