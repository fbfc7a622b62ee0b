package oauthmeta

// Token type hints of an RFC 7009 §2.1 revocation request ("token_type_hint"),
// which tell the authorization server where to look for the token first.
const (
	TokenTypeHintAccessToken  = "access_token"
	TokenTypeHintRefreshToken = "refresh_token"
)
