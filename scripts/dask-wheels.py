#!/usr/bin/env python3
"""Makes wheels of Dask's distributed and its dependencies for the GPU machine.

    python3 scripts/dask-wheels.py [--out .whl/dask] [--psutil-source DIR]

The GPU machine has no Dask and no network, and this machine reaches no
Python package index: the wheels are made from the Debian packages that
scripts/setup.sh installs (python3-distributed and what it depends on),
so the GPU runs the very versions `make test` runs here. Each becomes a
py3-none-any wheel of the package's Python files; their optional C
speedups (msgpack, tornado, markupsafe, pyyaml), built for this machine's
Python only, are left out, and the packages use their pure-Python code.

psutil has no pure-Python form: it is built from its source (a checkout or
a git directory of giampaolo/psutil, at the tag of Debian's version) as an
abi3 wheel, which loads in every CPython 3 from 3.6 on, the GPU machine's
3.12 included. Without --psutil-source it is left out, and the GPU machine
must have psutil of its own (run.sh's dask section says so).

The wheels go to --out (default .whl/dask, ignored by git), with
MANIFEST.txt listing them; scripts/gpu-bundle.sh copies them into the
bundle, and run.sh's dask section installs them with pip --no-index.
"""

import argparse
import base64
import email.parser
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

DIST_PACKAGES = "/usr/lib/python3/dist-packages"

# Debian package -> the distribution it holds: distributed and its
# dependencies (and theirs), as Debian's python3-distributed pulls them in.
PACKAGES = [
    "python3-distributed",
    "python3-dask",
    "python3-cloudpickle",
    "python3-click",
    "python3-fsspec",
    "python3-jinja2",
    "python3-locket",
    "python3-markupsafe",
    "python3-msgpack",
    "python3-packaging",
    "python3-partd",
    "python3-sortedcontainers",
    "python3-tblib",
    "python3-toolz",
    "python3-tornado",
    "python3-urllib3",
    "python3-yaml",
    "python3-zict",
    "python3-heapdict",
]
PSUTIL_PACKAGE = "python3-psutil"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def debian_version(pkg):
    try:
        return run(["dpkg-query", "-W", "-f=${Version}", pkg]).strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return None


def package_files(pkg):
    """The files pkg installs under dist-packages, relative to it."""
    out = []
    for line in run(["dpkg", "-L", pkg]).splitlines():
        if line.startswith(DIST_PACKAGES + "/") and os.path.isfile(line):
            out.append(os.path.relpath(line, DIST_PACKAGES))
    return sorted(out)


def _requires_from_egg_info(text):
    """Requires-Dist lines from an egg-info requires.txt."""
    out, extra, marker = [], None, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"\[([^:\]]*)(?::(.*))?\]", line)
        if m:
            extra, marker = m.group(1) or None, m.group(2) or None
            continue
        conds = []
        if marker:
            conds.append("(%s)" % marker if extra else marker)
        if extra:
            conds.append('extra == "%s"' % extra)
        out.append("Requires-Dist: " + line + ("; " + " and ".join(conds) if conds else ""))
    return out


def metadata(meta_dir):
    """(name, version, METADATA text, {extra dist-info file: bytes}) of a distribution."""
    extra = {}
    if meta_dir.endswith(".dist-info"):
        with open(os.path.join(DIST_PACKAGES, meta_dir, "METADATA"), encoding="utf-8") as f:
            text = f.read()
        for fn in ("entry_points.txt",):
            p = os.path.join(DIST_PACKAGES, meta_dir, fn)
            if os.path.exists(p):
                extra[fn] = open(p, "rb").read()
    else:
        with open(os.path.join(DIST_PACKAGES, meta_dir, "PKG-INFO"), encoding="utf-8") as f:
            text = f.read()
        req = os.path.join(DIST_PACKAGES, meta_dir, "requires.txt")
        if os.path.exists(req) and "\nRequires-Dist:" not in text:
            head, sep, body = text.partition("\n\n")
            lines = _requires_from_egg_info(open(req, encoding="utf-8").read())
            text = head + ("\n" + "\n".join(lines) if lines else "") + sep + body
        for fn in ("entry_points.txt",):
            p = os.path.join(DIST_PACKAGES, meta_dir, fn)
            if os.path.exists(p):
                extra[fn] = open(p, "rb").read()
    msg = email.parser.Parser().parsestr(text, headersonly=True)
    return msg["Name"], msg["Version"], text, extra


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def write_wheel(out_dir, name, version, meta_text, extra_meta, entries, tag="py3-none-any"):
    """Write a wheel of entries [(archive name, bytes)]; returns its path."""
    dist = re.sub(r"[-_.]+", "_", name)
    ver = version.replace("-", "_")
    info = "%s-%s.dist-info" % (dist, ver)
    entries = sorted(entries)
    entries.append((info + "/METADATA", meta_text.encode()))
    entries.append((info + "/WHEEL", (
        "Wheel-Version: 1.0\nGenerator: rmmgo scripts/dask-wheels.py\nRoot-Is-Purelib: true\nTag: %s\n" % tag
    ).encode()))
    for fn, data in sorted(extra_meta.items()):
        entries.append((info + "/" + fn, data))
    record = [_record_line(n, d) for n, d in entries] + [info + "/RECORD,,"]
    entries.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))
    path = os.path.join(out_dir, "%s-%s-%s.whl" % (dist, ver, tag))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for n, d in entries:
            zi = zipfile.ZipInfo(n, ZIP_TIME)
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = 0o644 << 16
            z.writestr(zi, d)
    return path


def wheel_from_debian(pkg, out_dir):
    """A pure-Python wheel of Debian package pkg; returns (path, dropped compiled files)."""
    files = package_files(pkg)
    metas = sorted({f.split("/")[0] for f in files if re.match(r"[^/]+\.(egg|dist)-info/", f)})
    if len(metas) != 1:
        raise SystemExit("dask-wheels: %s: expected one .egg-info or .dist-info, found %s" % (pkg, metas))
    meta_dir = metas[0]
    name, version, text, extra = metadata(meta_dir)
    entries, dropped = [], []
    for f in files:
        if f.startswith(meta_dir + "/") or "/__pycache__/" in f or f.endswith(".pyc"):
            continue
        if f.endswith(".so"):
            dropped.append(f)
            continue
        with open(os.path.join(DIST_PACKAGES, f), "rb") as fh:
            entries.append((f, fh.read()))
    return write_wheel(out_dir, name, version, text, extra, entries), dropped


def psutil_wheel(source, out_dir, version):
    """psutil's abi3 wheel, built from source (a source tree or a git directory)."""
    upstream = version.split("-")[0].split("+")[0]
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "psutil")
        if os.path.exists(os.path.join(source, "setup.py")):
            shutil.copytree(source, src)
        else:  # a git directory (bare, or a checkout's .git): the release tag
            os.makedirs(src)
            archive = subprocess.run(["git", "--git-dir", source, "archive", "release-" + upstream],
                                     check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
        built = os.path.join(tmp, "dist")
        # Debian's interpreter: the one with python3-setuptools and python3-wheel.
        py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
        res = subprocess.run([py, "setup.py", "-q", "bdist_wheel", "--py-limited-api", "cp36",
                              "-d", built], cwd=src, capture_output=True, text=True)
        if res.returncode:
            raise SystemExit("dask-wheels: building psutil failed (needs gcc, python3-dev, python3-setuptools, "
                             "python3-wheel):\n" + res.stdout[-3000:] + res.stderr[-3000:])
        (whl,) = glob.glob(os.path.join(built, "psutil-*-cp36-abi3-*.whl"))
        dest = os.path.join(out_dir, os.path.basename(whl))
        shutil.copy(whl, dest)
        return dest


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".whl", "dask"))
    ap.add_argument("--psutil-source", help="psutil's source: a source tree or a git directory of giampaolo/psutil")
    ap.add_argument("--extra", nargs="*", default=[],
                    help="more Debian packages to turn into wheels (e.g. python3-pytest for a bare interpreter)")
    args = ap.parse_args()
    missing = [p for p in PACKAGES + args.extra if debian_version(p) is None]
    if missing:
        raise SystemExit("dask-wheels: not installed: %s (scripts/setup.sh installs python3-distributed)"
                         % " ".join(missing))
    out = os.path.abspath(args.out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    manifest = ["# made by scripts/dask-wheels.py from Debian packages; pip install --no-index --no-deps *.whl", ""]
    for pkg in PACKAGES + args.extra:
        path, dropped = wheel_from_debian(pkg, out)
        note = " (left out, pure-Python code used: %s)" % ", ".join(os.path.basename(d) for d in dropped) if dropped else ""
        manifest.append("%s  from %s %s%s" % (os.path.basename(path), pkg, debian_version(pkg), note))
    psutil_version = debian_version(PSUTIL_PACKAGE) or "5.9.4"
    if args.psutil_source:
        path = psutil_wheel(args.psutil_source, out, psutil_version)
        manifest.append("%s  built from psutil's source at release-%s (abi3)" % (
            os.path.basename(path), psutil_version.split("-")[0]))
    else:
        manifest.append("# psutil left out (no --psutil-source): the GPU machine must have psutil")
        print("dask-wheels: no --psutil-source: psutil left out", file=sys.stderr)
    with open(os.path.join(out, "MANIFEST.txt"), "w") as f:
        f.write("\n".join(manifest) + "\n")
    total = sum(os.path.getsize(p) for p in glob.glob(os.path.join(out, "*.whl")))
    print("\n".join(manifest[2:]))
    print("dask-wheels: %d wheels, %.1f MiB, in %s" % (len(glob.glob(os.path.join(out, "*.whl"))), total / 2**20, out))


if __name__ == "__main__":
    main()
