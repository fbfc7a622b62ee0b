package main

import (
	"cmp"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// TestCheckIdPLogin runs `check --idp ISSUER --resource URL --login
// --browser http` against loopback providers issuing JWT access tokens:
// a good one, one that leaves iss out of the authorization response (with
// and without advertising it), one that ignores the resource, one without
// refresh tokens and one that does not rotate them. Each row's status is
// checked, and no token is printed.
func TestCheckIdPLogin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		as      oauthtest.ASOptions
		aud     string // "" = the resource
		refresh string // "rotate", "keep" or "" (none)
		want    map[string]string
		detail  string
		code    int
	}{
		{"good", oauthtest.ASOptions{}, "", "rotate",
			map[string]string{"IDP-07": "pass", "IDP-08": "pass", "IDP-04": "pass", "IDP-05": "pass", "IDP-06": "pass", "IDP-09": "pass"},
			"refresh token rotated", 0},
		{"refresh token kept", oauthtest.ASOptions{}, "", "keep", map[string]string{"IDP-09": "pass"}, "not rotated", 0},
		{"iss omitted although advertised", oauthtest.ASOptions{ISS: oauthtest.ISSOmit}, "", "rotate",
			map[string]string{"IDP-07": "fail", "IDP-08": "skip", "IDP-09": "skip"}, "advertises", 1},
		{"iss omitted, not advertised", oauthtest.ASOptions{ISS: oauthtest.ISSOmit, NoISSAdvertised: true}, "", "rotate",
			map[string]string{"IDP-07": "warn", "IDP-08": "pass", "IDP-09": "pass"}, "mix-up", 0},
		{"resource ignored", oauthtest.ASOptions{}, "http://127.0.0.1:9/other", "rotate",
			map[string]string{"IDP-07": "pass", "IDP-08": "fail", "IDP-06": "fail"}, "--auth-param audience=", 1},
		{"no refresh tokens", oauthtest.ASOptions{}, "", "",
			map[string]string{"IDP-08": "pass", "IDP-09": "warn"}, "no refresh token issued", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
			jw := oauthtest.NewPlainJWKSServer(t, key)
			opts := tt.as
			opts.JWKSURI = jw.JWKSURI
			as := oauthtest.NewAS(t, opts)
			rs := oauthtest.NewResource(t, oauthtest.ResourceOptions{}, as)
			res := rs.URL + "/mcp"
			var (
				mu      sync.Mutex
				secrets []string
				n       int
			)
			// The token endpoint issues JWT access tokens for the
			// audience (the requested resource unless tt.aud) and
			// refresh tokens as tt.refresh says.
			as.Update(func(o *oauthtest.ASOptions) {
				o.Faults = map[string]http.HandlerFunc{"/token": func(w http.ResponseWriter, r *http.Request) {
					if r.ParseForm() != nil {
						http.Error(w, "bad form", http.StatusBadRequest)
						return
					}
					mu.Lock()
					defer mu.Unlock()
					n++
					now := time.Now()
					at := key.Mint(t, oauthtest.AccessToken{Issuer: as.Issuer(), Subject: "alice", Audience: []string{cmp.Or(tt.aud, r.PostForm.Get("resource"))},
						ClientID: r.PostForm.Get("client_id"), IssuedAt: now, Expiry: now.Add(time.Hour), ID: "j" + string(rune('0'+n))})
					resp := map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": 3600}
					grant := r.PostForm.Get("grant_type")
					if tt.refresh != "" && (grant == "authorization_code" || tt.refresh == "rotate") {
						resp["refresh_token"] = "rt-" + grant + string(rune('0'+n))
					}
					secrets = append(secrets, at)
					w.Header().Set("Content-Type", "application/json")
					_ = json.NewEncoder(w).Encode(resp)
				}}
			})
			code, out, errOut := runCmd(t, "check", "--json", "--insecure-http", "--idp", as.Issuer(), "--resource", res, "--login", "--browser", "http")
			if code != tt.code {
				t.Fatalf("exit %d, want %d; %s %s", code, tt.code, out, errOut)
			}
			var rep struct {
				Results []struct{ ID, Status, Detail string }
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			got, details := map[string]string{}, ""
			for _, r := range rep.Results {
				got[r.ID] = r.Status
				details += r.Detail + "\n"
			}
			for id, st := range tt.want {
				if got[id] != st {
					t.Errorf("%s = %q, want %q (%+v)", id, got[id], st, rep.Results)
				}
			}
			if !strings.Contains(details, tt.detail) {
				t.Errorf("details lack %q:\n%s", tt.detail, details)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, s := range secrets {
				if strings.Contains(out+errOut, s) {
					t.Error("a token in the output")
				}
			}
		})
	}
}
