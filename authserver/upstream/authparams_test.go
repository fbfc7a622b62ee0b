package upstream

import (
	"errors"
	"net/url"
	"testing"

	"github.com/mcpauth/mcpauth/authserver"
)

// TestUpstreamAuthParams: Config.AuthParams reach the provider's
// authorization request, and those that would replace the login's own
// parameters or carry control characters are refused at New.
func TestUpstreamAuthParams(t *testing.T) {
	tests := []struct {
		name    string
		params  map[string]string
		wantErr bool
	}{
		{"none", nil, false},
		{"google offline", map[string]string{"access_type": "offline", "prompt": "consent"}, false},
		{"hosted domain", map[string]string{"hd": "example.com", "login_hint": "alice@example.com"}, false},
		{"response_type", map[string]string{"response_type": "token"}, true},
		{"client_id", map[string]string{"client_id": "other"}, true},
		{"redirect_uri", map[string]string{"redirect_uri": "https://evil.example/cb"}, true},
		{"state", map[string]string{"state": "fixed"}, true},
		{"nonce", map[string]string{"nonce": "fixed"}, true},
		{"code_challenge", map[string]string{"code_challenge": "x"}, true},
		{"code_challenge_method", map[string]string{"code_challenge_method": "plain"}, true},
		{"scope", map[string]string{"scope": "openid admin"}, true},
		{"empty name", map[string]string{"": "x"}, true},
		{"control in name", map[string]string{"pro\nmpt": "consent"}, true},
		{"control in value", map[string]string{"prompt": "consent\r\nX: y"}, true},
		{"DEL in value", map[string]string{"prompt": "consent\x7f"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.wantErr {
				_, err := New(Config{Issuer: "https://idp.example", ClientID: "c", AuthParams: tc.params})
				if !errors.Is(err, authserver.ErrConfig) {
					t.Fatalf("New: %v, want a ConfigError", err)
				}
				return
			}
			h, p := upstreamHarness(t, func(c *testConfig) { c.Upstream.AuthParams = tc.params })
			b := newBrowser(t, h)
			q, _ := authParams(publicID, publicCB)
			loc := location(t, b.login(q))
			if loc.Query().Get("code") == "" {
				t.Fatalf("login failed: %s", loc)
			}
			var seen url.Values
			p.set(func(p *fakeProvider) { seen = p.lastAuth })
			for k, v := range tc.params {
				if got := seen[k]; len(got) != 1 || got[0] != v {
					t.Errorf("provider saw %s = %q, want %q", k, got, v)
				}
			}
			if seen.Get("client_id") != upstreamClientID || seen.Get("scope") != "openid email profile" || seen.Get("nonce") == "" {
				t.Errorf("the login's own parameters changed: %v", seen)
			}
		})
	}
	// The caller's map is copied: changing it later changes nothing.
	params := map[string]string{"prompt": "consent"}
	prov, err := New(Config{Issuer: "https://idp.example", ClientID: "c", AuthParams: params})
	if err != nil {
		t.Fatal(err)
	}
	defer prov.Close()
	params["state"] = "fixed"
	if got := prov.(*oidcProvider).cfg.AuthParams; len(got) != 1 || got["prompt"] != "consent" {
		t.Errorf("AuthParams changed with the caller's map: %v", got)
	}
}
