"""Finding and loading librmmgo.so (and the PyTorch shim beside it).

The library is looked for, in order:

1. beside this package (``rmmgo/librmmgo.so``, where an install puts it);
2. the file named by the ``RMMGO_LIBRARY`` environment variable;
3. the system's library path (``ctypes.util.find_library("rmmgo")``, then
   ``librmmgo.so`` through the dynamic loader's own search);
4. the ``build/`` directory of a source checkout this package sits in
   (``<repo>/python/rmmgo`` -> ``<repo>/build/librmmgo.so``).

The first that loads wins; when none does, the error lists every place tried
and why each failed.

The CUDA runtime is librmmgo.so's to find (RMMGO_CUDART_LIBRARY, a libcudart
the process has loaded, then the system's libcudart.so.13 and .12). On a
machine whose only CUDA runtime came with pip (NVIDIA's nvidia-cuda-runtime
packages, which PyTorch and CuPy install), none of those finds it, so the
package loads that one first: the library then uses the runtime the process
already has. See _preload_pip_cuda_runtime.
"""

import ctypes
import ctypes.util
import glob
import os
import sys
import threading

__all__ = ["load", "path", "torch_shim_path", "LibraryNotFoundError"]

ENV_LIBRARY = "RMMGO_LIBRARY"
ENV_TORCH_LIBRARY = "RMMGO_TORCH_LIBRARY"
LIBRARY_NAME = "librmmgo.so"
TORCH_SHIM_NAME = "librmmgo_torch.so"

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_CHECKOUT_BUILD_DIR = os.path.normpath(os.path.join(_PACKAGE_DIR, "..", "..", "build"))

_lock = threading.Lock()
_lib = None
_path = None
# The pip-installed libcudart this package loaded for the library, if any.
cuda_runtime_preloaded = None

# The versioned runtimes librmmgo.so looks for, in its order (cudart's
# defaultLibraryNames); pip packages ship versioned names only.
_CUDART_NAMES = ("libcudart.so.13", "libcudart.so.12")


def _preload_pip_cuda_runtime(paths=None):
    """Load a libcudart from NVIDIA's pip packages when nothing else provides one.

    Only when the real backend may be used (RMMGO_BACKEND is not simulated), no
    RMMGO_CUDART_LIBRARY is given, the process has not loaded a libcudart and
    the system has none (ctypes.util.find_library): then the first
    nvidia/*/lib/libcudart.so.<13|12> under `paths` (default sys.path) is
    loaded, and librmmgo.so, which prefers a runtime the process already
    has, uses it. Returns the path loaded, or None.
    """
    if os.environ.get("RMMGO_CUDART_LIBRARY") or os.environ.get("RMMGO_BACKEND", "").startswith("sim"):
        return None
    for name in _CUDART_NAMES:
        try:
            ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
            return None  # the process has one: the library will use it
        except OSError:
            pass
    if ctypes.util.find_library("cudart"):
        return None  # the system has one: the library finds it itself
    for name in _CUDART_NAMES:
        for d in sys.path if paths is None else paths:
            for path in sorted(glob.glob(os.path.join(d or ".", "nvidia", "*", "lib", name))):
                try:
                    ctypes.CDLL(path, mode=os.RTLD_GLOBAL)
                except OSError:
                    continue
                return path
    return None


class LibraryNotFoundError(OSError):
    """librmmgo.so could not be found or loaded; the message says where we looked."""


def _candidates():
    """(description, name-or-path) pairs in the order they are tried."""
    out = [("beside the package", os.path.join(_PACKAGE_DIR, LIBRARY_NAME))]
    env = os.environ.get(ENV_LIBRARY)
    if env:
        out.append(("$" + ENV_LIBRARY, os.path.abspath(os.path.expanduser(env))))
    else:
        out.append(("$" + ENV_LIBRARY, None))
    found = ctypes.util.find_library("rmmgo")
    if found:
        out.append(("ctypes.util.find_library('rmmgo')", found))
    out.append(("the dynamic loader's search path", LIBRARY_NAME))
    out.append(("the source checkout's build directory", os.path.join(_CHECKOUT_BUILD_DIR, LIBRARY_NAME)))
    return out


def _resolved_path(lib, fallback):
    """The file a loaded library came from (dladdr on one of its symbols)."""
    if os.path.isabs(fallback):
        return fallback
    try:
        class _DlInfo(ctypes.Structure):
            _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                        ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]
        libdl = ctypes.CDLL(None)
        dladdr = libdl.dladdr
        dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
        dladdr.restype = ctypes.c_int
        info = _DlInfo()
        addr = ctypes.cast(lib.rmm_version, ctypes.c_void_p).value
        if dladdr(addr, ctypes.byref(info)) and info.dli_fname:
            return os.path.abspath(info.dli_fname.decode())
    except Exception:  # pragma: no cover - best effort only
        pass
    return fallback


def load():
    """Load librmmgo.so once and return the ctypes.CDLL.

    Raises LibraryNotFoundError listing every place tried.
    """
    global _lib, _path, cuda_runtime_preloaded
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        cuda_runtime_preloaded = _preload_pip_cuda_runtime()
        tried = []
        for what, name in _candidates():
            if name is None:
                tried.append("%s: not set" % what)
                continue
            if os.path.isabs(name) and not os.path.exists(name):
                tried.append("%s: %s (no such file)" % (what, name))
                continue
            try:
                # librmmgo_torch.so, loaded later by PyTorch, binds to this
                # very copy: the loader matches it by soname and by file.
                lib = ctypes.CDLL(name)
                lib.rmm_version  # noqa: B018 - make sure it is ours
            except (OSError, AttributeError) as exc:
                hint = ""
                if "static TLS" in str(exc):
                    hint = (" -- the library needs more static TLS than this process has left; "
                            "a library built with a small thread-local footprint loads, or start "
                            "Python with GLIBC_TUNABLES=glibc.rtld.optional_static_tls=16384")
                tried.append("%s: %s (%s%s)" % (what, name, exc, hint))
                continue
            _lib = lib
            _path = _resolved_path(lib, name)
            return _lib
        raise LibraryNotFoundError(
            "rmmgo: cannot load %s. Build it with `make lib` and either install the "
            "package with the library beside it or set %s to its path. Tried:\n  - %s"
            % (LIBRARY_NAME, ENV_LIBRARY, "\n  - ".join(tried))
        )


def path():
    """The path of the loaded librmmgo.so (loading it if needed)."""
    load()
    return _path


def torch_shim_path():
    """The path of librmmgo_torch.so, the C++ layer PyTorch's pluggable allocator loads.

    Looked for at $RMMGO_TORCH_LIBRARY, then beside the loaded librmmgo.so
    (the copy it must bind to), then beside the package, then in the source
    checkout's build directory. Raises LibraryNotFoundError naming each place
    when it is in none of them.
    """
    places = []
    env = os.environ.get(ENV_TORCH_LIBRARY)
    if env:
        places.append(("$" + ENV_TORCH_LIBRARY, os.path.abspath(os.path.expanduser(env))))
    try:
        places.append(("beside librmmgo.so", os.path.join(os.path.dirname(path()), TORCH_SHIM_NAME)))
    except LibraryNotFoundError:
        pass
    places.append(("beside the package", os.path.join(_PACKAGE_DIR, TORCH_SHIM_NAME)))
    places.append(("the source checkout's build directory", os.path.join(_CHECKOUT_BUILD_DIR, TORCH_SHIM_NAME)))
    for _, p in places:
        if os.path.exists(p):
            return p
    raise LibraryNotFoundError(
        "rmmgo: cannot find %s (build it with `make torch-shim`). Tried:\n  - %s"
        % (TORCH_SHIM_NAME, "\n  - ".join("%s: %s" % wp for wp in places))
    )
