package jwa

// Kind is a kind of JWS the module signs or verifies. Each kind has one
// default algorithm list, [Defaults]; a configuration that names its own
// list replaces it ([Allowlist]).
type Kind int

// The kinds of JWS, each with its default list.
const (
	// AccessToken: a JWT access token verified by a resource server
	// (RFC 9068). ES256 and RS256: RFC 9068 §4 makes RS256 the one
	// algorithm every resource server supports, ES256 is what most
	// authorization servers sign with, and nothing else is accepted unless
	// configured.
	AccessToken Kind = iota + 1
	// ClientAssertion: a client assertion (private_key_jwt) or a JWT
	// authorization grant (RFC 7523), verified by the authorization server.
	// ES256, RS256, PS256 and EdDSA: what client libraries sign with, and
	// what the authorization server publishes as
	// token_endpoint_auth_signing_alg_values_supported.
	ClientAssertion
	// ServerToken: what the authorization server signs with its own keys
	// and accepts back (its access tokens). ES256, RS256 and EdDSA: the
	// algorithms it generates keys for.
	ServerToken
	// IDToken: an ID token from an upstream OpenID provider. Every
	// asymmetric algorithm: the provider chooses.
	IDToken
	// DPoPProof: a DPoP proof (RFC 9449 §4.2). Every asymmetric algorithm:
	// the client chooses, and the list is published as
	// dpop_signing_alg_values_supported.
	DPoPProof
)

// Defaults returns the default algorithm list of k, a new slice on every
// call: the one table of the module's defaults. An unknown kind has an
// empty list, which allows nothing. No list holds "none" or an HMAC
// algorithm (RFC 8725 §3.1).
func Defaults(k Kind) []string {
	switch k {
	case AccessToken:
		return []string{ES256, RS256}
	case ClientAssertion:
		return []string{ES256, RS256, PS256, EdDSA}
	case ServerToken:
		return []string{ES256, RS256, EdDSA}
	case IDToken, DPoPProof:
		return []string{ES256, ES384, ES512, RS256, RS384, RS512, PS256, PS384, PS512, EdDSA}
	}
	return nil
}
