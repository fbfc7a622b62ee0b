package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/client"
	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestLogoutRevokesAtAuthServer: after Logout, the authorization server
// (package authserver, whose metadata names its revocation endpoint) no
// longer honours the refresh token or the access token, and the client no
// longer holds them; its registration is kept.
func TestLogoutRevokesAtAuthServer(t *testing.T) {
	t.Parallel()
	clock := oauthtest.NewClock(oauthtest.Epoch())
	_, issuer := startAS(t, clock, func(c *authserver.Config) {
		c.Clients = append(c.Clients, authserver.Client{ID: "introspector", Secret: "introspector-secret", GrantTypes: []string{oauthmeta.GrantTypeClientCredentials}})
	})
	rs := startRS(t, clock, issuer, false)
	store := tokenstore.NewMemory()
	c := newClient(t, clock, func(c *client.Config) { c.Store = store })
	if resp, err := call(t, c, rs.url); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("call: %v %v", resp, err)
	}
	ctx := context.Background()
	d, err := store.Discovery(ctx, rs.url)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := store.Registration(ctx, issuer)
	if err != nil {
		t.Fatal(err)
	}
	key := tokenstore.Key{Issuer: issuer, Resource: d.ResourceIndicator, ClientID: reg.ClientID}
	tok, err := store.Token(ctx, key)
	if err != nil || tok.RefreshToken == "" {
		t.Fatalf("stored token: %v %v", tok, err)
	}
	active := func(token string) bool {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, issuer+"/introspect", strings.NewReader(url.Values{"token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("introspector", "introspector-secret")
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var ir oauthmeta.IntrospectionResponse
		if err := json.NewDecoder(resp.Body).Decode(&ir); err != nil {
			t.Fatalf("introspection: %d %v", resp.StatusCode, err)
		}
		return ir.Active
	}
	if !active(tok.AccessToken) {
		t.Fatal("the access token is inactive before logout")
	}

	if err := c.Logout(ctx, rs.url); err != nil {
		t.Fatalf("Logout: %v", err)
	}
	if active(tok.AccessToken) {
		t.Error("the access token is still active after logout")
	}
	status, oe := postToken(t, issuer+"/token", url.Values{
		"grant_type": {oauthmeta.GrantTypeRefreshToken}, "refresh_token": {tok.RefreshToken},
		"client_id": {reg.ClientID}, "resource": {d.ResourceIndicator},
	}, "", "")
	wantOAuthError(t, "refresh after logout", status, oe, oauthmeta.CodeInvalidGrant)
	if _, err := store.Token(ctx, key); err == nil {
		t.Error("the token is still stored")
	}
	if _, err := store.Registration(ctx, issuer); err != nil {
		t.Errorf("the registration was dropped: %v", err)
	}
}
