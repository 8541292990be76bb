# The C ABI: C examples and tests against build/librmmgo.so, the exports
# check, and the CMake package. Included by the Makefile.
#
#   make test-c      build and run examples/c and tests/c, check the exports
#                    (exactly the header's functions), and run test-cmake
#
# Each C test is a table of named tests (tests/c/test_util.h); run a few
# with build/c/<program> <test name>...
#   make test-cmake  `make install` into a DESTDIR staging tree (mk/install.mk),
#                    then build tests/cmake-consumer against it with CMake
#                    and with pkg-config, and run it
#   make bench-c     the C ABI's allocation cost (tests/c/capi_bench.c)

.PHONY: test-c test-cmake bench-c c-programs

# The per-device tests need two devices; the simulated device has two
# unless told otherwise.
RMMGO_SIM_DEVICES ?= 2
comma := ,
export RMMGO_SIM_DEVICES

# The tests that need two devices (Go, C, C++, Python) skip on a machine of
# one, but fail where RMMGO_TEST_MIN_DEVICES says the machine has two: the
# simulated device's count, or the GPUs CUDA_VISIBLE_DEVICES names (else
# nvidia-smi lists). So the per-device tests cannot go unrun unnoticed.
ifeq ($(origin RMMGO_TEST_MIN_DEVICES), undefined)
  ifeq ($(RMMGO_BACKEND),simulated)
    RMMGO_TEST_MIN_DEVICES := $(RMMGO_SIM_DEVICES)
  else ifneq ($(CUDA_VISIBLE_DEVICES),)
    RMMGO_TEST_MIN_DEVICES := $(words $(subst $(comma), ,$(CUDA_VISIBLE_DEVICES)))
  else
    RMMGO_TEST_MIN_DEVICES := $(shell nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  endif
endif
export RMMGO_TEST_MIN_DEVICES

C_BUILD      := $(BUILD)/c
C_EXAMPLES   := $(patsubst examples/c/%.c,$(C_BUILD)/example_%,$(wildcard examples/c/*.c))
C_TESTS      := $(patsubst tests/c/%.c,$(C_BUILD)/%,$(filter-out tests/c/capi_bench.c,$(wildcard tests/c/*.c)))
C_LINK        = -L$(BUILD) -lrmmgo -Wl,-rpath,$(abspath $(BUILD))
C_WARN       := -Wall -Wextra -Werror -pedantic

$(C_BUILD)/example_%: examples/c/%.c include/rmmgo.h $(LIB)
	@mkdir -p $(C_BUILD)
	$(CC) -std=c99 $(C_WARN) -Iinclude $< -o $@ $(C_LINK)

$(C_BUILD)/%: tests/c/%.c tests/c/test_util.h include/rmmgo.h $(LIB)
	@mkdir -p $(C_BUILD)
	$(CC) -std=gnu11 $(C_WARN) -O1 -Iinclude $< -o $@ $(C_LINK) -lpthread

c-programs: $(C_EXAMPLES) $(C_TESTS)

# Programs run in $(C_BUILD) (some write files there), one after another;
# each prints "N passed, M failed" (tests) and exits non-zero on a failure,
# which fails the target.
test-c: c-programs test-cmake
	@set -e; for p in $(C_EXAMPLES) $(C_TESTS); do \
	  echo "== $$p ($(RMMGO_BACKEND))"; \
	  ( cd $(C_BUILD) && ./$$(basename $$p) ) || { echo "FAILED: $$p"; exit 1; }; \
	done
	@# Once more with the per-thread cache off (docs/thread-cache.md).
	@set -e; for p in $(C_TESTS); do \
	  echo "== $$p ($(RMMGO_BACKEND), RMMGO_THREAD_CACHE=0)"; \
	  ( cd $(C_BUILD) && RMMGO_THREAD_CACHE=0 ./$$(basename $$p) ) || { echo "FAILED: $$p (RMMGO_THREAD_CACHE=0)"; exit 1; }; \
	done
	bash tests/c/check-exports.sh include/rmmgo.h $(LIB)

CMAKE_BUILD   := $(BUILD)/cmake
CMAKE_STAGE   := $(BUILD)/cmake-stage
# make install's DESTDIR staging: the tree lands in $(CMAKE_STAGE)$(CMAKE_DEST)
# and nothing is written to $(CMAKE_DEST) itself.
CMAKE_DEST    := /opt/rmmgo-make-install-test
CMAKE_PREFIX  := $(CMAKE_STAGE)$(CMAKE_DEST)
CMAKE_CONSUME := $(BUILD)/cmake-consumer

test-cmake: | setup
	rm -rf $(CMAKE_STAGE) $(CMAKE_CONSUME)
	$(MAKE) --no-print-directory install RMMGO_SKIP_SETUP=1 PREFIX=$(CMAKE_DEST) DESTDIR=$(CMAKE_STAGE) \
	  CMAKE_FLAGS=-DRMMGO_BUILD_EXAMPLES=ON >/dev/null
	@test -f $(CMAKE_PREFIX)/include/rmmgo.h && test -f $(CMAKE_PREFIX)/include/rmmgo/resources.hpp && \
	  test -n "$$(find $(CMAKE_PREFIX) -name librmmgo.so)" || { echo "test-cmake: make install DESTDIR=... left no rmmgo.h, rmmgo/*.hpp or librmmgo.so"; exit 1; }
	@test ! -e $(CMAKE_DEST) || { echo "test-cmake: make install with DESTDIR wrote $(CMAKE_DEST)"; exit 1; }
	cmake -S tests/cmake-consumer -B $(CMAKE_CONSUME) -DCMAKE_PREFIX_PATH=$(abspath $(CMAKE_PREFIX)) >/dev/null
	cmake --build $(CMAKE_CONSUME)
	$(CMAKE_CONSUME)/consumer
	@if [ -x $(CMAKE_CONSUME)/consumer_cpp ]; then $(CMAKE_CONSUME)/consumer_cpp; fi
	$(CMAKE_BUILD)/example_basic
	@# pkg-config: the installed module compiles and links a program that runs.
	@pc=$$(dirname $$(find $(abspath $(CMAKE_PREFIX)) -name rmmgo.pc)); \
	  echo "pkg-config rmmgo: $$(PKG_CONFIG_PATH=$$pc pkg-config --modversion rmmgo)"; \
	  PKG_CONFIG_PATH=$$pc pkg-config --exists --print-errors 'rmmgo >= 0.1' && \
	  $(CC) -std=c99 $(C_WARN) tests/cmake-consumer/main.c -o $(CMAKE_CONSUME)/consumer_pc \
	    $$(PKG_CONFIG_PATH=$$pc pkg-config --cflags --libs rmmgo) \
	    -Wl,-rpath,$$(PKG_CONFIG_PATH=$$pc pkg-config --variable=libdir rmmgo) && \
	  $(CMAKE_CONSUME)/consumer_pc

$(C_BUILD)/capi_bench: tests/c/capi_bench.c include/rmmgo.h $(LIB)
	@mkdir -p $(C_BUILD)
	$(CC) -std=gnu11 $(C_WARN) -O2 -Iinclude $< -o $@ $(C_LINK) -lpthread -ldl

bench-c: $(C_BUILD)/capi_bench
	$(C_BUILD)/capi_bench
