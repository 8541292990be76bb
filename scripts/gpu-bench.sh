#!/usr/bin/env bash
# Runs rmmgo's benchmarks on the real GPU, from the bundle made by
# scripts/gpu-bundle.sh (it becomes gpu-bundle/bench.sh).
#
#   bench.sh OUTDIR [go] [capi] [python] [c] [traces] [realwork]
#                                                 (default: go capi python)
#
# Each part writes OUTDIR/<part>.txt. Knobs (environment):
#   GO_BENCH_COUNT  repetitions of each Go benchmark (default 5)
#   C_BENCH_ARGS    arguments for bench/random_allocations (default: all cases,
#                   1, 4 and 16 threads, 5 repetitions)
#   PY_BENCH_ARGS   arguments for python/bench/bench_device_buffer.py
#   TRACES_ARGS     more arguments for bin/rmmgo-replay in the traces part
#   REALWORK_ARGS   arguments for python/bench/realwork/run.py (default --quick);
#                   it needs torch, torchvision, transformers and cupy
# traces replays bench/traces against every sub-allocator on the GPU (the
# table of make bench-traces; JSON lines in OUTDIR/traces.jsonl); realwork
# runs PyTorch and CuPy workloads under every allocator (OUTDIR/realwork/).
# Figures from here go into docs/benchmarks.md with the header this prints.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:?usage: bench.sh OUTDIR [go] [capi] [python] [c] [traces] [realwork]}; shift
PARTS=${*:-go capi python}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
export RMMGO_BACKEND=cuda
export LD_LIBRARY_PATH="$HERE/lib:${LD_LIBRARY_PATH:-}"
export RMMGO_LIBRARY="$HERE/lib/librmmgo.so"
PY=${PYTHON:-python3}
COUNT=${GO_BENCH_COUNT:-5}

header() {
  echo "# $1, $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/# GPU: /'
  echo "# CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
  echo "# command: $2"
}

part_go() {
  cd "$HERE"
  local t="$HERE/bin/core.test"
  # Each RandomAllocations iteration is one whole workload run, so 1x per
  # count; the sub-allocators at 1, 4 and 16 goroutines, cudaMallocAsync
  # (cuda_async) and cudaMalloc (cuda) at one goroutine in the same run.
  header "Go benchmarks (core)" "core.test -test.bench ... -test.benchtime 1x -test.count $COUNT"
  "$t" -test.run '^$' -test.bench 'RandomAllocations$/.*/(pool|binning|arena|fixed_size)/' \
    -test.benchtime 1x -test.count "$COUNT" -test.timeout 20m
  "$t" -test.run '^$' -test.bench 'RandomAllocations$/.*/(cuda_async|cuda)/goroutines=1$' \
    -test.benchtime 1x -test.count "$COUNT" -test.timeout 20m
  "$t" -test.run '^$' -test.bench 'LiveAllocations|PoolHandoff|AdaptorOverhead' \
    -test.benchtime 200ms -test.count "$COUNT" -test.timeout 20m
}
part_capi() {
  header "C ABI costs (capi_bench)" "c/capi_bench"
  "$HERE/c/capi_bench"
}
part_python() {
  header "Python DeviceBuffer vs PyTorch and CuPy" "bench_device_buffer.py ${PY_BENCH_ARGS:-}"
  cd "$HERE/python" && PYTHONPATH="$HERE/python" $PY bench/bench_device_buffer.py ${PY_BENCH_ARGS:-}
}
part_c() {
  header "random_allocations (C)" "bench/random_allocations ${C_BENCH_ARGS:-}"
  "$HERE/bench/random_allocations" ${C_BENCH_ARGS:-}
}

part_traces() {
  local f; f=$(ls "$HERE"/bench/traces/*.csv.gz | paste -sd, -)
  header "Trace replays (rmmgo-replay -r traces)" "bin/rmmgo-replay -f bench/traces/*.csv.gz -r traces ${TRACES_ARGS:-}"
  "$HERE/bin/rmmgo-replay" -f "$f" -r traces -json "$OUT/traces.jsonl" ${TRACES_ARGS:-}
}
part_realwork() {
  header "Real workloads (python/bench/realwork)" "run.py ${REALWORK_ARGS:---quick} --out $OUT/realwork"
  cd "$HERE/python" && PYTHONPATH="$HERE/python" $PY bench/realwork/run.py ${REALWORK_ARGS:---quick} --out "$OUT/realwork"
}

rc=0
for p in $PARTS; do
  t0=$SECONDS
  ( "part_$p" ) > "$OUT/$p.txt" 2>&1 || { echo "== $p: FAILED"; rc=1; }
  echo "== $p: $(( SECONDS - t0 ))s"; tail -n 5 "$OUT/$p.txt"
done
exit $rc
