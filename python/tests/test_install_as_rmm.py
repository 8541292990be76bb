"""rmmgo.install_as_rmm(): unmodified RMM imports resolve to rmmgo's modules.

Each case runs in a fresh interpreter: aliasing changes sys.modules for the
whole process.
"""

import json
import os

from conftest import PYTHON_DIR, run_python


def _path_with(site):
    """PYTHONPATH with `site` first, then where rmmgo comes from."""
    return os.pathsep.join(p for p in (str(site), PYTHON_DIR, os.environ.get("PYTHONPATH")) if p)


def _run(code, env=None):
    r = run_python(code, env=env)
    assert r.returncode == 0, "stdout:\n%s\nstderr:\n%s" % (r.stdout, r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_rmm_imports_are_rmmgo_modules():
    got = _run(
        """
import json, sys
import rmmgo
rmmgo.install_as_rmm()
import rmm
import rmm.mr
import rmm.mr.experimental
import rmm.statistics
import rmm.allocators.cupy
from rmm.allocators.cupy import rmm_cupy_allocator
from rmm.pylibrmm.stream import Stream, DEFAULT_STREAM
from rmm.pylibrmm.device_buffer import DeviceBuffer, copy_ptr_to_host
from rmm.pylibrmm.memory_resource._memory_resource import _flush_logs
from rmm.pylibrmm.logger import level_enum
from rmm.pylibrmm.cuda_stream_pool import CudaStreamPool
from rmm.librmm._logger import level_enum as level_enum2
from rmm.rmm import RMMError, reinitialize
from rmm._cuda.gpu import getDevice, CUDARuntimeError
import rmm._cuda.gpu
import rmm.pylibrmm.memory_resource as pmr
same = {
    "rmm": rmm is rmmgo,
    "rmm.mr": rmm.mr is rmmgo.mr and sys.modules["rmm.mr"] is rmmgo.mr,
    "experimental": rmm.mr.experimental is rmmgo.mr.experimental,
    "statistics": rmm.statistics is rmmgo.statistics,
    "cupy": rmm_cupy_allocator is rmmgo.allocators.cupy.rmm_cupy_allocator,
    "Stream": Stream is rmmgo.Stream and DEFAULT_STREAM is rmmgo.DEFAULT_STREAM,
    "DeviceBuffer": DeviceBuffer is rmmgo.DeviceBuffer is rmm.DeviceBuffer,
    "pmr": pmr.PoolMemoryResource is rmmgo.mr.PoolMemoryResource,
    "logger": level_enum is level_enum2 is rmmgo.level_enum,
    "rmm.rmm": reinitialize is rmmgo.reinitialize and RMMError is rmmgo.RMMError,
    "gpu": rmm._cuda.gpu is rmmgo._cuda.gpu and getDevice() == 0,
    "spec": rmmgo.mr.__spec__.name == "rmmgo.mr" and rmmgo.__name__ == "rmmgo",
}
# The aliased package works as RMM code uses it.
rmm.reinitialize(pool_allocator=True, initial_pool_size="4MiB")
buf = rmm.DeviceBuffer.to_device(b"hello")
same["works"] = buf.tobytes() == b"hello" and type(rmm.mr.get_current_device_resource()) is rmm.mr.PoolMemoryResource
print(json.dumps(same))
"""
    )
    assert got == {k: True for k in got}, got


def test_install_is_idempotent_and_catches_up_modules_imported_first():
    got = _run(
        """
import json, sys
import rmmgo.statistics
a = rmmgo.install_as_rmm()
b = rmmgo.install_as_rmm()
print(json.dumps({"same": a is b is rmmgo, "stats": sys.modules.get("rmm.statistics") is rmmgo.statistics,
                  "finders": sum(type(f).__name__ == "_AliasFinder" for f in sys.meta_path)}))
"""
    )
    assert got == {"same": True, "stats": True, "finders": 1}


def test_nothing_is_aliased_unless_asked():
    got = _run(
        """
import json, sys, importlib.util
import rmmgo, rmmgo.mr, rmmgo.pylibrmm.stream
spec = importlib.util.find_spec("rmm")
print(json.dumps({"modules": sorted(m for m in sys.modules if m == "rmm" or m.startswith("rmm.")),
                  "finder": any(type(f).__name__ == "_AliasFinder" for f in sys.meta_path),
                  "found_rmmgo": bool(spec and spec.origin and "rmmgo" in spec.origin)}))
"""
    )
    assert got == {"modules": [], "finder": False, "found_rmmgo": False}


def test_refuses_when_a_real_rmm_is_imported(tmp_path):
    fake = tmp_path / "site" / "rmm"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("REAL = True\n")
    got = _run(
        """
import json
import rmm
import rmmgo
try:
    rmmgo.install_as_rmm()
except ImportError as exc:
    print(json.dumps({"refused": True, "message": str(exc), "still_real": getattr(rmm, "REAL", False)}))
else:
    print(json.dumps({"refused": False}))
""",
        env={"PYTHONPATH": _path_with(tmp_path / "site")},
    )
    assert got["refused"] and got["still_real"]
    assert "already imported" in got["message"] and str(fake) in got["message"]


def test_aliasing_wins_over_an_installed_rmm_not_yet_imported(tmp_path):
    fake = tmp_path / "site" / "rmm"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("REAL = True\n")
    got = _run(
        """
import json
import rmmgo
rmmgo.install_as_rmm()
import rmm
print(json.dumps({"rmmgo": rmm is rmmgo}))
""",
        env={"PYTHONPATH": _path_with(tmp_path / "site")},
    )
    assert got == {"rmmgo": True}


def test_uninstall():
    got = _run(
        """
import json, sys
import rmmgo
rmmgo.install_as_rmm()
import rmm.mr
rmmgo._alias.uninstall_as_rmm()
try:
    import rmm
except ImportError:
    gone = True
else:
    gone = rmm is not rmmgo
print(json.dumps({"gone": gone, "left": sorted(m for m in sys.modules if m == "rmm" or m.startswith("rmm."))}))
"""
    )
    assert got == {"gone": True, "left": []}
