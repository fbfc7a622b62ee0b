package jwkset_test

import (
	"fmt"

	"github.com/mcpauth/mcpauth/internal/jwkset"
)

func ExampleParse() {
	keys, err := jwkset.Parse([]byte(`{"keys":[
		{"kty":"EC","kid":"sig-1","use":"sig","alg":"ES256","crv":"P-256",
		 "x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
		{"kty":"EC","kid":"enc-1","use":"enc","crv":"P-256",
		 "x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}`))
	fmt.Println(len(keys), keys[0].ID, keys[0].Algorithm, err)

	_, err = jwkset.Parse([]byte(`{"keys":[{"kty":"oct","kid":"hmac","k":"c2VjcmV0"}]}`))
	fmt.Println(err)
	// Output:
	// 1 sig-1 ES256 <nil>
	// jwkset: unusable JWK Set: key 0: private or symmetric key material ("k")
}
