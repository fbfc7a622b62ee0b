package main

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/authserver"
)

// TestConnectFlags: the --connect flags make one provider per name, from a
// preset or an issuer URL, with its client, secret, scopes, parameters and
// display name; a flag naming no --connect provider, a missing client_id,
// a literal secret, a name given twice or --connect without --upstream are
// refused, and the secret never shows in an error.
func TestConnectFlags(t *testing.T) {
	getenv := func(k string) string { return map[string]string{"GH": "gh-secret-value"}[k] }
	up := []string{"--upstream", "https://idp.example", "--upstream-client-id", "c", "--allow-any-user"}
	gh := append(append([]string(nil), up...), "--connect", "github=github", "--connect-client-id", "github=Iv1.abc",
		"--connect-client-secret", "github=env:GH")
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, p []authserver.ConnectProvider)
	}{
		{"none", up, "", func(t *testing.T, p []authserver.ConnectProvider) {
			if len(p) != 0 {
				t.Fatalf("%d providers", len(p))
			}
		}},
		{"two providers", append(append([]string(nil), gh...), "--connect", "calendar=google",
			"--connect-client-id", "calendar=123.apps", "--connect-scopes", "calendar=openid,https://www.googleapis.com/auth/calendar.readonly",
			"--connect-auth-param", "calendar=login_hint=a@example.com", "--connect-display-name", "calendar=Google Calendar"), "",
			func(t *testing.T, p []authserver.ConnectProvider) {
				if len(p) != 2 || p[0].Name != "github" || p[1].Name != "calendar" || p[1].DisplayName != "Google Calendar" ||
					p[0].Login.Issuer() != "https://github.com" || p[1].Login.Issuer() != "https://accounts.google.com" ||
					p[0].Vault == nil || p[1].Vault == nil {
					t.Fatalf("providers %+v", p)
				}
			}},
		{"issuer URL", append(append([]string(nil), up...), "--connect", "jira=https://auth.example.com", "--connect-client-id", "jira=x"), "",
			func(t *testing.T, p []authserver.ConnectProvider) {
				if len(p) != 1 || p[0].Login.Issuer() != "https://auth.example.com" {
					t.Fatalf("providers %+v", p)
				}
			}},
		{"no client id", append(append([]string(nil), up...), "--connect", "github=github"), "needs --connect-client-id", nil},
		{"flag for an unknown provider", append(append([]string(nil), gh...), "--connect-scopes", "slack=chat:write"), "no --connect slack", nil},
		{"literal secret", append(append([]string(nil), up...), "--connect", "github=github", "--connect-client-id", "github=x",
			"--connect-client-secret", "github=gh-secret-value"), "env:VAR", nil},
		{"named twice", append(append([]string(nil), gh...), "--connect", "github=google"), "named twice", nil},
		{"bad preset", append(append([]string(nil), up...), "--connect", "github=ftp://x"), "--connect github", nil},
		{"bad auth param", append(append([]string(nil), gh...), "--connect-auth-param", "github=novalue"), "NAME=PARAM=VALUE", nil},
		{"login's own parameter", append(append([]string(nil), gh...), "--connect-auth-param", "github=state=x"), "--connect github", nil},
		{"without upstream", []string{"--connect", "github=github", "--connect-client-id", "github=x"}, "need --upstream", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseAuthserverFlags(tc.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			var cfg authserver.Config
			if u, err := f.upstream.config(false, getenv); err != nil {
				t.Fatal(err)
			} else if u == nil {
				err = f.login(&cfg, slog.New(slog.DiscardHandler))
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			p, err := f.connect.config(false, nil, slog.New(slog.DiscardHandler), getenv)
			t.Cleanup(func() { closeConnect(p) })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "gh-secret-value") {
					t.Error("the error shows the secret")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, p)
		})
	}
}
