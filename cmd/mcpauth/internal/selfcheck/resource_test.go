package selfcheck_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/cmd/mcpauth/internal/selfcheck"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

// TestResourceMiddleware runs the check against mcpauth's own resource
// middleware in front of a canned MCP handler, with a real signed token
// (none when DPoP is required: the check has no proof to send): the check
// and the middleware agree on every requirement they share, in each DPoP
// mode (RS-27 is skipped without DPoP).
func TestResourceMiddleware(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		mode     resource.DPoPMode
		withTok  bool
		skipOnly []string
	}{
		{"DPoP off", resource.DPoPDisabled, true, []string{"RS-19", "RS-27"}},
		{"DPoP allowed", resource.DPoPAllowed, true, []string{"RS-19"}},
		{"DPoP required", resource.DPoPRequired, false, []string{"RS-19", "RS-20", "TR-03", "RS-12"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkResourceMiddleware(t, tt.mode, tt.withTok, tt.skipOnly)
		})
	}
}

func checkResourceMiddleware(t *testing.T, mode resource.DPoPMode, withTok bool, skipOnly []string) {
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
	v, err := resource.New(resource.Config{
		Resource:                  base + "/mcp",
		Issuers:                   []resource.Issuer{{Issuer: base, Keys: keyset.Static{{ID: key.ID, Algorithm: key.Algorithm, Public: key.Public()}}}},
		ScopesSupported:           []string{"mcp:tools", "mcp:admin"},
		Policy:                    &resource.Policy{Default: []string{"mcp:tools"}, Tools: map[string][]string{adminTool: {"mcp:admin"}}},
		InsecureAllowHTTPLoopback: true,
		Now:                       fixedNow,
		DPoP:                      resource.DPoPConfig{Mode: mode},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	mux := http.NewServeMux()
	v.Mount(mux, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{"tools": []any{}}})
	}))
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(oauthmeta.AuthServerMetadata{
			Issuer: base, AuthorizationEndpoint: base + "/authorize", TokenEndpoint: base + "/token",
			ResponseTypesSupported: []string{"code"}, CodeChallengeMethodsSupported: []string{"S256"},
			AuthorizationResponseISSParameterSupported: true, ClientIDMetadataDocumentSupported: true,
			DPoPSigningAlgValuesSupported: []string{"ES256"},
		})
	})
	srv.Config.Handler = mux
	srv.Start()
	defer srv.Close()

	token := key.Mint(t, oauthtest.AccessToken{
		Issuer: base, Subject: "alice", Audience: []string{base + "/mcp"}, ClientID: "c", Scope: "mcp:tools",
		ID: "j1", IssuedAt: fixedNow(), Expiry: fixedNow().Add(time.Hour),
	})
	cfg := selfcheck.Config{URL: base + "/mcp", Token: token, StepUpTool: adminTool, InsecureAllowHTTPLoopback: true, Now: fixedNow}
	if !withTok {
		cfg.Token, cfg.StepUpTool = "", ""
	}
	rep := run(t, cfg)
	for _, res := range rep.Results {
		if res.Status != selfcheck.StatusPass && !(res.Status == selfcheck.StatusSkip && slices.Contains(skipOnly, res.ID)) {
			t.Errorf("%s %s: %s (%s)", res.ID, res.Name, res.Status, res.Detail)
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Log("\n" + table(t, rep))
	}
}
