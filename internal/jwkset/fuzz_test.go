package jwkset_test

import (
	"testing"

	"github.com/mcpauth/mcpauth/internal/jwa"
	"github.com/mcpauth/mcpauth/internal/jwkset"
)

// FuzzParse: never panics; an accepted set is non-empty and every key it
// returns is a public key that fits its algorithm.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","d":"AA"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"AA"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","use":"sig","key_ops":["verify"]}]}`))
	f.Add([]byte(`{"keys":[],"keys":[]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := jwkset.Parse(data)
		if err != nil {
			if keys != nil {
				t.Fatal("keys returned with an error")
			}
			return
		}
		if len(keys) == 0 {
			t.Fatal("accepted a set without keys")
		}
		for _, k := range keys {
			alg := k.Algorithm
			if alg == "" {
				var err error
				if alg, err = jwa.ForKey(k.Public); err != nil {
					t.Fatalf("unusable key %T: %v", k.Public, err)
				}
			}
			if err := jwa.CheckKey(k.Public, alg); err != nil {
				t.Fatalf("key %T does not fit %s: %v", k.Public, alg, err)
			}
		}
	})
}
