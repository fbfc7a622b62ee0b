package dpop

import (
	"testing"

	"github.com/mcpauth/mcpauth/internal/jsonx"
)

// FuzzDecodeClaims checks that the single-pass claims decoder (DPoP proof
// validation, RFC 9449 §4.3 checks 3 and 8–12) never accepts a payload
// jsonx refuses and yields exactly jsonx's values when it accepts.
func FuzzDecodeClaims(f *testing.F) {
	for _, seed := range []string{
		`{"jti":"j","htm":"POST","htu":"https://mcp.example.com/mcp","iat":1785240000,"ath":"x"}`,
		` { "jti" : "j" , "iat" : 1785240000.25 , "nonce":"n" } `,
		`{}`, `{"jti":"a","jti":"b"}`, `{"iat":01}`, `{"iat":1e3}`, `{"iat":-1}`, `{"iat":1.}`,
		`{"jti":"\u0041"}`, `{"JTI":"a"}`, `{"jti":"a",}`, `{"jti":"a"}x`, `{"jti":"a"}{}`,
		`{"jti":null}`, `{"iat":"1"}`, `{"other":1,"jti":"a"}`, "{\"jti\":\"\xff\"}", `[]`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		var fast wireClaims
		if !fastDecodeClaims(payload, &fast) {
			return
		}
		var slow wireClaims
		if err := jsonx.DecodeObject(payload, &slow); err != nil {
			t.Fatalf("fast path accepted %q, jsonx refused it: %v", payload, err)
		}
		if slow.IAT != nil {
			slow.iat, slow.hasIAT = *slow.IAT, true
		}
		fast.IAT, slow.IAT = nil, nil
		if fast != slow {
			t.Fatalf("fast path decoded %q as %+v, jsonx as %+v", payload, fast, slow)
		}
	})
}
