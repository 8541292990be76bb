"""Test setup: choose the backend before librmmgo.so loads, and isolate tests.

RMMGO_BACKEND, when unset, becomes "cuda" if nvidia-smi sees a GPU and
"simulated" otherwise (as the Makefile does); the choice is printed in
pytest's header. On the simulated device the defaults are 2 devices of
1 GiB, with pageable memory access (RMMGO_SIM_PAGEABLE=1) so that the system
resources work.
"""

import ctypes
import gc
import os
import shutil
import subprocess
import sys
import threading

import pytest


def _choose_environment():
    """The RMMGO_* variables the tests need, when the caller did not set them."""
    want = {}
    backend = os.environ.get("RMMGO_BACKEND")
    if not backend:
        gpu = False
        if shutil.which("nvidia-smi"):
            try:
                gpu = subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=30).returncode == 0
            except (OSError, subprocess.SubprocessError):
                gpu = False
        backend = want["RMMGO_BACKEND"] = "cuda" if gpu else "simulated"
    if backend.startswith("sim") and "RMMGO_SIM_PAGEABLE" not in os.environ:
        want["RMMGO_SIM_PAGEABLE"] = "1"
    return want


# librmmgo.so (Go, c-shared) reads the environment the process started with:
# a variable added later with os.environ is invisible to it. So when the
# tests must choose variables, pytest starts again with them set (from
# pytest_configure, once output capture can be suspended).
_want = _choose_environment()


def pytest_configure(config):
    if not _want:
        return
    if os.environ.get("RMMGO_TESTS_REEXEC"):
        raise pytest.UsageError("rmmgo tests: could not set %s; set them before starting pytest" % sorted(_want))
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is not None:
        capman.suspend_global_capture(in_=True)
    env = dict(os.environ, RMMGO_TESTS_REEXEC="1", **_want)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "pytest"] + sys.argv[1:], env)


HERE = os.path.dirname(os.path.abspath(__file__))
# RMMGO_TEST_INSTALLED=1 (the wheel test, scripts/wheel-test.sh): test the
# rmmgo that is installed, from wherever these tests were copied, and fail if
# the import finds a source tree instead. Otherwise the tests sit in a
# checkout and test its python/rmmgo.
INSTALLED = os.environ.get("RMMGO_TEST_INSTALLED") == "1"
# The checkout (or the GPU bundle) whose include/ and docs/ some tests read:
# $RMMGO_SOURCE_DIR, else the checkout these tests sit in.
REPO = os.environ.get("RMMGO_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
INCLUDE_DIR = os.path.join(REPO, "include")
PYTHON_DIR = None if INSTALLED else os.path.dirname(HERE)
if PYTHON_DIR and PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)

if _want:  # about to start again: do not load the library with the wrong settings
    rmmgo = _bindings = None
    BACKEND = None
else:
    import rmmgo
    from rmmgo import _bindings

    BACKEND = rmmgo.backend()
    if INSTALLED:
        _pkg = os.path.dirname(os.path.abspath(rmmgo.__file__))
        if os.path.exists(os.path.join(_pkg, "..", "pyproject.toml")) or not os.path.samefile(
            os.path.dirname(rmmgo.library_path()), _pkg
        ):
            raise pytest.UsageError(
                "RMMGO_TEST_INSTALLED=1 but rmmgo comes from %s with librmmgo.so at %s: "
                "not an installed package with its library beside it" % (_pkg, rmmgo.library_path())
            )
ON_GPU = BACKEND == "cuda"
PACKAGE_DIR = os.path.dirname(os.path.abspath(rmmgo.__file__)) if rmmgo else None


def pytest_report_header(config):
    return "rmmgo: backend %s, %s package at %s, librmmgo.so at %s (version %s)" % (
        BACKEND,
        "installed" if INSTALLED else "source",
        PACKAGE_DIR,
        rmmgo.library_path(),
        rmmgo.library_version(),
    )


def device_count():
    n = ctypes.c_int()
    _bindings.lib.rmm_get_device_count(ctypes.byref(n))
    return n.value


def require_devices(n):
    """Skip the test unless the machine has n devices; where RMMGO_TEST_MIN_DEVICES
    says it has them (make test on the simulated device, the GPU bundle on two
    GPUs), fewer fails it instead."""
    have = device_count()
    if have >= n:
        return
    try:
        least = int(os.environ.get("RMMGO_TEST_MIN_DEVICES", "0"))
    except ValueError:
        least = 0
    if least >= n:
        pytest.fail("needs %d devices: RMMGO_TEST_MIN_DEVICES=%d, but the library sees %d" % (n, least, have))
    pytest.skip("needs %d devices, the machine has %d" % (n, have))


def run_threads(n, work):
    """Run work(k) for k = 0 .. n-1, each on a thread of its own, at once;
    then raise the first exception a thread raised, if any."""
    errors = []

    def run(k):
        try:
            work(k)
        except BaseException as exc:  # raised below, on the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


@pytest.fixture(autouse=True)
def _fresh_device_resources():
    """Every test starts and ends with each device's initial resource and device 0 current."""
    _reset_all()
    yield
    _reset_all()


def _reset_all():
    gc.collect()
    lib = _bindings.lib
    for dev in range(min(2, device_count())):  # the tests use devices 0 and 1
        rmmgo.mr.reset_per_device_resource(dev)
    lib.rmm_set_device(0)


def run_python(code, env=None, timeout=300):
    """Run `code` in a fresh interpreter with this package importable; returns CompletedProcess."""
    e = dict(os.environ)
    if PYTHON_DIR:
        e["PYTHONPATH"] = PYTHON_DIR + os.pathsep + e.get("PYTHONPATH", "")
    if env:
        e.update(env)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=e
    )


requires_gpu = pytest.mark.skipif(not ON_GPU, reason="needs the real GPU (RMMGO_BACKEND=cuda)")
simulated_only = pytest.mark.skipif(ON_GPU, reason="simulated-device test")
needs_source = pytest.mark.skipif(
    not os.path.isdir(INCLUDE_DIR), reason="needs the checkout's include/ (set RMMGO_SOURCE_DIR)"
)
