"""Nothing crashes or complains at interpreter exit; logs are complete."""

import shutil

from conftest import PACKAGE_DIR, run_python

EXIT_SCRIPT = r"""
import sys, threading
import rmmgo as rmm
from rmmgo import mr

log = mr.LoggingResourceAdaptor(mr.CudaMemoryResource(), log_file_name=sys.argv[1] if len(sys.argv) > 1 else %(log)r)
stats = mr.StatisticsResourceAdaptor(log)
mr.set_current_device_resource(stats)
# Live objects of every sort at exit: buffers on streams, adaptors, callbacks,
# a resource only C holds, a buffer in a cycle, one in a daemon thread.
keep = [rmm.DeviceBuffer(size=n) for n in (1, 1000, 1 << 20)]
s = rmm.Stream()
on_stream = rmm.DeviceBuffer(size=4096, stream=s)
track = mr.TrackingResourceAdaptor(mr.CudaAsyncMemoryResource())
tracked = rmm.DeviceBuffer(size=512, mr=track)
cb = mr.CallbackMemoryResource(lambda n, st: mr.CudaMemoryResource().allocate(n), lambda p, n, st: None)
cyc = [rmm.DeviceBuffer(size=64, mr=cb)]
cyc.append(cyc)

def daemon():
    while True:
        b = rmm.DeviceBuffer(size=128)
        del b

threading.Thread(target=daemon, daemon=True).start()
print("ok", flush=True)
"""


def test_clean_exit_with_live_objects(tmp_path):
    logname = str(tmp_path / "exit.csv")
    r = run_python(EXIT_SCRIPT % {"log": logname})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
    assert "Exception ignored" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    # The logging adaptor was released at exit: its file is flushed and
    # complete, with a header and whole rows only.
    with open(str(tmp_path / "exit.dev0.csv")) as f:
        lines = f.read().splitlines()
    assert lines[0] == "Thread,Time,Action,Pointer,Size,Stream"
    assert len(lines) > 4 and all(len(ln.split(",")) == 6 for ln in lines)


def test_exit_during_heavy_use_from_threads():
    code = r"""
import threading, os
import rmmgo as rmm
def work():
    while True:
        rmm.DeviceBuffer(size=1000)
for _ in range(4):
    threading.Thread(target=work, daemon=True).start()
import time; time.sleep(0.3)
"""
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr, r.stderr


def test_import_without_library_says_what_to_do(tmp_path):
    code = "import rmmgo"
    # Point everything away from a real library: a copy of the package alone.
    dst = tmp_path / "site"
    shutil.copytree(PACKAGE_DIR, str(dst / "rmmgo"), ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    r = run_python(code, env={"PYTHONPATH": str(dst), "RMMGO_LIBRARY": str(tmp_path / "none.so"), "LD_LIBRARY_PATH": ""})
    assert r.returncode != 0
    assert "LibraryNotFoundError" in r.stderr and "RMMGO_LIBRARY" in r.stderr and "make lib" in r.stderr
