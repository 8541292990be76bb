# Go fuzz tests (docs/fuzzing.md). Included by the Makefile.
#
#   make test-fuzz              each target fuzzed briefly (a few thousand
#                               inputs), one worker; part of `make test`
#   make fuzz FUZZ=FuzzPool FUZZTIME=10m
#                               one target, longer (the run docs/fuzzing.md
#                               reports was made this way, one target at a
#                               time)
#
# `go test` (test-go) already runs every target's seed corpus
# (PKG/testdata/fuzz/TARGET and the f.Add seeds). A failure writes its input
# to PKG/testdata/fuzz/TARGET/: keep it there with the fix, so that it runs in
# every `go test` from then on.

# Each target's budget in `make test-fuzz` is a count of inputs (a few seconds
# each here), not a duration: with a duration, Go up to 1.26 can fail a run
# that found nothing with "context deadline exceeded" (a race in its fuzzing
# coordinator, go.dev/issue/75804).
FUZZ_TARGETS := \
	core:FuzzPool:2000x core:FuzzArena:1500x core:FuzzFixedSize:4000x core:FuzzBinning:2000x \
	core/eventlog:FuzzReader:20000x core/eventlog:FuzzRoundTrip:20000x \
	capi:FuzzCAPI:6000x
FUZZTIME ?= 10m
# How long the fuzzer may spend shrinking each new input it keeps; Go's
# default of 60s would take most of a short run.
FUZZMINIMIZETIME ?= 1s

.PHONY: test-fuzz fuzz
test: test-fuzz

test-fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; budget=$${rest#*:}; \
	  echo "== fuzzing $$name for $$budget inputs"; \
	  $(GO) test $(GOFLAGS) ./$$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $$budget \
	    -fuzzminimizetime $(FUZZMINIMIZETIME) -parallel 1; \
	done
	@# FuzzCAPI once more with the per-thread cache off (read once per
	@# process): frees refused with it on must be refused with it off, and
	@# the other way round. Then its corpus, with the cache off (go test
	@# runs it with the cache on).
	@echo "== fuzzing FuzzCAPI for 3000x inputs, RMMGO_THREAD_CACHE=0"
	RMMGO_THREAD_CACHE=0 $(GO) test $(GOFLAGS) ./capi -run '^$$' -fuzz '^FuzzCAPI$$' -fuzztime 3000x \
	  -fuzzminimizetime $(FUZZMINIMIZETIME) -parallel 1
	RMMGO_THREAD_CACHE=0 $(GO) test $(GOFLAGS) -count=1 ./capi -run '^FuzzCAPI$$'

fuzz:
	@test -n "$(FUZZ)" || { echo "make fuzz FUZZ=<target> [FUZZTIME=10m]; targets: $(FUZZ_TARGETS)"; exit 2; }
	@t=$$(for t in $(FUZZ_TARGETS); do case $$t in *:$(FUZZ):*) echo $$t;; esac; done); \
	  test -n "$$t" || { echo "no fuzz target $(FUZZ); targets: $(FUZZ_TARGETS)"; exit 2; }; \
	  $(GO) test $(GOFLAGS) ./$${t%%:*} -run '^$$' -fuzz "^$(FUZZ)\$$" -fuzztime $(FUZZTIME) \
	    -fuzzminimizetime $(FUZZMINIMIZETIME) -parallel 1
