"""librmmgo_torch.so: PyTorch's allocator entry points throw on failure instead of returning NULL.

A small C++ program stands in for PyTorch's CUDAPluggableAllocator, which
calls the alloc function and lets its C++ exception travel up to PyTorch's
Python layer (where it becomes a RuntimeError).
"""

import ctypes
import os
import shutil
import subprocess

import pytest

from rmmgo import _lib

CXX = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")

DRIVER = r"""
#include <cstddef>
#include <cstdio>
#include <new>
#include <stdexcept>
extern "C" void* rmmgo_torch_allocate(size_t size, int device, void* stream);
extern "C" void rmmgo_torch_deallocate(void* ptr, size_t size, int device, void* stream);
int main() {
  void* p = rmmgo_torch_allocate(1 << 20, 0, nullptr);
  if (p == nullptr) { std::puts("FAIL: NULL for 1 MiB"); return 1; }
  rmmgo_torch_deallocate(p, 1 << 20, 0, nullptr);
  if (rmmgo_torch_allocate(0, 0, nullptr) != nullptr) { std::puts("FAIL: 0 bytes gave memory"); return 1; }
  rmmgo_torch_deallocate(nullptr, 0, 0, nullptr);
  try {
    rmmgo_torch_allocate((size_t)1 << 52, 0, nullptr);
    std::puts("FAIL: no exception");
    return 1;
  } catch (const std::bad_alloc& e) {
    std::printf("bad_alloc|%s\n", e.what());
  } catch (const std::exception& e) {
    std::printf("exception|%s\n", e.what());
  }
  try {
    rmmgo_torch_allocate(64, 1000, nullptr);
    std::puts("FAIL: no exception for a bad device");
    return 1;
  } catch (const std::bad_alloc& e) {
    std::printf("bad_alloc|%s\n", e.what());
  } catch (const std::exception& e) {
    std::printf("exception|%s\n", e.what());
  }
  return 0;
}
"""


@pytest.fixture(scope="module")
def shim():
    try:
        return _lib.torch_shim_path()
    except _lib.LibraryNotFoundError as exc:
        if CXX is None:
            pytest.skip("no C++ compiler, so no librmmgo_torch.so")
        pytest.fail("librmmgo_torch.so is missing (make torch-shim): %s" % exc)


def test_shim_exports_the_pluggable_allocator_functions(shim):
    lib = ctypes.CDLL(shim)
    assert lib.rmmgo_torch_allocate and lib.rmmgo_torch_deallocate


@pytest.mark.skipif(CXX is None, reason="needs a C++ compiler")
def test_allocation_failure_throws_with_the_library_message(shim, tmp_path):
    src = tmp_path / "driver.cpp"
    src.write_text(DRIVER)
    exe = tmp_path / "driver"
    shim_dir = os.path.dirname(shim)
    subprocess.run(
        [CXX, "-std=c++17", "-o", str(exe), str(src), shim, "-Wl,-rpath," + shim_dir],
        check=True,
    )
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    # Two records "kind|message"; an out-of-memory message spans lines (its
    # report follows RMM's wording, docs/out-of-memory.md).
    out = r.stdout.strip()
    first, sep, second = out.partition("\nexception|")
    assert sep, r.stdout
    kind, msg = first.split("|", 1)
    assert kind == "bad_alloc", first  # out of memory
    assert msg.startswith("rmmgo: cannot allocate %d bytes on device 0: " % (1 << 52))
    assert len(msg) > len("rmmgo: cannot allocate %d bytes on device 0: " % (1 << 52)) + 5
    assert "\n  reading: " in msg, msg
    assert "device 1000" in second and "\n" not in second, second


def test_shim_binds_to_the_loaded_library(shim):
    """The shim must use this process's librmmgo.so (one registry), not a second copy."""
    import rmmgo as rmm
    from rmmgo import mr

    lib = ctypes.CDLL(shim)
    alloc, free = lib.rmmgo_torch_allocate, lib.rmmgo_torch_deallocate
    alloc.restype, alloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    free.restype, free.argtypes = None, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    stats = mr.StatisticsResourceAdaptor(mr.CudaMemoryResource())
    mr.set_current_device_resource(stats)
    # Only a call that succeeds: a C++ exception must never reach ctypes.
    p = alloc(4096, 0, None)
    assert p
    assert stats.allocation_counts.current_bytes == 4096
    free(p, 4096, 0, None)
    assert stats.allocation_counts.current_bytes == 0
    assert rmm.DeviceBuffer(size=1).mr is stats
