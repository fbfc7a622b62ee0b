package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/replay"
	"github.com/mcpauth/mcpauth/requeststate"
	"github.com/mcpauth/mcpauth/resource"
)

// demoProvider is the third-party provider of the demo's connect chapter.
const demoProvider = "demo-provider"

// demoConnections stands in, inside the demo's authorization server, for
// the connected accounts of a real one: it answers token exchanges for
// demoProvider by the connect contract (a token once connected, else 400
// invalid_grant with a connect_uri) and serves a connect page that links
// the account at once. A real connect page checks that the browser's
// logged-in user is the user the link was made for and runs the
// provider's authorization code flow; this stand-in only shows the MCP
// side of the flow, and keys connections by the MCP token's hash.
type demoConnections struct {
	issuer, clientID, secret string
	as                       http.Handler
	mu                       sync.Mutex
	refs                     map[string][sha256.Size]byte // connect reference -> subject token hash
	linked                   map[[sha256.Size]byte]bool
}

func newDemoConnections(issuer string, as http.Handler) *demoConnections {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return &demoConnections{issuer: issuer, clientID: "demo-mcp-server", secret: base64.RawURLEncoding.EncodeToString(b), as: as,
		refs: map[string][sha256.Size]byte{}, linked: map[[sha256.Size]byte]bool{}}
}

// ServeHTTP answers demoProvider's exchanges and connect page and hands
// every other request to the authorization server.
func (c *demoConnections) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/connect/"+demoProvider:
		c.connect(w, r)
		return
	case r.Method != http.MethodPost || r.URL.Path != "/token":
		c.as.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	form, _ := url.ParseQuery(string(body))
	if form.Get("grant_type") != oauthmeta.GrantTypeTokenExchange || form.Get("audience") != demoProvider {
		r2 := r.Clone(r.Context())
		r2.Body = io.NopCloser(bytes.NewReader(body))
		c.as.ServeHTTP(w, r2)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if id, secret, ok := r.BasicAuth(); !ok || id != c.clientID || secret != c.secret {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
		return
	}
	h := sha256.Sum256([]byte(form.Get("subject_token")))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.linked[h] {
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "demo-provider-token-" + base64.RawURLEncoding.EncodeToString(h[:8]),
			"token_type": "Bearer", "issued_token_type": oauthmeta.TokenTypeAccessToken, "expires_in": 600})
		return
	}
	ref := make([]byte, 16)
	_, _ = rand.Read(ref)
	r64 := base64.RawURLEncoding.EncodeToString(ref)
	if len(c.refs) < 1000 {
		c.refs[r64] = h
	}
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant",
		"error_description":       "the user has not connected " + demoProvider,
		oauthmeta.ParamConnectURI: c.issuer + "/connect/" + demoProvider + "?ref=" + r64})
}

// connect links the account of the reference's user, once.
func (c *demoConnections) connect(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	h, ok := c.refs[r.URL.Query().Get("ref")]
	delete(c.refs, r.URL.Query().Get("ref"))
	if ok {
		c.linked[h] = true
	}
	c.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, "unknown or used connect link\n")
		return
	}
	_, _ = io.WriteString(w, "demo-provider connected; return to your MCP host\n")
}

// demoConnector is the MCP server's side: the exchange with the demo
// authorization server and the requestState sealer.
func demoConnector(c *demoConnections, tokenEndpoint string) (*resource.Connector, error) {
	ex, err := resource.NewExchanger(resource.ExchangeConfig{TokenEndpoint: tokenEndpoint, ClientID: c.clientID,
		ClientSecret: c.secret, InsecureAllowHTTPLoopback: true})
	if err != nil {
		return nil, err
	}
	key := make([]byte, requeststate.KeySize)
	_, _ = rand.Read(key)
	used, err := replay.NewMemory(replay.MemoryConfig{MaxEntries: 1 << 12})
	if err != nil {
		return nil, err
	}
	states, err := requeststate.New(requeststate.Config{Key: key, Replay: used})
	if err != nil {
		return nil, err
	}
	return resource.NewConnector(resource.ConnectConfig{Exchanger: ex, States: states})
}

// addConnectTool adds list_repos, which needs the user's demoProvider
// token, to s.
func addConnectTool(s *mcp.Server, conn *resource.Connector) {
	mcp.AddTool(s, &mcp.Tool{Name: "list_repos", Description: "List the user's repositories at demo-provider (asks the user to connect it first)."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			call := resource.Call{Name: req.Params.Name, Arguments: req.Params.Arguments, RequestState: req.Params.RequestState}
			if p := req.Session.InitializeParams(); p != nil {
				call.ProtocolVersion = p.ProtocolVersion
				call.URLElicitation = p.Capabilities != nil && p.Capabilities.Elicitation != nil && p.Capabilities.Elicitation.URL != nil
			}
			if req.Params.InputResponses != nil {
				call.InputResponses, _ = json.Marshal(req.Params.InputResponses)
			}
			tok, err := conn.ProviderToken(ctx, demoProvider, call)
			var need *resource.ConnectRequired
			switch {
			case errors.As(err, &need) && !need.IsError():
				r := need.Result()
				res := &mcp.CallToolResult{RequestState: r.RequestState, InputRequests: mcp.InputRequestMap{}}
				for id, ir := range r.InputRequests {
					res.InputRequests[id] = &mcp.ElicitParams{Mode: ir.Params.Mode, Message: ir.Params.Message, URL: ir.Params.URL}
				}
				return res, nil, nil
			case errors.As(err, &need):
				e := need.RPCError()
				return nil, nil, &jsonrpc.Error{Code: int64(e.Code), Message: e.Message, Data: e.Data}
			case errors.Is(err, requeststate.ErrRefused):
				return nil, nil, &jsonrpc.Error{Code: resource.CodeInvalidParams, Message: "invalid requestState"}
			case err != nil:
				return nil, nil, err
			}
			// The tool would call the provider's API with tok; the token
			// never leaves the server.
			return textResult(fmt.Sprintf("3 repositories at %s (with a %d-character provider token the host never saw)", demoProvider, len(tok.AccessToken))), nil, nil
		})
}

// narrateURLElicitation is the demo host's OnURLElicitation: it tells
// what a host shows, consents for the user, and opens the page with an
// HTTP client in place of a browser.
func narrateURLElicitation(n *narrator) func(context.Context, client.URLElicitation) (bool, error) {
	return func(ctx context.Context, e client.URLElicitation) (bool, error) {
		n.say("    The server answered with a URL-mode elicitation and a sealed requestState. A host shows:")
		for _, line := range strings.Split(strings.TrimRight(describeElicitation(e), "\n"), "\n") {
			if line != "" {
				n.say("      %s", line)
			}
		}
		n.say("    The demo consents for you and opens the page with an HTTP client, never fetched before consent")
		n.say("    (mcpauth call asks first and opens your browser).")
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.URL, nil)
		if err != nil {
			return false, err
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		page, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		n.say("    Connect page: %s %s", resp.Status, strings.TrimSpace(string(page)))
		n.say("    The host retries list_repos with the requestState, which the server verifies (same user, client,")
		n.say("    tool and arguments, unexpired, once) before it exchanges again:")
		return resp.StatusCode == http.StatusOK, nil
	}
}
