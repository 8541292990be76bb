# The C stress program (tests/stress/rmmgo_stress.c: thread churn, release
# under load, set/reset of the current resource, stream destruction, thread
# and process exits, device memory checked after each). Included by the
# Makefile.
#
#   make stress        build/rmmgo_stress (`build/rmmgo_stress --help`)
#   make test-stress   a short run (a few seconds), part of `make test`
#
# The full run is the GPU bundle's `stress` section (scripts/gpu-run.sh).
#
# STRESS_KNOWN_BUGS: failures the short run reports without failing, one name
# per bug the program can tell apart (its header lists them). Remove a name
# once its fix lands, so that the bug fails the suite again:
#   release-leak:pool           issue 15: the pool loses device memory when its
#                               last handle is released while threads allocate
#   release-leak:cuda_async     found by this program: blocks allocated by a
#                               call racing the release are never freed (the
#                               CUDA pool is destroyed under them)
#   release-status:KIND         issue 15 (the C API holds no reference for the
#                               length of a call): a call racing the release
#                               fails with "resource closed", out of memory or
#                               a CUDA error instead of RMM_ERROR_INVALID_HANDLE
#   current-closed              found by this program: rmm_get_current_device_
#                               resource can hand out a reference to a resource
#                               a concurrent reset is closing
#   streams-oom:arena           found by this program: the arena runs out of
#                               memory with 32 MiB live of 256 MiB once a few
#                               hundred streams were destroyed
STRESS            := $(BUILD)/rmmgo_stress
STRESS_KNOWN_BUGS ?= release-leak:pool,release-leak:cuda_async,release-status:pool,release-status:arena,release-status:fixed_size,release-status:binning,release-status:cuda_async,release-status:cuda_async_managed,current-closed,streams-oom:arena
STRESS_SHORT_ARGS ?= --rounds 3 --churn-steps 500 --threads 4
# The churn scenario's short run: the goal's workload (default steps), 20
# rounds of 16 threads rather than 200, so that the peak live bytes it
# measures are near the full run's (with the short steps, a few MiB live,
# the pool's 2 MiB growth steps alone are a sixth of it). 64 threads on the
# 2 cores of CI spread too widely (1.2-1.5x: threads preempted inside a
# call into Go hold blocks in flight); the GPU bundle's full run has them.
STRESS_CHURN_ARGS ?= --scenarios churn --churn-threads 16 --rounds 20
# Under compute-sanitizer (the GPU bundle), leave out the kinds whose known
# leaks its leak check would count, and churn: its short steps measure the
# pool's size over a few MiB live, where the 2 MiB growth steps alone are a
# sixth of it (the full run in the stress section measures churn).
STRESS_SANITIZER_ARGS ?= $(STRESS_SHORT_ARGS) --scenarios all,-churn --kinds all,-pool,-cuda_async

.PHONY: stress test-stress stress-bundle-files

stress: $(STRESS)

$(STRESS): tests/stress/rmmgo_stress.c include/rmmgo.h $(LIB)
	@mkdir -p $(BUILD)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -Werror -pedantic -Iinclude $< -o $@ \
	  -L$(BUILD) -lrmmgo -Wl,-rpath,'$$ORIGIN' -pthread

# On the simulated device: 4 GiB, so that the known leaks do not starve the
# kinds after them, and pageable memory access, so that system and
# sam_headroom run too (both are ignored on a GPU).
test-stress: $(STRESS)
	RMMGO_SIM_MEMORY=$${RMMGO_SIM_MEMORY:-4GiB} RMMGO_SIM_PAGEABLE=$${RMMGO_SIM_PAGEABLE:-1} \
	  ./$(STRESS) $(STRESS_SHORT_ARGS) --scenarios all,-churn --known-bugs=$(STRESS_KNOWN_BUGS)
	RMMGO_SIM_MEMORY=$${RMMGO_SIM_MEMORY:-4GiB} \
	  ./$(STRESS) $(STRESS_CHURN_ARGS) --known-bugs=$(STRESS_KNOWN_BUGS)

test: test-stress

# What scripts/gpu-bundle.sh writes beside the program for scripts/gpu-run.sh.
stress-bundle-files:
	@test -n "$(STRESS_BUNDLE)" || { echo "set STRESS_BUNDLE=dir"; exit 1; }
	@echo '$(STRESS_KNOWN_BUGS)' > $(STRESS_BUNDLE)/known-bugs
	@echo '$(STRESS_SANITIZER_ARGS)' > $(STRESS_BUNDLE)/sanitizer-args
