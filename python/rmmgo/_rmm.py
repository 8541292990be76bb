"""reinitialize, is_initialized and the reinitialize hooks (RMM's ``rmm.rmm``)."""

from . import mr
from ._bindings import RMMError
from .mr._per_device import _DeviceScope

__all__ = [
    "RMMError",
    "reinitialize",
    "is_initialized",
    "register_reinitialize_hook",
    "unregister_reinitialize_hook",
]

_reinitialize_hooks = []


def reinitialize(
    pool_allocator=False,
    managed_memory=False,
    initial_pool_size=None,
    maximum_pool_size=None,
    devices=0,
    logging=False,
    log_file_name=None,
):
    """Give each of `devices` a new resource.

    The base is ManagedMemoryResource (managed_memory) or CudaMemoryResource;
    with pool_allocator it sits under a PoolMemoryResource(initial_pool_size,
    maximum_pool_size) (sizes as ints or strings such as "1GiB"; without
    pool_allocator they are ignored, as in RMM); with logging, the whole is
    wrapped in a LoggingResourceAdaptor writing log_file_name (".dev<N>"
    inserted per device). Hooks registered with register_reinitialize_hook
    run first, the latest first.
    """
    arguments = dict(locals())  # exactly _initialize's arguments, by name
    for func, args, kwargs in reversed(_reinitialize_hooks):
        func(*args, **kwargs)
    _initialize(**arguments)


def _initialize(
    pool_allocator=False,
    managed_memory=False,
    initial_pool_size=None,
    maximum_pool_size=None,
    devices=0,
    logging=False,
    log_file_name=None,
):
    """reinitialize without the hooks (RMM's private ``_initialize``)."""
    if devices is None:
        devices = [0]
    elif isinstance(devices, int):
        devices = [devices]
    base = mr.ManagedMemoryResource if managed_memory else mr.CudaMemoryResource
    for device in devices:
        with _DeviceScope(device):
            res = base()
            if pool_allocator:
                res = mr.PoolMemoryResource(res, initial_pool_size=initial_pool_size, maximum_pool_size=maximum_pool_size)
            if logging:
                res = mr.LoggingResourceAdaptor(res, log_file_name=log_file_name)
            mr.set_per_device_resource(device, res)


def is_initialized():
    """True when the library is loaded and every device has a usable resource."""
    return mr.is_initialized()


def register_reinitialize_hook(func, *args, **kwargs):
    """Run func(*args, **kwargs) at the start of every reinitialize (the latest first); returns func."""
    _reinitialize_hooks.append((func, args, kwargs))
    return func


def unregister_reinitialize_hook(func):
    """Remove every registration of func."""
    _reinitialize_hooks[:] = [h for h in _reinitialize_hooks if h[0] is not func]
