# Interoperability with the official MCP TypeScript SDK client: `make e2e`
# runs TestE2EInteropTypeScriptSDK (cmd/mcpauth/interop_e2e_test.go), which
# drives tools/interop/stepup.mjs with Node 22 against `mcpauth demo
# --no-client`, and TestE2EInteropTypeScriptDPoP
# (cmd/mcpauth/interop_dpop_e2e_test.go), which drives tools/interop/dpop.mjs
# (the SDK's DPoP support) against `mcpauth authserver` and `mcpauth protect
# --dpop required`. This installs what it needs from the committed lock files:
# Node 22 through `make tools`, the SDK through npm ci in tools/interop.
#
#   make interop-tools   Node 22 + @modelcontextprotocol/client into tools/*/node_modules (git-ignored)

INTEROP_DIR := tools/interop
INTEROP_STAMP := $(INTEROP_DIR)/node_modules/.installed

.PHONY: interop-tools
interop-tools: tools $(INTEROP_STAMP)

$(INTEROP_STAMP): $(INTEROP_DIR)/package.json $(INTEROP_DIR)/package-lock.json
	@echo "== interop-tools: npm ci --prefix $(INTEROP_DIR)"
	@command -v npm >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq npm >/dev/null; }
	npm ci --prefix $(INTEROP_DIR) --no-audit --no-fund --loglevel=error
	@touch $@

# The e2e tests include the TypeScript SDK interop test.
e2e: interop-tools
