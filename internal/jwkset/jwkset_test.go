package jwkset_test

import (
	"crypto"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpauth/mcpauth/internal/jwa"
	"github.com/mcpauth/mcpauth/internal/jwkset"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
)

// TestParse runs the shared JWK Set table (oauthtest.JWKSCases) against the
// parser: refused sets wrap ErrInvalid, accepted ones yield exactly the
// usable keys, each equal to the published public key.
func TestParse(t *testing.T) {
	t.Parallel()
	for _, tt := range oauthtest.JWKSCases(t) {
		t.Run(tt.Name, func(t *testing.T) {
			t.Parallel()
			keys, err := jwkset.Parse(tt.JWKS)
			if tt.Refused {
				if !errors.Is(err, jwkset.ErrInvalid) || keys != nil {
					t.Fatalf("Parse = %v, %v; want ErrInvalid", keys, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, k := range keys {
				ids = append(ids, k.ID)
			}
			if fmt.Sprint(ids) != fmt.Sprint(tt.WantIDs) {
				t.Fatalf("key IDs = %v, want %v", ids, tt.WantIDs)
			}
			if !tt.Verifies() {
				return
			}
			found := false
			for _, k := range keys {
				found = found || k.Public.(interface{ Equal(crypto.PublicKey) bool }).Equal(tt.Signer.Public())
			}
			if !found {
				t.Fatal("the signer's public key is not among the parsed keys")
			}
		})
	}
}

// TestParseAlgorithm: "alg" is kept as published, and absent stays empty.
func TestParseAlgorithm(t *testing.T) {
	t.Parallel()
	keys, err := jwkset.Parse([]byte(`{"keys":[
		{"kty":"EC","kid":"a","alg":"ES256","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
		{"kty":"EC","kid":"b","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0].Algorithm != "ES256" || keys[1].Algorithm != "" {
		t.Fatalf("keys = %+v", keys)
	}
}

func TestSecretMember(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"} {
		m := map[string]any{"kty": "RSA", "n": "AQAB", "e": "AQAB", name: "x"}
		if got, ok := jwa.SecretMember(m); !ok || got != name {
			t.Errorf("SecretMember with %q = %q, %v", name, got, ok)
		}
		set := `{"keys":[{"kty":"EC","crv":"P-256","x":"a","y":"b","` + name + `":"x"}]}`
		if _, err := jwkset.Parse([]byte(set)); err == nil || !strings.Contains(err.Error(), "private or symmetric") {
			t.Errorf("Parse of a set with %q: %v", name, err)
		}
	}
	if got, ok := jwa.SecretMember(map[string]any{"kty": "EC", "crv": "P-256", "x": "a", "y": "b", "kid": "d"}); ok {
		t.Errorf("a public key reported secret member %q", got)
	}
}
