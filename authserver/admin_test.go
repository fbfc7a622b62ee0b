package authserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

const adminToken = "admin-token-0123456789abcdef0123456789"

// fakeAccounts is a connected-accounts hook for the admin API.
type fakeAccounts struct{ accounts map[string][]AdminAccount }

func (f *fakeAccounts) ListAccounts(_ context.Context, sub string) ([]AdminAccount, error) {
	return f.accounts[sub], nil
}

func (f *fakeAccounts) RevokeAccount(_ context.Context, sub, id string) error {
	for i, a := range f.accounts[sub] {
		if a.ID == id {
			f.accounts[sub] = append(f.accounts[sub][:i], f.accounts[sub][i+1:]...)
			return nil
		}
	}
	return ErrNotFound
}

func (h *harness) admin(method, path, token, body string) (int, []byte) {
	h.t.Helper()
	req, _ := http.NewRequest(method, h.url(path), strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := h.http.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestAdminAuth: the admin API refuses requests without the admin token,
// with another token, or with a client's credentials; without Admin it
// does not exist; a short token is a configuration error.
func TestAdminAuth(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", func(c *Config) { c.Admin = &AdminConfig{Token: adminToken} })
	access := h.tokens(nil).AccessToken
	for name, tok := range map[string]string{"none": "", "wrong": adminToken + "x", "an access token": access, "a client secret": basicSecret} {
		code, body := h.admin(http.MethodGet, pathAdminGrants+"?sub=demo-user", tok, "")
		if code != http.StatusUnauthorized || !strings.Contains(string(body), "invalid_token") {
			t.Errorf("%s: %d %s", name, code, body)
		}
		if code, _ := h.admin(http.MethodPost, pathAdminRevoke, tok, `{"sub":"demo-user"}`); code != http.StatusUnauthorized {
			t.Errorf("revoke with %s: %d", name, code)
		}
	}
	off := newHarness(t, "", nil)
	if code, _ := off.admin(http.MethodGet, pathAdminGrants+"?sub=demo-user", adminToken, ""); code != http.StatusNotFound {
		t.Errorf("without Admin: %d, want 404", code)
	}
	cfg := off.config()
	cfg.Admin = &AdminConfig{Token: "short"}
	if _, err := New(cfg); !errors.Is(err, ErrConfig) {
		t.Errorf("short admin token: %v", err)
	}
}

// TestAdminListAndRevoke: the listing shows the user's grants (never a
// token) and connected accounts; revoking one grant makes its refresh
// token fail and leaves the others; revoking all ends them all and
// disconnects the accounts.
func TestAdminListAndRevoke(t *testing.T) {
	t.Parallel()
	accts := &fakeAccounts{accounts: map[string][]AdminAccount{"demo-user": {{ID: "gh-1", Provider: "github"}}}}
	h := newHarness(t, "", func(c *Config) { c.Admin = &AdminConfig{Token: adminToken, Accounts: accts} })
	first, second := h.tokens(nil), h.tokens(nil)
	list := func() AdminListing {
		t.Helper()
		code, body := h.admin(http.MethodGet, pathAdminGrants+"?sub=demo-user", adminToken, "")
		if code != http.StatusOK {
			t.Fatalf("list: %d %s", code, body)
		}
		for _, secret := range []string{first.AccessToken, first.RefreshToken, second.RefreshToken} {
			if strings.Contains(string(body), secret) {
				t.Fatal("the listing holds a token")
			}
		}
		var l AdminListing
		if err := json.Unmarshal(body, &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := list()
	if l.Subject != "demo-user" || len(l.Grants) != 2 || l.Grants[0].ClientID != publicID || len(l.ConnectedAccounts) != 1 {
		t.Fatalf("listing %+v", l)
	}
	if code, _ := h.admin(http.MethodGet, pathAdminGrants+"?sub=nobody", adminToken, ""); code != http.StatusOK {
		t.Fatalf("an unknown user: %d", code)
	}
	if code, _ := h.admin(http.MethodGet, pathAdminGrants, adminToken, ""); code != http.StatusBadRequest {
		t.Fatalf("no sub: %d", code)
	}

	refresh := func(rt string) tokenResult {
		return h.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {publicID}}, "", "")
	}
	// The grant of the first flow: the one its refresh token belongs to.
	rec, err := h.as.store.RefreshTokens.RefreshToken(context.Background(), tokenKey(first.RefreshToken))
	if err != nil {
		t.Fatal(err)
	}
	code, body := h.admin(http.MethodPost, pathAdminRevoke, adminToken, `{"sub":"demo-user","grant_id":"`+rec.GrantID+`"}`)
	if code != http.StatusOK || !strings.Contains(string(body), `"revoked_grants":1`) || !strings.Contains(string(body), `"revoked_accounts":0`) {
		t.Fatalf("revoke one: %d %s", code, body)
	}
	wantError(t, refresh(first.RefreshToken), http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
	res := refresh(second.RefreshToken)
	if res.status != http.StatusOK {
		t.Fatalf("the other grant's refresh: %d %s", res.status, res.body)
	}
	if code, _ := h.admin(http.MethodPost, pathAdminRevoke, adminToken, `{"sub":"someone-else","grant_id":"`+rec.GrantID+`"}`); code != http.StatusNotFound {
		t.Fatalf("another user's grant: %d, want 404", code)
	}

	code, body = h.admin(http.MethodPost, pathAdminRevoke, adminToken, `{"sub":"demo-user"}`)
	if code != http.StatusOK || !strings.Contains(string(body), `"revoked_grants":1`) || !strings.Contains(string(body), `"revoked_accounts":1`) {
		t.Fatalf("revoke all: %d %s", code, body)
	}
	wantError(t, refresh(res.tok.RefreshToken), http.StatusBadRequest, oauthmeta.CodeInvalidGrant)
	if m, _ := h.introspect(second.AccessToken); m["active"] != false {
		t.Errorf("introspection after revocation: %v", m)
	}
	if l := list(); !l.Grants[0].Revoked || !l.Grants[1].Revoked || len(l.ConnectedAccounts) != 0 {
		t.Errorf("after revoking all: %+v", l)
	}
	if code, _ := h.admin(http.MethodPost, pathAdminRevoke, adminToken, `{"grant_id":"x"}`); code != http.StatusBadRequest {
		t.Errorf("no sub: %d", code)
	}
}
