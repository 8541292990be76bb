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

CPP_TEST_CXXFLAGS ?= -std=c++17 -O1 -g -Wall -Wextra -Werror -Wpedantic
CPP_TEST_LDFLAGS  := -L$(BUILD) -lrmmgo -Wl,-rpath,'$$ORIGIN' -pthread
CPP_API_TESTS     := $(BUILD)/api_test $(BUILD)/api_test_cccl30 $(BUILD)/api_test_cccl32
CPP_TEST_DEPS     := tests/cpp/api_test.cpp include/rmmgo.hpp include/rmmgo.h $(LIB)

.PHONY: test-cpp cpp-tests

cpp-tests: $(CPP_API_TESTS)

$(BUILD)/api_test: $(CPP_TEST_DEPS)
	$(CXX) $(CPP_TEST_CXXFLAGS) -DRMMGO_DISABLE_CCCL -Iinclude $< -o $@ $(CPP_TEST_LDFLAGS)

$(BUILD)/api_test_cccl30: $(CPP_TEST_DEPS) $(wildcard tests/cpp/fake_cccl/*.h tests/cpp/fake_cccl/cuda/* tests/cpp/fake_cccl/cuda/std/*)
	$(CXX) $(CPP_TEST_CXXFLAGS) -DFAKE_CCCL_VERSION=3000000 -Iinclude -Itests/cpp/fake_cccl $< -o $@ $(CPP_TEST_LDFLAGS)

$(BUILD)/api_test_cccl32: $(CPP_TEST_DEPS) $(wildcard tests/cpp/fake_cccl/*.h tests/cpp/fake_cccl/cuda/* tests/cpp/fake_cccl/cuda/std/*)
	$(CXX) $(CPP_TEST_CXXFLAGS) -DFAKE_CCCL_VERSION=3002000 -Iinclude -Itests/cpp/fake_cccl $< -o $@ $(CPP_TEST_LDFLAGS)

# System memory needs pageable memory access; the simulated device offers it
# when asked (ignored on the GPU, where the device decides).
test-cpp: $(CPP_API_TESTS)
	@for t in $(CPP_API_TESTS); do \
	  echo "== $$t"; \
	  RMMGO_SIM_PAGEABLE=$${RMMGO_SIM_PAGEABLE:-1} ./$$t || exit 1; \
	done
