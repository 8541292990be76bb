#!/usr/bin/env bash
# Installs an rmmgo wheel into a fresh virtual environment (scripts/wheel-venv.sh)
# and runs the Python tests against the installed package, from a folder
# outside any checkout.
#
#   scripts/wheel-test.sh WHEEL TESTS_DIR [pytest arguments...]
#
# Environment:
#   PYTHON            the interpreter to base the environment on (see wheel-venv.sh)
#   WHEEL_VENV_EXTRA  a folder of more wheels to install with it (see wheel-venv.sh)
#   RMMGO_SOURCE_DIR  a checkout or GPU bundle with include/ and docs/, for the
#                     tests that read them (they skip without it)
#   WHEEL_TEST_DIR    where to make the environment and copy the tests
#                     (default: a new temporary folder, removed afterwards)
# RMMGO_LIBRARY, RMMGO_TORCH_LIBRARY and PYTHONPATH are unset for the run: the
# installed package must find itself and its libraries.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 WHEEL TESTS_DIR [pytest args...]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
wheel=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tests=$(cd "$2" && pwd)
shift 2

if [ -n "${WHEEL_TEST_DIR:-}" ]; then
  work=$WHEEL_TEST_DIR; rm -rf "$work"; mkdir -p "$work"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/rmmgo-wheel-test.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi
vpy=$(bash "$here/wheel-venv.sh" "$wheel" "$work/venv")

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
