package upstream

import (
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// connectHarness is a server logging users in at one fake OpenID
// provider and letting them connect their account at a second one, whose
// access tokens expire after ttl and whose refresh tokens rotate.
func connectHarness(t *testing.T, ttl time.Duration) (*harness, *fakeProvider, *fakeUpstreamTokens) {
	var third *fakeProvider
	vt := newFakeUpstreamTokens(ttl)
	h, _ := upstreamHarness(t, func(c *testConfig) {
		third = newFakeProvider(t, c.Now)
		third.vaultTokens = vt
		p, err := New(Config{Issuer: third.issuer, ClientID: upstreamClientID, ClientSecret: upstreamClientSecret,
			Scopes: []string{"repo"}, InsecureAllowHTTPLoopback: true, Now: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		c.Clients = append(c.Clients, authserver.Client{ID: rsID, Secret: rsSecret,
			GrantTypes: []string{oauthmeta.GrantTypeTokenExchange}})
		c.VaultResourceServers = map[string]string{rsID: rsResource}
		c.Connect = []authserver.ConnectProvider{{Name: "third", DisplayName: "Third", Login: p,
			Vault: VaultConfig{Keys: [][]byte{testVaultKey}, Provider: p, Logger: c.Logger, Now: c.Now}.Open}}
	})
	return h, third, vt
}

// connectExchange asks for the connected token as the resource server.
func connectExchange(h *harness, at string) tokenResult {
	h.t.Helper()
	return h.token(url.Values{"grant_type": {oauthmeta.GrantTypeTokenExchange}, "subject_token": {at},
		"subject_token_type": {oauthmeta.TokenTypeAccessToken}, "audience": {"third"}}, rsID, rsSecret)
}

// toThird opens the connect URI of a refused exchange in b, signs in at
// the login provider, confirms, and returns the third provider's redirect
// back to the connect callback, not yet followed.
func (b *browser) toThird(at string) *url.URL {
	b.t.Helper()
	res := connectExchange(b.h, at)
	if res.err == nil || res.err.ConnectURI == "" {
		b.t.Fatalf("exchange: %d %s, want a connect_uri", res.status, res.body)
	}
	login := location(b.t, b.do(res.err.ConnectURI))
	back := location(b.t, b.do(login.String()))
	resp := b.do(back.String())
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("connect page: %d %s", resp.StatusCode, body)
	}
	form := url.Values{"action": {"connect"}}
	for _, m := range hiddenField.FindAllStringSubmatch(string(body), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	req, _ := http.NewRequest(http.MethodPost, b.h.url("/connect/third"), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	resp.Body.Close()
	az := location(b.t, resp)
	if q := az.Query(); q.Get("code_challenge_method") != "S256" || q.Get("state") == "" || q.Get("nonce") == "" ||
		q.Get("scope") != "openid repo" || q.Get("redirect_uri") != b.h.as.ConnectCallbackURL() {
		b.t.Fatalf("authorization request at the provider: %s", az)
	}
	return location(b.t, b.do(az.String()))
}

// TestConnectRealProvider: the connect flow against an OpenID provider
// on loopback, through the real login, vault and refresh: the tokens are
// sealed in the vault and refreshed once when they expire; the
// provider's iss and code are checked (a wrong iss, or a code the token
// endpoint refuses, links nothing); no token reaches the logs.
func TestConnectRealProvider(t *testing.T) {
	h, _, vt := connectHarness(t, time.Minute)
	at := vaultLogin(t, h, rsResource).AccessToken
	b := newBrowser(t, h)

	for _, tc := range []struct {
		name string
		edit func(q url.Values)
	}{
		{"wrong iss", func(q url.Values) { q.Set("iss", "https://evil.example") }},
		{"missing iss", func(q url.Values) { q.Del("iss") }},
		{"code the provider does not redeem for us", func(q url.Values) { q.Set("code", "another-clients-code") }},
	} {
		back := b.toThird(at)
		q := back.Query()
		tc.edit(q)
		back.RawQuery = q.Encode()
		if resp := b.do(back.String()); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%s: %d, want 403", tc.name, resp.StatusCode)
		}
		if res := connectExchange(h, at); res.err == nil || res.err.ConnectURI == "" {
			t.Fatalf("%s: exchange %d %s, want still not connected", tc.name, res.status, res.body)
		}
	}

	if resp := b.do(b.toThird(at).String()); resp.StatusCode != http.StatusOK {
		t.Fatalf("callback: %d", resp.StatusCode)
	}
	res := connectExchange(h, at)
	issued, _ := vt.state()
	if res.tok == nil || len(issued) != 2 || res.tok.AccessToken != issued[0] || res.tok.ExpiresIn != 60 || res.tok.RefreshToken != "" {
		t.Fatalf("exchange: %d %s", res.status, res.body)
	}
	h.clock.Advance(2 * time.Minute)
	res = connectExchange(h, at)
	issued, refreshes := vt.state()
	if res.tok == nil || refreshes != 1 || res.tok.AccessToken != issued[2] {
		t.Fatalf("exchange after expiry: %d %s, %d refreshes", res.status, res.body, refreshes)
	}
	if res2 := connectExchange(h, at); res2.tok == nil || res2.tok.AccessToken != issued[2] {
		t.Fatalf("second exchange: %s", res2.body)
	}
	if _, n := vt.state(); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
	logs := h.logs.String()
	for _, tok := range issued {
		if strings.Contains(logs, tok) {
			t.Errorf("a token reached the logs")
		}
	}
	// The provider ends the grant: the connection ends, and the
	// exchange answers with a new connect URI.
	vt.mu.Lock()
	vt.refuse = true
	vt.mu.Unlock()
	h.clock.Advance(2 * time.Minute)
	if res := connectExchange(h, at); res.err == nil || res.err.ConnectURI == "" {
		t.Fatalf("after the provider's refusal: %d %s", res.status, res.body)
	}
}
