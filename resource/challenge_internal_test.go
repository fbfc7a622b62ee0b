package resource

import (
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// TestChallengesBytes pins the WWW-Authenticate values byte for byte, for
// each DPoP mode, with and without an error, a description that needs
// escaping, scopes, a scheme, and onlyScheme (the values the challenges
// had before both schemes were built by dpop.Challenge).
func TestChallengesBytes(t *testing.T) {
	t.Parallel()
	const res, iss = "https://mcp.example.com/mcp", "https://as.example.com"
	key := oauthtest.NewKey(t, oauthtest.ES256, "k1")
	type call struct {
		code       oauthmeta.ErrorCode
		desc       string
		scopes     []string
		scheme     string
		onlyScheme bool
	}
	calls := []call{
		{},
		{code: "invalid_token", desc: `bad "token" \ here`},
		{code: "invalid_token", scopes: []string{"a", "b:c"}, scheme: schemeBearer},
		{code: "insufficient_scope", desc: "more", scopes: []string{"s"}, scheme: schemeDPoP, onlyScheme: true},
		{code: "insufficient_scope", desc: "more", scopes: []string{"s"}, scheme: schemeBearer, onlyScheme: true},
		{code: "invalid_dpop_proof", desc: "d", scheme: schemeDPoP},
	}
	want := map[DPoPMode][]string{
		DPoPDisabled: {
			`Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`,
			`Bearer error="invalid_token", error_description="bad \"token\" \\ here", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`,
			`Bearer error="invalid_token", scope="a b:c", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`,
			`Bearer error="insufficient_scope", error_description="more", scope="s", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`,
			`Bearer error="insufficient_scope", error_description="more", scope="s", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`,
			`Bearer error="invalid_dpop_proof", error_description="d", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`,
		},
		DPoPAllowed: {
			`Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp" | DPoP resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", algs="ES256 EdDSA"`,
			`Bearer error="invalid_token", error_description="bad \"token\" \\ here", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp" | DPoP error="invalid_token", error_description="bad \"token\" \\ here", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", algs="ES256 EdDSA"`,
			`Bearer error="invalid_token", scope="a b:c", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp" | DPoP scope="a b:c", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", algs="ES256 EdDSA"`,
			`DPoP error="insufficient_scope", error_description="more", scope="s", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", algs="ES256 EdDSA"`,
			`Bearer error="insufficient_scope", error_description="more", scope="s", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`,
			`Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp" | DPoP error="invalid_dpop_proof", error_description="d", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", algs="ES256 EdDSA"`,
		},
		DPoPRequired: {
			`DPoP resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", algs="ES256 EdDSA"`,
			`DPoP error="invalid_token", error_description="bad \"token\" \\ here", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", algs="ES256 EdDSA"`,
			`DPoP error="invalid_token", scope="a b:c", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", algs="ES256 EdDSA"`,
			`DPoP error="insufficient_scope", error_description="more", scope="s", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", algs="ES256 EdDSA"`,
			`DPoP error="insufficient_scope", error_description="more", scope="s", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", algs="ES256 EdDSA"`,
			`DPoP error="invalid_dpop_proof", error_description="d", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", algs="ES256 EdDSA"`,
		},
	}
	for _, mode := range []DPoPMode{DPoPDisabled, DPoPAllowed, DPoPRequired} {
		cfg := Config{Resource: res, Issuers: []Issuer{{Issuer: iss, Keys: keyset.Static{{ID: "k1", Public: key.Public()}}}}}
		cfg.DPoP.Mode = mode
		if mode != DPoPDisabled {
			cfg.DPoP.Algorithms = []string{"ES256", "EdDSA"}
		}
		v, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range calls {
			var got []string
			for _, ch := range v.challenges(c.code, c.desc, c.scopes, c.scheme, c.onlyScheme) {
				got = append(got, ch.String())
			}
			if strings.Join(got, " | ") != want[mode][i] {
				t.Errorf("%v %+v:\n got %s\nwant %s", mode, c, strings.Join(got, " | "), want[mode][i])
			}
		}
	}
}
