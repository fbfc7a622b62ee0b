# End-to-end tests of the mcpauth binary (cmd/mcpauth/e2e_test.go): the
# binary is built once, then demo, authserver, protect, login, token, call
# and check run as processes on 127.0.0.1 with random ports.
# The binary is built with the race detector too (E2E_RACE=1).

EXTRA_TEST_TARGETS += e2e

.PHONY: e2e
e2e:
	@echo "== e2e"
	@start=$$(date +%s); \
	E2E_RACE=1 $(GO) test -race -count=1 -tags e2e -run '^TestE2E' ./cmd/mcpauth/...; \
	echo "e2e: passed in $$(( $$(date +%s) - start ))s"
