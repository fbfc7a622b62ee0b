package selfcheck

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestRunIdP: the token checks of RunIdP against a provider on loopback:
// each token shape finds the preset that accepts it, or fails with the
// reason, and the advice names the flags.
func TestRunIdP(t *testing.T) {
	t.Parallel()
	key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
	as := oauthtest.NewPlainJWKSServer(t, key)
	const res = "http://127.0.0.1:9/mcp"
	now := time.Now()
	base := oauthtest.AccessToken{Issuer: as.Issuer, Subject: "alice", Audience: []string{res}, ClientID: "c1", Scope: "mcp:tools",
		IssuedAt: now, Expiry: now.Add(time.Hour), ID: "j1"}
	hydraShape := func(mod func(*oauthtest.AccessToken)) string {
		tok := base
		tok.Scope = ""
		tok.Extra = map[string]any{"scp": []string{"mcp:tools"}}
		if mod != nil {
			mod(&tok)
		}
		return key.MintWith(t, oauthtest.Header{Type: "JWT"}, tok)
	}
	tests := []struct {
		name     string
		token    string
		resource string
		want     map[string]Status // by ID
		preset   string
		verified bool
		advice   []string // substrings of some advice line
	}{
		{"RFC 9068", key.Mint(t, base), res,
			map[string]Status{"IDP-04": StatusPass, "IDP-05": StatusPass, "IDP-06": StatusPass}, "", true,
			[]string{"--issuer " + as.Issuer}},
		{"hydra's shape", hydraShape(nil), res,
			map[string]Status{"IDP-04": StatusPass, "IDP-06": StatusPass}, "hydra", true, []string{"--issuer-profile hydra"}},
		{"no audience", hydraShape(func(a *oauthtest.AccessToken) { a.Audience = nil }), res,
			map[string]Status{"IDP-04": StatusPass, "IDP-06": StatusFail}, "", false, []string{"the token's aud does not name " + res}},
		{"an ID token (no client claim)", hydraShape(func(a *oauthtest.AccessToken) { a.ClientID = ""; a.Audience = []string{res} }), res,
			map[string]Status{"IDP-06": StatusFail}, "", false, nil},
		{"another issuer", hydraShape(func(a *oauthtest.AccessToken) { a.Issuer = "http://127.0.0.1:1" }), res,
			map[string]Status{"IDP-05": StatusFail, "IDP-06": StatusFail}, "", false, nil},
		{"opaque", "ory_at_abcdef", res, map[string]Status{"IDP-04": StatusFail}, "", false, nil},
		{"no resource", hydraShape(nil), "", map[string]Status{"IDP-04": StatusPass, "IDP-06": StatusSkip}, "", false,
			[]string{"--resource <MCP server URL>"}},
		{"no token", "", res, map[string]Status{"CL-07": StatusPass, "IDP-01": StatusWarn, "IDP-02": StatusPass}, "", false,
			[]string{"mcpauth login --client-id <registered client> " + res}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rep, err := RunIdP(context.Background(), IdPConfig{Issuer: as.Issuer, Resource: tt.resource, Token: tt.token, InsecureAllowHTTPLoopback: true})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]Status{}
			for _, r := range rep.Results {
				got[r.ID] = r.Status
				if tt.token != "" && strings.Contains(r.Detail, tt.token) {
					t.Errorf("%s: the token in the report", r.ID)
				}
			}
			for id, st := range tt.want {
				if got[id] != st {
					t.Errorf("%s = %q, want %q (%v)", id, got[id], st, rep.Results)
				}
			}
			if tt.token == "" && slices.ContainsFunc(rep.Results, func(r Result) bool { return strings.HasPrefix(r.ID, "IDP-0") && r.ID >= "IDP-04" }) {
				t.Error("token checks without a token")
			}
			if rep.Preset != tt.preset || rep.Verified != tt.verified {
				t.Errorf("preset %q verified %v, want %q %v", rep.Preset, rep.Verified, tt.preset, tt.verified)
			}
			for _, a := range tt.advice {
				if !slices.ContainsFunc(rep.Advice, func(l string) bool { return strings.Contains(l, a) }) {
					t.Errorf("advice %q lacks %q", rep.Advice, a)
				}
			}
		})
	}
}

// TestRunIdPConfig: unusable configurations are errors, not reports.
func TestRunIdPConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []IdPConfig{
		{},
		{Issuer: "http://as.example.com"},
		{Issuer: "https://as.example.com", Resource: "http://mcp.example.com/mcp"},
		{Issuer: "https://as.example.com", Token: "a b"},
	} {
		if rep, err := RunIdP(context.Background(), cfg); rep != nil || !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v %v", cfg, rep, err)
		}
	}
}

// TestProviderMatch: the providers are recognised from their issuer or
// their metadata, and nothing else is.
func TestProviderMatch(t *testing.T) {
	t.Parallel()
	hydraMD := &oauthmeta.AuthServerMetadata{AuthorizationEndpoint: "https://hydra.example.com/oauth2/auth", TokenEndpoint: "https://hydra.example.com/oauth2/token"}
	other := &oauthmeta.AuthServerMetadata{AuthorizationEndpoint: "https://as.example.com/authorize", TokenEndpoint: "https://as.example.com/token"}
	tests := []struct {
		issuer string
		md     *oauthmeta.AuthServerMetadata
		want   string
	}{
		{"https://hydra.example.com", hydraMD, "hydra"},
		{"https://hydra.example.com/", hydraMD, "hydra"},
		{"https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0", other, "entra"},
		{"https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/", other, "entra-v1"},
		{"https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_EXAMPLE", other, "cognito"},
		{"https://keycloak.example.com/realms/mcp", other, "keycloak"},
		{"https://example.auth0.com/", other, "auth0"},
		{"https://example.okta.com/oauth2/aus1mcp", other, "okta"},
		{"https://as.example.com", other, ""},
	}
	for _, tt := range tests {
		got := ""
		for _, p := range providers {
			if p.match(tt.issuer, tt.md) {
				got = p.name
				break
			}
		}
		if got != tt.want {
			t.Errorf("%s: %q, want %q", tt.issuer, got, tt.want)
		}
	}
}

// TestIdPAdviceLoginFlags: the login advice for a recognised provider
// carries the flags for its quirks, and only for it.
func TestIdPAdviceLoginFlags(t *testing.T) {
	t.Parallel()
	const res = "https://mcp.example.com/mcp"
	tests := []struct {
		provider string
		want     string
		absent   []string
	}{
		{"entra", "mcpauth login --assume-s256 --omit-resource --resource-scope <Application ID URI>/.default " + res, nil},
		{"cognito", "mcpauth login --assume-s256 " + res, []string{"--omit-resource", "--resource-scope"}},
		{"hydra", "mcpauth login --auth-param audience=" + res + " " + res, []string{"--assume-s256", "--omit-resource", "--resource-scope"}},
		{"", "mcpauth login " + res, []string{"--assume-s256", "--omit-resource", "--resource-scope"}},
	}
	for _, tt := range tests {
		t.Run(cmpOr(tt.provider, "unknown"), func(t *testing.T) {
			t.Parallel()
			adv := idpAdvice(IdPConfig{Issuer: "https://idp.example.com", Resource: res}, &IdPReport{Provider: tt.provider}, nil)
			if !slices.Contains(adv, tt.want) {
				t.Fatalf("advice %q lacks %q", adv, tt.want)
			}
			for _, a := range tt.absent {
				if strings.Contains(strings.Join(adv, "\n"), a) {
					t.Errorf("advice %q names %s", adv, a)
				}
			}
		})
	}
}
