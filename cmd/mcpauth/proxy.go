package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpauth/mcpauth/internal/proxyheader"
	"github.com/mcpauth/mcpauth/internal/revproxy"
	"github.com/mcpauth/mcpauth/resource"
)

// Identity headers the proxy sets from the validated token, after removing
// whatever the caller sent under those names (the oauth2-proxy convention).
const (
	headerUser              = "X-Forwarded-User"
	headerEmail             = "X-Forwarded-Email"
	headerPreferredUsername = "X-Forwarded-Preferred-Username"
	headerScopes            = "X-Forwarded-Scopes"
	headerClientID          = "X-Forwarded-Client-Id"
	headerIssuer            = "X-Forwarded-Issuer"
)

// newProxy returns the reverse proxy to the upstream MCP endpoint. It runs
// behind the resource middleware, which has already authenticated and
// authorized the request, removed its Authorization header from the copy
// the proxy gets, and bound the upstream's session IDs to their user. The
// proxy never forwards credentials (RS-19) and replaces identity headers
// with the validated token's claims, computed once per verified token (see
// identityHeaders); given pass, the canonical --pass-upstream-token header,
// it sets that header to the exchanged upstream token. Whatever the caller
// sent under a name the proxy removes or sets goes in every spelling a
// server could read as that name (X_Forwarded_User, x-forwarded_user, …):
// proxyheader's one rule decides. It streams event streams and responses
// of unknown length as they come (httputil.ReverseProxy flushes those
// after every write whatever FlushInterval says); a response of known
// length is copied without a flush per write, through buffers reused from
// a pool.
func newProxy(upstream *url.URL, transport http.RoundTripper, logger *slog.Logger, pass string, connect ...string) *httputil.ReverseProxy {
	identity := identityHeaders(logger)
	var rule proxyheader.Rule
	if set := slices.DeleteFunc(append([]string{pass}, connect...), func(h string) bool { return h == "" }); len(set) > 0 {
		rule = proxyheader.NewRule(set...)
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			out := pr.Out
			target := *upstream
			target.RawQuery = joinQuery(upstream.RawQuery, pr.In.URL.RawQuery)
			out.URL = &target
			out.Host = "" // the upstream sees its own host name
			id, _ := identity.Value(pr.In.Context())
			// The outgoing header without credentials, identity headers
			// and the pass header, in a map sized for the
			// X-Forwarded-For/-Host/-Proto, identity and pass headers
			// still to come (growing the clone twice cost more than this
			// copy).
			out.Header = rule.Forward(out.Header, 4+id.len())
			pr.SetXForwarded()
			id.set(out.Header)
			// The context lookups only when the headers are configured:
			// each walks the request's context chain.
			if pass != "" {
				if t, ok := pr.In.Context().Value(upstreamTokenKey{}).(*resource.ExchangedToken); ok {
					out.Header[pass] = []string{t.AccessToken}
				}
			}
			if len(connect) > 0 {
				if t, ok := pr.In.Context().Value(connectTokenKey{}).(connectToken); ok && slices.Contains(connect, t.header) {
					out.Header[t.header] = []string{t.value}
				}
			}
		},
		Transport:  transport,
		BufferPool: revproxy.NewBufferPool(),
		ModifyResponse: func(resp *http.Response) error {
			if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				resp.Header.Set("X-Accel-Buffering", "no") // TR-10: no buffering by proxies in front of us
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) {
				logger.Debug("client went away", "path", r.URL.Path)
			} else {
				logger.Warn("upstream request failed", "upstream", upstream.Redacted(), "error", err)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","error":{"code":-32603,"message":"upstream MCP server unavailable"}}`))
		},
		ErrorLog: nil,
	}
}

func printableASCII(s string) bool {
	return !strings.ContainsFunc(s, func(c rune) bool { return c < 0x20 || c > 0x7e })
}

func joinQuery(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "&" + b
}
