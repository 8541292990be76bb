#!/usr/bin/env bash
# Installs an rmmgo wheel into a fresh virtual environment and runs the Python
# tests against the installed package, from a folder outside any checkout.
#
#   scripts/wheel-test.sh WHEEL TESTS_DIR [pytest arguments...]
#
# The environment is made with `python3 -m venv --system-site-packages`, so
# that pytest, NumPy and the optional frameworks (CuPy, Numba, PyTorch) of the
# interpreter it is based on are there; only rmmgo is installed into it, with
# pip, from the wheel alone (--no-index: no network). When that interpreter is
# itself a virtual environment, its packages are made visible too.
#
# Environment:
#   PYTHON            the interpreter to base the environment on (default: the
#                     first of python3, /usr/bin/python3 that has pytest and venv)
#   RMMGO_SOURCE_DIR  a checkout or GPU bundle with include/ and docs/, for the
#                     tests that read them (they skip without it)
#   WHEEL_TEST_DIR    where to make the environment and copy the tests
#                     (default: a new temporary folder, removed afterwards)
# RMMGO_LIBRARY and RMMGO_TORCH_LIBRARY are unset for the run: the installed
# package must find its libraries by itself.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 WHEEL TESTS_DIR [pytest args...]" >&2; exit 2; }
wheel=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tests=$(cd "$2" && pwd)
shift 2
[ -f "$wheel" ] || { echo "wheel-test: no wheel $wheel" >&2; exit 2; }

pick_python() {
  local p
  for p in ${PYTHON:-} python3 /usr/bin/python3; do
    command -v "$p" >/dev/null 2>&1 || continue
    if "$p" -c 'import pytest, venv' >/dev/null 2>&1; then command -v "$p"; return 0; fi
  done
  return 1
}
py=$(pick_python) || {
  echo "wheel-test: no python3 with pytest and venv: install python3-pytest and python3-venv (scripts/setup.sh does), or set PYTHON" >&2
  exit 2
}

if [ -n "${WHEEL_TEST_DIR:-}" ]; then
  work=$WHEEL_TEST_DIR; rm -rf "$work"; mkdir -p "$work"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/rmmgo-wheel-test.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi
venv=$work/venv

echo "== wheel test: $(basename "$wheel") into a fresh venv from $py ($("$py" -c 'import sys; print(sys.version.split()[0])'))"
if ! "$py" -m venv --system-site-packages "$venv" >"$work/venv.log" 2>&1; then
  # No ensurepip (Debian without python3-venv's wheels): a venv without pip,
  # filled by the base interpreter's pip.
  rm -rf "$venv"
  "$py" -m venv --system-site-packages --without-pip "$venv" || { cat "$work/venv.log" >&2; exit 1; }
fi
# A base interpreter inside a virtual environment: --system-site-packages
# reaches only the interpreter it was made from, so list the base's own
# site-packages after the new environment's.
"$py" - "$venv" <<'EOF'
import glob, os, site, sys
if sys.prefix != sys.base_prefix:
    venv = sys.argv[1]
    (target,) = glob.glob(os.path.join(venv, "lib", "python*", "site-packages"))
    with open(os.path.join(target, "zz_base_environment.pth"), "w") as f:
        f.write("\n".join(site.getsitepackages()) + "\n")
EOF
vpy=$venv/bin/python
if "$vpy" -m pip --version >/dev/null 2>&1; then
  "$vpy" -m pip install --quiet --no-index --no-deps "$wheel"
else
  "$py" -m pip --python "$vpy" install --quiet --no-index --no-deps "$wheel"
fi

cp -r "$tests" "$work/tests"
find "$work/tests" -name __pycache__ -prune -exec rm -rf {} +
cd "$work"
set +e
env -u RMMGO_LIBRARY -u RMMGO_TORCH_LIBRARY -u PYTHONPATH RMMGO_TEST_INSTALLED=1 \
  "$vpy" -m pytest -q -rs -p no:cacheprovider tests "$@"
rc=$?
set -e
if [ $rc -eq 5 ]; then echo "wheel-test: pytest collected no tests" >&2; exit 1; fi
exit $rc
