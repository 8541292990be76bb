# C++ API (include/rmmgo.hpp) tests.
#
# `make test-cpp` builds tests/cpp/api_test.cpp with $(CXX) -std=c++17 -Wall
# -Wextra -Werror against build/librmmgo.so and runs it on the backend the
# Makefile chose, three times over:
#   api_test           CCCL integration off (no CUDA headers: the plain build)
#   api_test_cccl30    on, against tests/cpp/fake_cccl in CCCL 3.0's spelling
#   api_test_cccl32    on, against tests/cpp/fake_cccl in CCCL >= 3.1's spelling
# fake_cccl is a stand-in for CCCL's concept headers so that the header's CCCL
# branch (its static_asserts included) is compiled and run on machines with no
# CUDA toolkit. The real CCCL check is tests/cpp/run_gpu.sh on the GPU machine.
#
# `make test-cpp-headers` (part of test-cpp) compiles each topic header under
# include/rmmgo/ alone, as <rmmgo/NAME.hpp>, in the same three configurations,
# and checks that rmmgo.hpp includes every one of them.

CPP_TEST_CXXFLAGS ?= -std=c++17 -O1 -g -Wall -Wextra -Werror -Wpedantic
CPP_TEST_LDFLAGS  := -L$(BUILD) -lrmmgo -Wl,-rpath,'$$ORIGIN' -pthread
CPP_API_TESTS     := $(BUILD)/api_test $(BUILD)/api_test_cccl30 $(BUILD)/api_test_cccl32
CPP_HEADERS       := include/rmmgo.hpp include/rmmgo.h $(wildcard include/rmmgo/*.hpp)
CPP_TEST_DEPS     := tests/cpp/api_test.cpp $(CPP_HEADERS) $(LIB)
FAKE_CCCL_HEADERS := $(wildcard tests/cpp/fake_cccl/*.h tests/cpp/fake_cccl/cuda/* tests/cpp/fake_cccl/cuda/std/*)
# The three configurations: CCCL off, fake CCCL 3.0, fake CCCL 3.2.
CPP_CCCL_OFF      := -DRMMGO_DISABLE_CCCL
CPP_CCCL_30       := -DFAKE_CCCL_VERSION=3000000 -Itests/cpp/fake_cccl
CPP_CCCL_32       := -DFAKE_CCCL_VERSION=3002000 -Itests/cpp/fake_cccl

.PHONY: test-cpp cpp-tests test-cpp-headers

cpp-tests: $(CPP_API_TESTS)

$(BUILD)/api_test: $(CPP_TEST_DEPS)
	$(CXX) $(CPP_TEST_CXXFLAGS) $(CPP_CCCL_OFF) -Iinclude $< -o $@ $(CPP_TEST_LDFLAGS)

$(BUILD)/api_test_cccl30: $(CPP_TEST_DEPS) $(FAKE_CCCL_HEADERS)
	$(CXX) $(CPP_TEST_CXXFLAGS) $(CPP_CCCL_30) -Iinclude $< -o $@ $(CPP_TEST_LDFLAGS)

$(BUILD)/api_test_cccl32: $(CPP_TEST_DEPS) $(FAKE_CCCL_HEADERS)
	$(CXX) $(CPP_TEST_CXXFLAGS) $(CPP_CCCL_32) -Iinclude $< -o $@ $(CPP_TEST_LDFLAGS)

# Each topic header alone, in each configuration (a stamp keeps it from
# running again while no header changed).
test-cpp-headers: $(BUILD)/cpp-headers.ok

$(BUILD)/cpp-headers.ok: $(CPP_HEADERS) $(FAKE_CCCL_HEADERS)
	@mkdir -p $(BUILD)
	@set -e; n=0; for h in $(notdir $(filter include/rmmgo/%,$(CPP_HEADERS))); do \
	  grep -q "^#include \"rmmgo/$$h\"" include/rmmgo.hpp || { echo "rmmgo.hpp does not include rmmgo/$$h"; exit 1; }; \
	  for cfg in "$(CPP_CCCL_OFF)" "$(CPP_CCCL_30)" "$(CPP_CCCL_32)"; do \
	    printf '#include <rmmgo/%s>\n' $$h | \
	      $(CXX) $(CPP_TEST_CXXFLAGS) $$cfg -Iinclude -fsyntax-only -x c++ - || { echo "rmmgo/$$h does not compile alone ($$cfg)"; exit 1; }; \
	    n=$$((n + 1)); \
	  done; \
	done; echo "test-cpp-headers: $$n compilations of a topic header alone passed"
	@touch $@

# System memory needs pageable memory access; the simulated device offers it
# when asked (ignored on the GPU, where the device decides).
test-cpp: $(CPP_API_TESTS) test-cpp-headers
	@for t in $(CPP_API_TESTS); do \
	  echo "== $$t"; \
	  RMMGO_SIM_PAGEABLE=$${RMMGO_SIM_PAGEABLE:-1} ./$$t || exit 1; \
	done

# RMM's C++ API (include/rmm/, issue 27): tests/cpp/rmm_api_test.cpp is a
# program written for RMM 26.08's headers, built with C++20 against rmmgo's
# rmm/ headers and tests/cpp/fake_cccl in CCCL 3.3's spelling (any_resource,
# resource_ref), and run on the chosen backend. Each rmm/ header is also
# compiled alone. RMM's own C++ suite runs on the GPU machine:
# scripts/rmm-cpp-suite/.
RMM_HEADERS       := $(shell find include/rmm -name '*.hpp' -o -name '*.h' 2>/dev/null)
# The headers over Thrust (CCCL's; fake_cccl has none): compiled by RMM's
# suite on the GPU machine only.
RMM_THRUST_HEADERS := include/rmm/exec_policy.hpp include/rmm/device_vector.hpp \
                      include/rmm/mr/thrust_allocator_adaptor.hpp include/rmm/detail/thrust_namespace.h
CPP_RMM_FLAGS     := -std=c++20 -O1 -g -Wall -Wextra -Werror -DFAKE_CCCL_VERSION=3003000 -Itests/cpp/fake_cccl -Iinclude

$(BUILD)/rmm_api_test: tests/cpp/rmm_api_test.cpp $(RMM_HEADERS) include/rmmgo.h $(FAKE_CCCL_HEADERS) tests/cpp/fake_cccl/cuda/__fake/any_resource.h $(LIB)
	$(CXX) $(CPP_RMM_FLAGS) $< -o $@ $(CPP_TEST_LDFLAGS)

$(BUILD)/rmm-headers.ok: $(RMM_HEADERS) include/rmmgo.h $(FAKE_CCCL_HEADERS) tests/cpp/fake_cccl/cuda/__fake/any_resource.h
	@mkdir -p $(BUILD)
	@set -e; n=0; for h in $(patsubst include/%,%,$(filter-out $(RMM_THRUST_HEADERS),$(RMM_HEADERS))); do \
	  printf '#include <%s>\n' $$h | $(CXX) $(CPP_RMM_FLAGS) -fsyntax-only -x c++ - || { echo "$$h does not compile alone"; exit 1; }; \
	  n=$$((n + 1)); \
	done; echo "test-cpp-rmm: $$n rmm/ headers compile alone ($(words $(RMM_THRUST_HEADERS)) need Thrust: GPU suite only)"
	@touch $@

.PHONY: test-cpp-rmm
test-cpp-rmm: $(BUILD)/rmm_api_test $(BUILD)/rmm-headers.ok
	@echo "== $(BUILD)/rmm_api_test"
	@RMMGO_SIM_MEMORY=$${RMMGO_SIM_MEMORY:-2GiB} ./$(BUILD)/rmm_api_test

test-cpp: test-cpp-rmm
