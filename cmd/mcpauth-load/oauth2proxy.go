package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/internal/loadgen"
)

// oauth2ProxyName is the -compare candidate of oauth2-proxy, the reverse
// proxy many operators already put in front of an API to check bearer
// JWTs from an OpenID Connect issuer.
const oauth2ProxyName = "oauth2-proxy"

// oauth2ProxyDefault is where `make oauth2-proxy` builds it (mk/oauth2proxy.mk),
// relative to the module root -compare runs from.
const oauth2ProxyDefault = "tools/oauth2-proxy/bin/oauth2-proxy"

// oauth2ProxyOff as -oauth2-proxy leaves the candidate out.
const oauth2ProxyOff = "off"

func registerOAuth2Proxy(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.oauth2Proxy, "oauth2-proxy", "", "-compare: the oauth2-proxy executable to measure beside protect (JWT bearer mode); "+
		"default "+oauth2ProxyDefault+" (make oauth2-proxy) if it exists, else the candidate is skipped; \"off\" skips it")
}

// oauth2ProxyBinary resolves -oauth2-proxy: the executable, or "" when
// the candidate is skipped (said on stdout). A path given explicitly must
// exist.
func oauth2ProxyBinary(flagValue string, stdout io.Writer) (string, error) {
	switch flagValue {
	case oauth2ProxyOff:
		return "", nil
	case "":
		if _, err := os.Stat(oauth2ProxyDefault); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("-oauth2-proxy: %w", err)
			}
			fmt.Fprintf(stdout, "oauth2-proxy: %s not built (make oauth2-proxy); candidate skipped\n", oauth2ProxyDefault)
			return "", nil
		}
		flagValue = oauth2ProxyDefault
	}
	st, err := os.Stat(flagValue)
	if err != nil {
		return "", fmt.Errorf("-oauth2-proxy: %w", err)
	}
	if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("-oauth2-proxy %s: not an executable file", flagValue)
	}
	return flagValue, nil
}

// oauth2ProxyArgs is the command line of oauth2-proxy as an operator
// protecting an API with bearer JWTs runs it: the OIDC provider on the
// issuer (its discovery document gives the JWK Set and the algorithm),
// the resource identifier as client ID (the audience every token must
// name), JWT bearer tokens accepted in place of a login session, an
// invalid JWT refused (403) rather than sent to a login page, a request
// without one answered 401 (--api-route), any subject allowed
// (--email-domain=*; the tokens carry no email, so the subject is the
// user). The client secret is never used (no login flow happens); the
// cookie secret is fresh. Request logging is off, as protect's access log
// is by default.
func oauth2ProxyArgs(addr, upstream, issuer, resourceURL, cookieSecret string) []string {
	return []string{
		"--http-address", addr,
		"--upstream", upstream,
		"--provider", "oidc",
		"--oidc-issuer-url", issuer,
		"--client-id", resourceURL,
		"--client-secret", "unused-no-login-flow",
		"--cookie-secret", cookieSecret,
		"--email-domain", "*",
		"--skip-jwt-bearer-tokens",
		"--bearer-token-login-fallback=false",
		"--api-route", "^/mcp",
		"--request-logging=false",
		"--silence-ping-logging",
	}
}

// newCookieSecret is a random cookie secret in the form oauth2-proxy's
// documentation gives: 32 random bytes (an AES-256 key), base64url.
func newCookieSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// oauth2ProxyReadyURL is the health endpoint -compare waits for (oauth2-proxy
// prints no "listening on" line); "" for every other candidate.
func oauth2ProxyReadyURL(c *candidate) string {
	if c.name != oauth2ProxyName {
		return ""
	}
	return strings.TrimSuffix(c.url, "/mcp") + "/ping"
}

// oauth2ProxyProbeKinds are the invalid tokens oauth2-proxy must refuse at
// start-up, before any figure is taken: that it checks the signature,
// the audience, the expiry and the algorithm, not only the token's shape.
var oauth2ProxyProbeKinds = []string{"bad-signature", "foreign-aud", "expired", "alg-none", "unknown-kid"}

// probeRefusals sends each probe token of kinds to the candidate named
// name, if there is one, and fails unless every one is refused (401 or
// 403); it reports the answers on stdout.
func probeRefusals(ctx context.Context, client *http.Client, f *loadgen.Fixture, cands []*candidate, name string, kinds []string, stdout io.Writer) error {
	i := slices.IndexFunc(cands, func(c *candidate) bool { return c.name == name })
	if i < 0 {
		return nil
	}
	defer client.CloseIdleConnections()
	c := cands[i]
	var got []string
	for _, kind := range kinds {
		tok := f.InvalidToken(kind)
		if tok == "" {
			return fmt.Errorf("%s probe: the fixture has no %s token", c.name, kind)
		}
		code, err := probeStatus(ctx, client, c.url, tok)
		if err != nil {
			return fmt.Errorf("%s probe %s: %w", c.name, kind, err)
		}
		if code != http.StatusUnauthorized && code != http.StatusForbidden {
			tail := ""
			if c.child != nil {
				tail = c.child.Tail()
			}
			return fmt.Errorf("%s accepted a token with %s: status %d, want 401 or 403\n%s", c.name, kind, code, tail)
		}
		got = append(got, fmt.Sprintf("%s %d", kind, code))
	}
	fmt.Fprintf(stdout, "%s refuses: %s\n", c.name, strings.Join(got, ", "))
	return nil
}

// probeStatus POSTs an MCP tools/list with token and returns the status.
func probeStatus(ctx context.Context, client *http.Client, target, token string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target,
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

// oauth2ProxyTargets are the ratios of the oauth2-proxy candidate, when
// it runs: protect beside it, and it beside the bare proxy.
func oauth2ProxyTargets(names []string) []target {
	if !slices.Contains(names, oauth2ProxyName) {
		return nil
	}
	return []target{
		{what: "repeated token: protect / oauth2-proxy", wl: "repeated", a: "protect", b: oauth2ProxyName},
		{what: "fresh token: protect / oauth2-proxy", wl: "fresh", a: "protect", b: oauth2ProxyName},
		{what: "repeated token: oauth2-proxy / bare", wl: "repeated", a: oauth2ProxyName, b: "bare"},
		{what: "fresh token: oauth2-proxy / bare", wl: "fresh", a: oauth2ProxyName, b: "bare"},
	}
}
