package oauthmeta

import "net/url"

// Token type identifiers of RFC 8693 §3 and the extensions mcpauth speaks,
// for subject_token_type, requested_token_type and issued_token_type.
const (
	TokenTypeAccessToken  = "urn:ietf:params:oauth:token-type:access_token"
	TokenTypeRefreshToken = "urn:ietf:params:oauth:token-type:refresh_token"
	TokenTypeIDToken      = "urn:ietf:params:oauth:token-type:id_token"
	TokenTypeJWT          = "urn:ietf:params:oauth:token-type:jwt"
	// TokenTypeIDJAG is the Identity Assertion JWT Authorization Grant of
	// draft-ietf-oauth-identity-assertion-authz-grant.
	TokenTypeIDJAG = "urn:ietf:params:oauth:token-type:id-jag"
)

// TokenExchangeRequest is an RFC 8693 §2.1 token exchange request; the
// response is a [TokenResponse] with IssuedTokenType set.
type TokenExchangeRequest struct {
	// SubjectToken and SubjectTokenType are "subject_token" and
	// "subject_token_type". REQUIRED.
	SubjectToken, SubjectTokenType string
	// RequestedTokenType is "requested_token_type". OPTIONAL.
	RequestedTokenType string
	// Audience and Resource name the target service ("audience",
	// "resource", RFC 8707). OPTIONAL.
	Audience, Resource []string
	// Scope is "scope", space-separated. OPTIONAL.
	Scope string
	// ActorToken and ActorTokenType are "actor_token" and
	// "actor_token_type" (§2.1): the credential of the party that will act
	// for the subject. OPTIONAL; the type is required with a token.
	ActorToken, ActorTokenType string
}

// Form returns the request as token endpoint parameters, with grant_type.
func (r *TokenExchangeRequest) Form() url.Values {
	f := url.Values{"grant_type": {GrantTypeTokenExchange}, "subject_token": {r.SubjectToken},
		"subject_token_type": {r.SubjectTokenType}}
	if r.RequestedTokenType != "" {
		f.Set("requested_token_type", r.RequestedTokenType)
	}
	if len(r.Audience) > 0 {
		f["audience"] = r.Audience
	}
	if len(r.Resource) > 0 {
		f["resource"] = r.Resource
	}
	if r.Scope != "" {
		f.Set("scope", r.Scope)
	}
	if r.ActorToken != "" {
		f.Set("actor_token", r.ActorToken)
		f.Set("actor_token_type", r.ActorTokenType)
	}
	return f
}
