#!/usr/bin/env bash
# Runs RMM's own Python test suite, unmodified, against rmmgo: every
# `import rmm` in it gets rmmgo (rmmgo.install_as_rmm(), loaded as the pytest
# plugin rmmgo_as_rmm before any test module), and prints pass/fail counts.
#
#   scripts/rmm-suite/run.sh RMM [WHEEL] [-- pytest arguments...]
#
# RMM      a checkout of RMM (github.com/rapidsai/rmm, any recent release; its
#          tests are python/rmm/rmm/tests) or that tests folder itself. RMM's
#          tests are not part of rmmgo: bring them.
# WHEEL    an rmmgo wheel (make wheel, or the GPU bundle's) to install into a
#          fresh virtual environment (scripts/wheel-venv.sh); without it, the
#          rmmgo that `python3` (or $PYTHON) imports is used.
#
# The tests run with RMM's own pytest settings (python/rmm/pyproject.toml:
# warnings are errors) when the checkout has them, else with the same
# warning filters given on the command line. They need what RMM's need:
# pytest, NumPy, Numba (with numba-cuda), cuda-python, CuPy (optional),
# PyTorch (optional), a GPU for most of them; the run stops at once, naming
# them, when one of the required ones is missing. Output, in $RMM_SUITE_OUT (default ./rmm-suite-report):
# pytest.log, junit.xml, summary.txt (per module, and the totals line
# "rmm-suite: N passed, M failed, K errors, S skipped") and failures.txt.
# The exit status is pytest's.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { sed -n '2,25p' "$0"; exit 2; }
src=$(cd "$1" && pwd); shift
wheel=""
if [ $# -ge 1 ] && [ "$1" != "--" ]; then wheel=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); shift; fi
[ "${1:-}" = "--" ] && shift

if [ -d "$src/python/rmm/rmm/tests" ]; then tests=$src/python/rmm/rmm/tests; else tests=$src; fi
[ -f "$tests/conftest.py" ] || { echo "rmm-suite: no RMM tests (conftest.py) in $tests" >&2; exit 2; }
ini=$(cd "$tests/../.." && pwd)/pyproject.toml
out=${RMM_SUITE_OUT:-$PWD/rmm-suite-report}
mkdir -p "$out"
out=$(cd "$out" && pwd)

if [ -n "$wheel" ]; then
  py=$(bash "$here/../wheel-venv.sh" "$wheel" "$out/venv") || exit 1
else
  py=${PYTHON:-python3}
fi
"$py" -c 'import rmmgo' || { echo "rmm-suite: $py cannot import rmmgo: pass a wheel" >&2; exit 2; }
# RMM's tests import these at collection: without them every module errors.
# The venv made from a wheel sees the packages of the Python it is based on.
missing=$("$py" - <<'PY'
import importlib.util as u
def has(*names):
    try:
        return any(u.find_spec(n) is not None for n in names)
    except (ImportError, ValueError):
        return False
need = [("pytest", ("pytest",)), ("numpy", ("numpy",)), ("numba", ("numba",)),
        ("numba-cuda", ("numba.cuda",)), ("cuda-python", ("cuda.bindings", "cuda.cudart"))]
print(" ".join(pkg for pkg, mods in need if not has(*mods)))
PY
)
if [ -n "$missing" ]; then
  echo "rmm-suite: RMM's tests need $missing, which $py lacks: install them into the Python the" >&2
  echo "rmm-suite: run is based on (\$PYTHON, else python3), e.g. pip install $missing" >&2
  exit 2
fi

args=(-p rmmgo_as_rmm -p no:cacheprovider --continue-on-collection-errors -rfEs --junitxml "$out/junit.xml" -o junit_family=xunit1)
if [ -f "$ini" ] && grep -q '^\[tool.pytest' "$ini"; then
  args+=(-c "$ini" --rootdir "$tests")
else
  args+=(-W error -W "ignore:The cuda.core.experimental namespace is deprecated:DeprecationWarning")
fi
echo "== RMM's tests from $tests against rmmgo ($py)"
cd "$out"
env -u RMMGO_LIBRARY -u RMMGO_TORCH_LIBRARY PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" "$py" -m pytest "${args[@]}" "$tests" "$@" >"$out/pytest.log" 2>&1
rc=$?
tail -n 40 "$out/pytest.log"
if [ -f "$out/junit.xml" ]; then
  "$py" "$here/summary.py" "$out/junit.xml" "$out/failures.txt" | tee "$out/summary.txt"
fi
exit $rc
