package selfcheck

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// TestRunIdPLogin: the rows of a login (IDP-07 to IDP-09) against a
// provider on loopback that advertises iss, and the token rows on the
// login's access token.
func TestRunIdPLogin(t *testing.T) {
	t.Parallel()
	key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
	as := oauthtest.NewPlainJWKSServer(t, key)
	const res = "http://127.0.0.1:9/mcp"
	now := time.Now()
	tok := oauthtest.AccessToken{Issuer: as.Issuer, Subject: "alice", Audience: []string{res}, ClientID: "c1", Scope: "mcp:tools",
		IssuedAt: now, Expiry: now.Add(time.Hour), ID: "j1"}
	good := key.Mint(t, tok)
	tok.ID = "j2"
	refreshed := key.Mint(t, tok)
	tok.Audience = []string{"http://127.0.0.1:9/other"}
	otherAud := key.Mint(t, tok)
	ok := IdPLogin{Redirected: true, ISSPresent: true, ISS: as.Issuer, AccessToken: good, RefreshToken: "rt1",
		Refreshed: refreshed, RefreshedRefreshToken: "rt2"}
	with := func(mod func(*IdPLogin)) IdPLogin { l := ok; mod(&l); return l }
	tests := []struct {
		name   string
		login  IdPLogin
		want   map[string]Status
		detail map[string]string // substrings of details
	}{
		{"good", ok, map[string]Status{"IDP-07": StatusPass, "IDP-08": StatusPass, "IDP-06": StatusPass, "IDP-09": StatusPass},
			map[string]string{"IDP-09": "refresh token rotated; preset (none: RFC 9068) accepts"}},
		{"not rotated", with(func(l *IdPLogin) { l.RefreshedRefreshToken = "" }), map[string]Status{"IDP-09": StatusPass},
			map[string]string{"IDP-09": "not rotated"}},
		{"iss absent although advertised", IdPLogin{Redirected: true, Err: errors.New("lacks iss")},
			map[string]Status{"IDP-07": StatusFail, "IDP-08": StatusSkip, "IDP-09": StatusSkip}, nil},
		{"wrong iss", with(func(l *IdPLogin) { l.ISS = "https://evil.example" }), map[string]Status{"IDP-07": StatusFail}, nil},
		{"no response", IdPLogin{Err: errors.New("denied")}, map[string]Status{"IDP-07": StatusSkip}, nil},
		{"resource ignored", with(func(l *IdPLogin) { l.AccessToken = otherAud }),
			map[string]Status{"IDP-08": StatusFail, "IDP-06": StatusFail, "IDP-09": StatusPass},
			map[string]string{"IDP-08": "--auth-param audience=" + res}},
		{"opaque", with(func(l *IdPLogin) { l.AccessToken = "opaque-at-1" }), map[string]Status{"IDP-08": StatusSkip, "IDP-04": StatusFail}, nil},
		{"no refresh token", with(func(l *IdPLogin) { l.RefreshToken = "" }), map[string]Status{"IDP-09": StatusWarn}, nil},
		{"refresh refused", with(func(l *IdPLogin) { l.RefreshErr = errors.New("invalid_grant") }), map[string]Status{"IDP-09": StatusFail}, nil},
		{"refreshed token refused", with(func(l *IdPLogin) { l.Refreshed = otherAud }), map[string]Status{"IDP-09": StatusFail}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			login := tt.login
			rep, err := RunIdP(context.Background(), IdPConfig{Issuer: as.Issuer, Resource: res, Login: &login, InsecureAllowHTTPLoopback: true})
			if err != nil {
				t.Fatal(err)
			}
			got, details := map[string]Status{}, map[string]string{}
			for _, r := range rep.Results {
				got[r.ID], details[r.ID] = r.Status, r.Detail
				for _, secret := range []string{login.AccessToken, login.Refreshed, "rt1", "rt2"} {
					if secret != "" && strings.Contains(r.Detail, secret) {
						t.Errorf("%s: a token in the report", r.ID)
					}
				}
			}
			for id, st := range tt.want {
				if got[id] != st {
					t.Errorf("%s = %q, want %q (%v)", id, got[id], st, rep.Results)
				}
			}
			for id, sub := range tt.detail {
				if !strings.Contains(details[id], sub) {
					t.Errorf("%s: %q lacks %q", id, details[id], sub)
				}
			}
		})
	}
	if _, err := RunIdP(context.Background(), IdPConfig{Issuer: as.Issuer, Token: good, Login: &ok, InsecureAllowHTTPLoopback: true}); err == nil {
		t.Error("Token with Login: no error")
	}
}
