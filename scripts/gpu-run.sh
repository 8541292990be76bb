#!/usr/bin/env bash
# Runs every rmmgo test against the real GPU. Usage: run.sh [REPORT_DIR] [SECTION...]
# Sections: env check go race c cpp python dask multigpu replay stress sanitizer bench rmm
# (default: all but bench and rmm, and multigpu only where the run sees two GPUs or more;
# rmm runs RMM's own tests, bundled with RMM_TESTS=..., against the wheel).
# Writes REPORT_DIR/report.md and one log per section; exit 0 only if all passed.
#
# On a machine of two GPUs, `gpu-bundle/run.sh` alone covers everything: the
# tests that need two devices run in every section (RMMGO_TEST_MIN_DEVICES,
# set to the GPUs seen, makes them fail rather than skip), and the multigpu
# section runs them by name, with the Dask cluster of one worker per GPU.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPORT=${1:-$HERE/report}; shift || true
# The GPUs this run sees: those CUDA_VISIBLE_DEVICES names, else nvidia-smi's list.
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  NGPU=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
else
  NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
fi
export RMMGO_TEST_MIN_DEVICES=${RMMGO_TEST_MIN_DEVICES:-$NGPU}
MULTI=""; [ "$NGPU" -ge 2 ] && MULTI=multigpu
SECTIONS=${*:-env check go race c cpp python dask $MULTI replay stress sanitizer}
mkdir -p "$REPORT"
export RMMGO_BACKEND=cuda
export LD_LIBRARY_PATH="$HERE/lib:${LD_LIBRARY_PATH:-}"
export RMMGO_LIBRARY="$HERE/lib/librmmgo.so"
PY=${PYTHON:-python3}
declare -A RESULT
summary() { echo "| $1 | $2 | $3 |" >> "$REPORT/summary.rows"; RESULT[$1]=$2; }
: > "$REPORT/summary.rows"
cd "$HERE"

run_section() { # name, command...
  local name=$1; shift
  local log="$REPORT/$name.log"
  local t0=$SECONDS
  ( "$@" ) >"$log" 2>&1
  local rc=$?
  local tail=$(grep -E "passed|failed|^ok|^FAIL|^PASS|mismatch|error" "$log" | tail -n 3 | tr '\n' ' ' | cut -c1-300)
  if [ $rc -eq 0 ]; then summary "$name" PASS "$(( SECONDS - t0 ))s ${tail}"; else summary "$name" "FAIL(rc=$rc)" "$(( SECONDS - t0 ))s ${tail}"; fi
  echo "== $name: rc=$rc ($(( SECONDS - t0 ))s)"; tail -n 15 "$log"
}

sec_env() {
  date -u; uname -a; nvidia-smi || true
  nvcc --version || true
  $PY -c 'import sys; print(sys.version)'
  $PY -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))' || true
  $PY -c 'import cupy; print("cupy", cupy.__version__)' || true
  $PY -c 'import numba; print("numba", numba.__version__)' || true
  $PY -c 'import numpy; print("numpy", numpy.__version__)' || true
  $PY -c 'from importlib.metadata import version as v; print("numba-cuda", v("numba-cuda"))' || true
  ldconfig -p | grep -E "libcudart" || true
}
sec_check() { sh "$HERE/cudart/check/run.sh"; }
sec_go() {
  local rc=0
  for t in "$HERE"/bin/*.test; do
    echo "### $(basename "$t")"
    ( cd "$HERE/testdata" 2>/dev/null || cd "$HERE"; "$t" -test.count=1 -test.v -test.timeout 300s ) || rc=1
  done
  return $rc
}
sec_race() { # the core tests under the race detector, twice (many Ps race more)
  ( cd "$HERE/testdata" 2>/dev/null || cd "$HERE"; "$HERE/bin/core.race" -test.count=2 -test.timeout 500s )
}
sec_c() {
  local rc=0
  for t in "$HERE"/c/*; do
    [ -x "$t" ] && [ -f "$t" ] || continue
    case "$t" in *.sh) continue;; esac
    echo "### $(basename "$t")"
    ( cd "$REPORT" && "$t" ) || { echo "FAILED: $(basename "$t")"; rc=1; }
  done
  [ -f "$HERE/c/check-exports.sh" ] && { bash "$HERE/c/check-exports.sh" "$HERE/include/rmmgo.h" "$HERE/lib/librmmgo.so" \
    "$HERE/python/rmmgo/_bindings.py" "$HERE/lib/librmmgo_torch.so" || rc=1; }
  return $rc
}
sec_cpp() { bash "$HERE/cpp/tests/cpp/run_gpu.sh"; }
# The wheel installed into a fresh venv, tested from outside the bundle.
sec_python() { PYTHON=$PY RMMGO_SOURCE_DIR="$HERE" bash "$HERE/scripts/wheel-test.sh" "$(ls "$HERE"/python/rmmgo-*.whl)" "$HERE/python/tests"; }
# rmmgo.dask's tests (python/tests/test_dask.py) against the wheel, with Dask's
# distributed installed beside it from dask-wheels/ (pip --no-index: no network
# there): a LocalGPUCluster of one worker process per visible GPU.
sec_dask() {
  [ -f "$HERE/dask-wheels/MANIFEST.txt" ] || { echo "no dask-wheels/ in the bundle: python3 scripts/dask-wheels.py, then make gpu-bundle"; return 1; }
  cat "$HERE/dask-wheels/MANIFEST.txt"; nvidia-smi -L || true
  PYTHON=$PY RMMGO_SOURCE_DIR="$HERE" RMMGO_TEST_DASK=1 WHEEL_VENV_EXTRA="$HERE/dask-wheels" \
    bash "$HERE/scripts/wheel-test.sh" "$(ls "$HERE"/python/rmmgo-*.whl)" "$HERE/python/tests" -k test_dask
}
# Two GPUs or more: the tests that need two devices, by name in each
# language, and rmmgo.dask's cluster of one worker per GPU (whose workers
# must report different GPU UUIDs). The other sections run them too; this one
# shows in the report that they ran, and fails if one was skipped.
sec_multigpu() {
  local rc=0 log
  [ "$NGPU" -ge 2 ] || { echo "multigpu: needs two GPUs, this run sees $NGPU"; return 1; }
  nvidia-smi -L || true
  echo "RMMGO_TEST_MIN_DEVICES=$RMMGO_TEST_MIN_DEVICES"
  echo "### go"
  ( cd "$HERE/testdata" 2>/dev/null || cd "$HERE"
    "$HERE/bin/core.test" -test.count=1 -test.v -test.timeout 300s \
      -test.run '^(TestPerDeviceSetReset|TestPerDeviceWrongDevice|TestPerDeviceRefusesAnotherDevicesResource|TestBaseResourceWrongDevice)$' &&
    "$HERE/bin/capi.test" -test.count=1 -test.v -test.timeout 300s -test.run '^TestAsyncPathDeviceCheck$' ) || rc=1
  echo "### c"
  ( cd "$REPORT" && "$HERE/c/bad_input_test" test_wrong_device test_per_device_wrong_device &&
    "$HERE/c/framework_test" test_free_with_another_device_current && "$HERE/c/per_device" ) || rc=1
  echo "### python and dask"
  log="$REPORT/multigpu-python.log"
  PYTHON=$PY RMMGO_SOURCE_DIR="$HERE" RMMGO_TEST_DASK=1 WHEEL_VENV_EXTRA="$HERE/dask-wheels" \
    bash "$HERE/scripts/wheel-test.sh" "$(ls "$HERE"/python/rmmgo-*.whl)" "$HERE/python/tests" -rs \
    -k "test_per_device_resources_are_shared or test_kept_current_resource_follows_the_device or test_a_resource_of_another_device_is_refused or test_gpu_uuids or test_one_worker_per_gpu" \
    2>&1 | tee "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
  grep -q "5 passed" "$log" || { echo "multigpu: want the 5 Python tests passed, none skipped"; rc=1; }
  return $rc
}
sec_rmm() {
  [ -d "$HERE/rmm-tests/rmm/tests" ] || { echo "no RMM tests in the bundle: make gpu-bundle with RMM_TESTS=<RMM checkout>"; return 1; }
  PYTHON=$PY RMM_SUITE_OUT="$REPORT/rmm-suite" bash "$HERE/scripts/rmm-suite/run.sh" "$HERE/rmm-tests/rmm/tests" "$(ls "$HERE"/python/rmmgo-*.whl)"
}
sec_replay() {
  local f=$(ls "$HERE"/testdata/*.csv 2>/dev/null | head -1)
  if [ -z "$f" ]; then
    f="$REPORT/replay-log.csv"
    "$HERE/bin/rmmgo-replay" -generate 20000 -threads 4 -seed 1 -f "$f" -r pool -initial 0 -plot "$REPORT/replay-pool-generated.png" || return 1
  fi
  for r in pool arena binning cuda_async; do
    echo "### replay -r $r"
    "$HERE/bin/rmmgo-replay" -f "$f" -r "$r" -plot "$REPORT/replay-$r.png" || return 1
  done
}
# The stress program at full size, each part in its own process, within the
# budget of stress/args (STRESS_BUNDLE_ARGS in mk/stress.mk; STRESS_ARGS adds
# to it); the bugs listed in stress/known-bugs are reported without failing.
sec_stress() {
  ( cd "$REPORT" && "$HERE/stress/rmmgo_stress" --isolate --known-bugs="$(cat "$HERE/stress/known-bugs")" \
      $(cat "$HERE/stress/args" 2>/dev/null) ${STRESS_ARGS:-} )
}
# compute-sanitizer memcheck (leak check on, CUDA API errors not counted: the
# tests make them on purpose) over the C tests and a short stress run.
sec_sanitizer() {
  local cs=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)} t rc=0
  [ -x "$cs" ] || { echo "compute-sanitizer not found: set COMPUTE_SANITIZER"; return 1; }
  for t in "$HERE"/c/* "$HERE/stress/rmmgo_stress"; do
    [ -x "$t" ] && [ -f "$t" ] || continue
    case "$t" in *.sh|*bench*) continue;; esac
    local args=()
    [ "$(basename "$t")" = rmmgo_stress ] && args=($(cat "$HERE/stress/sanitizer-args") --known-bugs="$(cat "$HERE/stress/known-bugs")")
    echo "### $(basename "$t")"
    ( cd "$REPORT" && "$cs" --tool memcheck --leak-check full --report-api-errors no --target-processes application-only \
        --error-exitcode 99 "$t" "${args[@]}" ) || { echo "FAILED: $(basename "$t")"; rc=1; }
  done
  return $rc
}
sec_bench() { "$HERE/bench/random_allocations" ${BENCH_ARGS:-}; }

for s in $SECTIONS; do run_section "$s" "sec_$s"; done

{
  echo "# rmmgo GPU run, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/- GPU: /'
  echo
  echo "| section | result | time and last lines |"
  echo "| --- | --- | --- |"
  cat "$REPORT/summary.rows"
} > "$REPORT/report.md"
cat "$REPORT/report.md"
for v in "${RESULT[@]}"; do [ "$v" = PASS ] || exit 1; done
exit 0
