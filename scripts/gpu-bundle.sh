#!/usr/bin/env bash
# Packs everything the real-GPU verification needs into one folder,
# gpu-bundle/, built here (x86-64, no CUDA needed). On the GPU machine:
#     gpu-bundle/run.sh [REPORT_DIR]
# runs every test against the real GPU and writes a report.
set -euo pipefail
cd "$(dirname "$0")/.."
B=gpu-bundle
rm -rf "$B"
mkdir -p "$B"/{lib,bin,c,include,cudart/check,python,bench,testdata}

make lib
cp build/librmmgo.so "$B/lib/"
if make -n torch-shim >/dev/null 2>&1; then make torch-shim && cp build/librmmgo_torch.so "$B/lib/" || true; fi
cp -r include/. "$B/include/"  # rmmgo.h, rmmgo.hpp and the rmmgo/*.hpp it includes

# Go test binaries (run there with RMMGO_BACKEND=cuda; run.sh runs every bin/*.test).
# cudart/sim's binary holds the conformance tests, run on the GPU and the simulator.
for p in cudart cudart/sim core capi; do
  [ -d "$p" ] && go test -c -o "$B/bin/${p//\//-}.test" "./$p"
done
# The core tests once more under the race detector (run.sh's race section).
go test -race -c -o "$B/bin/core.race" ./core
for c in cmd/*/; do
  n=$(basename "$c"); go build -o "$B/bin/$n" "./$c"
done

# C examples and tests, built here against the bundled library.
for f in examples/c/*.c tests/c/*.c; do
  [ -f "$f" ] || continue
  n=$(basename "$f" .c)
  cc -std=gnu11 -O2 -Wall -Wextra -Werror -Iinclude "$f" -o "$B/c/$n" \
     -L"$B/lib" -lrmmgo -lpthread -Wl,-rpath,'$ORIGIN/../lib'
done
cp tests/c/check-exports.sh "$B/c/"

# The stress program (tests/stress), for run.sh's stress and sanitizer sections.
mkdir -p "$B/stress"
cc -std=gnu11 -O2 -g -Wall -Wextra -Werror -Iinclude tests/stress/rmmgo_stress.c -o "$B/stress/rmmgo_stress" \
   -L"$B/lib" -lrmmgo -lpthread -Wl,-rpath,'$ORIGIN/../lib'
make -s stress-bundle-files STRESS_BUNDLE="$B/stress"

# The CUDA declaration check is compiled there, by nvcc, against the real headers.
cp -r cudart/check/. "$B/cudart/check/"
cp cudart/cuda_abi.h cudart/abi_funcs_generated.h "$B/cudart/"

# Python package and tests, and the wheel they are run against there
# (scripts/wheel-test.sh installs it into a fresh venv), with what the tests
# read (docs/rmm-compatibility.md) and the RMM-suite runner.
cp -r python/. "$B/python/"
rm -rf "$B/python/build" "$B"/python/*.egg-info
find "$B/python" -name __pycache__ -prune -exec rm -rf {} +
make wheel
cp dist/rmmgo-*.whl "$B/python/"
mkdir -p "$B/scripts" "$B/docs"
cp -r scripts/wheel-venv.sh scripts/wheel-test.sh scripts/rmm-suite "$B/scripts/"
cp docs/rmm-compatibility.md "$B/docs/"
# Dask's distributed and what it needs, as wheels (.whl/dask, made by
# scripts/dask-wheels.py when missing): run.sh's dask section installs them.
[ -f .whl/dask/MANIFEST.txt ] || python3 scripts/dask-wheels.py ${PSUTIL_SOURCE:+--psutil-source "$PSUTIL_SOURCE"} \
  || echo "gpu-bundle: no Dask wheels (scripts/dask-wheels.py failed): run.sh's dask section will fail" >&2
if [ -f .whl/dask/MANIFEST.txt ]; then mkdir -p "$B/dask-wheels" && cp .whl/dask/*.whl .whl/dask/MANIFEST.txt "$B/dask-wheels/"; fi
# RMM's own Python tests, when given (RMM_TESTS=<RMM checkout or its
# python/rmm/rmm/tests>): run.sh's rmm section runs them against the wheel.
if [ -n "${RMM_TESTS:-}" ]; then
  # Laid out as RMM's python/rmm: pyproject.toml (its pytest settings) and rmm/tests.
  t=$RMM_TESTS
  mkdir -p "$B/rmm-tests/rmm"
  if [ -d "$t/python/rmm/rmm/tests" ]; then
    cp -r "$t/python/rmm/rmm/tests" "$B/rmm-tests/rmm/"
    cp "$t/python/rmm/pyproject.toml" "$B/rmm-tests/"
  else
    cp -r "$t" "$B/rmm-tests/rmm/tests"
  fi
fi

# C++ tests, compiled there with g++ and with nvcc (CCCL on); run_gpu.sh
# expects the repository's layout, so the bundle keeps a small copy of it.
mkdir -p "$B/cpp/tests" "$B/cpp/build" "$B/cpp/bench"
cp -r include "$B/cpp/"
cp -r tests/cpp "$B/cpp/tests/"
cp bench/random_allocations.c "$B/cpp/bench/"
cp build/librmmgo.so "$B/cpp/build/"

# C benchmark.
if [ -f bench/random_allocations.c ]; then
  cc -std=gnu11 -O2 -Wall -Iinclude bench/random_allocations.c -o "$B/bench/random_allocations" \
     -L"$B/lib" -lrmmgo -lpthread -ldl -lm -Wl,-rpath,'$ORIGIN/../lib'
fi
cp -r testdata/. "$B/testdata/" 2>/dev/null || true
# The real-workload logs, replayed by bench.sh's traces part (bin/rmmgo-replay).
mkdir -p "$B/bench/traces" && cp bench/traces/*.csv.gz bench/traces/README.md "$B/bench/traces/"
# The log at the device's limit, replayed by core's TestExpandableAtDeviceLimit (from testdata/).
cp -r bench/traces/at-limit "$B/bench/traces/"
# The Go tests run from testdata/ and build cudart's fake runtime from
# ../cudart/testdata/fake_cudart.c (capi and core's tests of the C paths).
mkdir -p "$B/cudart/testdata"
cp cudart/testdata/fake_cudart.c "$B/cudart/testdata/"

cp scripts/gpu-run.sh "$B/run.sh"
cp scripts/gpu-bench.sh "$B/bench.sh"
chmod +x "$B/run.sh" "$B/bench.sh"
du -sh "$B"
echo "bundle ready: $B/run.sh on the GPU machine"
