"""The binding layer: every C function declared, structures laid out as in C, errors mapped."""

import ctypes
import os
import re
import shutil
import subprocess

import pytest

import rmmgo
from rmmgo import _bindings as b
from conftest import INCLUDE_DIR, PACKAGE_DIR, needs_source, run_python

HEADER = os.path.join(INCLUDE_DIR, "rmmgo.h")


def header_functions():
    with open(HEADER) as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    # Macros (with their continuation lines) are not functions.
    text = re.sub(r"^[ \t]*#[^\n]*(\\\n[^\n]*)*", "", text, flags=re.M)
    names = set(re.findall(r"\b(rmm_[a-z0-9_]+)\s*\(", text))
    # typedef'd function-pointer names are written "(*name)(", not "name(".
    return {n for n in names if not n.endswith("_callback")}


@needs_source
def test_every_header_function_is_declared_once():
    declared = set(b.FUNCTIONS)
    in_header = header_functions()
    assert in_header, "no functions found in the header"
    assert in_header - declared == set(), "declare these in _bindings.FUNCTIONS"
    assert declared - in_header == set(), "these are not in include/rmmgo.h"
    for name in declared:
        fn = getattr(b.lib, name)
        assert fn.argtypes is not None, name


def test_every_library_symbol_exists():
    for name in b.FUNCTIONS:
        assert ctypes.cast(getattr(b.lib, name), ctypes.c_void_p).value, name


def test_version_matches_package():
    assert rmmgo.library_version() == b.lib.rmm_version().decode()
    assert b.lib.rmm_version_number() // 10000 == 0
    assert rmmgo.__version__.split(".")[0] == str(b.lib.rmm_version_number() // 10000)


_LAYOUT_C = r"""
#include <stdio.h>
#include <stddef.h>
#include "rmmgo.h"
#define F(s, f) printf(#f " %zu %zu\n", offsetof(s, f), sizeof(((s*)0)->f));
int main(void) {
  printf("sizeof %zu\n", sizeof(rmm_resource_options));
  %FIELDS%
  printf("stats %zu %zu %zu %zu\n", sizeof(rmm_statistics), offsetof(rmm_statistics, bytes),
         offsetof(rmm_statistics, count), sizeof(rmm_counter));
  return 0;
}
"""


@needs_source
@pytest.mark.skipif(not shutil.which("cc"), reason="needs a C compiler")
def test_struct_layouts_match_the_header(tmp_path):
    fields = [f[0] for f in b.ResourceOptions._fields_]
    src = _LAYOUT_C.replace("%FIELDS%", "\n  ".join("F(rmm_resource_options, %s)" % f for f in fields))
    c = tmp_path / "layout.c"
    c.write_text(src)
    exe = tmp_path / "layout"
    subprocess.run(["cc", "-I", INCLUDE_DIR, "-o", str(exe), str(c)], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split("\n")
    got = dict((ln.split()[0], tuple(map(int, ln.split()[1:]))) for ln in out if ln)
    assert got["sizeof"] == (ctypes.sizeof(b.ResourceOptions),)
    for name, _ in b.ResourceOptions._fields_:
        desc = getattr(b.ResourceOptions, name)
        assert got[name] == (desc.offset, desc.size), name
    s = b.StatisticsStruct
    assert got["stats"] == (ctypes.sizeof(s), s.bytes.offset, s.count.offset, ctypes.sizeof(b.Counter))


def test_options_defaults_come_from_the_library():
    o = b.ResourceOptions.defaults()
    assert o.struct_size == ctypes.sizeof(b.ResourceOptions)
    assert o.initial_pool_size == b.SIZE_DEFAULT
    assert o.min_size_exponent == -1 and o.max_size_exponent == -1
    assert o.alignment == 256


@pytest.mark.parametrize(
    "status, exc",
    [
        (b.Status.ERROR_OUT_OF_MEMORY, MemoryError),
        (b.Status.ERROR_BAD_ALLOC, MemoryError),
        (b.Status.ERROR_BAD_ALIGNMENT, MemoryError),
        (b.Status.ERROR_INVALID_ARGUMENT, ValueError),
        (b.Status.ERROR_OUT_OF_RANGE, IndexError),
        (b.Status.ERROR_INVALID_HANDLE, RuntimeError),
        (b.Status.ERROR_CUDA, RuntimeError),
        (b.Status.ERROR_INTERNAL, RuntimeError),
    ],
)
def test_status_to_exception(status, exc):
    with pytest.raises(exc) as info:
        b.raise_for_status(status)
    assert isinstance(info.value, rmmgo.RMMError)
    assert info.value.status == status
    assert str(info.value)  # the library's message, or at least the status name


def test_out_of_memory_carries_the_library_message():
    mr = rmmgo.mr.LimitingResourceAdaptor(rmmgo.mr.CudaMemoryResource(), allocation_limit=1 << 20)
    with pytest.raises(MemoryError) as info:
        mr.allocate(2 << 20)
    assert isinstance(info.value, rmmgo.OutOfMemoryError)
    assert info.value.status == b.Status.ERROR_OUT_OF_MEMORY
    assert str(info.value) == b.last_error_message()
    assert str(info.value)


def test_bad_alignment_is_memory_error():
    mr = rmmgo.mr.CudaMemoryResource()
    out = ctypes.c_void_p()
    with pytest.raises(MemoryError):
        b.lib.rmm_allocate(mr.handle, None, 1024, 3, ctypes.byref(out))


def test_stale_handle_is_runtime_error():
    mr = rmmgo.mr.CudaMemoryResource()
    h = mr.handle
    b.lib.rmm_resource_retain(h)
    b.lib.rmm_resource_release(h)
    del mr
    import gc

    gc.collect()
    with pytest.raises(RuntimeError) as info:
        b.lib.rmm_resource_retain(h)
    assert info.value.status == b.Status.ERROR_INVALID_HANDLE


def test_invalid_device_is_runtime_error():
    with pytest.raises(RuntimeError) as info:
        b.lib.rmm_set_device(1000)
    assert info.value.status == b.Status.ERROR_INVALID_DEVICE


def test_exceptions_pickle():
    import pickle

    e = rmmgo.OutOfMemoryError(b.Status.ERROR_OUT_OF_MEMORY, "no room")
    e2 = pickle.loads(pickle.dumps(e))
    assert type(e2) is type(e) and str(e2) == "no room" and e2.status == e.status
    assert str(rmmgo.RMMError(3, "x")) == "x"
    assert str(rmmgo.RMMError("plain")) == "plain"


def _load_lib_module():
    return (
        "import importlib.util, sys\n"
        "spec = importlib.util.spec_from_file_location('L', %r)\n"
        "L = importlib.util.module_from_spec(spec); spec.loader.exec_module(L)\n"
        % os.path.join(PACKAGE_DIR, "_lib.py")
    )


def test_library_not_found_lists_what_was_tried(tmp_path):
    code = _load_lib_module() + (
        "L._PACKAGE_DIR = %r\nL._CHECKOUT_BUILD_DIR = %r\n"
        "try:\n    L.load()\nexcept L.LibraryNotFoundError as e:\n    print(e)\nelse:\n    print('LOADED', L.path())\n"
    ) % (str(tmp_path), str(tmp_path))
    r = run_python(code, env={"RMMGO_LIBRARY": str(tmp_path / "nope" / "librmmgo.so"), "LD_LIBRARY_PATH": ""})
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "LOADED" not in out
    assert "beside the package" in out and "$RMMGO_LIBRARY" in out and "nope" in out
    assert "dynamic loader" in out and "build directory" in out
    assert "make lib" in out


def test_library_found_through_environment_variable(tmp_path):
    code = _load_lib_module() + "L._PACKAGE_DIR = %r\nL.load()\nprint(L.path())\n" % str(tmp_path)
    r = run_python(code, env={"RMMGO_LIBRARY": rmmgo.library_path()})
    assert r.returncode == 0, r.stderr
    assert os.path.samefile(r.stdout.strip(), rmmgo.library_path())


def test_importing_rmmgo_imports_no_framework():
    r = run_python(
        "import sys, rmmgo, rmmgo.allocators\n"
        "print(sorted(m for m in ('cupy', 'numba', 'torch', 'numpy') if m in sys.modules))"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


@pytest.mark.skipif(not shutil.which("cc"), reason="needs a C compiler")
def test_pip_cuda_runtime_is_preloaded_only_when_nothing_else_provides_one(tmp_path):
    # A stand-in for NVIDIA's pip package: site/nvidia/cuda_runtime/lib/libcudart.so.12.
    lib = tmp_path / "site" / "nvidia" / "cuda_runtime" / "lib"
    lib.mkdir(parents=True)
    src = tmp_path / "fake.c"
    src.write_text("int rmmgo_fake_cudart(void) { return 12; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libcudart.so.12", "-o", str(lib / "libcudart.so.12"), str(src)], check=True)
    code = _load_lib_module() + (
        "import ctypes.util\n"
        "print('SYSTEM' if ctypes.util.find_library('cudart') else 'NONE')\n"
        "print(L._preload_pip_cuda_runtime([%r]))\n"
    ) % str(tmp_path / "site")
    for env, expect_loaded in (
        ({"RMMGO_BACKEND": "cuda"}, True),
        ({"RMMGO_BACKEND": "simulated"}, False),
        ({"RMMGO_BACKEND": "cuda", "RMMGO_CUDART_LIBRARY": "/x/libcudart.so"}, False),
    ):
        r = run_python(code, env=env)
        assert r.returncode == 0, r.stderr
        system, got = r.stdout.split()
        if system == "SYSTEM":
            pytest.skip("this machine has a system libcudart: the pip one is never needed")
        assert got == (str(lib / "libcudart.so.12") if expect_loaded else "None"), (env, r.stdout)


def test_allocate_direct_returns_the_pointer_and_keeps_the_status():
    res = rmmgo.mr.PoolMemoryResource(rmmgo.mr.CudaMemoryResource(), 1 << 20)
    p = b.lib.rmm_allocate_direct(res.handle, None, 1000)
    assert p and p % 256 == 0
    assert b.lib.rmm_last_error_status() == b.Status.SUCCESS
    assert b.lib.rmm_deallocate_direct(res.handle, None, p, 1000) == b.Status.SUCCESS
    # The same block again: the pool knows it is not handed out any more.
    assert b.lib.rmm_deallocate_direct(res.handle, None, p, 1000) == b.Status.ERROR_INVALID_POINTER
    # Zero bytes: NULL and success.
    assert b.lib.rmm_allocate_direct(res.handle, None, 0) is None
    assert b.lib.rmm_last_error_status() == b.Status.SUCCESS
    b.raise_for_last_status()  # nothing to raise


def test_allocate_direct_failures_leave_status_and_message():
    lim = rmmgo.mr.LimitingResourceAdaptor(rmmgo.mr.CudaMemoryResource(), allocation_limit=1 << 20)
    assert b.lib.rmm_allocate_direct(lim.handle, None, 2 << 20) is None
    assert b.lib.rmm_last_error_status() == b.Status.ERROR_OUT_OF_MEMORY
    assert "limit" in b.last_error_message().lower()
    with pytest.raises(rmmgo.OutOfMemoryError):
        b.raise_for_last_status(allocating=True)
    # A handle that was never made: refused, not followed.
    assert b.lib.rmm_allocate_direct(0x1234567, None, 64) is None
    assert b.lib.rmm_last_error_status() == b.Status.ERROR_INVALID_HANDLE
    # A size no resource can have (the binding's sizes are plain pointers).
    assert b.lib.rmm_allocate_direct(lim.handle, None, -1) is None
    assert b.lib.rmm_last_error_status() != b.Status.SUCCESS


def test_current_resource_token_names_device_and_generation():
    t0 = b.lib.rmm_current_resource_token()
    assert t0 != 0 and t0 & 0xFFFF == 0  # device 0 current
    assert b.lib.rmm_current_resource_token() == t0  # nothing changed
    res = rmmgo.mr.CudaMemoryResource()
    rmmgo.mr.set_current_device_resource(res)
    t1 = b.lib.rmm_current_resource_token()
    assert t1 >> 16 > t0 >> 16
    rmmgo.mr.reset_current_device_resource()
    assert b.lib.rmm_current_resource_token() >> 16 > t1 >> 16


# ------------------------------------------------- messages in Python's words


def test_python_words_spell_c_constants_as_python_does():
    assert b.python_words("x is 0: give a size, or RMM_SIZE_DEFAULT for the default") == (
        "x is 0: give a size, or None for the default"
    )
    assert b.python_words("only RMM_STREAM_SYNC_DEFAULT (0) and RMM_STREAM_NON_BLOCKING (1)") == (
        "only CudaStreamFlags.SYNC_DEFAULT (0) and CudaStreamFlags.NON_BLOCKING (1)"
    )
    assert b.python_words("RMM_ERROR_OUT_OF_MEMORY") == "Status.ERROR_OUT_OF_MEMORY"
    assert b.python_words("no file name and no RMM_LOG_FILE") == "no file name and no RMM_LOG_FILE"  # a variable


def test_a_status_without_message_is_named_as_python_names_it():
    with pytest.raises(rmmgo.RMMError) as info:
        b.raise_for_status(b.Status.ERROR_NOT_SUPPORTED, "x")
    assert "RMM_" not in str(info.value)


@needs_source
def test_no_c_constant_in_the_library_messages_reaches_python():
    """Every constant of rmmgo.h that a message of the library's Go code names is
    in Python's words: a message that starts naming a new one fails here until
    python_words knows it."""
    with open(os.path.join(INCLUDE_DIR, "rmmgo.h")) as f:
        header = set(re.findall(r"\b(RMM_[A-Z0-9_]+)\b", f.read()))
    named = {}
    for sub in ("capi", "core", "cudart"):
        for root, _, files in os.walk(os.path.join(INCLUDE_DIR, "..", sub)):
            for name in files:
                if not name.endswith(".go") or name.endswith("_test.go"):
                    continue
                with open(os.path.join(root, name)) as f:
                    for lit in re.findall(r'"((?:[^"\\\n]|\\.)*)"', f.read()):
                        for c in re.findall(r"\b(RMM_[A-Z0-9_]+)\b", lit):
                            if c in header:
                                named.setdefault(c, os.path.join(sub, name))
    if not named:
        pytest.skip("no library sources beside include/ (the GPU bundle has none)")
    assert "RMM_SIZE_DEFAULT" in named
    left = {c: where for c, where in named.items() if c not in b.C_NAMES_KEPT and c in b.python_words(c)}
    assert not left, "C constants in the library's messages that python_words leaves in C's words: %s" % left
