#!/usr/bin/env bash
# Installs what building and testing rmmgo needs on a Debian machine, and does
# nothing when all of it is there (the Makefile runs this before `make test`,
# `make example` and every build of the library).
#
#   compilers and tools  build-essential (cc, c++, make), cmake, pkg-config,
#                        binutils (nm, for the exports check)
#   Python               python3, python3-pytest, python3-numpy,
#                        python3-venv (the wheel is tested in a fresh venv),
#                        python3-pyflakes (make test-pyflakes), and
#                        python3-distributed (Dask, for rmmgo.dask's tests;
#                        bookworm's 2022.12.1 is the oldest version tested)
#
# The Go toolchain itself is expected at /usr/local/go or on PATH; its modules
# are fetched with `go mod download`. On a machine without apt-get the script
# only says what is missing.
set -euo pipefail
export PATH="$PATH:/usr/local/go/bin"
export DEBIAN_FRONTEND=noninteractive

packages=(build-essential cmake pkg-config binutils python3 python3-pytest python3-numpy python3-venv python3-pyflakes python3-distributed)

# What is missing, judged by the commands and modules themselves (so that a
# machine set up another way passes), then by dpkg for the rest.
missing=()
have_cmd() { command -v "$1" >/dev/null 2>&1; }
debian_py=python3
[ -x /usr/bin/python3 ] && debian_py=/usr/bin/python3
py_has() { /usr/bin/python3 -c "import $1" >/dev/null 2>&1 || python3 -c "import $1" >/dev/null 2>&1; }
for p in "${packages[@]}"; do
  case $p in
    build-essential) have_cmd cc && have_cmd c++ && have_cmd make || missing+=("$p") ;;
    cmake|pkg-config) have_cmd "$p" || missing+=("$p") ;;
    binutils) have_cmd nm || missing+=("$p") ;;
    python3) have_cmd python3 || missing+=("$p") ;;
    python3-pytest) py_has pytest || missing+=("$p") ;;
    python3-numpy) py_has numpy || missing+=("$p") ;;
    python3-pyflakes) py_has pyflakes || missing+=("$p") ;;
    # In the interpreter the wheel tests run on (the one with pytest).
    python3-distributed) $debian_py -c 'import distributed' >/dev/null 2>&1 || missing+=("$p") ;;
    # venv with ensurepip (pip in a fresh environment), in the interpreter
    # apt manages when there is one: the one that has python3-pytest.
    python3-venv) $debian_py -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=("$p") ;;
  esac
done

if [ ${#missing[@]} -gt 0 ]; then
  if ! have_cmd apt-get; then
    echo "setup: missing ${missing[*]}, and there is no apt-get here: install them by hand" >&2
    exit 1
  fi
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  # A fresh machine's package lists may be empty: update first.
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if ! have_cmd go; then
  echo "setup: no Go toolchain (looked on PATH and in /usr/local/go/bin): install Go first" >&2
  exit 1
fi
# The module cache: quick when it is already filled.
(cd "$(dirname "$0")/.." && go mod download)
