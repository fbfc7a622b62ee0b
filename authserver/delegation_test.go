package authserver

import (
	"crypto"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

const (
	plannerID    = "planner-agent"
	otherAgentID = "other-agent"
	noExchangeID = "no-exchange-agent"
	resA         = "https://a.example.com/mcp"
	resB         = "https://b.example.com/mcp"
	k8sIssuer    = "https://k8s.example.com"
	ghIssuer     = "https://token.actions.githubusercontent.com"
	toolSub      = "system:serviceaccount:tools:tool-agent"
)

// delegationSetup is a harness with delegation on: planner agents
// registered as private_key_jwt clients, and a Kubernetes-style and a
// GitHub-Actions-style workload issuer with rules.
type delegationSetup struct {
	*harness
	agentKey *oauthtest.Key // the keys of plannerID, otherAgentID, noExchangeID
	k8s, gh  *oauthtest.Key
	jti      int
}

func newDelegationSetup(t *testing.T, mutate func(*Config)) *delegationSetup {
	t.Helper()
	s := &delegationSetup{agentKey: oauthtest.NewKey(t, "ES256", "agent"), k8s: oauthtest.NewKey(t, "ES256", "k8s"),
		gh: oauthtest.NewKey(t, "ES256", "gh")}
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{s.agentKey.JWK()}})
	exchange := []string{oauthmeta.GrantTypeTokenExchange}
	s.harness = newHarness(t, "", func(c *Config) {
		c.Clients = append(c.Clients,
			Client{ID: plannerID, AuthMethod: oauthmeta.AuthMethodPrivateKeyJWT, JWKS: jwks, GrantTypes: exchange},
			Client{ID: otherAgentID, AuthMethod: oauthmeta.AuthMethodPrivateKeyJWT, JWKS: jwks, GrantTypes: exchange},
			Client{ID: noExchangeID, AuthMethod: oauthmeta.AuthMethodPrivateKeyJWT, JWKS: jwks,
				GrantTypes: []string{oauthmeta.GrantTypeClientCredentials}})
		c.TrustedIssuers = []TrustedIssuer{
			{Issuer: k8sIssuer, PublicKeys: []crypto.PublicKey{s.k8s.Public()}, Rules: []WorkloadRule{
				{Subject: "system:serviceaccount:tools:*", Claims: map[string]string{"kubernetes.io/namespace": "tools"},
					Resources: []string{resA}, Scopes: []string{"mcp:read"}},
			}},
			{Issuer: ghIssuer, PublicKeys: []crypto.PublicKey{s.gh.Public()}, Rules: []WorkloadRule{
				{Claims: map[string]string{"repository": "acme/deployer", "ref": "refs/heads/main"},
					Resources: []string{resB}, Scopes: []string{"mcp:write"}},
			}},
		}
		c.Delegation = &DelegationConfig{}
		if mutate != nil {
			mutate(c)
		}
	})
	return s
}

// assertion is a fresh client assertion of an agent client.
func (s *delegationSetup) assertion(clientID string) string {
	s.t.Helper()
	sg, err := jwtassert.NewClientAssertionSigner(jwtassert.ClientAssertionSignerConfig{ClientID: clientID,
		Key: s.agentKey.Signer, KeyID: s.agentKey.ID, Now: s.clock.Now})
	if err != nil {
		s.t.Fatal(err)
	}
	a, err := sg.Sign(s.issuer)
	if err != nil {
		s.t.Fatal(err)
	}
	return a
}

// k8sToken is a Kubernetes service account token for this server.
func (s *delegationSetup) k8sToken(sub, namespace string) string {
	s.jti++
	now := s.clock.Now()
	return s.k8s.Sign(s.t, oauthtest.Header{OmitType: true}, oauthtest.MustJSON(s.t, map[string]any{
		"iss": k8sIssuer, "sub": sub, "aud": s.issuer, "iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(),
		"jti":           "k8s-" + strings.Repeat("x", s.jti),
		"kubernetes.io": map[string]any{"namespace": namespace, "serviceaccount": map[string]any{"name": "tool-agent"}},
	}))
}

// ghToken is a GitHub Actions OIDC token for this server.
func (s *delegationSetup) ghToken(repo, ref string) string {
	s.jti++
	now := s.clock.Now()
	return s.gh.Sign(s.t, oauthtest.Header{OmitType: true}, oauthtest.MustJSON(s.t, map[string]any{
		"iss": ghIssuer, "sub": "repo:" + repo + ":ref:" + ref, "aud": s.issuer, "iat": now.Unix(),
		"exp": now.Add(10 * time.Minute).Unix(), "jti": "gh-" + strings.Repeat("y", s.jti), "repository": repo, "ref": ref,
	}))
}

// delegate asks for a delegated token of subject for the actor; edit may
// change the form.
func (s *delegationSetup) delegate(subject, actorToken, actorType string, extra http.Header, edit func(url.Values)) tokenResult {
	s.t.Helper()
	form := url.Values{"grant_type": {oauthmeta.GrantTypeTokenExchange}, "subject_token": {subject},
		"subject_token_type": {oauthmeta.TokenTypeAccessToken}, "actor_token": {actorToken}, "actor_token_type": {actorType}}
	if edit != nil {
		edit(form)
	}
	return s.tokenHeader(form, "", "", extra)
}

func (s *delegationSetup) hostToken() *oauthmeta.TokenResponse {
	return s.tokens(url.Values{"resource": {resA, resB}, "scope": {"mcp:read mcp:write"}})
}

func scopeEdit(scope string, targets ...string) func(url.Values) {
	return func(f url.Values) {
		f.Set("scope", scope)
		f["resource"] = targets
	}
}

// TestDelegationChain: host → planner (a client) → tool agent (a
// workload), each token narrower, with the chain in nested act claims,
// live at introspection until a token above it is revoked.
func TestDelegationChain(t *testing.T) {
	t.Parallel()
	s := newDelegationSetup(t, nil)
	host := s.hostToken()
	planner := s.delegate(host.AccessToken, s.assertion(plannerID), oauthmeta.TokenTypeJWT, nil, scopeEdit("mcp:read mcp:write", resA))
	if planner.status != http.StatusOK {
		t.Fatalf("planner: %d %s", planner.status, planner.body)
	}
	s.clock.Advance(time.Minute)
	tool := s.delegate(planner.tok.AccessToken, s.k8sToken(toolSub, "tools"), oauthmeta.TokenTypeJWT, nil, func(f url.Values) {
		f.Set("scope", "mcp:read")
		f.Set("expires_in", "120")
	})
	if tool.status != http.StatusOK {
		t.Fatalf("tool: %d %s", tool.status, tool.body)
	}
	_, hc := s.verifyJWT(host.AccessToken)
	_, pc := s.verifyJWT(planner.tok.AccessToken)
	_, tc := s.verifyJWT(tool.tok.AccessToken)
	if got := pc["act"]; !jsonEqual(t, got, `{"sub":"planner-agent"}`) || pc["scope"] != "mcp:read mcp:write" || pc["aud"] != resA ||
		pc["client_id"] != plannerID {
		t.Errorf("planner claims = %v", pc)
	}
	if got := tc["act"]; !jsonEqual(t, got, `{"sub":"`+toolSub+`","iss":"`+k8sIssuer+`","act":{"sub":"planner-agent"}}`) ||
		tc["scope"] != "mcp:read" || tc["aud"] != resA || tc["sub"] != hc["sub"] {
		t.Errorf("tool claims = %v", tc)
	}
	if exp := tc["exp"].(float64); exp != float64(s.clock.Now().Add(120*time.Second).Unix()) || exp > pc["exp"].(float64) {
		t.Errorf("tool exp = %v, planner exp %v", exp, pc["exp"])
	}
	if m, _ := s.introspect(tool.tok.AccessToken); m["active"] != true || m["act"] == nil {
		t.Fatalf("tool introspection = %v", m)
	}

	// Revoking the planner's token ends the tool's, and its delegation.
	rev := url.Values{"token": {planner.tok.AccessToken}, "client_id": {plannerID},
		"client_assertion_type": {jwtassert.ClientAssertionType}, "client_assertion": {s.assertion(plannerID)}}
	if resp, body := s.post(pathRevoke, rev, "", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d %s", resp.StatusCode, body)
	}
	for name, tok := range map[string]string{"planner": planner.tok.AccessToken, "tool": tool.tok.AccessToken} {
		if m, _ := s.introspect(tok); m["active"] != false {
			t.Errorf("%s token active after its parent's revocation", name)
		}
	}
	if m, _ := s.introspect(host.AccessToken); m["active"] != true {
		t.Error("revoking a child ended the parent")
	}
	wantError(t, s.delegate(tool.tok.AccessToken, s.assertion(otherAgentID), oauthmeta.TokenTypeJWT, nil, nil),
		http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
}

// TestDelegationRootRevoked: revoking the root grant (its refresh token)
// ends every token derived from it.
func TestDelegationRootRevoked(t *testing.T) {
	t.Parallel()
	s := newDelegationSetup(t, nil)
	host := s.hostToken()
	planner := s.delegate(host.AccessToken, s.assertion(plannerID), oauthmeta.TokenTypeJWT, nil, nil)
	tool := s.delegate(planner.tok.AccessToken, s.k8sToken(toolSub, "tools"), oauthmeta.TokenTypeJWT, nil, scopeEdit("mcp:read", resA))
	if planner.status != http.StatusOK || tool.status != http.StatusOK {
		t.Fatalf("chain: %s / %s", planner.body, tool.body)
	}
	if resp, body := s.post(pathRevoke, url.Values{"token": {host.RefreshToken}, "client_id": {publicID}}, "", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d %s", resp.StatusCode, body)
	}
	for _, tok := range []string{host.AccessToken, planner.tok.AccessToken, tool.tok.AccessToken} {
		if m, _ := s.introspect(tok); m["active"] != false {
			t.Errorf("token active after the root grant's revocation: %v", m)
		}
	}
	wantError(t, s.delegate(planner.tok.AccessToken, s.assertion(otherAgentID), oauthmeta.TokenTypeJWT, nil, nil),
		http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
}

// TestDelegationRefused: every widening, an over-long chain, a replayed
// or unusable actor credential and a may_act mismatch are refused with
// the RFC's code.
func TestDelegationRefused(t *testing.T) {
	t.Parallel()
	s := newDelegationSetup(t, func(c *Config) {
		c.Delegation.MaxDepth = 2
		c.Delegation.MayAct = map[string]oauthmeta.Actor{otherAgentID: {Subject: plannerID}}
	})
	host := s.hostToken()
	narrow := s.delegate(host.AccessToken, s.assertion(plannerID), oauthmeta.TokenTypeJWT, nil, scopeEdit("mcp:read", resA))
	if narrow.status != http.StatusOK {
		t.Fatalf("narrow: %s", narrow.body)
	}
	replayed := s.assertion(plannerID)
	usedWorkload := s.k8sToken(toolSub, "tools")
	if res := s.delegate(host.AccessToken, usedWorkload, oauthmeta.TokenTypeJWT, nil, scopeEdit("mcp:read", resA)); res.status != http.StatusOK {
		t.Fatalf("workload actor: %s", res.body)
	}
	if res := s.delegate(host.AccessToken, replayed, oauthmeta.TokenTypeJWT, nil, nil); res.status != http.StatusOK {
		t.Fatalf("first use: %s", res.body)
	}
	// otherAgentID's tokens name plannerID in may_act.
	other := s.delegate(host.AccessToken, s.assertion(otherAgentID), oauthmeta.TokenTypeJWT, nil, nil)
	depth2 := s.delegate(narrow.tok.AccessToken, s.assertion(otherAgentID), oauthmeta.TokenTypeJWT, nil, nil)
	if other.status != http.StatusOK || depth2.status != http.StatusOK {
		t.Fatalf("setup: %s / %s", other.body, depth2.body)
	}
	if _, c := s.verifyJWT(other.tok.AccessToken); !jsonEqual(t, c["may_act"], `{"sub":"planner-agent"}`) {
		t.Fatalf("may_act = %v", c["may_act"])
	}
	tests := []struct {
		name    string
		subject string
		actor   func() (string, string)
		edit    func(url.Values)
		code    oauthmeta.ErrorCode
	}{
		{"RFC8693 scope wider than the subject token's", narrow.tok.AccessToken, s.client(otherAgentID), scopeEdit("mcp:read mcp:write"), oauthmeta.CodeInvalidScope},
		{"RFC8693 scope unknown", host.AccessToken, s.client(plannerID), scopeEdit("mcp:admin"), oauthmeta.CodeInvalidScope},
		{"RFC8693 audience wider than the subject token's", narrow.tok.AccessToken, s.client(otherAgentID), scopeEdit("mcp:read", resB), oauthmeta.CodeInvalidTarget},
		{"RFC8693 audience as audience parameter", narrow.tok.AccessToken, s.client(otherAgentID), func(f url.Values) { f.Set("audience", resB) }, oauthmeta.CodeInvalidTarget},
		{"lifetime beyond the subject token's", host.AccessToken, s.client(plannerID), func(f url.Values) { f.Set("expires_in", "86400") }, oauthmeta.CodeInvalidRequest},
		{"lifetime malformed", host.AccessToken, s.client(plannerID), func(f url.Values) { f.Set("expires_in", "-1") }, oauthmeta.CodeInvalidRequest},
		{"chain over the depth limit", depth2.tok.AccessToken, s.client(plannerID), nil, oauthmeta.CodeInvalidGrant},
		{"RFC8693 §4.4 may_act names another actor", other.tok.AccessToken, s.client(otherAgentID), nil, oauthmeta.CodeInvalidGrant},
		{"replayed actor assertion", host.AccessToken, func() (string, string) { return replayed, oauthmeta.TokenTypeJWT }, nil, oauthmeta.CodeInvalidGrant},
		{"replayed workload actor token", host.AccessToken, func() (string, string) { return usedWorkload, oauthmeta.TokenTypeJWT }, scopeEdit("mcp:read", resA), oauthmeta.CodeInvalidGrant},
		{"actor client without the exchange grant", host.AccessToken, s.client(noExchangeID), nil, oauthmeta.CodeInvalidGrant},
		{"actor assertion of an unknown client", host.AccessToken, s.client("nobody"), nil, oauthmeta.CodeInvalidGrant},
		{"actor token not a JWT", host.AccessToken, func() (string, string) { return "abc", oauthmeta.TokenTypeJWT }, nil, oauthmeta.CodeInvalidGrant},
		{"actor_token_type unsupported", host.AccessToken, func() (string, string) { return "abc", oauthmeta.TokenTypeIDToken }, nil, oauthmeta.CodeInvalidRequest},
		{"actor_token_type missing", host.AccessToken, func() (string, string) { return "abc", "" }, nil, oauthmeta.CodeInvalidRequest},
		{"DPoP key actor without a proof", host.AccessToken, func() (string, string) { return "jkt", oauthmeta.TokenTypeDPoPJKT }, nil, oauthmeta.CodeInvalidRequest},
		{"workload actor outside its rules' resources", host.AccessToken, s.workload(toolSub, "tools"), scopeEdit("mcp:read", resB), oauthmeta.CodeInvalidTarget},
		{"workload actor outside its rules' scopes", host.AccessToken, s.workload(toolSub, "tools"), scopeEdit("mcp:write", resA), oauthmeta.CodeInvalidScope},
		{"workload actor no rule matches", host.AccessToken, s.workload(toolSub, "default"), scopeEdit("mcp:read", resA), oauthmeta.CodeInvalidGrant},
		{"subject token not ours", "not-a-token", s.client(plannerID), nil, oauthmeta.CodeInvalidGrant},
		{"subject token type", host.AccessToken, s.client(plannerID), func(f url.Values) { f.Set("subject_token_type", oauthmeta.TokenTypeIDToken) }, oauthmeta.CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, typ := tt.actor()
			wantError(t, s.delegate(tt.subject, tok, typ, nil, tt.edit), http.StatusBadRequest, tt.code)
		})
	}
}

func (s *delegationSetup) client(id string) func() (string, string) {
	return func() (string, string) { return s.assertion(id), oauthmeta.TokenTypeJWT }
}

func (s *delegationSetup) workload(sub, ns string) func() (string, string) {
	return func() (string, string) { return s.k8sToken(sub, ns), oauthmeta.TokenTypeJWT }
}

// TestDelegationOff: without Config.Delegation an actor_token is refused
// as before.
func TestDelegationOff(t *testing.T) {
	t.Parallel()
	s := newDelegationSetup(t, func(c *Config) { c.Delegation = nil })
	host := s.hostToken()
	res := s.delegate(host.AccessToken, s.assertion(plannerID), oauthmeta.TokenTypeJWT, nil, nil)
	if res.status != http.StatusBadRequest || res.err == nil ||
		(res.err.Code != oauthmeta.CodeInvalidRequest && res.err.Code != oauthmeta.CodeUnsupportedGrantType) {
		t.Fatalf("got %d %s", res.status, res.body)
	}
}

// TestDelegationDPoP: a DPoP-bound parent yields tokens bound to each
// actor's key in turn; without the actor's proof, or with RefuseDPoPBound,
// it is refused.
func TestDelegationDPoP(t *testing.T) {
	t.Parallel()
	s := newDelegationSetup(t, nil)
	hostKey, plannerKey, toolKey := s.newProver(), s.newProver(), s.newProver()
	q, v := authParams(publicID, publicCB)
	q.Set("resource", resA)
	q.Set("scope", "mcp:read mcp:write")
	hostRes := s.tokenHeader(url.Values{"grant_type": {"authorization_code"}, "code": {s.code(q, v)}, "code_verifier": {v},
		"client_id": {publicID}, "redirect_uri": {publicCB}}, "", "", s.proofHeader(hostKey))
	wantBound(t, s.harness, hostRes, hostKey.JKT())

	wantError(t, s.delegate(hostRes.tok.AccessToken, s.assertion(plannerID), oauthmeta.TokenTypeJWT, nil, nil),
		http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
	planner := s.delegate(hostRes.tok.AccessToken, s.assertion(plannerID), oauthmeta.TokenTypeJWT, s.proofHeader(plannerKey), nil)
	wantBound(t, s.harness, planner, plannerKey.JKT())
	// The tool agent, a workload, gets a token bound to its own key.
	tool := s.delegate(planner.tok.AccessToken, s.k8sToken(toolSub, "tools"), oauthmeta.TokenTypeJWT, s.proofHeader(toolKey), scopeEdit("mcp:read"))
	wantBound(t, s.harness, tool, toolKey.JKT())
	// A key alone may not take a bound token: anyone can make a key.
	wantError(t, s.delegate(planner.tok.AccessToken, toolKey.JKT(), oauthmeta.TokenTypeDPoPJKT, s.proofHeader(toolKey), scopeEdit("mcp:read")),
		http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
	// A replayed proof is refused by the token endpoint's proof check.
	proof := s.proofHeader(toolKey)
	if res := s.delegate(planner.tok.AccessToken, s.k8sToken(toolSub, "tools"), oauthmeta.TokenTypeJWT, proof, scopeEdit("mcp:read")); res.status != http.StatusOK {
		t.Fatalf("first proof: %s", res.body)
	}
	wantError(t, s.delegate(planner.tok.AccessToken, s.k8sToken(toolSub, "tools"), oauthmeta.TokenTypeJWT, proof, scopeEdit("mcp:read")),
		http.StatusBadRequest, oauthmeta.CodeInvalidDPoPProof)

	// From a Bearer parent, a key alone is an actor: the proof's key,
	// named by its thumbprint; the key named must be the proof's.
	bearer := s.hostToken()
	keyed := s.delegate(bearer.AccessToken, toolKey.JKT(), oauthmeta.TokenTypeDPoPJKT, s.proofHeader(toolKey), scopeEdit("mcp:read"))
	wantBound(t, s.harness, keyed, toolKey.JKT())
	if _, c := s.verifyJWT(keyed.tok.AccessToken); !jsonEqual(t, c["act"], `{"sub":"`+oauthmeta.JWKThumbprintURI(toolKey.JKT())+`"}`) {
		t.Errorf("act = %v", c["act"])
	}
	wantError(t, s.delegate(bearer.AccessToken, plannerKey.JKT(), oauthmeta.TokenTypeDPoPJKT, s.proofHeader(toolKey), nil),
		http.StatusBadRequest, oauthmeta.CodeInvalidRequest)

	refusing := newDelegationSetup(t, func(c *Config) { c.Delegation.RefuseDPoPBound = true })
	hk := refusing.newProver()
	q, v = authParams(publicID, publicCB)
	bound := refusing.tokenHeader(url.Values{"grant_type": {"authorization_code"}, "code": {refusing.code(q, v)}, "code_verifier": {v},
		"client_id": {publicID}, "redirect_uri": {publicCB}}, "", "", refusing.proofHeader(hk))
	wantBound(t, refusing.harness, bound, hk.JKT())
	wantError(t, refusing.delegate(bound.tok.AccessToken, refusing.assertion(plannerID), oauthmeta.TokenTypeJWT,
		refusing.proofHeader(refusing.newProver()), nil), http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
}

// TestWorkloadRules: a Kubernetes-style and a GitHub-Actions-style
// workload each get exactly their server and scopes; every neighbour is
// refused.
func TestWorkloadRules(t *testing.T) {
	t.Parallel()
	s := newDelegationSetup(t, func(c *Config) { c.Resources = []string{resA, resB} })
	grant := func(assertion string, edit func(url.Values)) tokenResult {
		form := url.Values{"grant_type": {oauthmeta.GrantTypeJWTBearer}, "assertion": {assertion}}
		if edit != nil {
			edit(form)
		}
		return s.token(form, "", "")
	}
	tests := []struct {
		name      string
		assertion func() string
		edit      func(url.Values)
		code      oauthmeta.ErrorCode // "" for success
		aud       string
		scope     string
	}{
		{"kubernetes workload, its server and scope", func() string { return s.k8sToken(toolSub, "tools") }, scopeEdit("mcp:read", resA), "", resA, "mcp:read"},
		{"kubernetes workload, defaults", func() string { return s.k8sToken(toolSub, "tools") }, nil, "", resA, "mcp:read"},
		{"github workload, its server and scope", func() string { return s.ghToken("acme/deployer", "refs/heads/main") }, scopeEdit("mcp:write", resB), "", resB, "mcp:write"},
		{"kubernetes workload, other server", func() string { return s.k8sToken(toolSub, "tools") }, scopeEdit("mcp:read", resB), oauthmeta.CodeInvalidTarget, "", ""},
		{"kubernetes workload, other scope", func() string { return s.k8sToken(toolSub, "tools") }, scopeEdit("mcp:write", resA), oauthmeta.CodeInvalidScope, "", ""},
		{"kubernetes neighbour namespace", func() string { return s.k8sToken("system:serviceaccount:default:tool-agent", "default") }, scopeEdit("mcp:read", resA), oauthmeta.CodeInvalidGrant, "", ""},
		{"kubernetes subject right, namespace claim wrong", func() string { return s.k8sToken(toolSub, "default") }, scopeEdit("mcp:read", resA), oauthmeta.CodeInvalidGrant, "", ""},
		{"github neighbour repository", func() string { return s.ghToken("acme/other", "refs/heads/main") }, scopeEdit("mcp:write", resB), oauthmeta.CodeInvalidGrant, "", ""},
		{"github neighbour branch", func() string { return s.ghToken("acme/deployer", "refs/heads/feature") }, scopeEdit("mcp:write", resB), oauthmeta.CodeInvalidGrant, "", ""},
		{"github workload, other server", func() string { return s.ghToken("acme/deployer", "refs/heads/main") }, scopeEdit("mcp:write", resA), oauthmeta.CodeInvalidTarget, "", ""},
		{"github workload, other scope", func() string { return s.ghToken("acme/deployer", "refs/heads/main") }, scopeEdit("mcp:read", resB), oauthmeta.CodeInvalidScope, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := grant(tt.assertion(), tt.edit)
			if tt.code != "" {
				wantError(t, res, http.StatusBadRequest, tt.code)
				return
			}
			if res.status != http.StatusOK {
				t.Fatalf("got %d %s", res.status, res.body)
			}
			if _, c := s.verifyJWT(res.tok.AccessToken); c["aud"] != tt.aud || c["scope"] != tt.scope {
				t.Errorf("aud %v scope %v, want %s %s", c["aud"], c["scope"], tt.aud, tt.scope)
			}
		})
	}
}

// TestWorkloadRulesConfig: rules are required for workload issuers and
// checked.
func TestWorkloadRulesConfig(t *testing.T) {
	t.Parallel()
	key := oauthtest.NewKey(t, "ES256", "k")
	ok := WorkloadRule{Subject: "a", Resources: []string{resA}, Scopes: []string{"mcp:read"}}
	for _, tt := range []struct {
		name string
		ti   TrustedIssuer
		del  *DelegationConfig
		good bool
	}{
		{"valid", TrustedIssuer{Issuer: k8sIssuer, PublicKeys: []crypto.PublicKey{key.Public()}, Rules: []WorkloadRule{ok}}, nil, true},
		{"discovery keys", TrustedIssuer{Issuer: k8sIssuer, Discover: true, Rules: []WorkloadRule{ok}}, nil, true},
		{"no rule", TrustedIssuer{Issuer: k8sIssuer, PublicKeys: []crypto.PublicKey{key.Public()}}, nil, false},
		{"two key sources", TrustedIssuer{Issuer: k8sIssuer, Discover: true, JWKSURI: "https://x/jwks", Rules: []WorkloadRule{ok}}, nil, false},
		{"rule without a condition", TrustedIssuer{Issuer: k8sIssuer, PublicKeys: []crypto.PublicKey{key.Public()}, Rules: []WorkloadRule{{Resources: []string{resA}, Scopes: []string{"mcp:read"}}}}, nil, false},
		{"rule without resources", TrustedIssuer{Issuer: k8sIssuer, PublicKeys: []crypto.PublicKey{key.Public()}, Rules: []WorkloadRule{{Subject: "a", Scopes: []string{"mcp:read"}}}}, nil, false},
		{"rule without scopes", TrustedIssuer{Issuer: k8sIssuer, PublicKeys: []crypto.PublicKey{key.Public()}, Rules: []WorkloadRule{{Subject: "a", Resources: []string{resA}}}}, nil, false},
		{"rule scope unsupported", TrustedIssuer{Issuer: k8sIssuer, PublicKeys: []crypto.PublicKey{key.Public()}, Rules: []WorkloadRule{{Subject: "a", Resources: []string{resA}, Scopes: []string{"x"}}}}, nil, false},
		{"malformed pattern", TrustedIssuer{Issuer: k8sIssuer, PublicKeys: []crypto.PublicKey{key.Public()}, Rules: []WorkloadRule{{Subject: "[", Resources: []string{resA}, Scopes: []string{"mcp:read"}}}}, nil, false},
		{"empty claim name", TrustedIssuer{Issuer: k8sIssuer, PublicKeys: []crypto.PublicKey{key.Public()}, Rules: []WorkloadRule{{Claims: map[string]string{"": "x"}, Resources: []string{resA}, Scopes: []string{"mcp:read"}}}}, nil, false},
		{"ID-JAG issuer with rules", TrustedIssuer{Issuer: k8sIssuer, Kind: GrantIDJAG, PublicKeys: []crypto.PublicKey{key.Public()}, Rules: []WorkloadRule{ok}}, nil, false},
		{"delegation depth too large", TrustedIssuer{Issuer: k8sIssuer, PublicKeys: []crypto.PublicKey{key.Public()}, Rules: []WorkloadRule{ok}}, &DelegationConfig{MaxDepth: 99}, false},
		{"delegation may_act without sub", TrustedIssuer{Issuer: k8sIssuer, PublicKeys: []crypto.PublicKey{key.Public()}, Rules: []WorkloadRule{ok}}, &DelegationConfig{MayAct: map[string]oauthmeta.Actor{"a": {}}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			as, err := New(Config{Issuer: "http://127.0.0.1:1", InsecureAllowHTTPLoopback: true, Scopes: []string{"mcp:read"},
				TrustedIssuers: []TrustedIssuer{tt.ti}, Delegation: tt.del})
			if (err == nil) != tt.good {
				t.Fatalf("New: %v, want success %v", err, tt.good)
			}
			if as != nil {
				_ = as.Close()
			}
		})
	}
}

// TestGlob: patterns never cross "/" with "*", and long input never
// matches.
func TestGlob(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		p, s string
		want bool
	}{
		{"system:serviceaccount:tools:*", "system:serviceaccount:tools:a", true},
		{"system:serviceaccount:tools:*", "system:serviceaccount:toolsx:a", false},
		{"spiffe://example.org/ns/*/sa/x", "spiffe://example.org/ns/a/b/sa/x", false},
		{"http://127.0.0.1:*/mcp", "http://127.0.0.1:8080/mcp", true},
		{"http://127.0.0.1:*/mcp", "http://127.0.0.1:8080/x/mcp", false},
		{"*", strings.Repeat("a", 2000), false},
		{"a", "a", true},
	} {
		if got := glob(tt.p, tt.s); got != tt.want {
			t.Errorf("glob(%q, %.20q) = %v", tt.p, tt.s, got)
		}
	}
}

// jsonEqual compares a decoded claim with a JSON text.
func jsonEqual(t *testing.T, got any, want string) bool {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(w)
	return string(a) == string(b)
}
