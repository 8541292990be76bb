# rmmgo build. `make` builds build/librmmgo.so; `make test` runs every test on
# the GPU when there is one, else on the simulated device (and says which).
# Both, and `make example`, first run scripts/setup.sh, which installs what a
# fresh Debian machine lacks (and does nothing when all is there;
# RMMGO_SKIP_SETUP=1 skips it).
#
# Parts of the build live in mk/*.mk (capi, python, cpp, ...), one file per area.

GO        ?= go
CC        ?= cc
CXX       ?= c++
BUILD     ?= build
LIB       := $(BUILD)/librmmgo.so
GOFLAGS   ?=
export CGO_ENABLED := 1
# Go's usual home, for shells that do not have it on PATH.
export PATH := $(PATH):/usr/local/go/bin

# Backend for tests: the GPU if nvidia-smi sees one, else the simulated device.
# Set RMMGO_BACKEND yourself to choose.
ifeq ($(origin RMMGO_BACKEND), undefined)
  RMMGO_BACKEND := $(shell nvidia-smi -L >/dev/null 2>&1 && echo cuda || echo simulated)
endif
export RMMGO_BACKEND

GO_SOURCES := $(shell find cudart core capi internal -name '*.go' -not -name '*_test.go' 2>/dev/null) $(wildcard capi/*.c capi/*.h cudart/*.h) go.mod

.PHONY: example all lib setup test test-go test-race test-c test-python test-cpp backend-note clean gpu-bundle bench-go
all: lib

lib: $(LIB)

# capi/librmmgo.map keeps every symbol but the header's rmm_* functions
# out of the dynamic symbol table (tests/c/check-exports.sh checks it).
EXPORTS_MAP := capi/librmmgo.map

# What building and testing need (compilers, cmake, pytest, venv, ...).
setup:
	@if [ "$${RMMGO_SKIP_SETUP:-0}" != 1 ]; then bash scripts/setup.sh; fi

$(LIB): $(GO_SOURCES) include/rmmgo.h $(EXPORTS_MAP) | setup
	@mkdir -p $(BUILD)
	$(GO) build $(GOFLAGS) -buildmode=c-shared \
	  -ldflags=-extldflags=-Wl,-soname,librmmgo.so,--version-script,$(abspath $(EXPORTS_MAP)) -o $(LIB) ./capi
	@rm -f $(BUILD)/librmmgo.h  # cgo's header is internal; include/rmmgo.h is the public one

backend-note:
	@echo "== rmmgo tests run on the $(RMMGO_BACKEND) backend =="

test: backend-note test-go test-race test-c test-cpp test-python
	@echo "== all tests passed on the $(RMMGO_BACKEND) backend =="

test-go: | setup
	$(GO) test $(GOFLAGS) -count=1 ./...

# The race detector on the packages that hold the resources.
test-race: | setup
	$(GO) test $(GOFLAGS) -race -count=1 ./cudart/... ./core/... ./capi/... ./cmd/...

bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./core/...

clean:
	rm -rf $(BUILD) gpu-bundle dist

-include mk/*.mk

# One folder that runs every test on the real GPU: gpu-bundle/run.sh there.
gpu-bundle:
	bash scripts/gpu-bundle.sh

# The newcomer's first command: build the library and run examples/c/basic,
# on the GPU if there is one, else on the simulated device.
example: $(BUILD)/c/example_basic
	@echo "== examples/c/basic on the $(RMMGO_BACKEND) backend =="
	cd $(BUILD)/c && ./example_basic
