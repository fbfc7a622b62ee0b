package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

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

// identityHeader reports whether an inbound header could be read upstream
// as an identity asserted by a proxy. All of them are removed before
// forwarding; X-Forwarded-For/-Host/-Proto are then set again by the proxy.
func identityHeader(canonical string) bool {
	for _, p := range []string{"X-Forwarded-", "X-Auth-Request-", "X-Mcpauth-"} {
		if strings.HasPrefix(canonical, p) {
			return true
		}
	}
	switch canonical {
	case "Forwarded", "X-Remote-User", "Remote-User", "X-User", "X-Email", "X-Real-Ip":
		return true
	}
	return false
}

// newProxy returns the reverse proxy to the upstream MCP endpoint. It runs
// behind the resource middleware, which has already authenticated and
// authorized the request and removed its Authorization header. The proxy
// streams responses as they come (FlushInterval -1: event streams are never
// buffered), never forwards credentials (RS-19), and replaces identity
// headers with the validated token's claims.
func newProxy(upstream *url.URL, transport http.RoundTripper, logger *slog.Logger) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			out := pr.Out
			target := *upstream
			target.RawQuery = joinQuery(upstream.RawQuery, pr.In.URL.RawQuery)
			out.URL = &target
			out.Host = "" // the upstream sees its own host name
			out.Header.Del("Authorization")
			out.Header.Del("Proxy-Authorization")
			for k := range out.Header {
				if identityHeader(k) {
					out.Header.Del(k)
				}
			}
			pr.SetXForwarded()
			setIdentity(out.Header, resource.TokenInfoFromContext(pr.In.Context()), logger)
		},
		Transport:     transport,
		FlushInterval: -1,
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

// setIdentity writes the identity headers from info. Values that are not
// printable ASCII are left out (and logged) rather than mangled.
func setIdentity(h http.Header, info *resource.TokenInfo, logger *slog.Logger) {
	if info == nil {
		return
	}
	var claims struct {
		Email             string `json:"email"`
		PreferredUsername string `json:"preferred_username"`
	}
	_ = json.Unmarshal(info.Claims, &claims)
	for _, kv := range [][2]string{
		{headerUser, info.Subject},
		{headerEmail, claims.Email},
		{headerPreferredUsername, claims.PreferredUsername},
		{headerScopes, strings.Join(info.Scopes, " ")},
		{headerClientID, info.ClientID},
		{headerIssuer, info.Issuer},
	} {
		switch {
		case kv[1] == "":
		case !printableASCII(kv[1]):
			logger.Warn("identity value not forwarded: not printable ASCII", "header", kv[0])
		default:
			h.Set(kv[0], kv[1])
		}
	}
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
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

// upstreamTransport is the proxy's client: no environment proxy, bounded
// connects and idle connections, and no response-header timeout, since a
// tool call may take long before it answers.
func upstreamTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
	}
}
