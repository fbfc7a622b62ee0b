# Security: the end-to-end attack suite (SECURITY.md cites its tests) and the
# fuzz coverage check, both run by `make test`.
#
#   make attack          hostile parties against client, resource server and authorization server,
#                        fault tests, SECURITY.md consistency (-race)
#   make fuzz-coverage   every parser and verifier has a fuzz target
#   make load            the load generator against the resource middleware (figures in BENCHMARKS.md)
#   make load-protect    the load generator against `mcpauth protect` as a child process (built here;
#                        LOAD_PROTECT=race for the -race build, not part of `make test`)
#   make load-compare    `mcpauth protect` (also with --dpop required) against a bare reverse proxy, the go-sdk RequireBearerToken
#                        proxy and the bare proxy behind a go-jose signature check only, interleaved rounds (COMPARE_BEFORE=REF adds protect built from that git
#                        revision; COMPARE_PROFILE=DIR writes CPU and allocation profiles; not part of `make test`)

EXTRA_TEST_TARGETS += attack fuzz-coverage

LOAD_CONCURRENCY ?= 64
LOAD_DURATION ?= 20s
LOAD_PROTECT ?= build
LOAD_MAX_RSS_MIB ?= 256

COMPARE_CONCURRENCY ?= 8
COMPARE_ROUNDS ?= 40
COMPARE_ROUND ?= 250ms
COMPARE_BEFORE ?=
COMPARE_PROFILE ?=
COMPARE_MAX_RSS_MIB ?= 128

.PHONY: attack fuzz-coverage load load-protect load-compare

attack:
	@echo "== attack"
	$(GO) test -race -count=1 -timeout 5m ./attack/...

fuzz-coverage:
	@echo "== fuzz-coverage"
	$(GO) test -count=1 -run '^TestFuzzCoverage$$' ./attack

load:
	$(GO) run ./cmd/mcpauth-load -c $(LOAD_CONCURRENCY) -d $(LOAD_DURATION)

load-protect:
	$(GO) run ./cmd/mcpauth-load -protect $(LOAD_PROTECT) -c $(LOAD_CONCURRENCY) -d $(LOAD_DURATION) -max-rss-mib $(LOAD_MAX_RSS_MIB)

load-compare:
	$(GO) run ./cmd/mcpauth-load -compare -c $(COMPARE_CONCURRENCY) -rounds $(COMPARE_ROUNDS) -round $(COMPARE_ROUND) \
		-max-rss-mib $(COMPARE_MAX_RSS_MIB) $(if $(COMPARE_BEFORE),-protect-before $(COMPARE_BEFORE)) $(if $(COMPARE_PROFILE),-profile $(COMPARE_PROFILE))
