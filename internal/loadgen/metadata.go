package loadgen

import (
	"encoding/json"
	"net/http"
)

// authServerMetadata is the issuer's RFC 8414 metadata document.
func (f *Fixture) authServerMetadata() map[string]any {
	return map[string]any{"issuer": f.Issuer, "authorization_endpoint": f.Issuer + "/authorize",
		"token_endpoint": f.Issuer + "/token", "jwks_uri": f.Issuer + "/jwks", "response_types_supported": []string{"code"},
		"code_challenge_methods_supported": []string{"S256"}}
}

// openIDConfiguration is the same issuer's OpenID Connect Discovery 1.0
// document (§3): the RFC 8414 fields with the ones OpenID Connect makes
// required, so that an OIDC relying party (oauth2-proxy, which finds the
// JWK Set and the signing algorithm only this way) trusts the same issuer
// and keys as every other candidate. It names the one algorithm the
// issuer signs with.
func (f *Fixture) openIDConfiguration() map[string]any {
	m := f.authServerMetadata()
	m["subject_types_supported"] = []string{"public"}
	m["id_token_signing_alg_values_supported"] = []string{"ES256"}
	return m
}

func serveJSON(doc func() map[string]any) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc())
	}
}

// InvalidToken returns the fixture's token of kind, one of InvalidKinds,
// that a verifier must refuse; "" for an unknown kind.
func (f *Fixture) InvalidToken(kind string) string { return f.invalid[kind] }
