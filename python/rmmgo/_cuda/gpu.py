"""Device queries, as RMM's ``rmm._cuda.gpu``, answered by librmmgo.so.

RMM calls cuda-python here; rmmgo asks its own library instead, so these
work without cuda-python and on the simulated device alike, and agree with
what the memory resources see. Failures raise CUDARuntimeError (or
CUDADriverError for deviceGetName), RuntimeErrors as in RMM, with
``status`` the CUDA error code (a cuda-python ``cudaError_t`` where
cuda-python is installed, else an int) and the library's message.
"""

import ctypes
import enum
import os
from ctypes import byref, c_int

from .. import _bindings as _b

__all__ = [
    "CUDARuntimeError",
    "CUDADriverError",
    "cudaDeviceAttr",
    "driverGetVersion",
    "getDevice",
    "setDevice",
    "runtimeGetVersion",
    "getDeviceCount",
    "getDeviceAttribute",
    "deviceGetName",
    "deviceGetUUID",
]


class cudaDeviceAttr(enum.IntEnum):
    """The cudaDeviceAttr values rmmgo and RMM's users ask about most.

    getDeviceAttribute takes these, cuda-python's
    ``runtime.cudaDeviceAttr`` members, or plain ints.
    """

    cudaDevAttrMultiProcessorCount = 16
    cudaDevAttrIntegrated = 18
    cudaDevAttrComputeCapabilityMajor = 75
    cudaDevAttrComputeCapabilityMinor = 76
    cudaDevAttrManagedMemory = 83
    cudaDevAttrHostNativeAtomicSupported = 86
    cudaDevAttrPageableMemoryAccess = 88
    cudaDevAttrConcurrentManagedAccess = 89
    cudaDevAttrPageableMemoryAccessUsesHostPageTables = 100
    cudaDevAttrDirectManagedMemAccessFromHost = 101
    cudaDevAttrMemoryPoolsSupported = 115
    cudaDevAttrMemoryPoolSupportedHandleTypes = 119


# CUDA error codes for the library's statuses (cudaError_t values).
_CUDA_SUCCESS = 0
_CUDA_ERROR_INVALID_VALUE = 1
_CUDA_ERROR_NO_DEVICE = 100
_CUDA_ERROR_INVALID_DEVICE = 101
_CUDA_ERROR_UNKNOWN = 999
_STATUS_TO_CUDA = {
    _b.Status.ERROR_INVALID_ARGUMENT: _CUDA_ERROR_INVALID_VALUE,
    _b.Status.ERROR_INVALID_DEVICE: _CUDA_ERROR_INVALID_DEVICE,
    _b.Status.ERROR_BACKEND_UNAVAILABLE: _CUDA_ERROR_NO_DEVICE,
}


def _cuda_python_enum(module, enum_name, code):
    """cuda-python's enum member for code, when cuda-python is installed; else code."""
    try:
        from cuda.bindings import driver, runtime
    except ImportError:
        return code
    try:
        return getattr({"runtime": runtime, "driver": driver}[module], enum_name)(code)
    except (AttributeError, ValueError):
        return code


class _CUDAError(RuntimeError):
    """A failed CUDA call; ``status`` is its error code."""

    _what = "CUDA"

    def __init__(self, status, msg=None):
        self.status = status
        if msg is None:
            msg = "%s error %d" % (self._what, int(status))
        self.msg = msg
        super().__init__(msg)

    def __reduce__(self):
        return (type(self), (self.status, self.msg))


class CUDARuntimeError(_CUDAError):
    """A CUDA runtime call failed; ``status`` is the cudaError_t."""

    _what = "CUDA runtime"


class CUDADriverError(_CUDAError):
    """A CUDA driver call failed; ``status`` is the CUresult."""

    _what = "CUDA driver"


def _query(fn, *args):
    """Call a status-returning library function; CUDARuntimeError on failure."""
    try:
        fn(*args)
    except _b.RMMError as exc:
        code = _STATUS_TO_CUDA.get(exc.status, _CUDA_ERROR_UNKNOWN)
        raise CUDARuntimeError(_cuda_python_enum("runtime", "cudaError_t", code), str(exc)) from None


def _int_query(fn, *args):
    v = c_int()
    _query(fn, *args, byref(v))
    return v.value


def driverGetVersion():
    """The CUDA version the driver supports, 1000 * major + 10 * minor (0 without a driver)."""
    return _int_query(_b.lib.rmm_driver_version)


def runtimeGetVersion():
    """The CUDA runtime's version, 1000 * major + 10 * minor (e.g. 12050 for 12.5)."""
    return _int_query(_b.lib.rmm_runtime_version)


def getDevice():
    """The calling thread's current device."""
    return _int_query(_b.lib.rmm_get_device)


def setDevice(device):
    """Make `device` the calling thread's current device."""
    _query(_b.lib.rmm_set_device, int(device))


def getDeviceCount():
    """The number of devices."""
    return _int_query(_b.lib.rmm_get_device_count)


def getDeviceAttribute(attr, device):
    """The value of device attribute `attr` (cudaDeviceAttr: cuda-python's, ours, or an int) of `device`."""
    v = c_int()
    _query(_b.lib.rmm_device_get_attribute, byref(v), int(attr), int(device))
    return v.value


_SIMULATED_NAME = "rmmgo simulated device"
_cuda_driver = None


def _driver():
    """libcuda, loaded once (the driver API, for the device name only)."""
    global _cuda_driver
    if _cuda_driver is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise CUDADriverError(_cuda_python_enum("driver", "CUresult", 100), "cannot load libcuda.so.1: %s" % exc) from None
        lib.cuInit.argtypes = [ctypes.c_uint]
        lib.cuDeviceGet.argtypes = [ctypes.POINTER(c_int), c_int]
        lib.cuDeviceGetName.argtypes = [ctypes.c_char_p, c_int, c_int]
        for f in (lib.cuInit, lib.cuDeviceGet, lib.cuDeviceGetName):
            f.restype = c_int
        # cuDeviceGetUuid_v2 (CUDA 11.4 and later) gives a MIG instance's
        # own UUID; cuDeviceGetUuid, its GPU's.
        for name in ("cuDeviceGetUuid_v2", "cuDeviceGetUuid"):
            f = getattr(lib, name, None)
            if f is not None:
                f.argtypes = [ctypes.c_char_p, c_int]
                f.restype = c_int
        _cuda_driver = lib
    return _cuda_driver


def _driver_check(what, code):
    if code != _CUDA_SUCCESS:
        raise CUDADriverError(_cuda_python_enum("driver", "CUresult", code), "%s failed: CUresult %d" % (what, code))


def _existing_device(device):
    """int(device), or CUDADriverError (CUDA_ERROR_INVALID_DEVICE) when there is no such device."""
    device = int(device)
    count = getDeviceCount()
    if not 0 <= device < count:
        raise CUDADriverError(
            _cuda_python_enum("driver", "CUresult", _CUDA_ERROR_INVALID_DEVICE),
            "device %d does not exist (there are %d)" % (device, count),
        )
    return device


def deviceGetName(device):
    """The device's name, e.g. "NVIDIA H100 80GB HBM3" (on the simulated device, "rmmgo simulated device")."""
    device = _existing_device(device)
    if _b.backend_name() == "simulated":
        return _SIMULATED_NAME
    lib = _driver()
    _driver_check("cuInit", lib.cuInit(0))
    dev = c_int()
    _driver_check("cuDeviceGet", lib.cuDeviceGet(byref(dev), device))
    buf = ctypes.create_string_buffer(256)
    _driver_check("cuDeviceGetName", lib.cuDeviceGetName(buf, 256, dev.value))
    return buf.value.decode()


def _uuid_text(raw, prefix="GPU"):
    """A CUDA UUID's 16 bytes as nvidia-smi and NVML write them: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx."""
    h = bytes(raw).hex()
    if len(h) != 32:
        raise ValueError("a CUDA UUID has 16 bytes, not %d" % (len(h) // 2))
    return "%s-%s-%s-%s-%s-%s" % (prefix, h[:8], h[8:12], h[12:16], h[16:20], h[20:])


def _visible_entry(device):
    """The CUDA_VISIBLE_DEVICES entry that CUDA numbers `device` ("" when the variable does not name it)."""
    entries = [e.strip() for e in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")]
    entries = [e for e in entries if e]
    return entries[device] if device < len(entries) else ""


def deviceGetUUID(device):
    """The device's UUID as nvidia-smi -L and NVML write it, e.g. "GPU-e1006a74-5836-264f-5c26-53d19d212dfe".

    The same GPU has the same UUID in every process, however
    CUDA_VISIBLE_DEVICES numbers it (unlike its index, or PCI bus numbers,
    which two GPUs of one machine may share across domains); a MIG
    instance named by CUDA_VISIBLE_DEVICES has its own "MIG-..." UUID.
    Read with the driver's cuDeviceGetUuid. On the simulated device:
    "GPU-00000000-0000-0000-0000-00000000000N", N the device's number before
    CUDA_VISIBLE_DEVICES renumbers it (so the worker processes of a
    LocalGPUCluster, each with its GPU first, tell their GPUs apart as on a
    GPU machine).
    """
    device = _existing_device(device)
    entry = _visible_entry(device)
    if _b.backend_name() == "simulated":
        number = int(entry) if entry.isdigit() else device
        return _uuid_text(number.to_bytes(16, "big"))
    lib = _driver()
    get = getattr(lib, "cuDeviceGetUuid_v2", None) or getattr(lib, "cuDeviceGetUuid", None)
    if get is None:
        raise CUDADriverError(_cuda_python_enum("driver", "CUresult", _CUDA_ERROR_UNKNOWN), "libcuda has no cuDeviceGetUuid")
    _driver_check("cuInit", lib.cuInit(0))
    dev = c_int()
    _driver_check("cuDeviceGet", lib.cuDeviceGet(byref(dev), device))
    raw = ctypes.create_string_buffer(16)
    _driver_check("cuDeviceGetUuid", get(raw, dev.value))
    return _uuid_text(raw.raw, "MIG" if entry.startswith("MIG-") else "GPU")
