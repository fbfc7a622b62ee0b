# oauth2-proxy v7.15.6, the reverse proxy many operators already put in front of
# an API to check bearer JWTs; `make load-compare` measures `mcpauth protect`
# beside it (cmd/mcpauth-load -oauth2-proxy). It is built from its own module,
# tools/oauth2-proxy (go.mod and go.sum committed,
# `tool github.com/oauth2-proxy/oauth2-proxy/v7`), so that its dependencies
# never enter mcpauth's module graph, into tools/oauth2-proxy/bin/oauth2-proxy
# (git-ignored). The binary is rebuilt only when tools/oauth2-proxy/go.mod or
# go.sum change.
#
#   make oauth2-proxy   build tools/oauth2-proxy/bin/oauth2-proxy

OAUTH2PROXY_DIR := tools/oauth2-proxy
OAUTH2PROXY_BIN := $(OAUTH2PROXY_DIR)/bin/oauth2-proxy
# The version the binary prints (--version), the one go.mod requires.
OAUTH2PROXY_VERSION = $(shell awk '$$1 == "github.com/oauth2-proxy/oauth2-proxy/v7" {print $$2}' $(OAUTH2PROXY_DIR)/go.mod)

.PHONY: oauth2-proxy
oauth2-proxy: $(OAUTH2PROXY_BIN)

$(OAUTH2PROXY_BIN): $(OAUTH2PROXY_DIR)/go.mod $(OAUTH2PROXY_DIR)/go.sum
	@echo "== oauth2-proxy: go build github.com/oauth2-proxy/oauth2-proxy/v7 (tools/oauth2-proxy)"
	@start=$$(date +%s); \
	cd $(OAUTH2PROXY_DIR) && $(GO) build -trimpath -ldflags "-X github.com/oauth2-proxy/oauth2-proxy/v7/pkg/version.VERSION=$(OAUTH2PROXY_VERSION)" -o bin/oauth2-proxy.tmp github.com/oauth2-proxy/oauth2-proxy/v7 && mv bin/oauth2-proxy.tmp bin/oauth2-proxy; \
	echo "oauth2-proxy: built in $$(( $$(date +%s) - start ))s"
	@touch $@

# The comparison runs oauth2-proxy beside `mcpauth protect`.
load-compare: oauth2-proxy
