# PostgreSQL and Redis for the tests of the shared stores (internal/testdb
# starts throwaway servers from these binaries on 127.0.0.1). Installed from
# Debian before the unit tests when missing; the tests fail under CI
# rather than skip when a binary is absent.

PG_BIN_GLOB := /usr/lib/postgresql/*/bin/initdb

.PHONY: store-deps
unit: store-deps
store-deps:
	@missing=""; \
	ls $(PG_BIN_GLOB) >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	if [ -n "$$missing" ]; then \
		echo "== store-deps: installing$$missing"; \
		$(SUDO) apt-get update -qq; \
		$(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi
