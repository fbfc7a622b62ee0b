package oauthtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ResourceOptions configure a protected MCP server.
type ResourceOptions struct {
	PRMAt           string   // "" or "path" (path-inserted), "root", "custom", "none"
	NoPointer       bool     // no resource_metadata in challenges
	PointerURL      string   // resource_metadata to send instead of the real one
	ChallengeScope  []string // scope of the 401 challenge
	ScopesSupported []string
	PRMResource     string              // "resource" to publish; "" = the right one
	ToolScopes      map[string][]string // tool name -> scopes tools/call needs
	AlwaysForbid    bool                // 403 insufficient_scope for every authorized request
}

// Resource is a protected MCP server at <URL>/mcp on 127.0.0.1, with
// tools "echo" and "write", that accepts the access tokens its [AS]s issued
// for it and records every request.
type Resource struct {
	*httptest.Server

	mu       sync.Mutex
	opts     ResourceOptions
	as       []*AS
	bearers  []string
	paths    []string
	mcp      http.Handler
	fallback http.Handler
}

// NewResource starts a protected MCP server on 127.0.0.1 that trusts the
// given authorization servers (the first ones listed in its metadata).
func NewResource(t Cleaner, opts ResourceOptions, as ...*AS) *Resource {
	srv := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, nil)
	for _, name := range []string{"echo", "write"} {
		mcp.AddTool(srv, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
	}
	r := &Resource{opts: opts, as: as,
		mcp: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
			&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

// MCPURL is the MCP endpoint, the resource identifier.
func (r *Resource) MCPURL() string { return r.URL + "/mcp" }

// SetAuthServers changes the authorization servers the resource names and
// trusts (an authorization server migration).
func (r *Resource) SetAuthServers(as ...*AS) { locked(&r.mu, func() { r.as = as }) }

// Update changes the options.
func (r *Resource) Update(fn func(*ResourceOptions)) { locked(&r.mu, func() { fn(&r.opts) }) }

// Paths returns the request paths served, in order.
func (r *Resource) Paths() []string { return cloneLocked(&r.mu, &r.paths) }

// Bearers returns the bearer tokens received on every path but the
// metadata's, in order ("" for none).
func (r *Resource) Bearers() []string { return cloneLocked(&r.mu, &r.bearers) }

func prmPath(o ResourceOptions) string {
	switch o.PRMAt {
	case "root":
		return "/.well-known/oauth-protected-resource"
	case "custom":
		return "/custom/prm.json"
	case "none":
		return "\x00"
	default:
		return "/.well-known/oauth-protected-resource/mcp"
	}
}

func (r *Resource) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.paths = append(r.paths, req.URL.Path)
	opts, as, prm, fallback := r.opts, slices.Clone(r.as), prmPath(r.opts), r.fallback
	if req.URL.Path != prm {
		r.bearers = append(r.bearers, bearer(req))
	}
	r.mu.Unlock()
	switch req.URL.Path {
	case prm:
		r.metadata(w, opts, as)
	case "/mcp":
		r.protected(w, req, opts, as)
	default:
		if fallback != nil {
			fallback.ServeHTTP(w, req)
			return
		}
		http.NotFound(w, req)
	}
}

func (r *Resource) resourceID(opts ResourceOptions) string {
	if opts.PRMResource != "" {
		return opts.PRMResource
	}
	if opts.PRMAt == "root" {
		return r.URL
	}
	return r.MCPURL()
}

func (r *Resource) metadata(w http.ResponseWriter, opts ResourceOptions, as []*AS) {
	doc := map[string]any{"resource": r.resourceID(opts)}
	var issuers []string
	for _, s := range as {
		issuers = append(issuers, s.Issuer())
	}
	doc["authorization_servers"] = issuers
	if opts.ScopesSupported != nil {
		doc["scopes_supported"] = opts.ScopesSupported
	}
	writeJSON(w, http.StatusOK, doc)
}

// protected checks the bearer token and the scope the operation needs,
// then hands the request to the MCP handler.
func (r *Resource) protected(w http.ResponseWriter, req *http.Request, opts ResourceOptions, as []*AS) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20+1))
	if len(body) > 1<<20 {
		http.Error(w, "request body over 1 MiB", http.StatusRequestEntityTooLarge)
		return
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &msg)
	tok := bearer(req)
	if strings.HasPrefix(msg.Method, "notifications/") {
		r.mcp.ServeHTTP(w, req)
		return
	}
	var grant Grant
	ok := false
	for _, s := range as {
		if g, found := s.Lookup(tok); found && g.Resource == r.resourceID(opts) {
			grant, ok = g, true
		}
	}
	if !ok {
		r.challenge(w, http.StatusUnauthorized, opts, opts.ChallengeScope, tok != "")
		return
	}
	need := opts.ToolScopes[msg.Params.Name]
	if msg.Method != "tools/call" {
		need = nil
	}
	if opts.AlwaysForbid || !subset(need, grant.Scopes) {
		scopes := need
		if opts.AlwaysForbid {
			scopes = []string{"admin"}
		}
		r.challenge(w, http.StatusForbidden, opts, scopes, true)
		return
	}
	r.mcp.ServeHTTP(w, req)
}

func (r *Resource) challenge(w http.ResponseWriter, status int, opts ResourceOptions, scopes []string, hadToken bool) {
	var params []string
	switch {
	case status == http.StatusForbidden:
		params = append(params, `error="insufficient_scope"`)
	case hadToken:
		params = append(params, `error="invalid_token"`)
	}
	if len(scopes) > 0 {
		params = append(params, `scope="`+strings.Join(scopes, " ")+`"`)
	}
	switch {
	case opts.PointerURL != "":
		params = append(params, `resource_metadata="`+opts.PointerURL+`"`)
	case !opts.NoPointer && opts.PRMAt != "none":
		params = append(params, `resource_metadata="`+r.URL+prmPath(opts)+`"`)
	}
	h := "Bearer"
	if len(params) > 0 {
		h += " " + strings.Join(params, ", ")
	}
	w.Header().Set("WWW-Authenticate", h)
	w.WriteHeader(status)
}

func bearer(req *http.Request) string {
	if h := req.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		return h[len("Bearer "):]
	}
	return ""
}

func subset(a, b []string) bool {
	return !slices.ContainsFunc(a, func(s string) bool { return !slices.Contains(b, s) })
}
