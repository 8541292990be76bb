#!/bin/sh
# run.sh: build and run rmmgo's CUDA declaration check (see README.md).
#
#   cudart/check/run.sh                 check against the headers of the nvcc found
#   cudart/check/run.sh DIR...          also check against each CUDA include DIR
#                                       (e.g. a pip CUDA 12 runtime's include folder),
#                                       compiled with $CXX (default c++)
#
# nvcc is $NVCC, else nvcc on PATH, else $CUDA_HOME/bin/nvcc (default
# /usr/local/cuda); NVCC=none skips it. Exits non-zero if any build fails or
# any check fails.
# Needs no GPU. Works from any directory: paths are relative to this script.
set -u

here=$(cd "$(dirname "$0")" && pwd)
cudart=$(dirname "$here")
work=$(mktemp -d "${TMPDIR:-/tmp}/rmmgo-decl-check.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT INT TERM

status=0
n=0

# check LABEL COMPILER [FLAGS...]: build decl_check.cpp with COMPILER and run it.
check() {
	label=$1
	shift
	n=$((n + 1))
	exe="$work/decl_check.$n"
	echo "== decl_check against $label"
	if ! "$@" -std=c++17 -I"$cudart" -o "$exe" "$here/decl_check.cpp"; then
		echo "decl_check: BUILD FAILED against $label (a declared name or type is missing from these headers)"
		status=1
		return
	fi
	"$exe" || status=1
}

nvcc=${NVCC:-}
if [ -z "$nvcc" ]; then
	if command -v nvcc >/dev/null 2>&1; then
		nvcc=nvcc
	elif [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ]; then
		nvcc="${CUDA_HOME:-/usr/local/cuda}/bin/nvcc"
	fi
fi

if [ "$nvcc" = none ]; then
	nvcc=
	[ $# -gt 0 ] || { echo "decl_check: NVCC=none and no include folder given"; exit 2; }
elif [ -n "$nvcc" ]; then
	check "$("$nvcc" --version | tail -n 2 | head -n 1) ($nvcc)" "$nvcc"
elif [ $# -eq 0 ]; then
	echo "decl_check: no nvcc found (set NVCC or CUDA_HOME, or pass a CUDA include folder)"
	exit 2
fi

for dir in "$@"; do
	check "headers in $dir" "${CXX:-c++}" -I"$dir"
done

if [ $status -eq 0 ]; then
	echo "decl_check: PASS"
else
	echo "decl_check: FAIL"
fi
exit $status
