package attack

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/authserver/authservertest"
	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/resource"
)

// asHandle is an authorization server on vnet: mcpauth's own authserver,
// optionally made hostile by a metadata rewrite and a wrapping handler. It
// records every credential that crosses it (codes, verifiers, tokens,
// secrets) so the test can prove none of them leaked, and counts requests
// per endpoint.
type asHandle struct {
	Issuer string
	AS     *authserver.Server
	hits   map[string]*atomic.Int64
}

// Hits reports how many requests reached path (such as "/authorize").
func (a *asHandle) Hits(path string) int64 {
	if c, ok := a.hits[path]; ok {
		return c.Load()
	}
	return 0
}

type asOptions struct {
	// meta rewrites the metadata document (both well-known forms).
	meta func(m map[string]any)
	// wrap wraps the server's handler, for hostile endpoint behaviour.
	wrap func(next http.Handler) http.Handler
	// cfg adjusts the authserver configuration.
	cfg func(c *authserver.Config)
}

var asPaths = []string{"/authorize", "/token", "/register", "/jwks.json", "/introspect", "/revoke"}

func startAS(t *testing.T, n *vnet, host string, sec *secrets, logs *logSink, o asOptions) *asHandle {
	t.Helper()
	cfg := authserver.Config{
		Issuer:    "https://" + host,
		Consent:   authserver.ConsentAuto,
		Scopes:    []string{"mcp:tools", "files:read", "files:write", "admin", "s1", "s2", "s3", "s4", "s5", "s6"},
		RateLimit: authserver.RateLimit{PerIP: math.Inf(1), PerClient: math.Inf(1), PerIPBrowser: math.Inf(1)},
		Logger:    logs.Logger(),
	}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	as, err := authserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { as.Close() })
	h := &asHandle{Issuer: cfg.Issuer, AS: as, hits: map[string]*atomic.Int64{}}
	for _, p := range asPaths {
		h.hits[p] = &atomic.Int64{}
	}
	var handler http.Handler = as
	if o.meta != nil {
		handler = authservertest.RewriteMetadata(as, o.meta)
	}
	if o.wrap != nil {
		handler = o.wrap(handler)
	}
	handler = recordCredentials(handler, sec)
	n.Serve(host, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := h.hits[r.URL.Path]; ok {
			c.Add(1)
		}
		handler.ServeHTTP(w, r)
	}))
	return h
}

// recordCredentials notes every code, verifier, token and secret in the
// requests and responses of next.
func recordCredentials(next http.Handler, sec *secrets) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Body != nil {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			r.Body = io.NopCloser(bytes.NewReader(body))
			if form, err := url.ParseQuery(string(body)); err == nil {
				for _, k := range []string{"code", "code_verifier", "refresh_token", "client_secret", "token", "client_assertion"} {
					sec.Add(form[k]...)
				}
			}
		}
		if _, p, ok := r.BasicAuth(); ok {
			sec.Add(p)
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		if loc := rec.Header().Get("Location"); loc != "" {
			if u, err := url.Parse(loc); err == nil {
				sec.Add(u.Query()["code"]...)
			}
		}
		var doc map[string]any
		if json.Unmarshal(rec.Body.Bytes(), &doc) == nil {
			for _, k := range []string{"access_token", "refresh_token", "client_secret", "id_token"} {
				if s, ok := doc[k].(string); ok {
					sec.Add(s)
				}
			}
		}
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// honestMCP is a resource server for mcp.example.com trusting issuer,
// whose keys it fetches through the vnet; handler answers authorized
// requests (nil: 200 with a small JSON body).
func honestMCP(t *testing.T, n *vnet, issuer string, policy *resource.Policy, handler http.Handler) *resource.Verifier {
	return honestMCPAt(t, n, issuer, policy, handler, nil)
}

// honestMCPAt is honestMCP with a clock (nil: time.Now).
func honestMCPAt(t *testing.T, n *vnet, issuer string, policy *resource.Policy, handler http.Handler, now func() time.Time) *resource.Verifier {
	t.Helper()
	keys, err := resource.NewRemoteKeys(*nethook.Set(&resource.RemoteKeysConfig{Issuer: issuer, TLSConfig: n.TLS(), Now: now}, nethook.Net{Resolver: n, Dial: n.Dial}))
	if err != nil {
		t.Fatal(err)
	}
	v, err := resource.New(resource.Config{Resource: mcpResource, Policy: policy, Now: now,
		Issuers: []resource.Issuer{{Issuer: issuer, Keys: keys}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close(); keys.Close() })
	if handler == nil {
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
		})
	}
	mux := http.NewServeMux()
	v.Mount(mux, handler)
	n.Serve(mcpHost, mux)
	return v
}

// countingAuthorizer counts authorizations and delegates to
// FollowRedirects.
type countingAuthorizer struct {
	n     atomic.Int64
	inner client.FollowRedirects
}

func (a *countingAuthorizer) Authorize(ctx context.Context, req *client.AuthorizationRequest) (*url.URL, error) {
	a.n.Add(1)
	return a.inner.Authorize(ctx, req)
}

// clientEnv is mcpauth's client in its production configuration (https
// only, public addresses only) on the vnet.
type clientEnv struct {
	t     *testing.T
	net   *vnet
	c     *client.Client
	auth  *countingAuthorizer
	logs  *logSink
	sec   *secrets
	store *tokenstore.Memory
}

func newClientEnv(t *testing.T, n *vnet, sec *secrets, mutate func(*client.Config)) *clientEnv {
	t.Helper()
	e := &clientEnv{t: t, net: n, auth: &countingAuthorizer{}, logs: &logSink{}, sec: sec, store: tokenstore.NewMemory()}
	sec.Watch(e.logs)
	cfg := client.Config{
		Authorizer: e.auth, Store: e.store,
		TLSConfig: n.TLS(), Logger: e.logs.Logger(), Now: oauthtest.NewClock(oauthtest.Epoch()).Now,
	}
	nethook.Set(&cfg, nethook.Net{Resolver: n, Dial: n.Dial})
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	return e
}

// call sends one MCP request through the client's Transport and returns
// the status (0 on error) and the error, which is recorded for the leak
// check.
func (e *clientEnv) call(ctx context.Context) (int, error) {
	e.t.Helper()
	tr, err := e.c.Transport(mcpResource, e.net.Transport())
	if err != nil {
		e.t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, mcpResource,
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "whoami")
	resp, err := tr.HTTPClient().Do(req)
	e.sec.SeenErr(err)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	e.sec.Seen(string(b))
	return resp.StatusCode, nil
}

// The client's failure reasons the attacks expect, matched with errors.Is
// by reason (see client.Error.Is).
var (
	errAuthorizationResponse   = &client.Error{Reason: "authorization response carries an error or no code"}
	errAuthorizer              = &client.Error{Reason: "authorizer failed"}
	errBlockedAddress          = &client.Error{Reason: "address not allowed"}
	errFetch                   = &client.Error{Reason: "fetch failed"}
	errInvalidMetadata         = &client.Error{Reason: "invalid metadata document"}
	errIssuerMismatch          = &client.Error{Reason: "authorization server metadata issuer mismatch"}
	errIssuerMissing           = &client.Error{Reason: "authorization response lacks the iss parameter"}
	errIssuerParameterMismatch = &client.Error{Reason: "authorization response iss does not match the authorization server"}
	errNoAuthServer            = &client.Error{Reason: "no usable authorization server"}
	errNoAuthServerMetadata    = &client.Error{Reason: "no authorization server metadata"}
	errNoResourceMetadata      = &client.Error{Reason: "no protected resource metadata"}
	errPKCEUnsupported         = &client.Error{Reason: "authorization server does not support PKCE S256"}
	errRegistration            = &client.Error{Reason: "dynamic client registration failed"}
	errResourceMismatch        = &client.Error{Reason: "protected resource metadata is for another resource"}
	errResponseTooLarge        = &client.Error{Reason: "response too large"}
	errTokenResponse           = &client.Error{Reason: "token request failed"}
	errTokenType               = &client.Error{Reason: "unsupported token_type"}
	errUnknownState            = &client.Error{Reason: "unknown or replayed state"}
	errUnsafeURL               = &client.Error{Reason: "unsafe URL"}
)
