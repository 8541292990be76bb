# The Python package (python/rmmgo) and librmmgo_torch.so, the C++ layer
# PyTorch's pluggable allocator loads.
#
#   make test-python   pytest on python/tests (needs python3-pytest)
#   make torch-shim    build/librmmgo_torch.so
#   make python-stage  copy both libraries into python/rmmgo/, so that
#                      `pip install ./python` ships them beside the package

TORCH_SHIM := $(BUILD)/librmmgo_torch.so

.PHONY: torch-shim python-stage

torch-shim: $(TORCH_SHIM)

$(TORCH_SHIM): python/torch_shim/rmmgo_torch.cpp include/rmmgo.h $(LIB)
	@mkdir -p $(BUILD)
	$(CXX) -std=c++17 -O2 -Wall -Wextra -shared -fPIC -fvisibility=hidden -Iinclude \
		-o $@ $< -L$(BUILD) -lrmmgo -Wl,-rpath,'$$ORIGIN' -Wl,-z,defs

test-python: $(LIB) $(TORCH_SHIM)
	@if [ -z "$(PYTHON)" ]; then \
		echo "test-python: no python3 with pytest found: install python3-pytest (apt-get install python3-pytest) or set PYTHON=/path/to/python3" >&2; \
		exit 1; \
	fi
	@echo "== python tests ($(PYTHON), backend $(RMMGO_BACKEND)) =="
	@PYTHONPATH=python RMMGO_LIBRARY=$(abspath $(LIB)) $(PYTHON) -m pytest -q -rs python/tests; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "test-python: pytest collected no tests" >&2; exit 1; fi; exit $$rc

python-stage: $(LIB) $(TORCH_SHIM)
	cp $(LIB) $(TORCH_SHIM) python/rmmgo/
