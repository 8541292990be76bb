#!/usr/bin/env bash
# Builds every test file of RMM's C++ suite (tests/, RMM 26.08, unmodified)
# against rmmgo's rmm/ headers (include/), CCCL 3.3 (cccl/) and librmmgo.so
# (lib/) with nvcc, runs each, and prints one line per test program:
# PASS, FAIL (with the failed tests), NOT BUILT (with the first compiler
# error), SKIPPED (expected.txt says why). Logs go to REPORT_DIR (default
# ./report). JOBS parallel compilations (default: the cores / 2).
#   ./run.sh [REPORT_DIR]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
report=${1:-$here/report}
jobs=${JOBS:-$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))}
nvcc=${NVCC:-nvcc}
# BIN: where test programs go; a program already there is not rebuilt
# (REBUILD=1 rebuilds), so a second call on a warm machine only runs.
bin=${BIN:-$here/bin}
mkdir -p "$report" "$bin"
export RMMGO_BACKEND=${RMMGO_BACKEND:-cuda}
# Death tests (CUDA_STREAM_TEST's TestSyncNoThrow) run in a child that
# re-executes the program, gtest's style for processes with threads: a child
# that is only forked holds librmmgo's Go runtime, which does not survive a
# fork, and every librmmgo call there is refused (the test then sees an
# exception instead of the abort it expects).
export GTEST_DEATH_TEST_STYLE=${GTEST_DEATH_TEST_STYLE:-threadsafe}
# librmmgo loads the same libcudart the tests link (-cudart shared).
cudart=$(ldconfig -p 2>/dev/null | awk '/libcudart\.so\.13 /{print $NF; exit}')
[ -n "${cudart:-}" ] || cudart=$(dirname "$(command -v "$nvcc")")/../lib64/libcudart.so.13
[ -f "$cudart" ] && export RMMGO_CUDART_LIBRARY=${RMMGO_CUDART_LIBRARY:-$cudart}

flags=(-std=c++20 --expt-extended-lambda --expt-relaxed-constexpr -O1 -x cu
       -I"$here/include" -I"$here/cccl/libcudacxx/include" -I"$here/cccl/cub" -I"$here/cccl/thrust"
       -I"$here/gtest/googletest/include" -I"$here/gtest/googlemock/include" -I"$here/tests" -I"$here"
       -DLIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE -DCCCL_DISABLE_CTK_COMPATIBILITY_CHECK)
link=(-cudart shared -L"$here/lib" -lrmmgo -Xlinker -rpath -Xlinker "$here/lib" -lcuda -lpthread)

# gtest and gmock, once.
if [ ! -f "$bin/libgtest_all.a" ]; then
  gt=$here/gtest/googletest gm=$here/gtest/googlemock
  g++ -std=c++20 -O1 -I"$gt/include" -I"$gt" -c "$gt/src/gtest-all.cc" -o "$bin/gtest-all.o" &&
  g++ -std=c++20 -O1 -I"$gt/include" -I"$gm/include" -I"$gm" -c "$gm/src/gmock-all.cc" -o "$bin/gmock-all.o" &&
  g++ -std=c++20 -O1 -I"$gt/include" -I"$gm/include" -c "$gt/src/gtest_main.cc" -o "$bin/gtest_main.o" &&
  ar rcs "$bin/libgtest_all.a" "$bin/gtest-all.o" "$bin/gmock-all.o" "$bin/gtest_main.o" ||
  { echo "run: building googletest failed"; exit 1; }
fi

[ -n "${BUILD_ONLY:-}" ] && echo "(BUILD_ONLY: the programs are built, not run)"
# The test programs of RMM's tests/CMakeLists.txt: NAME FILE [FILE...].
programs() {
  sed -n 's/^ConfigureTest(\([A-Z_0-9]*\) \([^)]*\))/\1 \2/p' "$here/tests/CMakeLists.txt" |
    sed -E 's/ (GPUS|PERCENT|CUDART|LINK_DRIVER|STATIC|SHARED)( [0-9A-Z]+)?//g'
  echo "PROCESS_IS_EXITING_SHUTDOWN_TEST process_is_exiting_shutdown_test.cpp"
}

export here report nvcc bin REBUILD
export flags_s="${flags[*]}" link_s="${link[*]}"

programs > "$report/programs.txt"
echo "building $(wc -l < "$report/programs.txt") test programs with $jobs jobs..."
while read -r name files; do
  echo "$name $files"
done < "$report/programs.txt" | xargs -P "$jobs" -L 1 bash -c '
  IFS=" " read -r -a flags <<< "$flags_s"; IFS=" " read -r -a link <<< "$link_s"
  name=$0; shift 0
  if [ -x "$bin/$name" ] && [ -z "${REBUILD:-}" ]; then exit 0; fi
  : >"$report/$name.build.log"
  srcs=(); for f in "$@"; do srcs+=("$here/tests/$f"); done
  g=("$bin/libgtest_all.a"); [ "$name" = PROCESS_IS_EXITING_SHUTDOWN_TEST ] && g=()
  # Compile each source as CUDA (-x cu), then link apart: nvcc has no
  # "-x none" to stop treating the archives that follow as sources.
  objs=(); rc=0; i=0
  for src in "${srcs[@]}"; do
    o="$bin/$name.$i.o"; i=$((i + 1)); objs+=("$o")
    "$nvcc" "${flags[@]}" -c "$src" -o "$o" >>"$report/$name.build.log" 2>&1 || { rc=$?; break; }
  done
  [ $rc -eq 0 ] && { "$nvcc" "${objs[@]}" "${g[@]}" "${link[@]}" -o "$bin/$name" >>"$report/$name.build.log" 2>&1 || rc=$?; }
  echo "  built? $name: $rc"'

[ -n "${BUILD_ONLY:-}" ] && { ls "$bin" | grep -c TEST | sed 's/$/ test programs built/'; exit 0; }
pass=0; fail=0; notbuilt=0; skipped=0
while read -r name files; do
  why=$(awk -v n="$name" '$1 == n && $2 == "skip" { $1 = ""; $2 = ""; sub(/^ +/, ""); print }' "$here/expected.txt")
  if [ -n "$why" ]; then
    printf 'SKIPPED   %-40s %s\n' "$name" "$why"; skipped=$((skipped + 1)); continue
  fi
  if [ ! -x "$bin/$name" ]; then
    printf 'NOT BUILT %-40s %s\n' "$name" "$(grep -m1 -E 'error' "$report/$name.build.log" | cut -c1-200)"
    notbuilt=$((notbuilt + 1)); continue
  fi
  if timeout "${TEST_TIMEOUT:-600}" "$bin/$name" >"$report/$name.log" 2>&1; then
    printf 'PASS      %-40s %s\n' "$name" "$(grep -E '^\[  PASSED  \]' "$report/$name.log" | head -1)"
    pass=$((pass + 1))
  else
    printf 'FAIL      %-40s %s\n' "$name" "$(grep -E '^\[  FAILED  \] [A-Za-z]' "$report/$name.log" | head -3 | tr '\n' ' ' | cut -c1-300)"
    fail=$((fail + 1))
  fi
done < "$report/programs.txt" | tee "$report/summary.txt"
echo "rmm-cpp-suite: $(grep -c '^PASS' "$report/summary.txt") passed, $(grep -c '^FAIL' "$report/summary.txt") failed, $(grep -c '^NOT BUILT' "$report/summary.txt") not built, $(grep -c '^SKIPPED' "$report/summary.txt") skipped"
