#!/usr/bin/env bash
# Checks that librmmgo.so's dynamic symbol table holds exactly the functions
# include/rmmgo.h declares: every one of them, and nothing else (no Go
# runtime or cgo symbol, no internal rmmgo_* function; capi/librmmgo.map
# keeps those local). No exception is needed: the Go runtime and cgo reach
# their own symbols from within the library only. Then checks that the
# library's users in this repository name only declared functions: the
# Python package's ctypes declarations, and the torch shim's undefined
# symbols when it is built.
#
# Usage: check-exports.sh [HEADER] [LIBRARY] [BINDINGS.py] [SHIM.so]
#   defaults: include/rmmgo.h build/librmmgo.so python/rmmgo/_bindings.py
#             build/librmmgo_torch.so (the last two are skipped when absent)
set -euo pipefail
header=${1:-include/rmmgo.h}
lib=${2:-build/librmmgo.so}
bindings=${3:-python/rmmgo/_bindings.py}
shim=${4:-build/librmmgo_torch.so}
[ -f "$header" ] || { echo "check-exports: no header $header"; exit 1; }
[ -f "$lib" ] || { echo "check-exports: no library $lib"; exit 1; }

passed=0
failed=0
check() { # check NAME LIST-OF-OFFENDERS MESSAGE
  if [ -z "$2" ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "check-exports: FAIL $1: $3:"
    echo "$2" | sed 's/^/  /'
  fi
}

# Function names: an identifier rmm_* directly followed by "(" in the
# header with comments removed; "(*rmm_x)" callback typedefs are not
# declarations of functions and are skipped.
declared=$(sed -e 's#/\*.*\*/##g' "$header" | awk '
  /\/\*/ { incomment = 1 }
  incomment { if ($0 ~ /\*\//) incomment = 0; next }
  /^[[:space:]]*#/ { next }
  /^[[:space:]]+rmm_resource_options_init_sized\(\(options\)/ { next }
  { print }' | grep -oE '(^|[^*(A-Za-z0-9_])rmm_[a-z0-9_]+[[:space:]]*\(' |
  sed -E 's/^[^r]*//; s/[[:space:]]*\($//' | sort -u)
n=$(echo "$declared" | wc -l)
[ "$n" -ge 50 ] || { echo "check-exports: found only $n declarations in $header: the parser is broken"; exit 1; }

# Every defined dynamic symbol, of any type (functions, data, weak).
exported=$(nm -D --defined-only "$lib" | awk '{ print $NF }' | sed 's/@.*//' | sort -u)

check "declared functions are exported" "$(comm -23 <(echo "$declared") <(echo "$exported"))" \
  "declared in $header but not exported by $lib"
check "nothing else is exported" "$(comm -13 <(echo "$declared") <(echo "$exported"))" \
  "exported by $lib but not declared in $header"

if [ -f "$bindings" ]; then
  # The names of the FUNCTIONS table: "rmm_x": (restype, [argtypes]).
  used=$(grep -oE '^[[:space:]]*"rmm[a-z0-9_]*":[[:space:]]*\(' "$bindings" | grep -oE 'rmm[a-z0-9_]*' | sort -u)
  [ -n "$used" ] || { echo "check-exports: no declarations found in $bindings: the parser is broken"; exit 1; }
  check "the Python bindings use declared functions" "$(comm -23 <(echo "$used") <(echo "$declared"))" \
    "declared in $bindings but not in $header"
fi
if [ -f "$shim" ]; then
  # What the shim takes from librmmgo.so: its undefined rmm*/_cgo symbols.
  used=$(nm -D --undefined-only "$shim" | awk '{ print $NF }' | sed 's/@.*//' | grep -E '^(rmm|_cgo|x_cgo|crosscall)' | sort -u || true)
  check "the torch shim uses declared functions" "$(comm -23 <(echo "$used") <(echo "$declared"))" \
    "$shim needs symbols $header does not declare"
fi

echo "check-exports: $lib exports $(echo "$exported" | wc -l) symbols; $header declares $n functions"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
