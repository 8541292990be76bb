# Go fuzz tests (docs/fuzzing.md). Included by the Makefile.
#
#   make test-fuzz              each target fuzzed for FUZZTIME (default 3s),
#                               one worker; part of `make test`
#   make fuzz FUZZ=FuzzPool FUZZTIME=10m
#                               one target, longer (the run docs/fuzzing.md
#                               reports was made this way, one target at a
#                               time)
#
# `go test` (test-go) already runs every target's seed corpus
# (PKG/testdata/fuzz/TARGET and the f.Add seeds). A failure writes its input
# to PKG/testdata/fuzz/TARGET/: keep it there with the fix, so that it runs in
# every `go test` from then on.

FUZZTIME ?= 3s
# How long the fuzzer may spend shrinking each new input it keeps; Go's
# default of 60s would take most of a short run.
FUZZMINIMIZETIME ?= 1s
FUZZ_TARGETS := \
	core:FuzzPool core:FuzzArena core:FuzzFixedSize core:FuzzBinning \
	core:FuzzEventLogReader core:FuzzEventLogRoundTrip \
	capi:FuzzCAPI

.PHONY: test-fuzz fuzz
test: test-fuzz

test-fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t#*:}; \
	  echo "== fuzzing $$name for $(FUZZTIME)"; \
	  $(GO) test $(GOFLAGS) ./$$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) \
	    -fuzzminimizetime $(FUZZMINIMIZETIME) -parallel 1; \
	done

fuzz:
	@test -n "$(FUZZ)" || { echo "make fuzz FUZZ=<target> [FUZZTIME=10m]; targets: $(FUZZ_TARGETS)"; exit 2; }
	@t=$$(for t in $(FUZZ_TARGETS); do case $$t in *:$(FUZZ)) echo $$t;; esac; done); \
	  test -n "$$t" || { echo "no fuzz target $(FUZZ); targets: $(FUZZ_TARGETS)"; exit 2; }; \
	  $(GO) test $(GOFLAGS) ./$${t%%:*} -run '^$$' -fuzz "^$(FUZZ)\$$" -fuzztime $(FUZZTIME) \
	    -fuzzminimizetime $(FUZZMINIMIZETIME) -parallel 1
