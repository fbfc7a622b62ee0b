#!/usr/bin/env bash
# Builds the container image from Containerfile and runs `mcpauth version`
# and `mcpauth --help` in it, where podman or buildah is installed;
# elsewhere it says so and succeeds.
#
#   scripts/container.sh
#
# The build stage needs the Go image ($CONTAINER_GO_IMAGE). It is used when
# it is already on this machine, or pulled first with CONTAINER_PULL=1;
# otherwise the image is built from a binary built here by
# scripts/container-rootfs.sh (BUILD=prebuilt), so that the step needs no
# registry and sends nothing off this machine.
set -euo pipefail
cd "$(dirname "$0")/.."

image=${CONTAINER_IMAGE:-localhost/mcpauth:test}
go_image=${CONTAINER_GO_IMAGE:-docker.io/library/golang:1.26-bookworm}
if command -v podman >/dev/null; then
	tool=podman
elif command -v buildah >/dev/null; then
	tool=buildah
else
	echo "container: skipped: neither podman nor buildah is installed (Debian: apt-get install podman)"
	exit 0
fi
build() { if [ "$tool" = podman ]; then podman build -q "$@"; else buildah bud -q "$@"; fi; }

have_go_image=""
if "$tool" image exists "$go_image" 2>/dev/null || $tool inspect --type image "$go_image" >/dev/null 2>&1; then
	have_go_image=yes
elif [ "${CONTAINER_PULL:-}" = 1 ] && "$tool" pull -q "$go_image" >/dev/null; then
	have_go_image=yes
fi
start=$(date +%s)
if [ -n "$have_go_image" ]; then
	echo "container: $tool builds $image from source in $go_image"
	build -f Containerfile --build-arg GO_IMAGE="$go_image" -t "$image" . >/dev/null
else
	echo "container: $go_image is not on this machine (CONTAINER_PULL=1 pulls it); $tool builds $image from a binary built here (BUILD=prebuilt)"
	ctx=$(mktemp -d)
	trap 'rm -rf "$ctx"' EXIT
	scripts/container-rootfs.sh "$ctx/rootfs"
	build -f Containerfile --build-arg BUILD=prebuilt -t "$image" "$ctx" >/dev/null
fi
echo "container: built in $(( $(date +%s) - start ))s"

user=$("$tool" inspect --type image --format '{{.Config.User}}' "$image" 2>/dev/null || buildah inspect --type image --format '{{.OCIv1.Config.User}}' "$image")
[ "$user" = "65532:65532" ] || { echo "container: the image runs as '$user', want 65532:65532" >&2; exit 1; }

# Run it: as a container where this machine can run containers; where it
# cannot (no cgroup or rlimit rights, as in some sandboxes), from the
# image's file system, whose binary is static.
tmp=$(mktemp -d)
cleanup() { rm -rf "$tmp" "${ctx:-/nonexistent}"; [ -z "${ctr:-}" ] || "$tool" rm "$ctr" >/dev/null 2>&1 || true; }
trap cleanup EXIT
if [ "$tool" = podman ]; then
	run() { podman run --rm --network=none "$image" "$@"; }
else
	ctr=$(buildah from -q "$image")
	run() { buildah run --network=none "$ctr" -- /usr/local/bin/mcpauth "$@"; }
fi
how="in a container"
if ! run version >"$tmp/version" 2>"$tmp/err"; then
	if ! grep -qiE 'OCI|cgroup|setrlimit|permission denied|runtime' "$tmp/err"; then
		cat "$tmp/err" >&2
		exit 1
	fi
	echo "container: this machine cannot run containers ($(head -c 200 "$tmp/err" | tr '\n' ' ')); checking the image's file system instead"
	mkdir "$tmp/rootfs"
	if [ "$tool" = podman ]; then
		ctr=$(podman create -q "$image")
		podman export "$ctr" | tar -x -C "$tmp/rootfs" -f -
	else
		cp -a "$(buildah mount "$ctr")/." "$tmp/rootfs/"
		buildah umount "$ctr" >/dev/null
	fi
	want=$'etc/group\netc/passwd\netc/ssl/certs/ca-certificates.crt\nusr/local/bin/mcpauth'
	got=$(cd "$tmp/rootfs" && find . -type f | sed 's|^\./||' | sort)
	[ "$got" = "$want" ] || { echo "container: the image holds other files than the binary, CA certificates, passwd and group:"$'\n'"$got" >&2; exit 1; }
	[ "$(stat -c %a "$tmp/rootfs/tmp")" = 1777 ] || { echo "container: /tmp is not 1777" >&2; exit 1; }
	run() { "$tmp/rootfs/usr/local/bin/mcpauth" "$@"; }
	run version >"$tmp/version"
	how="from the image's file system"
else
	if [ "$tool" = podman ] && podman run --rm --network=none --entrypoint /bin/sh "$image" -c true >/dev/null 2>&1; then
		echo "container: the image has a shell" >&2
		exit 1
	fi
fi
cat "$tmp/version"
run --help >"$tmp/help" 2>&1
grep -q 'usage: mcpauth <command>' "$tmp/help" || { echo "container: mcpauth --help did not print its usage" >&2; exit 1; }
run authserver --help >"$tmp/help" 2>&1
grep -q -- '-config' "$tmp/help" || { echo "container: mcpauth authserver --help lacks --config" >&2; exit 1; }
echo "container: ok ($image, user $user; version and --help run $how)"
