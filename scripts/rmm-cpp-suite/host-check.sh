#!/usr/bin/env bash
# Builds RMM 26.08's C++ test programs (cpp/tests at 5d50a37, unmodified)
# with the host C++ compiler against rmmgo's rmm/ headers, tests/cpp/fake_cccl
# (CCCL 3.3's spelling) and googletest, and runs them on the simulated device:
# what they assert of rmmgo's behaviour can be checked on a machine with no
# CUDA toolkit. It is not the suite's result (that is run.sh with nvcc, real
# CCCL and a GPU): host/ holds stand-ins for the few CUDA runtime calls the
# tests make (over librmmgo), a host-run thrust::sequence/equal and
# exec_policy (the simulated device's memory is the process's), and a zip
# iterator. Known limits: pointer attributes always say device memory
# (HOST_MR_REF_TEST and CUDA_ASYNC_MANAGED_MR_TEST's managed check fail here),
# cudaStreamGetFlags answers 0, events synchronize the device; programs that
# launch kernels (THRUST_ALLOCATOR, SYSTEM_MR, CONTAINER_MULTIDEVICE) are not built.
#
#   scripts/rmm-cpp-suite/host-check.sh [NAME...]    (default: every program)
#
# Needs: build/librmmgo.so (make lib), the RMM mirror (RMM_MIRROR), googletest
# sources (GTEST_SRC, apt-get install googletest). Work goes to build/rmm-host-check.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/scripts/rmm-cpp-suite/host
out=${OUT:-$root/build/rmm-host-check}
rmm_mirror=${RMM_MIRROR:-/work/.mirror/rapidsai+rmm/repo}
gtest_src=${GTEST_SRC:-/usr/src/googletest}
cxx=${CXX:-g++}
[ -f "$root/build/librmmgo.so" ] || { echo "host-check: build/librmmgo.so is missing (make lib)"; exit 1; }
mkdir -p "$out/bin"
if [ ! -d "$out/rmm/tests" ]; then
  git -C "$rmm_mirror" archive 5d50a37 cpp/tests cpp/benchmarks/utilities | tar -x -C "$out" &&
    mv "$out/cpp" "$out/rmm" || { echo "host-check: no RMM mirror at $rmm_mirror (set RMM_MIRROR)"; exit 1; }
fi
if [ ! -f "$out/bin/libgtest_all.a" ]; then
  gt=$gtest_src/googletest gm=$gtest_src/googlemock
  for s in "$gt/src/gtest-all.cc:-I$gt" "$gm/src/gmock-all.cc:-I$gm" "$gt/src/gtest_main.cc:"; do
    "$cxx" -std=c++20 -O1 -I"$gt/include" -I"$gm/include" ${s#*:} -c "${s%%:*}" -o "$out/bin/$(basename "${s%%:*}" .cc).o" ||
      { echo "host-check: building googletest failed"; exit 1; }
  done
  ar rcs "$out/bin/libgtest_all.a" "$out/bin/gtest-all.o" "$out/bin/gmock-all.o" "$out/bin/gtest_main.o"
fi
tests=$out/rmm/tests
programs() {
  sed -n 's/^ConfigureTest(\([A-Z_0-9]*\) \([^)]*\))/\1 \2/p' "$tests/CMakeLists.txt" |
    sed -E 's/ (GPUS|PERCENT|CUDART|LINK_DRIVER|STATIC|SHARED)( [0-9A-Z]+)?//g' |
    grep -v -E '^(THRUST_ALLOCATOR_TEST|SYSTEM_MR_TEST|CONTAINER_MULTIDEVICE_TEST|HWDECOMPRESS_TEST|CUDA_ASYNC_MR_STATIC_CUDART_TEST|ARENA_MR_TEST|RESOURCE_REF_CONVERSION_TEST) '
}
pass=0 fail=0 notbuilt=0
while read -r name files; do
  if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
  srcs=(); for f in $files; do srcs+=("$tests/$f"); done
  if ! "$cxx" -std=c++20 -O1 -g -x c++ -DFAKE_CCCL_VERSION=3003000 -I"$here/first" -I"$root/tests/cpp/fake_cccl" \
      -I"$root/include" -I"$gtest_src/googletest/include" -I"$gtest_src/googlemock/include" -I"$tests" -I"$out/rmm" \
      -I"$here" -include "$here/cuda_shim.h" "${srcs[@]}" "$here/cuda_shim.cpp" -x none "$out/bin/libgtest_all.a" \
      -L"$root/build" -lrmmgo -Wl,-rpath,"$root/build" -pthread -o "$out/bin/$name" >"$out/$name.build.log" 2>&1; then
    printf 'NOT BUILT %-36s %s\n' "$name" "$(grep -m1 'error' "$out/$name.build.log" | cut -c1-160)"; notbuilt=$((notbuilt + 1)); continue
  fi
  if RMMGO_BACKEND=simulated RMMGO_SIM_DEVICES=${RMMGO_SIM_DEVICES:-1} RMMGO_SIM_PAGEABLE=1 \
      GTEST_DEATH_TEST_STYLE=threadsafe timeout 600 "$out/bin/$name" >"$out/$name.log" 2>&1; then
    printf 'PASS      %-36s %s\n' "$name" "$(grep -m1 -E '^\[  PASSED  \]' "$out/$name.log")"; pass=$((pass + 1))
  else
    printf 'FAIL      %-36s %s\n' "$name" "$(grep -E '^\[  FAILED  \] [A-Za-z]' "$out/$name.log" | sort -u | head -3 | tr '\n' ' ' | cut -c1-240)"; fail=$((fail + 1))
  fi
done < <(programs)
echo "host-check: $pass passed, $fail failed, $notbuilt not built (simulated device; not the GPU suite's result)"
