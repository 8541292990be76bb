"""The framework hooks import without their framework and say what is missing."""

import importlib.util

import pytest

from conftest import run_python


def test_cupy_hook_without_cupy():
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("cupy is installed")
    from rmmgo.allocators import cupy as hook

    with pytest.raises(ModuleNotFoundError):
        hook.rmm_cupy_allocator(16)
    with pytest.raises(ModuleNotFoundError):
        hook.make_cupy_allocator()


def test_torch_hook_without_torch():
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is installed")
    from rmmgo.allocators import torch as hook

    assert hook.rmm_torch_allocator is None
    assert "PyTorch" in hook.torch_allocator_error


def test_torch_shim_is_found_beside_the_library():
    import os

    from rmmgo import _lib

    try:
        shim = _lib.torch_shim_path()
    except _lib.LibraryNotFoundError as exc:
        pytest.skip(str(exc))
    assert os.path.basename(shim) == "librmmgo_torch.so"


def test_numba_plugin_shape():
    if importlib.util.find_spec("numba") is None:
        pytest.skip("numba is not installed")
    r = run_python(
        "import rmmgo.allocators.numba as n\n"
        "m = n.RMMNumbaManager.__new__(n.RMMNumbaManager)\n"
        "info = m.get_memory_info()\n"
        "assert info.free > 0 and info.total >= info.free, info\n"
        "assert n._numba_memory_manager is n.RMMNumbaManager\n"
        "assert n.RMMNumbaManager.interface_version.fget(m) == 1\n"
        "for name in ('memalloc', 'get_ipc_handle', 'initialize', 'reset', 'defer_cleanup'):\n"
        "    assert name in vars(n.RMMNumbaManager), name\n"
        "print('ok')\n"
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


# A stand-in for the parts of CuPy that rmm_cupy_allocator calls, so that its
# path runs without a GPU: the real CuPy runs it in test_frameworks.py.
_FAKE_CUPY = r'''
import sys, types
cupy = types.ModuleType("cupy")
cuda = types.ModuleType("cupy.cuda")
class Stream:
    def __init__(self, ptr): self.ptr = ptr
current = [Stream(0)]
cuda.get_current_stream = lambda: current[0]
cuda.device = types.SimpleNamespace(get_device_id=lambda: 0)
class UnownedMemory:
    def __init__(self, ptr, size, owner, device_id=-1):
        assert device_id >= 0, "the device id must be given, not looked up"
        self.ptr, self.size, self._owner, self.device_id = ptr, size, owner, device_id
cuda.UnownedMemory = UnownedMemory
class MemoryPointer:
    def __init__(self, mem, offset): self.mem, self.ptr = mem, mem.ptr + offset
cuda.memory = types.SimpleNamespace(MemoryPointer=MemoryPointer)
cupy.cuda = cuda
sys.modules["cupy"], sys.modules["cupy.cuda"] = cupy, cuda
'''


def test_cupy_allocator_path_without_a_gpu():
    code = _FAKE_CUPY + r'''
import rmmgo as rmm
from rmmgo import mr
from rmmgo.allocators.cupy import rmm_cupy_allocator, make_cupy_allocator
stats = mr.StatisticsResourceAdaptor(mr.CudaMemoryResource())
mr.set_current_device_resource(stats)
p = rmm_cupy_allocator(1000)
buf = p.mem._owner
assert isinstance(buf, rmm.DeviceBuffer) and buf.size == 1000 and buf.ptr == p.ptr != 0
assert buf.mr is stats and buf.stream is rmm.DEFAULT_STREAM
assert stats.allocation_counts.current_bytes == 1000
current[0] = Stream(0x1234)  # a stream of CuPy's own: freed on it
q = rmm_cupy_allocator(24)
assert q.mem._owner.stream.handle == 0x1234 and q.mem._owner.stream._owner is current[0]
current[0] = Stream(0)
z = rmm_cupy_allocator(0)
assert z.ptr == 0 and z.mem.device_id == 0
del p, buf, q, z
assert stats.allocation_counts.current_bytes == 0
other = mr.StatisticsResourceAdaptor(mr.CudaMemoryResource())
r = make_cupy_allocator(other)(512)
assert r.mem._owner.mr is other and other.allocation_counts.current_bytes == 512
try:
    make_cupy_allocator(mr="not a resource")
except TypeError:
    pass
else:
    raise AssertionError("a bad mr was taken")
lim = mr.LimitingResourceAdaptor(mr.CudaMemoryResource(), allocation_limit=1024)
try:
    make_cupy_allocator(lim)(4096)
except MemoryError as exc:
    assert isinstance(exc, rmm.OutOfMemoryError), type(exc)
else:
    raise AssertionError("no MemoryError")
try:
    rmm_cupy_allocator(-1)
except OverflowError:
    pass
else:
    raise AssertionError("a negative size was taken")
print("ok")
'''
    res = run_python(code)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().endswith("ok")
