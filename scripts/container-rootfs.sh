#!/bin/sh
# Lays out the root file system of the mcpauth container image in DIR: the
# static binary (CGO_ENABLED=0, -trimpath) at usr/local/bin/mcpauth, the CA
# certificates of this system, /etc/passwd and /etc/group naming the
# non-root user 65532, and a world-writable, sticky /tmp. No shell, no
# package manager, nothing else.
#
#   scripts/container-rootfs.sh DIR
#
# The Containerfile runs it in its build stage; mk/container.mk runs it on
# this machine when the Go image cannot be had (BUILD=prebuilt).
set -eu
out=${1:?usage: container-rootfs.sh DIR}
cd "$(dirname "$0")/.."
GO=${GO:-go}
CA=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
[ -s "$CA" ] || { echo "container-rootfs: no CA certificates at $CA (apt-get install ca-certificates)" >&2; exit 1; }
mkdir -p "$out/usr/local/bin" "$out/etc/ssl/certs" "$out/tmp"
CGO_ENABLED=0 "$GO" build -trimpath -ldflags='-s -w' -o "$out/usr/local/bin/mcpauth" ./cmd/mcpauth
cp "$CA" "$out/etc/ssl/certs/ca-certificates.crt"
echo 'mcpauth:x:65532:65532:mcpauth:/nonexistent:/sbin/nologin' > "$out/etc/passwd"
echo 'mcpauth:x:65532:' > "$out/etc/group"
chmod 0755 "$out/usr/local/bin/mcpauth"
chmod 0644 "$out/etc/passwd" "$out/etc/group" "$out/etc/ssl/certs/ca-certificates.crt"
chmod 1777 "$out/tmp"
