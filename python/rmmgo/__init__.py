"""rmmgo: the RAPIDS Memory Manager's Python API over librmmgo.so.

Code written for RMM runs after ``import rmmgo as rmm``. The memory resources
live in librmmgo.so, shared with every C, C++ and Go user in the process:
the resource any of them sets current is the one ``rmm.mr`` sees.
"""

from . import _bindings
from ._bindings import (
    OutOfMemoryError,
    RMMError,
    RMMIndexError,
    RMMMemoryError,
    RMMRuntimeError,
    RMMValueError,
)
from .pylibrmm.logger import (
    flush_logger,
    get_flush_level,
    get_logging_level,
    level_enum,
    set_flush_level,
    set_logging_level,
    should_log,
)
from ._rmm import (
    is_initialized,
    register_reinitialize_hook,
    reinitialize,
    unregister_reinitialize_hook,
)
from ._utils import parse_bytes
from ._version import __git_commit__, __version__
from . import mr
from .device_buffer import DeviceBuffer, to_device
from .mr import disable_logging, enable_logging, get_log_filenames
from .stream import (
    DEFAULT_STREAM,
    LEGACY_DEFAULT_STREAM,
    PER_THREAD_DEFAULT_STREAM,
    CudaStreamFlags,
    CudaStreamPool,
    Stream,
)
from . import statistics
from .oom import PressureResourceAdaptor, last_out_of_memory_report, memory_snapshot
from . import pylibrmm
from . import _cuda, librmm
from ._alias import install_as_rmm


def library_path():
    """The path of the librmmgo.so this package uses."""
    from . import _lib

    return _lib.path()


def library_version():
    """The loaded librmmgo.so's version string."""
    return _bindings.lib.rmm_version().decode()


def backend():
    """"cuda" or "simulated": the backend the library runs on."""
    return _bindings.backend_name()


__all__ = [
    "PressureResourceAdaptor",
    "last_out_of_memory_report",
    "memory_snapshot",
    "DeviceBuffer",
    "to_device",
    "RMMError",
    "OutOfMemoryError",
    "RMMMemoryError",
    "RMMValueError",
    "RMMIndexError",
    "RMMRuntimeError",
    "reinitialize",
    "is_initialized",
    "register_reinitialize_hook",
    "unregister_reinitialize_hook",
    "enable_logging",
    "disable_logging",
    "get_log_filenames",
    "level_enum",
    "set_logging_level",
    "get_logging_level",
    "should_log",
    "flush_logger",
    "set_flush_level",
    "get_flush_level",
    "mr",
    "statistics",
    "pylibrmm",
    "Stream",
    "CudaStreamFlags",
    "CudaStreamPool",
    "DEFAULT_STREAM",
    "LEGACY_DEFAULT_STREAM",
    "PER_THREAD_DEFAULT_STREAM",
    "parse_bytes",
    "library_path",
    "library_version",
    "backend",
    "install_as_rmm",
    "__version__",
    "__git_commit__",
]
