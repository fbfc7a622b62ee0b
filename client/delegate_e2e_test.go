package client_test

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

const (
	hostID        = "host-agent"
	hostSecret    = "host-secret"
	plannerAgent  = "planner-agent"
	k8sDelegation = "https://k8s.delegation.example.com"
	toolAgentSub  = "system:serviceaccount:tools:tool-agent"
)

// chainSetup is an authorization server with delegation on, and an MCP
// server behind resource's middleware that records what it sees.
type chainSetup struct {
	clock   *oauthtest.Clock
	issuer  string
	mcpURL  string
	agent   *oauthtest.Key // the planner's client key
	k8s     *oauthtest.Key // the workload platform's key
	mu      sync.Mutex
	seen    []oauthmeta.Actor
	audited []resource.Event
	n       int
}

func newChainSetup(t *testing.T) *chainSetup {
	t.Helper()
	s := &chainSetup{clock: oauthtest.NewClock(oauthtest.Epoch()), agent: oauthtest.NewKey(t, "ES256", "planner"),
		k8s: oauthtest.NewKey(t, "ES256", "k8s")}
	asLn, rsLn := listen(t), listen(t)
	s.issuer, s.mcpURL = issuerOf(asLn), issuerOf(rsLn)+"/mcp"
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{s.agent.JWK()}})
	startASOn(t, asLn, s.clock, func(c *authserver.Config) {
		c.Scopes, c.DefaultScopes = []string{"mcp:read", "mcp:write"}, nil
		c.DPoP = &authserver.DPoPConfig{}
		c.Clients = []authserver.Client{
			{ID: hostID, Secret: hostSecret, GrantTypes: []string{oauthmeta.GrantTypeClientCredentials}},
			{ID: plannerAgent, AuthMethod: oauthmeta.AuthMethodPrivateKeyJWT, JWKS: jwks,
				GrantTypes: []string{oauthmeta.GrantTypeTokenExchange}},
		}
		c.TrustedIssuers = []authserver.TrustedIssuer{{Issuer: k8sDelegation, PublicKeys: []crypto.PublicKey{s.k8s.Public()},
			Rules: []authserver.WorkloadRule{{Subject: "system:serviceaccount:tools:*", Resources: []string{s.mcpURL},
				Scopes: []string{"mcp:read"}}}}}
		c.Delegation = &authserver.DelegationConfig{MaxDepth: 3}
	})
	v, err := resource.New(resource.Config{
		Resource: s.mcpURL, Issuers: []resource.Issuer{{Issuer: s.issuer, JWKSURI: s.issuer + "/jwks.json"}},
		InsecureAllowHTTPLoopback: true, Now: s.clock.Now, DPoP: resource.DPoPConfig{Mode: resource.DPoPAllowed},
		Policy: &resource.Policy{Default: []string{"mcp:read"}, Delegation: &resource.DelegationPolicy{
			Tools: map[string]resource.DelegationRule{
				"search": {Require: true, Actors: []string{toolAgentSub}, MaxDepth: 2},
				"deploy": {Forbid: true},
			}}},
		Audit: func(_ context.Context, e resource.Event) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.audited = append(s.audited, e)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, rsLn, v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = resource.TokenInfoFromContext(r.Context()).Actors
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	})))
	return s
}

// hostToken is the host's own token for the MCP server, bound to key.
func (s *chainSetup) hostToken(t *testing.T, key *dpop.Prover) *oauth2.Token {
	t.Helper()
	proof, err := key.Proof(dpop.Request{Method: http.MethodPost, URL: s.issuer + "/token"})
	if err != nil {
		t.Fatal(err)
	}
	status, oe, tr := tokenRequest(t, s.issuer+"/token", url.Values{"grant_type": {oauthmeta.GrantTypeClientCredentials},
		"scope": {"mcp:read mcp:write"}, "resource": {s.mcpURL}}, http.Header{"Dpop": {proof}}, hostID, hostSecret)
	if status != http.StatusOK {
		t.Fatalf("host token: %d %v", status, oe)
	}
	return &oauth2.Token{AccessToken: tr.AccessToken, TokenType: tr.TokenType}
}

// workloadJWT is the tool agent's Kubernetes token.
func (s *chainSetup) workloadJWT(t *testing.T) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		s.mu.Lock()
		s.n++
		n := s.n
		s.mu.Unlock()
		now := s.clock.Now()
		return signJWT(t, s.k8s, "", map[string]any{"iss": k8sDelegation, "sub": toolAgentSub, "aud": s.issuer,
			"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "jti": "tool-" + strings.Repeat("n", n)}), nil
	}
}

func (s *chainSetup) delegation(t *testing.T, cfg client.DelegationConfig) *client.Delegation {
	t.Helper()
	cfg.TokenEndpoint, cfg.InsecureAllowHTTPLoopback, cfg.Now = s.issuer+"/token", true, s.clock.Now
	d, err := client.NewDelegation(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// callTool calls a tool with tok, bound to key.
func (s *chainSetup) callTool(t *testing.T, tok *oauth2.Token, key *dpop.Prover, tool string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	req, _ := http.NewRequest(http.MethodPost, s.mcpURL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	proof, err := key.Proof(dpop.Request{Method: http.MethodPost, URL: s.mcpURL, AccessToken: tok.AccessToken})
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "DPoP "+tok.AccessToken)
	req.Header.Set("DPoP", proof)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestDelegationChainEndToEnd: host → planner agent → tool agent, each
// token narrower and bound to its holder's DPoP key, ends at an MCP
// server that sees the whole chain and applies its delegation rules per
// tool; widening is refused at the hop that asks for it.
func TestDelegationChainEndToEnd(t *testing.T) {
	t.Parallel()
	s := newChainSetup(t)
	ctx := context.Background()
	newKey := func() *dpop.Prover {
		p, err := dpop.NewProver(dpop.ProverConfig{Now: s.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	hostKey, plannerKey, toolKey := newKey(), newKey(), newKey()
	host := oauth2.StaticTokenSource(s.hostToken(t, hostKey))
	plannerCred, err := client.ActorAssertion(client.ActorAssertionConfig{ClientID: plannerAgent, Key: s.agent.Signer,
		KeyID: s.agent.ID, Issuer: s.issuer, Now: s.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	planner := s.delegation(t, client.DelegationConfig{Parent: host, Actor: plannerCred, DPoP: plannerKey,
		Scopes: []string{"mcp:read", "mcp:write"}, Resources: []string{s.mcpURL}, Lifetime: 10 * time.Minute})
	tool := s.delegation(t, client.DelegationConfig{Parent: planner.TokenSource(ctx), Actor: client.ActorJWT(s.workloadJWT(t)),
		DPoP: toolKey, Scopes: []string{"mcp:read"}, Lifetime: 2 * time.Minute})

	toolTok, err := tool.Token(ctx)
	if err != nil {
		t.Fatalf("tool token: %v", err)
	}
	if toolTok.TokenType != dpop.TokenType || toolTok.Expiry.After(s.clock.Now().Add(2*time.Minute)) {
		t.Fatalf("tool token = %s, expiry %v", toolTok.TokenType, toolTok.Expiry)
	}
	if st := s.callTool(t, toolTok, toolKey, "search"); st != http.StatusOK {
		t.Fatalf("search: status %d", st)
	}
	s.mu.Lock()
	seen := s.seen
	last := s.audited[len(s.audited)-1]
	s.mu.Unlock()
	want := []oauthmeta.Actor{{Subject: toolAgentSub, Issuer: k8sDelegation}, {Subject: plannerAgent}}
	if len(seen) != 2 || seen[0] != want[0] || seen[1] != want[1] {
		t.Fatalf("MCP server saw chain %+v, want %+v", seen, want)
	}
	if len(last.Actors) != 2 || last.Actors[0].Subject != toolAgentSub {
		t.Errorf("audit event actors = %+v", last.Actors)
	}
	// The tool key is the only one that works with the tool token.
	if st := s.callTool(t, toolTok, plannerKey, "search"); st != http.StatusUnauthorized {
		t.Errorf("tool token with the planner's key: status %d", st)
	}
	// Per-tool rules: deploy forbids delegated tokens; search needs the
	// tool agent as the current actor.
	if st := s.callTool(t, toolTok, toolKey, "deploy"); st != http.StatusForbidden {
		t.Errorf("deploy with a delegated token: status %d", st)
	}
	plannerTok, err := planner.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := s.callTool(t, plannerTok, plannerKey, "search"); st != http.StatusForbidden {
		t.Errorf("search by the planner: status %d", st)
	}

	// Widening at a hop is refused there, by scope, audience and lifetime.
	for _, tt := range []struct {
		name string
		cfg  client.DelegationConfig
		code oauthmeta.ErrorCode
	}{
		{"scope", client.DelegationConfig{Scopes: []string{"mcp:write"}}, oauthmeta.CodeInvalidScope},
		{"audience", client.DelegationConfig{Resources: []string{"https://other.example.com/mcp"}}, oauthmeta.CodeInvalidTarget},
		{"lifetime", client.DelegationConfig{Lifetime: time.Hour}, oauthmeta.CodeInvalidRequest},
	} {
		cfg := tt.cfg
		cfg.Parent, cfg.Actor, cfg.DPoP = tool.TokenSource(ctx), client.ActorJWT(s.workloadJWT(t)), newKey()
		_, err := s.delegation(t, cfg).Token(ctx)
		if oe, ok := errors.AsType[*oauthmeta.Error](err); !errors.Is(err, client.ErrDelegation) || !ok || oe.Code != tt.code {
			t.Errorf("%s widening: err = %v, want %s", tt.name, err, tt.code)
		}
	}
	// A fourth hop is over MaxDepth 3.
	// A key alone may not take a DPoP-bound token.
	if _, err := s.delegation(t, client.DelegationConfig{Parent: tool.TokenSource(ctx), DPoP: newKey()}).Token(ctx); !errors.Is(err, client.ErrDelegation) {
		t.Errorf("key-only actor of a bound token: err = %v", err)
	}
	third := s.delegation(t, client.DelegationConfig{Parent: tool.TokenSource(ctx), Actor: client.ActorJWT(s.workloadJWT(t)), DPoP: newKey()})
	fourth := s.delegation(t, client.DelegationConfig{Parent: third.TokenSource(ctx), Actor: client.ActorJWT(s.workloadJWT(t)), DPoP: newKey()})
	if _, err := third.Token(ctx); err != nil {
		t.Fatalf("third hop: %v", err)
	}
	if _, err := fourth.Token(ctx); !errors.Is(err, client.ErrDelegation) || !strings.Contains(err.Error(), "invalid_grant") {
		t.Errorf("fourth hop: err = %v", err)
	}
}

// ExampleDelegation derives a token for a sub-agent from the host's
// token: the sub-agent's own credential is its client assertion, and the
// token it gets can read, for one server, for five minutes at most.
func ExampleDelegation() {
	var hostTokens oauth2.TokenSource // the host's own token source
	var plannerKey crypto.Signer      // the planner agent's registered key
	actor, err := client.ActorAssertion(client.ActorAssertionConfig{ClientID: "planner-agent", Key: plannerKey, KeyID: "k1",
		Issuer: "https://auth.example.com"})
	if err != nil {
		return
	}
	d, err := client.NewDelegation(client.DelegationConfig{
		TokenEndpoint: "https://auth.example.com/token",
		Parent:        hostTokens,
		Actor:         actor,
		Scopes:        []string{"mcp:read"},
		Resources:     []string{"https://mcp.example.com/mcp"},
		Lifetime:      5 * time.Minute,
	})
	if err != nil {
		return
	}
	// The sub-agent's HTTP client sends the narrowed token.
	_ = oauth2.NewClient(context.Background(), d.TokenSource(context.Background()))
}
