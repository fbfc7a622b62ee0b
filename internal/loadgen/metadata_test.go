package loadgen_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/mcpauth/mcpauth/internal/loadgen"
)

// TestOpenIDConfiguration: the fixture's OpenID Connect Discovery document
// names the same issuer and JWK Set as its RFC 8414 metadata, with the
// fields OpenID Connect requires and ES256, the one algorithm it signs
// with.
func TestOpenIDConfiguration(t *testing.T) {
	t.Parallel()
	f, err := loadgen.NewFixture(loadgen.FixtureConfig{CachedTokens: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	client := f.Client(1)
	defer client.CloseIdleConnections()
	get := func(path string) map[string]any {
		t.Helper()
		resp, err := client.Get(f.Issuer + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET %s: %s %s", path, resp.Status, resp.Header.Get("Content-Type"))
		}
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	oauth, oidc := get("/.well-known/oauth-authorization-server"), get("/.well-known/openid-configuration")
	for k, v := range oauth {
		b1, _ := json.Marshal(v)
		b2, _ := json.Marshal(oidc[k])
		if string(b1) != string(b2) {
			t.Errorf("%s: RFC 8414 %s, OpenID %s", k, b1, b2)
		}
	}
	if oidc["issuer"] != f.Issuer || oidc["jwks_uri"] != f.Issuer+"/jwks" {
		t.Errorf("issuer %v, jwks_uri %v", oidc["issuer"], oidc["jwks_uri"])
	}
	list := func(k string) []string {
		var out []string
		for _, v := range oidc[k].([]any) {
			out = append(out, v.(string))
		}
		return out
	}
	for _, k := range []string{"authorization_endpoint", "response_types_supported", "subject_types_supported", "id_token_signing_alg_values_supported"} {
		if _, ok := oidc[k]; !ok {
			t.Errorf("missing %s", k)
		}
	}
	if got := list("id_token_signing_alg_values_supported"); !slices.Equal(got, []string{"ES256"}) {
		t.Errorf("algorithms %v", got)
	}
	if _, ok := oauth["id_token_signing_alg_values_supported"]; ok {
		t.Error("the RFC 8414 document gained OpenID fields")
	}
}

// TestInvalidToken: every invalid kind has its token; an unknown kind none.
func TestInvalidToken(t *testing.T) {
	t.Parallel()
	f, err := loadgen.NewFixture(loadgen.FixtureConfig{CachedTokens: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, kind := range loadgen.InvalidKinds() {
		if f.InvalidToken(kind) == "" {
			t.Errorf("no %s token", kind)
		}
	}
	if tok := f.InvalidToken("nope"); tok != "" {
		t.Errorf("unknown kind: %q", tok)
	}
}
