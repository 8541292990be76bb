# pyflakes (unused imports, undefined names) over the Python that is not the
# package's own re-exports: the tests, the benchmarks, the scripts and the
# README test. Part of `make test`; scripts/setup.sh installs pyflakes.
#
#   make test-pyflakes

PYFLAKES_PATHS := python/tests python/bench tests/readme scripts

.PHONY: test-pyflakes
test: test-pyflakes

test-pyflakes: | setup
	@py=$$(for p in python3 /usr/bin/python3; do $$p -c 'import pyflakes' >/dev/null 2>&1 && { command -v $$p; break; }; done); \
	if [ -z "$$py" ]; then echo "test-pyflakes: no python3 with pyflakes: run scripts/setup.sh (python3-pyflakes)" >&2; exit 1; fi; \
	$$py -m pyflakes $(PYFLAKES_PATHS) && echo "test-pyflakes: $(PYFLAKES_PATHS) are clean"
