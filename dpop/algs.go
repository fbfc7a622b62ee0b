package dpop

import "github.com/mcpauth/mcpauth/internal/jwkset"

// DefaultAlgorithms returns the proof algorithms accepted where a
// configuration names none: every asymmetric algorithm go-jose verifies
// (ES256, ES384, ES512, RS256, RS384, RS512, PS256, PS384, PS512 and
// EdDSA), which covers every key a [Prover] picks an algorithm for. It is
// the one default list of the module's DPoP verifiers (the resource
// server's and the authorization server's) and of the client's choice.
func DefaultAlgorithms() []string {
	return []string{jwkset.ES256, jwkset.ES384, jwkset.ES512,
		jwkset.RS256, jwkset.RS384, jwkset.RS512,
		jwkset.PS256, jwkset.PS384, jwkset.PS512, jwkset.EdDSA}
}
