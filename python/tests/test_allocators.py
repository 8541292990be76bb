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
