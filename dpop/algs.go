package dpop

import "github.com/mcpauth/mcpauth/internal/jwa"

// DefaultAlgorithms returns the proof algorithms accepted where a
// configuration names none: every asymmetric algorithm go-jose verifies
// (ES256, ES384, ES512, RS256, RS384, RS512, PS256, PS384, PS512 and
// EdDSA), which covers every key a [Prover] picks an algorithm for. It is
// the one default list of the module's DPoP verifiers (the resource
// server's and the authorization server's) and of the client's choice.
func DefaultAlgorithms() []string { return jwa.Defaults(jwa.DPoPProof) }
