#!/usr/bin/env bash
# run_gpu.sh -- the C++ API's tests on a machine with a GPU, nvcc and CCCL.
#
#   tests/cpp/run_gpu.sh            from the repository root (or anywhere)
#
# Uses build/librmmgo.so as it is (runs `make lib` only when it is missing and
# Go is installed). Steps, each reported; the script exits non-zero if any
# required step fails:
#   1. api_test with g++ -Wall -Wextra -Werror, CCCL off, on the GPU
#   2. api_test with nvcc (CCCL on: rmmgo.hpp's static_asserts against the
#      toolkit's real CCCL), on the GPU
#   3. cccl_test.cu with nvcc: concepts, resource_ref / any_resource,
#      thrust containers and algorithms over every class, on the GPU
#   3b. each topic header (include/rmmgo/*.hpp) alone with nvcc, CCCL on
#   4. (optional, not counted) cccl_test.cu with -DRMMGO_TEST_CUDAX: the owning
#      wrapper from cudax, for CCCL older than 3.2 whose libcu++ lacks
#      cuda::mr::any_resource; skipped when cudax is not installed
#   5. the random-allocations benchmark, tiny sizes, every resource and both
#      baselines (a smoke run; real figures: see bench/README.md)
# Environment: NVCC (default nvcc), NVCC_ARCH (default -arch=native), CXX
# (default g++), CC (default cc), BUILD (default build).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
NVCC=${NVCC:-nvcc}
NVCC_ARCH=${NVCC_ARCH:--arch=native}
CXX=${CXX:-g++}
CC=${CC:-cc}
OUT=$BUILD/cpp-gpu
mkdir -p "$OUT"
export RMMGO_BACKEND=${RMMGO_BACKEND:-cuda}
RPATH="-Wl,-rpath,$PWD/$BUILD"

if [ ! -f "$BUILD/librmmgo.so" ]; then
  if command -v go >/dev/null 2>&1; then
    make lib || exit 1
  else
    echo "run_gpu.sh: no $BUILD/librmmgo.so and no Go to build it; bring the library built elsewhere" >&2
    exit 1
  fi
fi

failed=0
step() { # step NAME COMMAND...: runs a required step
  local name=$1
  shift
  echo
  echo "== $name"
  if "$@"; then echo "== $name: ok"; else echo "== $name: FAILED"; failed=$((failed + 1)); fi
}

echo "== host: $(uname -srm); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
echo "== nvcc: $($NVCC --version 2>/dev/null | grep -i release)"
printf '#include <cuda/std/version>\n' >"$OUT/v.cu"
# The macro definitions themselves (-dM): CCCL_VERSION may be an expression.
CCCL_DEFS=$($NVCC -E -Xcompiler -dM -x cu "$OUT/v.cu" 2>"$OUT/v.err" | grep -E '^#define CCCL_VERSION ' | sed 's/^#define //')
echo "== CCCL version (MMMmmmppp): ${CCCL_DEFS:-none found ($(tail -n 2 "$OUT/v.err" | tr '\n' ' '))}"

step "api_test: g++, CCCL off" bash -c "
  $CXX -std=c++17 -O1 -g -Wall -Wextra -Werror -DRMMGO_DISABLE_CCCL -Iinclude tests/cpp/api_test.cpp \
    -o $OUT/api_test_gxx -L$BUILD -lrmmgo $RPATH -pthread && $OUT/api_test_gxx"

step "api_test: nvcc, CCCL on" bash -c "
  $NVCC -std=c++17 -O1 $NVCC_ARCH -x cu -Xcompiler=-Wall,-Wextra -Iinclude tests/cpp/api_test.cpp \
    -o $OUT/api_test_nvcc -L$BUILD -lrmmgo -Xlinker -rpath -Xlinker $PWD/$BUILD && $OUT/api_test_nvcc"

step "cccl_test: nvcc" bash -c "
  $NVCC -std=c++17 -O2 $NVCC_ARCH -Xcompiler=-Wall,-Wextra -Iinclude tests/cpp/cccl_test.cu \
    -o $OUT/cccl_test -L$BUILD -lrmmgo -Xlinker -rpath -Xlinker $PWD/$BUILD && $OUT/cccl_test"

# Each topic header alone, as <rmmgo/NAME.hpp>, against the real CCCL (make
# test-cpp-headers does this with g++ and fake_cccl).
headers_alone() {
  local h n=0
  for h in include/rmmgo/*.hpp; do
    h=$(basename "$h")
    printf '#include <rmmgo/%s>\n#if !RMMGO_HAS_CCCL\n#error "CCCL is off"\n#endif\n' "$h" >"$OUT/alone_${h%.hpp}.cu"
    $NVCC -std=c++17 $NVCC_ARCH -Xcompiler=-Wall,-Wextra -Iinclude -c "$OUT/alone_${h%.hpp}.cu" \
      -o "$OUT/alone_${h%.hpp}.o" || { echo "rmmgo/$h does not compile alone with nvcc"; return 1; }
    n=$((n + 1))
  done
  echo "$n topic headers compile alone with nvcc"
}
step "topic headers alone: nvcc, CCCL on" headers_alone

echo
echo "== cccl_test with cudax (optional)"
if printf '#include <cuda/experimental/memory_resource.cuh>\n' | $NVCC -std=c++17 -x cu -E - >/dev/null 2>&1; then
  if $NVCC -std=c++17 -O2 $NVCC_ARCH -DRMMGO_TEST_CUDAX -Iinclude tests/cpp/cccl_test.cu \
    -o "$OUT/cccl_test_cudax" -L"$BUILD" -lrmmgo -Xlinker -rpath -Xlinker "$PWD/$BUILD" >"$OUT/cudax.log" 2>&1; then
    "$OUT/cccl_test_cudax" || echo "== cccl_test with cudax: FAILED (optional)"
  else
    echo "== cccl_test with cudax: did not compile (optional); first lines:"
    head -20 "$OUT/cudax.log"
  fi
else
  echo "== cudax is not installed with this toolkit: skipped"
fi

step "random_allocations: smoke" bash -c "
  $CC -std=c11 -O2 -Wall -Wextra -Werror -Iinclude bench/random_allocations.c -o $BUILD/random_allocations \
    -L$BUILD -lrmmgo $RPATH -pthread -ldl &&
  $BUILD/random_allocations --case small,medium --threads 1,4 --reps 2 --num-allocations 2000 \
    --max-usage 1GiB --pool-initial 1GiB --arena-size 1GiB"

echo
if [ "$failed" -eq 0 ]; then echo "run_gpu.sh: every step passed"; else echo "run_gpu.sh: $failed step(s) failed"; fi
exit "$failed"
