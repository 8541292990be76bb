# The random-allocations benchmark in C (bench/random_allocations.c; see
# bench/README.md). `make bench-c` builds build/random_allocations;
# `make test-bench` runs it once with tiny sizes as a smoke test (every
# resource, two cases, two thread counts, and the fragmentation workload),
# and is part of `make test`.

BENCH_C       := $(BUILD)/random_allocations
BENCH_CFLAGS  ?= -std=c11 -O2 -g -Wall -Wextra -Werror

.PHONY: bench-c test-bench

bench-c: $(BENCH_C)

$(BENCH_C): bench/random_allocations.c include/rmmgo.h $(LIB)
	$(CC) $(BENCH_CFLAGS) -Iinclude $< -o $@ -L$(BUILD) -lrmmgo -Wl,-rpath,'$$ORIGIN' -pthread -ldl

test-bench: $(BENCH_C)
	./$(BENCH_C) --case small,medium,fragmentation --threads 1,3 --reps 2 --num-allocations 400 --max-size 64KiB \
	  --max-usage 16MiB --pool-initial 32MiB --arena-size 32MiB --bins 8:14 --fixed-blocks 16 --frag-cap 64MiB \
	  > $(BUILD)/test-bench.md || { cat $(BUILD)/test-bench.md; exit 1; }
	@cat $(BUILD)/test-bench.md
	@rows=$$(grep -c '^| \(cuda\|cuda_async\|pool\|arena\|binning\|fixed_size\|expandable\) | \(small\|medium\) |' $(BUILD)/test-bench.md); \
	frag=$$(grep -c '^| \(pool\|expandable\|expandable, release_threshold 0\) | [0-9]' $(BUILD)/test-bench.md); \
	if [ "$$rows" -ne 28 ] || [ "$$frag" -ne 3 ] || grep -Eq '[|] failed(:| to make)' $(BUILD)/test-bench.md; then \
	  echo "test-bench: want 28 random-allocations rows, 3 fragmentation rows and no failure, got $$rows and $$frag"; exit 1; fi; \
	grep -q '^| expandable | .* | 32 of 32 | 0 |' $(BUILD)/test-bench.md || \
	  { echo "test-bench: expandable did not serve every big request of the fragmentation workload"; exit 1; }; \
	if [ "$(RMMGO_BACKEND)" = simulated ] && { ! grep -q '^- CUDA: none, simulated device' $(BUILD)/test-bench.md || \
	     grep -q '^- CUDA runtime' $(BUILD)/test-bench.md; }; then \
	  echo "test-bench: on the simulated device the header must say so, not name a CUDA runtime"; exit 1; fi; \
	echo "test-bench: random_allocations ran every resource, and the fragmentation workload"

test: test-bench

# The real-workload logs of bench/traces (GPT-2 and ResNet-50 training, a
# CuPy pipeline) replayed against every sub-allocator (`-r traces`: see
# cmd/rmmgo-replay/resources.go) on the simulated device with an H100's
# 80 GiB, serially (the same figures every run): one table of peak reserved
# over peak live, failures and time per op; one JSON line per replay in
# $(BUILD)/bench-traces.jsonl. A few seconds. On a GPU: gpu-bundle/bench.sh
# OUT traces, or BENCH_TRACES_BACKEND=cuda make bench-traces.
REPLAY               := $(BUILD)/rmmgo-replay
BENCH_TRACES_BACKEND ?= simulated
BENCH_TRACES_ARGS    ?=
TRACES               := $(wildcard bench/traces/*.csv.gz)
comma                := ,
empty                :=
space                := $(empty) $(empty)

.PHONY: bench-traces $(REPLAY)

$(REPLAY): | setup
	@mkdir -p $(BUILD)
	$(GO) build $(GOFLAGS) -o $@ ./cmd/rmmgo-replay

bench-traces: $(REPLAY)
	RMMGO_BACKEND=$(BENCH_TRACES_BACKEND) RMMGO_SIM_MEMORY=$${RMMGO_SIM_MEMORY:-80GiB} \
	  ./$(REPLAY) -f $(subst $(space),$(comma),$(TRACES)) -r traces -json $(BUILD)/bench-traces.jsonl $(BENCH_TRACES_ARGS)

# The 16-stream soak (core/soak_test.go, TestSoakStreams) for longer than
# make test's 2 s: every resource for SOAK (default 30s), each under a
# limiting adaptor of SOAK_SHARE (default 0.12) of the free memory of a
# simulated device sized like an H200 (SOAK_MEMORY, default 141GiB). At that
# scale the workers draw the requests of up to 64 MiB that make test's
# 512 MiB soak never does, and the figures come near the GPU's five-minute
# soak (docs/benchmarks.md, Run 32). SOAK_BACKEND=cuda runs it on a GPU
# where Go is installed; the GPU bundle's bin/core.test takes the same
# -soak and -soak-share flags.
SOAK         ?= 30s
SOAK_MEMORY  ?= 141GiB
SOAK_SHARE   ?= 0.12
SOAK_BACKEND ?= simulated

.PHONY: soak

soak: | setup
	RMMGO_BACKEND=$(SOAK_BACKEND) RMMGO_SIM_MEMORY=$(SOAK_MEMORY) \
	  $(GO) test $(GOFLAGS) ./core -run 'TestSoakStreams' -count=1 -v -timeout 0 -soak $(SOAK) -soak-share $(SOAK_SHARE)
