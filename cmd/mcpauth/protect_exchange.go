package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpauth/mcpauth/internal/proxyheader"
	"github.com/mcpauth/mcpauth/internal/revproxy"
	"github.com/mcpauth/mcpauth/internal/safehttp"
	"github.com/mcpauth/mcpauth/resource"
)

// exchangeCacheSize bounds protect's cache of exchanged upstream tokens
// (with --exchange-cache-ttl): one entry per (MCP access token, audience).
const exchangeCacheSize = 4096

// passUpstreamFlags are protect's flags for --pass-upstream-token: after
// verifying the MCP access token, protect exchanges it at the
// authorization server (RFC 8693) for the user's token at the upstream
// identity provider and sends that, never the MCP token, to the protected
// server in a header (oauth2-proxy's --pass-access-token).
type passUpstreamFlags struct {
	header, tokenURL, clientID, clientSecret, audience string
	cacheTTL                                           time.Duration
	// tracer records the exchanges' spans; nil when tracing is off. Not
	// a flag: the OTEL_* environment sets it.
	tracer trace.TracerProvider
	// forConnect: --connect-tool uses the --exchange-* flags too.
	forConnect bool
}

func (p *passUpstreamFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.header, "pass-upstream-token", "", "send the user's upstream access token (from the token exchange at the authorization server) "+
		"to the protected server in this `HEADER`, e.g. X-Upstream-Token; the MCP access token is never forwarded")
	fs.StringVar(&p.tokenURL, "exchange-token-url", "", "with --pass-upstream-token: the authorization server's token endpoint, at the origin of an --issuer")
	fs.StringVar(&p.clientID, "exchange-client-id", "", "with --pass-upstream-token: this resource's client ID at the authorization server "+
		"(mcpauth authserver --exchange-client ID=RESOURCE)")
	fs.StringVar(&p.clientSecret, "exchange-client-secret", "", "with --pass-upstream-token: that client's secret, as `env:VAR`")
	fs.StringVar(&p.audience, "upstream-audience", "", "with --pass-upstream-token: the exchange's audience `NAME` of the upstream provider, e.g. github "+
		"(mcpauth authserver --upstream-audience, or the upstream issuer URL)")
	fs.DurationVar(&p.cacheTTL, "exchange-cache-ttl", 0, "with --pass-upstream-token: reuse an exchanged token for the same MCP token for this long "+
		"(never past its expiry; a revoked grant is noticed only after it); 0 exchanges on every request")
}

// upstreamTokenPass is --pass-upstream-token at work: the exchanger and
// the header the upstream token goes in.
type upstreamTokenPass struct {
	header   string // canonical
	audience string
	ex       *resource.Exchanger
	logger   *slog.Logger
}

// config checks the flags and returns the pass, or nil without
// --pass-upstream-token. issuers are protect's --issuer values.
func (p *passUpstreamFlags) config(issuers []string, insecureHTTP bool, getenv func(string) string, logger *slog.Logger) (*upstreamTokenPass, error) {
	if p.header == "" {
		if (!p.forConnect && (p.tokenURL != "" || p.clientID != "" || p.clientSecret != "")) || p.audience != "" || p.cacheTTL != 0 {
			return nil, errors.New("--exchange-token-url, --exchange-client-id, --exchange-client-secret, --upstream-audience and --exchange-cache-ttl need --pass-upstream-token")
		}
		return nil, nil
	}
	header, err := checkPassHeader(p.header)
	if err != nil {
		return nil, err
	}
	if p.audience == "" {
		return nil, errors.New("--pass-upstream-token needs --exchange-token-url, --exchange-client-id, --exchange-client-secret and --upstream-audience")
	}
	ex, err := p.exchanger(issuers, insecureHTTP, getenv)
	if err != nil {
		return nil, err
	}
	return &upstreamTokenPass{header: header, audience: p.audience, ex: ex, logger: logger}, nil
}

// exchanger checks the --exchange-* flags and returns the exchanger they
// configure, for --pass-upstream-token and --connect-tool.
func (p *passUpstreamFlags) exchanger(issuers []string, insecureHTTP bool, getenv func(string) string) (*resource.Exchanger, error) {
	if p.tokenURL == "" || p.clientID == "" || p.clientSecret == "" {
		return nil, errors.New("--pass-upstream-token and --connect-tool need --exchange-token-url, --exchange-client-id and --exchange-client-secret")
	}
	// A secret on the command line is refused before anything else.
	secret, err := envSecret("--exchange-client-secret", p.clientSecret, getenv)
	if err != nil {
		return nil, err
	}
	if p.cacheTTL < 0 {
		return nil, errors.New("--exchange-cache-ttl: negative duration")
	}
	if err := checkServiceURL("--exchange-token-url", p.tokenURL, insecureHTTP); err != nil {
		return nil, err
	}
	tu, _ := url.Parse(p.tokenURL)
	atIssuer := false
	for _, iss := range issuers {
		if iu, err := url.Parse(iss); err == nil && safehttp.SameOrigin(iu, tu) {
			atIssuer = true
		}
	}
	if !atIssuer {
		return nil, fmt.Errorf("--exchange-token-url: %s is not at the origin of an --issuer: the access token is sent only to its issuer", tu.Redacted())
	}
	cfg := resource.ExchangeConfig{
		TokenEndpoint: p.tokenURL, ClientID: p.clientID, ClientSecret: secret,
		// The proxy's transport (no environment proxy, bounded connects);
		// the client's timeout bounds each exchange.
		HTTPClient:                &http.Client{Timeout: resource.DefaultExchangeTimeout, Transport: revproxy.Transport()},
		InsecureAllowHTTPLoopback: insecureHTTP,
		TracerProvider:            p.tracer,
	}
	if p.cacheTTL > 0 {
		cfg.CacheSize, cfg.CacheTTL = exchangeCacheSize, p.cacheTTL
	}
	ex, err := resource.NewExchanger(cfg)
	if err != nil {
		return nil, fmt.Errorf("--exchange-token-url: %w", err)
	}
	return ex, nil
}

// checkPassHeader returns the canonical form of the --pass-upstream-token
// header name: letters, digits and '-' only (a subset of the RFC 9110
// token), and none that carries the caller's credentials, that proxies
// or the HTTP framing own, that MCP defines, or that protect sets from the
// validated token.
func checkPassHeader(name string) (string, error) {
	if name == "" || len(name) > 64 || name[0] == '-' || strings.ContainsFunc(name, func(c rune) bool {
		return c != '-' && !(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z')
	}) {
		return "", fmt.Errorf("--pass-upstream-token: %q is not a header name (letters, digits and '-')", name)
	}
	c := http.CanonicalHeaderKey(name)
	reserved := proxyheader.Credential(c) || strings.HasPrefix(c, "Mcp-") || strings.HasPrefix(c, "Sec-") || strings.HasPrefix(c, "Proxy-")
	switch c {
	case "Cookie", "Set-Cookie", "Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
		"Host", "Content-Length", "Content-Type", "Content-Encoding", "Expect", "Origin", "Forwarded",
		"Www-Authenticate", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto",
		headerUser, headerEmail, headerPreferredUsername, headerScopes, headerClientID, headerIssuer:
		reserved = true
	}
	if reserved {
		return "", fmt.Errorf("--pass-upstream-token: %s is a reserved header; choose another name, e.g. X-Upstream-Token", c)
	}
	return c, nil
}

// upstreamTokenKey is the context key of the exchanged token, from the
// exchange to the proxy's Rewrite.
type upstreamTokenKey struct{}

// wrap returns the protected endpoint's handler: it exchanges the
// verified request's token, answers a failure itself (v.DenyExchange: 401
// with a challenge when the authorization server refused the token, 503
// when it is unreachable, 502 otherwise), and otherwise hands the request
// to proxy (made by newProxy with p.header), which drops whatever the
// caller sent under that name, in any spelling, and sets it to the
// upstream token.
func (p *upstreamTokenPass) wrap(v *resource.Verifier, proxy http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, err := p.ex.Exchange(r.Context(), p.audience)
		if err != nil {
			sub := ""
			if info := resource.TokenInfoFromContext(r.Context()); info != nil {
				sub = info.Subject
			}
			// Logged before the answer, so that the log is complete when
			// the client sees it; err names the token endpoint and the
			// authorization server's error, never a token.
			p.logger.Warn("upstream token exchange failed", "status", resource.ExchangeStatus(err), "sub", sub, "audience", p.audience, "error", err)
			v.DenyExchange(w, r, err)
			return
		}
		proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), upstreamTokenKey{}, t)))
	})
}
