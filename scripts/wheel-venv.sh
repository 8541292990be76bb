#!/usr/bin/env bash
# Makes a fresh virtual environment holding an rmmgo wheel, for testing the
# installed package (scripts/wheel-test.sh, scripts/rmm-suite/run.sh).
#
#   scripts/wheel-venv.sh WHEEL DIR     prints DIR/bin/python when done
#
# The environment is made with `python3 -m venv --system-site-packages`, so
# that pytest, NumPy and the optional frameworks (CuPy, Numba, PyTorch,
# cuda-python) of the interpreter it is based on are there; only rmmgo is
# installed into it, with pip, from the wheel alone (--no-index: no network).
# When that interpreter is itself a virtual environment, its packages are
# made visible too.
#
# PYTHON: the interpreter to base it on (default: the first of python3,
# /usr/bin/python3 that has pytest and venv).
# WHEEL_VENV_EXTRA: a folder of more wheels to install beside rmmgo, the
# same way (--no-index --no-deps): the GPU bundle's dask-wheels/, Dask for
# a machine that has none (scripts/dask-wheels.py makes them).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 WHEEL DIR" >&2; exit 2; }
wheel=$1 venv=$2
[ -f "$wheel" ] || { echo "wheel-venv: no wheel $wheel" >&2; exit 2; }

py=""
for p in ${PYTHON:-} python3 /usr/bin/python3; do
  command -v "$p" >/dev/null 2>&1 || continue
  if "$p" -c 'import pytest, venv' >/dev/null 2>&1; then py=$(command -v "$p"); break; fi
done
[ -n "$py" ] || {
  echo "wheel-venv: no python3 with pytest and venv: install python3-pytest and python3-venv (scripts/setup.sh does), or set PYTHON" >&2
  exit 2
}
echo "wheel-venv: $(basename "$wheel") into $venv, from $py ($("$py" -c 'import sys; print(sys.version.split()[0])'))" >&2

rm -rf "$venv"
if ! "$py" -m venv --system-site-packages "$venv" >"$venv.log" 2>&1; then
  # No ensurepip: a venv without pip, filled by the base interpreter's pip.
  rm -rf "$venv"
  "$py" -m venv --system-site-packages --without-pip "$venv" || { cat "$venv.log" >&2; exit 1; }
fi
rm -f "$venv.log"
# A base interpreter inside a virtual environment: --system-site-packages
# reaches only the interpreter that one was made from, so list the base's
# own site-packages after the new environment's.
"$py" - "$venv" <<'PY'
import glob, os, site, sys
if sys.prefix != sys.base_prefix:
    (target,) = glob.glob(os.path.join(sys.argv[1], "lib", "python*", "site-packages"))
    with open(os.path.join(target, "zz_base_environment.pth"), "w") as f:
        f.write("\n".join(site.getsitepackages()) + "\n")
PY
vpy=$venv/bin/python
wheels=("$wheel")
if [ -n "${WHEEL_VENV_EXTRA:-}" ]; then
  extra=("$WHEEL_VENV_EXTRA"/*.whl)
  [ -f "${extra[0]}" ] || { echo "wheel-venv: no wheels in WHEEL_VENV_EXTRA=$WHEEL_VENV_EXTRA" >&2; exit 2; }
  echo "wheel-venv: with ${#extra[@]} wheels from $WHEEL_VENV_EXTRA" >&2
  wheels+=("${extra[@]}")
fi
if "$vpy" -m pip --version >/dev/null 2>&1; then
  "$vpy" -m pip install --quiet --no-index --no-deps "${wheels[@]}" >&2
else
  "$py" -m pip --python "$vpy" install --quiet --no-index --no-deps "${wheels[@]}" >&2
fi
echo "$vpy"
