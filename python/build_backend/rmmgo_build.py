"""Builds the rmmgo wheel: the Python package with librmmgo.so inside it.

A PEP 517 build backend written with the standard library alone, so that a
wheel builds with no network and no setuptools, and a command-line tool that
`make wheel` runs:

    python3 build_backend/rmmgo_build.py --library build/librmmgo.so \
        [--torch-shim build/librmmgo_torch.so] [--git-commit SHA] --out dist

`pip wheel ./python` and `pip install ./python` use the same code through
pyproject.toml; they take the libraries from the environment variables
RMMGO_WHEEL_LIBRARY / RMMGO_WHEEL_TORCH_SHIM, else from the checkout's
build/ directory.

The wheel is tagged py3-none-<platform>: the package is ctypes only, so any
Python 3 on the platform the library was built for can use it, and the
library is inside, so the tag must name that platform. Installed, the
package loads rmmgo/librmmgo.so beside itself: no Go, no checkout and no
environment variable is needed. The zip is reproducible: entries in sorted
order with a fixed timestamp ($SOURCE_DATE_EPOCH when set).
"""

import argparse
import base64
import hashlib
import io
import os
import re
import subprocess
import sys
import sysconfig
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)  # the folder holding rmmgo/ and pyproject.toml
REPO = os.path.dirname(PYTHON_DIR)
PACKAGE = "rmmgo"
LIBRARY = "librmmgo.so"
TORCH_SHIM = "librmmgo_torch.so"

# The distribution's metadata, here and nowhere else (the version is the
# package's own, rmmgo/_version.py).
NAME = "rmmgo"
SUMMARY = "The RAPIDS Memory Manager's Python API over librmmgo.so, a Go core shared with C, C++ and Go"
REQUIRES_PYTHON = ">=3.8"
LICENSE = "Apache-2.0"
CLASSIFIERS = [
    "Programming Language :: Python :: 3",
    "Operating System :: POSIX :: Linux",
    "Environment :: GPU :: NVIDIA CUDA",
]
EXTRAS = {"numpy": ["numpy"], "cupy": ["cupy"], "numba": ["numba"], "torch": ["torch"], "dask": ["distributed>=2022.12"], "test": ["pytest"]}


def version():
    """rmmgo.__version__, read from rmmgo/_version.py without importing the package."""
    with open(os.path.join(PYTHON_DIR, PACKAGE, "_version.py")) as f:
        m = re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M)
    if not m:
        raise RuntimeError("rmmgo_build: no __version__ in rmmgo/_version.py")
    return m.group(1)


def platform_tag():
    """This machine's platform as a wheel tag, e.g. linux_x86_64."""
    return re.sub(r"[^A-Za-z0-9_]", "_", sysconfig.get_platform())


def wheel_name(ver=None, plat=None):
    return "%s-%s-py3-none-%s.whl" % (NAME, ver or version(), plat or platform_tag())


def _metadata(ver):
    lines = [
        "Metadata-Version: 2.1",
        "Name: " + NAME,
        "Version: " + ver,
        "Summary: " + SUMMARY,
        "License: " + LICENSE,
        "Requires-Python: " + REQUIRES_PYTHON,
    ]
    lines += ["Classifier: " + c for c in CLASSIFIERS]
    for extra, reqs in EXTRAS.items():
        lines.append("Provides-Extra: " + extra)
        lines += ['Requires-Dist: %s; extra == "%s"' % (r, extra) for r in reqs]
    lines.append("Description-Content-Type: text/markdown")
    with open(os.path.join(PYTHON_DIR, "README.md")) as f:
        readme = f.read()
    return "\n".join(lines) + "\n\n" + readme


def _package_files():
    """(archive name, path) of every source file of the package, sorted."""
    out = []
    root = os.path.join(PYTHON_DIR, PACKAGE)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in filenames:
            if fn.endswith(".py"):
                path = os.path.join(dirpath, fn)
                out.append((os.path.relpath(path, PYTHON_DIR).replace(os.sep, "/"), path))
    return sorted(out)


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def _zip_time():
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))  # 1980-01-01, zip's earliest
    return time.gmtime(max(epoch, 315532800))[:6]


def build(out_dir, library, torch_shim=None, git_commit="", plat=None):
    """Write the wheel into out_dir and return its file name."""
    if not os.path.isfile(library):
        raise FileNotFoundError(
            "rmmgo_build: %s not found: build it first (`make lib`, or `make wheel` which does)" % library
        )
    ver = version()
    name = wheel_name(ver, plat)
    dist_info = "%s-%s.dist-info" % (NAME, ver)
    entries = []  # (archive name, bytes, executable)
    for arc, path in _package_files():
        with open(path, "rb") as f:
            entries.append((arc, f.read(), False))
    with open(library, "rb") as f:
        entries.append((PACKAGE + "/" + LIBRARY, f.read(), True))
    if torch_shim:
        with open(torch_shim, "rb") as f:
            entries.append((PACKAGE + "/" + TORCH_SHIM, f.read(), True))
    entries.append((PACKAGE + "/GIT_COMMIT", (git_commit.strip() + "\n").encode(), False))
    entries.sort()
    wheel_file = (
        "Wheel-Version: 1.0\nGenerator: rmmgo_build\nRoot-Is-Purelib: false\nTag: py3-none-%s\n"
        % (plat or platform_tag())
    )
    entries.append((dist_info + "/METADATA", _metadata(ver).encode(), False))
    entries.append((dist_info + "/WHEEL", wheel_file.encode(), False))
    entries.append((dist_info + "/top_level.txt", (PACKAGE + "\n").encode(), False))
    record = [_record_line(arc, data) for arc, data, _ in entries]
    record.append(dist_info + "/RECORD,,")
    entries.append((dist_info + "/RECORD", ("\n".join(record) + "\n").encode(), False))

    os.makedirs(out_dir, exist_ok=True)
    final = os.path.join(out_dir, name)
    tmp = final + ".part"
    stamp = _zip_time()
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for arc, data, executable in entries:
            info = zipfile.ZipInfo(arc, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o755 if executable else 0o644) << 16
            z.writestr(info, data)
    os.replace(tmp, final)
    return name


def _git_commit():
    try:
        return subprocess.run(
            ["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def _libraries_from_environment():
    lib = os.environ.get("RMMGO_WHEEL_LIBRARY") or os.path.join(REPO, "build", LIBRARY)
    shim = os.environ.get("RMMGO_WHEEL_TORCH_SHIM") or os.path.join(os.path.dirname(lib), TORCH_SHIM)
    return lib, (shim if os.path.isfile(shim) else None)


# ------------------------------------------------------------ PEP 517 hooks


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    lib, shim = _libraries_from_environment()
    return build(wheel_directory, lib, shim, _git_commit())


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    ver = version()
    dist_info = "%s-%s.dist-info" % (NAME, ver)
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    with io.open(os.path.join(metadata_directory, dist_info, "METADATA"), "w") as f:
        f.write(_metadata(ver))
    return dist_info


def main(argv=None):
    p = argparse.ArgumentParser(description="Build the rmmgo wheel (librmmgo.so inside).")
    p.add_argument("--library", required=True, help="librmmgo.so to put in the wheel")
    p.add_argument("--torch-shim", help="librmmgo_torch.so to put beside it (optional)")
    p.add_argument("--git-commit", default=None, help="commit to record (default: git rev-parse HEAD)")
    p.add_argument("--out", default="dist", help="output folder (default: dist)")
    p.add_argument("--print-name", action="store_true", help="print the wheel's file name and exit")
    a = p.parse_args(argv)
    if a.print_name:
        print(wheel_name())
        return 0
    shim = a.torch_shim if a.torch_shim and os.path.isfile(a.torch_shim) else None
    commit = _git_commit() if a.git_commit is None else a.git_commit
    name = build(a.out, a.library, shim, commit)
    print(os.path.join(a.out, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
