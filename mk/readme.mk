# README.md's Go blocks compile against the current code: each fragment is
# wrapped in a function of a generated package, built and vetted in a temp
# dir joined to this module by a go.work file (internal/readmecheck).
# Errors point at README.md lines. A block that is deliberately not Go is
# marked with <!-- readmecheck: skip --> on the line before its fence.
#
#   make readme-check

EXTRA_TEST_TARGETS += readme-check

.PHONY: readme-check

readme-check:
	@echo "== readme-check"
	$(GO) test -count=1 -tags readme ./internal/readmecheck
