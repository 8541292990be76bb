#!/usr/bin/env bash
# Assembles one folder that builds and runs RMM 26.08's own C++ tests
# (rapidsai/rmm cpp/tests at commit 5d50a37, unmodified) against rmmgo's
# rmm/ headers and librmmgo.so, on a GPU machine with nvcc and no network:
#
#   scripts/rmm-cpp-suite/assemble.sh [OUT]     (default: build/rmm-cpp-suite)
#   OUT/run.sh [REPORT_DIR]                     (on the GPU machine)
#
# OUT holds: benchmarks/utilities/ (RMM's log parser), cccl/ (CCCL v3.3.3's libcudacxx, cub and thrust headers: RMM
# 26.08 needs CCCL >= 3.3, CUDA 13.0 ships 3.0), gtest/ (Debian's googletest
# sources), tests/ (RMM's cpp/tests), include/ (rmmgo's rmm/ and rmmgo.h),
# lib/librmmgo.so, and run.sh. It stays under the device tool's 64 MiB.
#
# Needs: the RMM and CCCL mirrors (RMM_MIRROR, CCCL_MIRROR: git directories,
# e.g. from the search tool's fetch), /usr/src/googletest (apt-get install
# googletest), build/librmmgo.so (make lib).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/build/rmm-cpp-suite}
rmm_mirror=${RMM_MIRROR:-/work/.mirror/rapidsai+rmm/repo}
cccl_mirror=${CCCL_MIRROR:-/work/.mirror/NVIDIA+cccl/repo}
rmm_commit=${RMM_COMMIT:-5d50a37}
cccl_tag=${CCCL_TAG:-v3.3.3}
gtest_src=${GTEST_SRC:-/usr/src/googletest}

[ -d "$rmm_mirror" ] || { echo "assemble: no RMM mirror at $rmm_mirror (set RMM_MIRROR)"; exit 1; }
[ -d "$cccl_mirror" ] || { echo "assemble: no CCCL mirror at $cccl_mirror (set CCCL_MIRROR)"; exit 1; }
[ -d "$gtest_src/googletest" ] || { echo "assemble: no googletest sources at $gtest_src (apt-get install googletest)"; exit 1; }
[ -f "$root/build/librmmgo.so" ] || { echo "assemble: build/librmmgo.so is missing (make lib)"; exit 1; }

rm -rf "$out"
mkdir -p "$out/cccl" "$out/gtest" "$out/include" "$out/lib"
git -C "$cccl_mirror" archive "$cccl_tag" libcudacxx/include cub/cub thrust/thrust | tar -x -C "$out/cccl"
# cpp/tests, and the log parser LOGGER_TEST includes as <benchmarks/utilities/log_parser.hpp>
# (RMM's tests have cpp/ on their include path).
git -C "$rmm_mirror" archive "$rmm_commit" cpp/tests cpp/benchmarks/utilities/log_parser.hpp cpp/benchmarks/utilities/rapidcsv.h |
  tar -x -C "$out" && mv "$out/cpp/tests" "$out/tests" && mv "$out/cpp/benchmarks" "$out/benchmarks" && rmdir "$out/cpp"
cp -r "$gtest_src/googletest" "$gtest_src/googlemock" "$out/gtest/"
cp -r "$root/include/rmm" "$root/include/rmmgo.h" "$out/include/"
cp "$root/build/librmmgo.so" "$out/lib/"
cp "$root/scripts/rmm-cpp-suite/run.sh" "$root/scripts/rmm-cpp-suite/expected.txt" "$out/"
echo "rmm $rmm_commit, cccl $cccl_tag, rmmgo $(git -C "$root" rev-parse --short HEAD)" > "$out/VERSIONS"
du -sh "$out"
