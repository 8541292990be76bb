#!/usr/bin/env bash
# Checks that librmmgo.so exports every function include/rmmgo.h declares.
# Usage: check-exports.sh [HEADER] [LIBRARY]   (defaults: include/rmmgo.h build/librmmgo.so)
set -euo pipefail
header=${1:-include/rmmgo.h}
lib=${2:-build/librmmgo.so}
[ -f "$header" ] || { echo "check-exports: no header $header"; exit 1; }
[ -f "$lib" ] || { echo "check-exports: no library $lib"; exit 1; }

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
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sort -u)

n=$(echo "$declared" | wc -l)
[ "$n" -ge 50 ] || { echo "check-exports: found only $n declarations in $header: the parser is broken"; exit 1; }
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
if [ -n "$missing" ]; then
  echo "check-exports: declared in $header but not exported by $lib:"
  echo "$missing" | sed 's/^/  /'
  echo "0 passed, $(echo "$missing" | wc -l) failed"
  exit 1
fi
echo "check-exports: all $n functions of $header are exported by $lib"
echo "$n passed, 0 failed"
