package authserver

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

const (
	calendarAPI = "https://calendar.example.com/api"
	mailAPI     = "https://mail.example.com/api"
	mailRSID    = "mail-rs"
	rsID        = "mcp-rs"
	rsSecret    = "rs-secret"
	rsResource  = "https://mcp.example.com/mcp"
	notRSID     = "other-service"
	mailRS      = "https://mail-mcp.example.com/mcp"
)

// downstreamConfig adds two downstream APIs to c: the calendar, which the
// resource server rsID (the MCP server rsResource) may ask for, and mail,
// which only mailRSID may; notRSID may use the grant but ask for nothing.
func downstreamConfig(c *Config) {
	c.Scopes = append(c.Scopes, "cal:read", "cal:write", "mail:read")
	c.Clients = append(c.Clients,
		Client{ID: rsID, Secret: rsSecret, GrantTypes: []string{oauthmeta.GrantTypeTokenExchange}},
		Client{ID: mailRSID, Secret: rsSecret, GrantTypes: []string{oauthmeta.GrantTypeTokenExchange}},
		Client{ID: notRSID, Secret: "other-secret", GrantTypes: []string{oauthmeta.GrantTypeTokenExchange}})
	c.DownstreamAPIs = []DownstreamAPI{
		{Resource: calendarAPI, Scopes: []string{"cal:read", "cal:write"}, Clients: map[string]string{rsID: rsResource}},
		{Resource: mailAPI, Scopes: []string{"mail:read"}, Clients: map[string]string{mailRSID: mailRS}, TokenTTL: time.Minute},
	}
}

// downstreamExchange asks for a token for the calendar API as rsID;
// edit may change the form, and "user"/"pass" in it the credentials.
func downstreamExchange(h *harness, subject string, edit func(url.Values)) tokenResult {
	h.t.Helper()
	form := url.Values{
		"grant_type": {oauthmeta.GrantTypeTokenExchange}, "subject_token": {subject},
		"subject_token_type": {oauthmeta.TokenTypeAccessToken}, "resource": {calendarAPI},
	}
	user, pass := rsID, rsSecret
	if edit != nil {
		edit(form)
		if form.Has("user") {
			user, pass = form.Get("user"), form.Get("pass")
			form.Del("user")
			form.Del("pass")
		}
	}
	return h.token(form, user, pass)
}

// mcpToken returns an MCP access token (and refresh token) for resource
// with scope.
func mcpToken(h *harness, resource, scope string) *oauthmeta.TokenResponse {
	return h.tokens(url.Values{"resource": {resource}, "scope": {scope}})
}

func TestDownstreamExchange(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", downstreamConfig)
	tok := mcpToken(h, rsResource, "mcp:read cal:read cal:write")
	for _, tc := range []struct {
		name      string
		edit      func(url.Values)
		wantScope string
	}{
		{"resource, every held scope the API accepts", nil, "cal:read cal:write"},
		{"audience names the API", func(f url.Values) { f.Del("resource"); f.Set("audience", calendarAPI) }, "cal:read cal:write"},
		{"canonically equal resource", func(f url.Values) { f.Set("resource", "HTTPS://Calendar.Example.com:443/api") }, "cal:read cal:write"},
		{"requested scope", func(f url.Values) { f.Set("scope", "cal:read") }, "cal:read"},
		{"requested token type", func(f url.Values) { f.Set("requested_token_type", oauthmeta.TokenTypeAccessToken) }, "cal:read cal:write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := downstreamExchange(h, tok.AccessToken, tc.edit)
			if res.tok == nil {
				t.Fatalf("exchange: %d %s", res.status, res.body)
			}
			if res.tok.TokenType != "Bearer" || res.tok.IssuedTokenType != oauthmeta.TokenTypeAccessToken || res.tok.RefreshToken != "" ||
				res.tok.ExpiresIn != int64(DefaultDownstreamTokenTTL/time.Second) || res.tok.Scope != tc.wantScope {
				t.Fatalf("response %s", res.body)
			}
			if cc := res.header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control %q", cc)
			}
			hdr, claims := h.verifyJWT(res.tok.AccessToken)
			if typ, _ := hdr.ExtraHeaders["typ"].(string); typ != "at+jwt" {
				t.Errorf("typ %q", typ)
			}
			act, _ := claims["act"].(map[string]any)
			now := h.clock.Now().Unix()
			if claims["aud"] != calendarAPI || claims["sub"] != defaultSubject || claims["client_id"] != rsID ||
				act["sub"] != rsID || len(act) != 1 || claims["scope"] != tc.wantScope || claims["iss"] != h.issuer ||
				claims["exp"] != float64(now+int64(DefaultDownstreamTokenTTL/time.Second)) || claims["cnf"] != nil {
				t.Errorf("claims %v", claims)
			}
			if _, mcp := h.verifyJWT(tok.AccessToken); mcp["jti"] == claims["jti"] {
				t.Error("the exchanged token reuses the subject's jti")
			}
		})
	}
	if strings.Contains(h.logs.String(), tok.AccessToken) {
		t.Error("the subject token was logged")
	}
}

func TestDownstreamExchangeRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", downstreamConfig)
	tok := mcpToken(h, rsResource, "mcp:read cal:read")
	noCal := mcpToken(h, rsResource, "mcp:read")
	other := mcpToken(h, testResource+"/other", "cal:read")
	mail := mcpToken(h, mailRS, "mail:read")
	as := func(id, secret string) func(url.Values) {
		return func(f url.Values) { f.Set("user", id); f.Set("pass", secret) }
	}
	for _, tc := range []struct {
		name    string
		subject string
		edit    func(url.Values)
		want    oauthmeta.ErrorCode
		status  int
	}{
		{"no client authentication", tok.AccessToken, func(f url.Values) { f.Set("user", ""); f.Set("client_id", rsID) },
			oauthmeta.CodeInvalidClient, 401},
		{"wrong secret", tok.AccessToken, as(rsID, "nope"), oauthmeta.CodeInvalidClient, 401},
		{"public client", tok.AccessToken, func(f url.Values) { f.Set("user", ""); f.Set("client_id", publicID) },
			oauthmeta.CodeUnauthorizedClient, 400},
		{"client without the grant", tok.AccessToken, as(basicID, basicSecret), oauthmeta.CodeUnauthorizedClient, 400},
		{"client that may ask for nothing", tok.AccessToken, as(notRSID, "other-secret"), oauthmeta.CodeUnauthorizedClient, 400},
		{"API this client may not ask for", mail.AccessToken, func(f url.Values) { f.Set("resource", mailAPI) },
			oauthmeta.CodeInvalidTarget, 400},
		{"another client's API", tok.AccessToken, as(mailRSID, rsSecret), oauthmeta.CodeInvalidTarget, 400},
		{"unknown resource", tok.AccessToken, func(f url.Values) { f.Set("resource", "https://evil.example.com/api") },
			oauthmeta.CodeInvalidTarget, 400},
		{"upstream name without a vault", tok.AccessToken, func(f url.Values) { f.Del("resource"); f.Set("audience", "github") },
			oauthmeta.CodeInvalidTarget, 400},
		{"the MCP server itself", tok.AccessToken, func(f url.Values) { f.Set("resource", rsResource) },
			oauthmeta.CodeInvalidTarget, 400},
		{"two targets", tok.AccessToken, func(f url.Values) { f.Set("audience", calendarAPI) }, oauthmeta.CodeInvalidTarget, 400},
		{"no target", tok.AccessToken, func(f url.Values) { f.Del("resource") }, oauthmeta.CodeInvalidRequest, 400},
		{"subject for another resource", other.AccessToken, nil, oauthmeta.CodeInvalidGrant, 400},
		{"another resource server's subject", mail.AccessToken, nil, oauthmeta.CodeInvalidGrant, 400},
		{"not a token", "not-a-token", nil, oauthmeta.CodeInvalidGrant, 400},
		{"refresh token as subject", tok.RefreshToken, nil, oauthmeta.CodeInvalidGrant, 400},
		{"scope not held", tok.AccessToken, func(f url.Values) { f.Set("scope", "cal:write") }, oauthmeta.CodeInvalidScope, 400},
		{"scope the API does not accept", tok.AccessToken, func(f url.Values) { f.Set("scope", "mcp:read") },
			oauthmeta.CodeInvalidScope, 400},
		{"one bad scope among good", tok.AccessToken, func(f url.Values) { f.Set("scope", "cal:read mail:read") },
			oauthmeta.CodeInvalidScope, 400},
		{"empty scope", tok.AccessToken, func(f url.Values) { f.Set("scope", " ") }, oauthmeta.CodeInvalidScope, 400},
		{"malformed scope", tok.AccessToken, func(f url.Values) { f.Set("scope", "cal:read\"") }, oauthmeta.CodeInvalidScope, 400},
		{"subject without a scope for the API", noCal.AccessToken, nil, oauthmeta.CodeInvalidScope, 400},
		{"no subject token", "", nil, oauthmeta.CodeInvalidRequest, 400},
		{"ID token type", tok.AccessToken, func(f url.Values) { f.Set("subject_token_type", oauthmeta.TokenTypeIDToken) },
			oauthmeta.CodeInvalidRequest, 400},
		{"actor token", tok.AccessToken, func(f url.Values) { f.Set("actor_token", tok.AccessToken) }, oauthmeta.CodeInvalidRequest, 400},
		{"refresh token requested", tok.AccessToken, func(f url.Values) {
			f.Set("requested_token_type", "urn:ietf:params:oauth:token-type:refresh_token")
		}, oauthmeta.CodeInvalidRequest, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := downstreamExchange(h, tc.subject, tc.edit)
			if res.err == nil || res.err.Code != tc.want || res.status != tc.status || res.tok != nil {
				t.Fatalf("got %d %s, want %d %s", res.status, res.body, tc.status, tc.want)
			}
		})
	}
	// The exchanged token is no subject token: its "aud" is the API.
	res := downstreamExchange(h, tok.AccessToken, nil)
	if res.tok == nil {
		t.Fatalf("exchange: %d %s", res.status, res.body)
	}
	wantError(t, downstreamExchange(h, res.tok.AccessToken, nil), 400, oauthmeta.CodeInvalidGrant)
	if strings.Contains(h.logs.String(), tok.AccessToken) || strings.Contains(h.logs.String(), res.tok.AccessToken) {
		t.Error("a token was logged")
	}
}

// TestDownstreamExchangeChained: a token issued by an exchange ("act")
// is never a subject token, even with the right audience.
func TestDownstreamExchangeChained(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", downstreamConfig)
	tok := mcpToken(h, rsResource, "cal:read")
	_, mcp := h.verifyJWT(tok.AccessToken)
	now := h.clock.Now()
	chained, err := h.as.tokens.sign(context.Background(), &accessClaims{
		Issuer: h.issuer, Subject: defaultSubject, Audience: oauthmeta.Audience{rsResource}, ClientID: mailRSID,
		Scope: "cal:read", IssuedAt: now.Unix(), Expires: now.Add(time.Minute).Unix(),
		JTI: mcp["jti"].(string) + "x", Act: &oauthmeta.Actor{Subject: mailRSID},
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, downstreamExchange(h, chained, nil), 400, oauthmeta.CodeInvalidGrant)
}

// TestDownstreamExchangeLifetime: an exchanged token never outlives its
// subject token, and lives at most the API's TokenTTL.
func TestDownstreamExchangeLifetime(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", downstreamConfig)
	tok := mcpToken(h, rsResource, "cal:read")
	h.clock.Advance(DefaultAccessTokenTTL - 90*time.Second)
	res := downstreamExchange(h, tok.AccessToken, nil)
	if res.tok == nil || res.tok.ExpiresIn != 90 {
		t.Fatalf("near the subject's expiry: %d %s", res.status, res.body)
	}
	if _, claims := h.verifyJWT(res.tok.AccessToken); claims["exp"] != float64(h.clock.Now().Unix()+90) {
		t.Errorf("exp %v", claims["exp"])
	}
	h.clock.Advance(90 * time.Second)
	wantError(t, downstreamExchange(h, tok.AccessToken, nil), 400, oauthmeta.CodeInvalidGrant)

	mail := mcpToken(h, mailRS, "mail:read")
	res = downstreamExchange(h, mail.AccessToken, func(f url.Values) {
		f.Set("resource", mailAPI)
		f.Set("user", mailRSID)
		f.Set("pass", rsSecret)
	})
	if res.tok == nil || res.tok.ExpiresIn != 60 || res.tok.Scope != "mail:read" {
		t.Fatalf("mail API: %d %s", res.status, res.body)
	}
}

// TestDownstreamExchangeRevoked: once the grant is revoked, neither the
// subject token nor the tokens exchanged from it are active.
func TestDownstreamExchangeRevoked(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", downstreamConfig)
	tok := mcpToken(h, rsResource, "cal:read")
	res := downstreamExchange(h, tok.AccessToken, nil)
	if res.tok == nil {
		t.Fatalf("exchange: %d %s", res.status, res.body)
	}
	if m, _ := h.introspect(res.tok.AccessToken); m["active"] != true || m["client_id"] != rsID || m["aud"] != calendarAPI {
		t.Fatalf("introspection of the exchanged token: %v", m)
	}
	if st := h.revoke(t, tok.RefreshToken, nil, "", ""); st != http.StatusOK {
		t.Fatalf("revoke: %d", st)
	}
	wantError(t, downstreamExchange(h, tok.AccessToken, nil), 400, oauthmeta.CodeInvalidGrant)
	if m, _ := h.introspect(res.tok.AccessToken); m["active"] != false {
		t.Fatalf("exchanged token of a revoked grant: %v", m)
	}
}

// TestDownstreamExchangeGrantOfEarlierVault: a grant that holds a token
// vault record from a run with Config.TokenVault (the store outlives the
// configuration) is refused cleanly, revoked or expired, by a server
// without a vault: there is no vault to drop the record from.
func TestDownstreamExchangeGrantOfEarlierVault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		kill func(ctx context.Context, h *harness, g *Grant) error
	}{
		{"revoked", func(ctx context.Context, h *harness, g *Grant) error {
			return h.as.store.Grants.RevokeGrant(ctx, g.ID)
		}},
		{"expired", func(ctx context.Context, h *harness, g *Grant) error {
			g.ExpiresAt = h.clock.Now().Add(-time.Second)
			return h.as.store.Grants.SaveGrant(ctx, g)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, "", downstreamConfig)
			tok := mcpToken(h, rsResource, "cal:read")
			_, claims := h.verifyJWT(tok.AccessToken)
			ctx := context.Background()
			g, err := h.as.store.Grants.Grant(ctx, grantIDFromJTI(claims["jti"].(string)))
			if err != nil {
				t.Fatal(err)
			}
			g.UpstreamTokens = "record-of-an-earlier-vault"
			if err := h.as.store.Grants.SaveGrant(ctx, g); err != nil {
				t.Fatal(err)
			}
			if err := tc.kill(ctx, h, g); err != nil {
				t.Fatal(err)
			}
			res := downstreamExchange(h, tok.AccessToken, nil)
			wantError(t, res, 400, oauthmeta.CodeInvalidGrant)
			if res.err.Description != "subject_token is expired or revoked" {
				t.Errorf("error_description %q", res.err.Description)
			}
		})
	}
}

// TestDownstreamResourceNotAuthorizable: MCP clients cannot ask for a
// downstream API's token at the authorization endpoint; the exchange is
// its only way.
func TestDownstreamResourceNotAuthorizable(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", downstreamConfig)
	q, _ := authParams(publicID, publicCB)
	q.Set("resource", calendarAPI)
	q.Set("scope", "cal:read")
	if got := location(t, h.authorize(q)).Query(); got.Get("error") != string(oauthmeta.CodeInvalidTarget) || got.Has("code") {
		t.Fatalf("authorization for the API: %v", got)
	}
	if !slices.Contains(h.as.token.grantTypes(), oauthmeta.GrantTypeTokenExchange) ||
		!strings.Contains(string(h.as.discovery.encoded), oauthmeta.GrantTypeTokenExchange) {
		t.Error("grant_types_supported lacks token exchange")
	}
}

func TestDownstreamConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
	}{
		{"relative resource", func(c *Config) { c.DownstreamAPIs[0].Resource = "/api" }},
		{"resource with fragment", func(c *Config) { c.DownstreamAPIs[0].Resource = calendarAPI + "#x" }},
		{"plain http to a public host", func(c *Config) { c.DownstreamAPIs[0].Resource = "http://calendar.example.com/api" }},
		{"the issuer", func(c *Config) { c.DownstreamAPIs[0].Resource = c.Issuer }},
		{"one of Resources", func(c *Config) { c.Resources = []string{calendarAPI} }},
		{"the default resource", func(c *Config) { c.DefaultResource = calendarAPI }},
		{"listed twice", func(c *Config) { c.DownstreamAPIs[1].Resource = "HTTPS://CALENDAR.example.com/api" }},
		{"no scope", func(c *Config) { c.DownstreamAPIs[0].Scopes = nil }},
		{"scope outside Scopes", func(c *Config) { c.DownstreamAPIs[0].Scopes = []string{"cal:delete"} }},
		{"negative TTL", func(c *Config) { c.DownstreamAPIs[0].TokenTTL = -time.Second }},
		{"TTL beyond AccessTokenTTL", func(c *Config) { c.DownstreamAPIs[0].TokenTTL = DefaultAccessTokenTTL + time.Second }},
		{"unknown client", func(c *Config) { c.DownstreamAPIs[0].Clients["nobody"] = rsResource }},
		{"public client", func(c *Config) { c.DownstreamAPIs[0].Clients[publicID] = rsResource }},
		{"client without the grant", func(c *Config) { c.DownstreamAPIs[0].Clients[basicID] = rsResource }},
		{"client resource not a URI", func(c *Config) { c.DownstreamAPIs[0].Clients[rsID] = "mcp" }},
		{"client with two resources", func(c *Config) { c.DownstreamAPIs[1].Clients[rsID] = mailRS }},
		{"API is a client's resource", func(c *Config) { c.DownstreamAPIs[0].Resource = mailRS }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := &harness{t: t, clock: newClock(), logs: &logBuffer{}, issuer: "http://127.0.0.1:1"}
			cfg := h.config()
			downstreamConfig(&cfg)
			tc.mutate(&cfg)
			if _, err := New(cfg); !errors.Is(err, ErrConfig) {
				t.Fatalf("New: %v, want ErrConfig", err)
			}
		})
	}
}
