# The Python package (python/rmmgo), its wheel, and librmmgo_torch.so, the C++
# layer PyTorch's pluggable allocator loads.
#
#   make wheel             dist/rmmgo-<version>-py3-none-<platform>.whl, holding
#                          librmmgo.so and librmmgo_torch.so: `pip install` it
#                          and `import rmmgo` works with no Go, no checkout and
#                          no environment variable
#   make test-python       installs that wheel into a fresh virtual environment
#                          and runs python/tests against it from outside the
#                          checkout (scripts/wheel-test.sh); part of `make test`;
#                          the Dask tests run there, not skipped (RMMGO_TEST_DASK=1)
#   make test-python-tree  the same tests against python/rmmgo in this checkout
#                          (quicker while editing the package)
#   make torch-shim        build/librmmgo_torch.so

TORCH_SHIM   := $(BUILD)/librmmgo_torch.so
DIST         ?= dist
WHEEL_BUILD  := python/build_backend/rmmgo_build.py

.PHONY: torch-shim wheel test-python test-python-tree

torch-shim: $(TORCH_SHIM)

$(TORCH_SHIM): python/torch_shim/rmmgo_torch.cpp include/rmmgo.h $(LIB)
	@mkdir -p $(BUILD)
	$(CXX) -std=c++17 -O2 -Wall -Wextra -shared -fPIC -fvisibility=hidden -Iinclude \
		-o $@ $< -L$(BUILD) -lrmmgo -Wl,-rpath,'$$ORIGIN' -Wl,-z,defs

# Any python3 builds the wheel: the builder is standard library only.
wheel: $(LIB) $(TORCH_SHIM) | setup
	@mkdir -p $(DIST)
	@rm -f $(DIST)/rmmgo-*.whl
	python3 $(WHEEL_BUILD) --library $(LIB) --torch-shim $(TORCH_SHIM) --out $(DIST)

test-python: wheel
	@echo "== python tests against the installed wheel (backend $(RMMGO_BACKEND)) =="
	RMMGO_SOURCE_DIR=$(CURDIR) RMMGO_TEST_DASK=1 bash scripts/wheel-test.sh $$(ls $(DIST)/rmmgo-*.whl) python/tests

test-python-tree: $(LIB) $(TORCH_SHIM) | setup
	@py=$${PYTHON:-$$(for p in python3 /usr/bin/python3; do $$p -c 'import pytest' >/dev/null 2>&1 && { command -v $$p; break; }; done)}; \
	if [ -z "$$py" ]; then echo "test-python-tree: no python3 with pytest: run scripts/setup.sh or set PYTHON" >&2; exit 1; fi; \
	echo "== python tests on python/rmmgo ($$py, backend $(RMMGO_BACKEND)) =="; \
	PYTHONPATH=python RMMGO_LIBRARY=$(abspath $(LIB)) $$py -m pytest -q -rs python/tests; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "test-python-tree: pytest collected no tests" >&2; exit 1; fi; exit $$rc
