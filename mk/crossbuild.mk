# Every package, its tests (type-checked by vet) and the e2e tests build and
# vet on Windows and macOS too, so a Unix-only call cannot slip in unseen.
#
#   make crossbuild   go build + go vet for each of CROSS_PLATFORMS (GOOS/GOARCH)

EXTRA_TEST_TARGETS += crossbuild

CROSS_PLATFORMS ?= windows/amd64 darwin/arm64

.PHONY: crossbuild

crossbuild:
	@echo "== crossbuild ($(CROSS_PLATFORMS))"
	@set -e; for p in $(CROSS_PLATFORMS); do \
		export GOOS=$${p%/*} GOARCH=$${p#*/}; \
		echo "$$p: go build ./... && go vet ./... && go vet -tags e2e ./cmd/..."; \
		$(GO) build ./...; \
		$(GO) vet ./...; \
		$(GO) vet -tags e2e ./cmd/...; \
	done
	@echo "crossbuild: ok"
