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
