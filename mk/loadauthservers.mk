# The authorization servers under load: `mcpauth authserver` (built here, in
# memory, its per-address rate limits raised out of the way) beside Ory Hydra
# v2.3.0 (`make hydra`) and panva oidc-provider (tools/interop/asload.mjs,
# `make interop-tools`), each a process of its own, in interleaved rounds:
# client-credentials grants/s, refresh-token grants/s with rotation and
# complete authorization-code logins/s with PKCE, every answer checked; CPU
# per grant of each server from /proc against one ES256 signature and against
# the floor (`mcpauth-load peer token-floor`: net/http, the client check and one
# ES256 signature per grant, nothing else)
# (BENCHMARKS.md, "`authserver/`: token endpoint"). Not part of `make test`.
#
#   make load-authservers   AUTHSERVERS=mcpauth,hydra,oidc-provider,floor AUTHSERVERS_ROUNDS=10 AUTHSERVERS_ROUND=2s
#   make load-authservers   HYDRA_DSN=postgres://USER@127.0.0.1:PORT/DB   Hydra on PostgreSQL (migrated first)
#                           instead of its in-memory SQLite, which answers 500 to some concurrent writes

AUTHSERVERS ?= mcpauth,hydra,oidc-provider,floor
AUTHSERVERS_GRANTS ?= client_credentials,refresh_token,authorization_code
AUTHSERVERS_CONCURRENCY ?= 8
AUTHSERVERS_ROUNDS ?= 10
AUTHSERVERS_ROUND ?= 2s
HYDRA_DSN ?= memory

.PHONY: load-authservers

load-authservers: hydra
	$(GO) run ./cmd/mcpauth-load -authservers $(AUTHSERVERS) -grants $(AUTHSERVERS_GRANTS) -c $(AUTHSERVERS_CONCURRENCY) \
		-rounds $(AUTHSERVERS_ROUNDS) -round $(AUTHSERVERS_ROUND) -hydra $(CURDIR)/$(HYDRA_BIN) -hydra-dsn '$(HYDRA_DSN)'
