"""RMMSetup's settings: device sizes, the Dask config keys, and the checks made on the client.

Everything here runs where the settings are given (the client, or a worker's
preload): a setting that is wrong in itself, or wrong with another, fails
there, before any worker is asked to apply it. What only a worker can judge
(a fraction of *its* device, whether its device has room) is judged in
RMMSetup.setup.
"""

import dataclasses
import numbers
import os

import dask.config
from dask.utils import parse_bytes as _dask_parse_bytes

__all__ = [
    "ALIGNMENT",
    "CONFIG_DEFAULTS",
    "CONFIG_KEYS",
    "DeviceSize",
    "Settings",
    "parse_device_size",
    "resolve_settings",
]

# Pool sizes are rounded down to this (RMM's pools need 256-byte multiples;
# dask-cuda rounds the same way).
ALIGNMENT = 256

# RMMSetup's argument -> its key in the Dask config, under "rmmgo.".
CONFIG_KEYS = {
    "initial_pool_size": "pool-size",
    "maximum_pool_size": "maximum-pool-size",
    "managed_memory": "managed-memory",
    "pool_allocator": "pool-allocator",
    "async_allocator": "async",
    "release_threshold": "release-threshold",
    "log_directory": "log-directory",
    "track_allocations": "track-allocations",
    "statistics": "statistics",
}

# The defaults registered with dask.config (rmmgo.dask does it on import).
CONFIG_DEFAULTS = {
    "pool-size": None,
    "maximum-pool-size": None,
    "managed-memory": False,
    "pool-allocator": False,
    "async": False,
    "release-threshold": None,
    "log-directory": None,
    "track-allocations": False,
    "statistics": False,
}

_SIZES = ("initial_pool_size", "maximum_pool_size", "release_threshold")
_FLAGS = ("managed_memory", "pool_allocator", "async_allocator", "track_allocations", "statistics")


@dataclasses.dataclass(frozen=True)
class DeviceSize:
    """A size in bytes, or a fraction of the device's memory, known only on the worker.

    Exactly one of nbytes and fraction is set; text is the value as given.
    """

    nbytes: int = None
    fraction: float = None
    text: str = ""

    def resolve(self, total_bytes):
        """Bytes on a device of total_bytes, rounded down to ALIGNMENT."""
        n = self.nbytes if self.fraction is None else int(total_bytes * self.fraction)
        return n // ALIGNMENT * ALIGNMENT

    def __str__(self):
        return self.text


def parse_device_size(value, name="size"):
    """A DeviceSize from a number or a string, or None for "not set".

    - int: bytes. float: a fraction of the device's memory when in (0, 1]
      (as dask-cuda reads 0.8), else whole bytes (4e9).
    - str: "90%" (a percentage of the device's memory), "0.9" (a fraction,
      as dask-cuda's command line takes it), or bytes with Dask's units:
      "4GiB", "5000M", "1.5 GB".
    - None, 0 and "0 B" mean not set, as in dask-cuda.

    Raises TypeError or ValueError, naming `name`, for anything else.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise TypeError("%s must be a number of bytes or a string such as '4GiB' or '90%%', not %r" % (name, value))
    text = str(value)
    if isinstance(value, str):
        s = value.strip()
        if s.endswith("%"):
            try:
                pct = float(s[:-1])
            except ValueError:
                raise ValueError("%s=%r: not a percentage of the device's memory such as '90%%'" % (name, value)) from None
            if not 0 < pct <= 100:
                raise ValueError("%s=%r: a percentage of the device's memory must be in (0%%, 100%%]" % (name, value))
            return DeviceSize(fraction=pct / 100, text=text)
        try:
            number = float(s)
        except ValueError:
            number = None
        if number is not None and "." in s and "e" not in s.lower():
            value = number  # "0.8": a fraction, as dask-cuda's command line reads it
        else:
            try:
                value = _dask_parse_bytes(s)
            except (ValueError, TypeError) as exc:
                raise ValueError("%s=%r: %s (a size is bytes such as '4GiB' or '500MB', or '90%%')" % (name, value, exc)) from None
    if value < 0 or value != value or value == float("inf"):
        raise ValueError("%s=%r: a size cannot be negative or infinite" % (name, text))
    if value == 0:
        return None
    if isinstance(value, float) and value <= 1:
        return DeviceSize(fraction=value, text=text)
    if isinstance(value, float) and value != int(value):
        raise ValueError("%s=%r: not a whole number of bytes (a fraction of the device is at most 1.0)" % (name, text))
    n = int(value)
    if n < ALIGNMENT:
        raise ValueError("%s=%r: below %d bytes, the pools' alignment" % (name, text, ALIGNMENT))
    return DeviceSize(nbytes=n, text=text)


def _flag(value, name):
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("true", "yes", "on", "1"):
            return True
        if v in ("false", "no", "off", "0", ""):
            return False
    raise TypeError("%s must be True or False, not %r" % (name, value))


def _directory(value, name):
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError("%s must be a path, not %r" % (name, value))
    path = os.fspath(value)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    return path or None


@dataclasses.dataclass(frozen=True)
class Settings:
    """RMMSetup's checked settings (what travels to the workers)."""

    initial_pool_size: DeviceSize = None
    maximum_pool_size: DeviceSize = None
    managed_memory: bool = False
    pool_allocator: bool = False  # a PoolMemoryResource is used (asked for, or implied by initial_pool_size)
    async_allocator: bool = False
    release_threshold: DeviceSize = None
    log_directory: str = None
    track_allocations: bool = False
    statistics: bool = False

    def describe(self):
        """The settings that differ from the defaults, as RMMSetup's arguments."""
        parts = []
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v != f.default:
                parts.append("%s=%r" % (f.name, str(v) if isinstance(v, DeviceSize) else v))
        return ", ".join(parts)


def resolve_settings(**given):
    """Settings from RMMSetup's arguments; those given as None come from the Dask config.

    Raises ValueError or TypeError, naming the argument or the config key,
    for a value or a combination RMMSetup cannot apply.
    """
    unknown = set(given) - set(CONFIG_KEYS)
    if unknown:
        raise TypeError("unknown RMMSetup argument(s): %s" % ", ".join(sorted(unknown)))
    values, names = {}, {}
    for arg, key in CONFIG_KEYS.items():
        value, name = given.get(arg), arg
        if value is None:
            value = dask.config.get("rmmgo." + key, None)
            name = "Dask config rmmgo.%s" % key
        names[arg] = name
        if arg in _SIZES:
            values[arg] = parse_device_size(value, name)
        elif arg in _FLAGS:
            values[arg] = False if value is None else _flag(value, name)
        else:
            values[arg] = _directory(value, name)

    n = names
    if values["async_allocator"]:
        if values["managed_memory"]:
            raise ValueError(
                "%s cannot be combined with %s: the CUDA async allocator takes device memory from a "
                "pool of its own, never managed memory" % (n["async_allocator"], n["managed_memory"])
            )
        if values["pool_allocator"]:
            raise ValueError(
                "%s cannot be combined with %s: the async allocator is a pool already "
                "(initial_pool_size primes it)" % (n["async_allocator"], n["pool_allocator"])
            )
    elif values["release_threshold"] is not None:
        raise ValueError("%s applies to the async allocator: it needs async_allocator=True" % n["release_threshold"])
    pool = values["pool_allocator"] or (values["initial_pool_size"] is not None and not values["async_allocator"])
    if values["maximum_pool_size"] is not None and not (pool or values["async_allocator"]):
        raise ValueError(
            "%s needs a pool: give initial_pool_size, pool_allocator=True or async_allocator=True"
            % n["maximum_pool_size"]
        )
    lo, hi = values["initial_pool_size"], values["maximum_pool_size"]
    if lo is not None and hi is not None and (lo.fraction is None) == (hi.fraction is None):
        if (lo.nbytes or 0) > (hi.nbytes or 0) or (lo.fraction or 0) > (hi.fraction or 0):
            raise ValueError(
                "%s=%r exceeds %s=%r" % (n["initial_pool_size"], str(lo), n["maximum_pool_size"], str(hi))
            )
    values["pool_allocator"] = pool
    return Settings(**values)
