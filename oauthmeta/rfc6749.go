package oauthmeta

import (
	"fmt"
	"slices"
	"strings"
)

// ErrorCode is a registered OAuth error code, the value of the "error"
// parameter in an error response or challenge.
type ErrorCode string

// Error codes from RFC 6749 §4.1.2.1 and §5.2, RFC 6750 §3.1, RFC 7009 §2.2.1,
// RFC 7591 §3.2.2, RFC 8707 §2 and RFC 9449 §12.2.
const (
	CodeInvalidRequest          ErrorCode = "invalid_request"
	CodeInvalidClient           ErrorCode = "invalid_client"
	CodeInvalidGrant            ErrorCode = "invalid_grant"
	CodeUnauthorizedClient      ErrorCode = "unauthorized_client"
	CodeUnsupportedGrantType    ErrorCode = "unsupported_grant_type"
	CodeInvalidScope            ErrorCode = "invalid_scope"
	CodeAccessDenied            ErrorCode = "access_denied"
	CodeUnsupportedResponseType ErrorCode = "unsupported_response_type"
	CodeServerError             ErrorCode = "server_error"
	CodeTemporarilyUnavailable  ErrorCode = "temporarily_unavailable"
	CodeInvalidToken            ErrorCode = "invalid_token"
	CodeInsufficientScope       ErrorCode = "insufficient_scope"
	CodeUnsupportedTokenType    ErrorCode = "unsupported_token_type"
	CodeInvalidRedirectURI      ErrorCode = "invalid_redirect_uri"
	CodeInvalidClientMetadata   ErrorCode = "invalid_client_metadata"
	CodeInvalidTarget           ErrorCode = "invalid_target"
	CodeInvalidDPoPProof        ErrorCode = "invalid_dpop_proof"
	CodeUseDPoPNonce            ErrorCode = "use_dpop_nonce"
)

// Error is the OAuth error response body of RFC 6749 §5.2, also used for the
// error parameters of an authorization response (§4.1.2.1) and of a bearer
// challenge (RFC 6750 §3). It is the one protocol error type of mcpauth:
// errors.Is(err, &Error{Code: c}) matches any *Error with code c.
type Error struct {
	// Code is the "error" member. REQUIRED.
	Code ErrorCode `json:"error"`
	// Description is "error_description": human-readable ASCII text for the
	// developer. OPTIONAL. It must never contain a token or secret.
	Description string `json:"error_description,omitempty"`
	// URI is "error_uri": a page about the error. OPTIONAL.
	URI string `json:"error_uri,omitempty"`
	// ConnectURI is the [ParamConnectURI] member of an invalid_grant
	// token exchange error: the authorization server's page where the
	// user connects the third-party account the exchange asked for. It
	// names an opaque, single-use reference and nothing about the user;
	// a resource server sends the user there (in MCP, as a URL-mode
	// elicitation). Empty otherwise.
	ConnectURI string `json:"connect_uri,omitempty"`
}

// ParamConnectURI is the error member that carries [Error.ConnectURI].
const ParamConnectURI = "connect_uri"

// Error implements the error interface.
func (e *Error) Error() string {
	if e.Description == "" {
		return "oauth error: " + string(e.Code)
	}
	return fmt.Sprintf("oauth error: %s: %s", e.Code, e.Description)
}

// Is reports whether target is an *Error with the same Code, so that
// errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidGrant}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// ParseError decodes an RFC 6749 §5.2 error body. The "error" member is
// required and must be a valid error code: characters of RFC 6749 §5.2
// (%x20-21 / %x23-5B / %x5D-7E) without the space, which no registered
// code has, so a code is one scope-token. "error_description" is kept as
// sent.
func ParseError(data []byte) (*Error, error) {
	var e Error
	if err := DecodeJSON(data, &e); err != nil {
		return nil, err
	}
	if e.Code == "" {
		return nil, errField(ErrMissingField, "error", "")
	}
	if !ValidScopeToken(string(e.Code)) { // NQSCHAR without the space
		return nil, errField(ErrMalformed, "error", "invalid characters")
	}
	return &e, nil
}

// TokenResponse is the successful token response of RFC 6749 §5.1 (OAuth 2.1
// §3.2.3), with the refresh token of §6 and the DPoP token type of RFC 9449.
type TokenResponse struct {
	// AccessToken is "access_token". REQUIRED.
	AccessToken string `json:"access_token"`
	// TokenType is "token_type": "Bearer" (RFC 6750) or "DPoP" (RFC 9449).
	// REQUIRED; compared case-insensitively (RFC 6749 §5.1).
	TokenType string `json:"token_type"`
	// ExpiresIn is "expires_in", the lifetime in seconds. RECOMMENDED.
	ExpiresIn int64 `json:"expires_in,omitempty"`
	// RefreshToken is "refresh_token". OPTIONAL.
	RefreshToken string `json:"refresh_token,omitempty"`
	// Scope is "scope", space-separated. REQUIRED if it differs from the
	// requested scope, OPTIONAL otherwise.
	Scope string `json:"scope,omitempty"`
	// IssuedTokenType is "issued_token_type" (RFC 8693 §2.2.1), for token
	// exchange responses only.
	IssuedTokenType string `json:"issued_token_type,omitempty"`
}

// ParseScope splits an RFC 6749 §3.3 scope string into its tokens, dropping
// empty tokens and duplicates but keeping the first-seen order. It rejects a
// token with characters outside %x21 / %x23-5B / %x5D-7E.
func ParseScope(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	out, err := AppendScope(make([]string, 0, strings.Count(s, " ")+1), s)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AppendScope is [ParseScope] appending to dst, for callers that bring their
// own storage: the tokens of s are appended in first-seen order, empty
// tokens and repeats within s skipped. On error dst is returned unchanged in
// length, with an error wrapping [ErrInvalidScope].
func AppendScope(dst []string, s string) ([]string, error) {
	start := len(dst)
	for rest := s; rest != ""; {
		var f string
		f, rest, _ = strings.Cut(rest, " ")
		if f == "" {
			continue
		}
		if !ValidScopeToken(f) {
			return dst[:start], errField(ErrInvalidScope, "scope", "invalid characters")
		}
		if !slices.Contains(dst[start:], f) {
			dst = append(dst, f)
		}
	}
	return dst, nil
}

// FormatScope joins scope tokens with single spaces (RFC 6749 §3.3).
func FormatScope(scopes []string) string { return strings.Join(scopes, " ") }

// ValidScopeToken reports whether tok is a non-empty RFC 6749 §3.3
// scope-token: 1*( %x21 / %x23-5B / %x5D-7E ).
func ValidScopeToken(tok string) bool {
	return tok != "" && !strings.ContainsFunc(tok, func(r rune) bool { return r <= 0x20 || r > 0x7e || r == '"' || r == '\\' })
}

// ParseTokenResponse decodes a successful token response and checks the
// members RFC 6749 §5.1 requires. It does not judge token_type; callers
// decide which types they accept.
func ParseTokenResponse(data []byte) (*TokenResponse, error) {
	var r TokenResponse
	if err := DecodeJSON(data, &r); err != nil {
		return nil, err
	}
	if r.AccessToken == "" {
		return nil, errField(ErrMissingField, "access_token", "")
	}
	if r.TokenType == "" {
		return nil, errField(ErrMissingField, "token_type", "")
	}
	if r.ExpiresIn < 0 {
		return nil, errField(ErrMalformed, "expires_in", "negative")
	}
	return &r, nil
}
