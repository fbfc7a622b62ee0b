# Ory Hydra v2.3.0, the real authorization server behind the Hydra e2e cells
# (cmd/mcpauth/hydra_e2e_test.go). It is built from its own module,
# tools/hydra (go.mod and go.sum committed, `tool github.com/ory/hydra/v2`),
# so that its few hundred modules never enter mcpauth's module graph, into
# tools/hydra/bin/hydra (git-ignored). The binary is rebuilt only when
# tools/hydra/go.mod or go.sum change. The sqlite tag builds in SQLite (cgo,
# the C compiler of the machine), which Hydra's in-memory DSN needs.
#
#   make hydra   build tools/hydra/bin/hydra

HYDRA_DIR := tools/hydra
HYDRA_BIN := $(HYDRA_DIR)/bin/hydra

.PHONY: hydra
hydra: $(HYDRA_BIN)

$(HYDRA_BIN): $(HYDRA_DIR)/go.mod $(HYDRA_DIR)/go.sum
	@echo "== hydra: go build github.com/ory/hydra/v2 (tools/hydra)"
	@start=$$(date +%s); \
	cd $(HYDRA_DIR) && $(GO) build -trimpath -tags sqlite,sqlite_omit_load_extension -o bin/hydra.tmp github.com/ory/hydra/v2 && mv bin/hydra.tmp bin/hydra; \
	echo "hydra: built in $$(( $$(date +%s) - start ))s"
	@touch $@

# The e2e tests include the Hydra cells.
e2e: hydra
