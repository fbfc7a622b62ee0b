package selfcheck_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/cmd/mcpauth/internal/selfcheck"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// TestDelegatedToken: the check reports a server that accepts delegated
// tokens, one whose policy refuses them (403) and a token without "act";
// it adds no row without a delegated token.
func TestDelegatedToken(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		policy *resource.DelegationPolicy
		act    any
		want   selfcheck.Status // "" means no DG-01 row
	}{
		{"accepted", nil, map[string]any{"sub": "tool-agent", "act": map[string]any{"sub": "planner"}}, selfcheck.StatusPass},
		{"refused by policy", &resource.DelegationPolicy{Default: resource.DelegationRule{Forbid: true}},
			map[string]any{"sub": "tool-agent"}, selfcheck.StatusPass},
		{"refused as invalid", nil, map[string]any{"iss": "no-sub"}, selfcheck.StatusSkip},
		{"not given", nil, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewUnstartedServer(nil)
			base := "http://" + srv.Listener.Addr().String()
			key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
			v, err := resource.New(resource.Config{
				Resource:                  base + "/mcp",
				Issuers:                   []resource.Issuer{{Issuer: base, Keys: keyset.Static{{ID: key.ID, Algorithm: key.Algorithm, Public: key.Public()}}}},
				Policy:                    &resource.Policy{Default: []string{"mcp:tools"}, Delegation: tt.policy},
				InsecureAllowHTTPLoopback: true, Now: fixedNow,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			mux := http.NewServeMux()
			v.Mount(mux, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{"tools": []any{}}})
			}))
			srv.Config.Handler = mux
			srv.Start()
			defer srv.Close()
			cfg := selfcheck.Config{URL: base + "/mcp", InsecureAllowHTTPLoopback: true, Now: fixedNow}
			if tt.act != nil {
				cfg.DelegatedToken = key.Mint(t, oauthtest.AccessToken{
					Issuer: base, Subject: "alice", Audience: []string{base + "/mcp"}, ClientID: "c", Scope: "mcp:tools",
					ID: "j1", IssuedAt: fixedNow(), Expiry: fixedNow().Add(time.Hour), Extra: map[string]any{"act": tt.act},
				})
			}
			rep := run(t, cfg)
			var got selfcheck.Status
			for _, res := range rep.Results {
				if res.ID == "DG-01" {
					got = res.Status
					if b, _ := json.Marshal(res); cfg.DelegatedToken != "" && len(b) > 0 && strings.Contains(string(b), cfg.DelegatedToken) {
						t.Error("the report shows the delegated token")
					}
				}
			}
			if got != tt.want {
				t.Errorf("DG-01 = %q, want %q\n%s", got, tt.want, table(t, rep))
			}
		})
	}
}
