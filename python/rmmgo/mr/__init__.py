"""Memory resources, adaptors and the per-device resource functions (RMM's ``rmm.mr``).

The current and per-device resources live in librmmgo.so: what C, C++ or Go
code in this process sets current is what ``get_current_device_resource()``
returns here, and the other way round.
"""

from . import experimental
from ._aligned import AlignedResourceAdaptor
from ._arena import ArenaMemoryResource
from ._base import DeviceMemoryResource, UpstreamResourceAdaptor, from_handle
from ._binning import BinningMemoryResource
from ._callback import CallbackMemoryResource
from ._cuda import CudaMemoryResource
from ._cuda_async import CudaAsyncMemoryResource
from ._cuda_async_view import CudaAsyncViewMemoryResource
from ._expandable import ExpandableMemoryResource
from ._failure_callback import FailureCallbackResourceAdaptor
from ._fixed_size import FixedSizeMemoryResource
from ._handles import RMMLogicError
from ._limiting import LimitingResourceAdaptor
from ._logging import LoggingResourceAdaptor, _flush_logs, disable_logging, enable_logging, get_log_filenames
from ._managed import ManagedMemoryResource
from ._per_device import (
    available_device_memory,
    get_current_device_resource,
    get_current_device_resource_type,
    get_per_device_resource,
    get_per_device_resource_type,
    is_initialized,
    reset_current_device_resource,
    reset_per_device_resource,
    set_current_device_resource,
    set_per_device_resource,
)
from ._pinned_host import PinnedHostMemoryResource
from ._pool import PoolMemoryResource
from ._prefetch import PrefetchResourceAdaptor
from ._sam_headroom import SamHeadroomMemoryResource
from ._statistics import StatisticsResourceAdaptor
from ._system import SystemMemoryResource
from ._thread_safe import ThreadSafeResourceAdaptor
from ._tracking import TrackingResourceAdaptor

__all__ = [
    "experimental",
    "AlignedResourceAdaptor",
    "ArenaMemoryResource",
    "BinningMemoryResource",
    "CallbackMemoryResource",
    "CudaAsyncMemoryResource",
    "CudaAsyncViewMemoryResource",
    "CudaMemoryResource",
    "DeviceMemoryResource",
    "ExpandableMemoryResource",
    "FailureCallbackResourceAdaptor",
    "FixedSizeMemoryResource",
    "LimitingResourceAdaptor",
    "LoggingResourceAdaptor",
    "ManagedMemoryResource",
    "PinnedHostMemoryResource",
    "PoolMemoryResource",
    "PrefetchResourceAdaptor",
    "RMMLogicError",
    "SamHeadroomMemoryResource",
    "StatisticsResourceAdaptor",
    "SystemMemoryResource",
    "ThreadSafeResourceAdaptor",
    "TrackingResourceAdaptor",
    "UpstreamResourceAdaptor",
    "available_device_memory",
    "disable_logging",
    "enable_logging",
    "from_handle",
    "get_current_device_resource",
    "get_current_device_resource_type",
    "get_log_filenames",
    "get_per_device_resource",
    "get_per_device_resource_type",
    "is_initialized",
    "reset_current_device_resource",
    "reset_per_device_resource",
    "set_current_device_resource",
    "set_per_device_resource",
]
