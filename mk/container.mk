# The container image (Containerfile): `make test` builds it where podman or
# buildah is installed and runs `mcpauth version` and `--help` in it (as the
# non-root user, without a network, checking it has no shell); elsewhere the
# step says it is skipped. The build stage's Go image is used when it is on
# the machine (CONTAINER_PULL=1 pulls it); otherwise the image is built from
# a binary built here, so the step needs no registry (scripts/container.sh).
#
#   make container    CONTAINER_IMAGE=localhost/mcpauth:test CONTAINER_GO_IMAGE=docker.io/library/golang:1.26-bookworm

EXTRA_TEST_TARGETS += container

.PHONY: container
container:
	@echo "== container"
	@GO=$(GO) scripts/container.sh
