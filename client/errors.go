package client

import (
	"errors"
	"fmt"

	"github.com/mcpauth/mcpauth/internal/safehttp"
)

// Error classes: what a host branches on with errors.Is. Every error the
// package returns, apart from a cancelled context's and the Store's own,
// matches one of them; most are also an [*Error] that names the reason
// (configuration errors and revocation warnings name it in their message
// alone). A refusal from a server also
// wraps the server's *oauthmeta.Error, so errors.Is(err,
// &oauthmeta.Error{Code: oauthmeta.CodeInvalidGrant}) tells a dead grant
// from other refusals. Messages never contain a token, secret, code or
// verifier.
var (
	// ErrConfig: the program is misconfigured: the [Config] given to
	// [New], a [Grant], an [Authorizer] or the MCP server URL is invalid,
	// or a DPoP-bound token would be sent without a proof (by the SDK,
	// whose requests do not go through [OAuthHandler.HTTPClient], or by
	// x/oauth2 code using [Client.TokenSource]).
	ErrConfig = errors.New("client: invalid configuration")

	// ErrDiscovery: the MCP server's authorization server cannot be found,
	// or this client cannot use it. Reasons: no protected resource
	// metadata, metadata for another resource or issuer, no usable
	// authorization server, no authorization server metadata, no PKCE
	// S256, an invalid metadata document, an unsafe URL, an address not
	// allowed (private, loopback, link-local; no connection was made), a
	// failed or oversized fetch, no way to register (or pre-registered
	// credentials bound to another issuer: they are never offered to the
	// new one), a refused dynamic registration, a grant type the server
	// does not support, or a resource that accepts only DPoP-bound tokens
	// when none can be had (the client never falls back to Bearer there).
	ErrDiscovery = errors.New("client: discovery failed")

	// ErrAuthorization: the user's authorization did not complete. The
	// [Authorizer] failed or timed out (a [Loopback] timeout also matches
	// context.DeadlineExceeded), the authorization server answered with
	// an error (access_denied: the user refused), or the response failed
	// a check: unknown or replayed state, missing or different RFC 9207
	// iss (a mix-up attack: the response's code and error text are not
	// used), another redirect URI. A new authorization may succeed.
	ErrAuthorization = errors.New("client: authorization failed")

	// ErrTokenRequest: the authorization server did not issue a usable
	// token. It refused the request (its *oauthmeta.Error is wrapped:
	// invalid_grant for an expired or revoked grant, invalid_client for
	// bad credentials), its answer was unusable (not one strict JSON
	// object, no access_token, a token_type other than Bearer (or DPoP
	// after a request with a proof), a body over 1 MiB), the token
	// endpoint could not
	// be reached, or a machine grant failed before the request: an
	// assertion that is unusable (not for this server, expired) or an
	// ID-JAG the identity provider would not issue. Machine grants are
	// not retried.
	ErrTokenRequest = errors.New("client: token request failed")

	// ErrForbidden: the MCP server refuses access and another
	// authorization would not change that: a 403 without
	// insufficient_scope, a 403 insufficient_scope for a token that
	// already carries every challenged scope (step-up cannot help), or
	// refusals after [MaxAuthorizationAttempts] authorizations in one
	// operation. [Transport] returns the server's response instead.
	ErrForbidden = errors.New("client: forbidden")

	// ErrRevocation: [Client.Logout] deleted the token locally, but
	// revoking it at the authorization server (RFC 7009) failed or was
	// refused (the server's *oauthmeta.Error is wrapped when it sent
	// one): the server may still honour it until it expires. A warning,
	// not a reason to retry the logout.
	ErrRevocation = errors.New("client: token revocation at the authorization server failed")
)

// Error is a failure with its specific reason. It unwraps to its class
// ([ErrDiscovery], [ErrAuthorization], [ErrTokenRequest], [ErrForbidden],
// [ErrRevocation] or [ErrConfig]), which is what a host branches on;
// errors.As to *Error gives the reason, for logs and messages. Like
// *oauthmeta.Error, errors.Is(err, &Error{Reason: r}) matches any *Error
// in err's chain with reason r.
type Error struct {
	// Reason is the fixed description of the failure, such as "unknown
	// or replayed state" or "authorization server metadata issuer
	// mismatch". It never contains request data.
	Reason string

	class error
}

func (e *Error) Error() string { return "client: " + e.Reason }

// Unwrap returns the error's class.
func (e *Error) Unwrap() error { return e.class }

// Is reports whether target is an *Error with the same Reason.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Reason == e.Reason
}

func reason(class error, desc string) error { return &Error{Reason: desc, class: class} }

// Reasons for ErrConfig.
var errDPoPTransport = reason(ErrConfig, "a DPoP-bound token needs a proof: send it through Client.Transport or OAuthHandler.HTTPClient")

// Reasons for ErrDiscovery.
var (
	errNoResourceMetadata   = reason(ErrDiscovery, "no protected resource metadata")
	errResourceMismatch     = reason(ErrDiscovery, "protected resource metadata is for another resource")
	errNoAuthServer         = reason(ErrDiscovery, "no usable authorization server")
	errNoAuthServerMetadata = reason(ErrDiscovery, "no authorization server metadata")
	errIssuerMismatch       = reason(ErrDiscovery, "authorization server metadata issuer mismatch")
	errPKCEUnsupported      = reason(ErrDiscovery, "authorization server does not support PKCE S256")
	errInvalidMetadata      = reason(ErrDiscovery, "invalid metadata document")
	errUnsafeURL            = reason(ErrDiscovery, reasonUnsafeURL)
	errNoRegistration       = reason(ErrDiscovery, "no way to register with the authorization server")
	errIssuerChanged        = reason(ErrDiscovery, "the authorization server changed and pre-registered credentials are bound to another issuer")
	errRegistration         = reason(ErrDiscovery, "dynamic client registration failed")
	errGrantUnsupported     = reason(ErrDiscovery, "authorization server does not support the grant type")
	errDPoPUnsupported      = reason(ErrDiscovery, "the resource requires DPoP-bound tokens and none can be obtained")
)

// Reasons for ErrAuthorization.
var (
	errUnknownState            = reason(ErrAuthorization, "unknown or replayed state")
	errIssuerMissing           = reason(ErrAuthorization, "authorization response lacks the iss parameter")
	errIssuerParameterMismatch = reason(ErrAuthorization, "authorization response iss does not match the authorization server")
	errRedirectMismatch        = reason(ErrAuthorization, "authorization response arrived at another redirect URI")
	errAuthorizationResponse   = reason(ErrAuthorization, "authorization response carries an error or no code")
	errAuthorizer              = reason(ErrAuthorization, "authorizer failed")
	errTimeout                 = reason(ErrAuthorization, "timed out waiting for the authorization response")
	// errUnsafeAuthorizationURL: the authorization URL, the redirect URI
	// or the URL given to the browser is unsafe.
	errUnsafeAuthorizationURL = reason(ErrAuthorization, reasonUnsafeURL)
)

// Reasons for ErrTokenRequest.
var (
	errTokenResponse = reason(ErrTokenRequest, "token request failed")
	errTokenType     = reason(ErrTokenRequest, "unsupported token_type")
	errAssertion     = reason(ErrTokenRequest, "unusable authorization grant assertion")
	errTokenExchange = reason(ErrTokenRequest, "ID-JAG token exchange failed")
)

// Reasons for ErrForbidden.
var (
	errAttemptLimit      = reason(ErrForbidden, "too many authorization attempts for one operation")
	errInsufficientScope = reason(ErrForbidden, "insufficient scope although the token carries the challenged scopes")
	errForbiddenStatus   = reason(ErrForbidden, "forbidden")
)

// Reasons of a failed fetch, in the class of the operation that fetched.
const (
	reasonUnsafeURL      = "unsafe URL"
	reasonBlocked        = "address not allowed"
	reasonFetch          = "fetch failed"
	reasonResponseTooBig = "response too large"
)

// Fetch reasons in ErrDiscovery, for tests and the checks that compare.
var (
	errBlockedAddress   = reason(ErrDiscovery, reasonBlocked)
	errFetch            = reason(ErrDiscovery, reasonFetch)
	errResponseTooLarge = reason(ErrDiscovery, reasonResponseTooBig)
)

// wrapFetch maps a safehttp error to a reason of class, keeping the
// original in the chain.
func wrapFetch(class error, what string, err error) error {
	switch {
	case errors.Is(err, safehttp.ErrBlockedAddress):
		return fmt.Errorf("%w: %s: %w", reason(class, reasonBlocked), what, err)
	case errors.Is(err, safehttp.ErrScheme), errors.Is(err, safehttp.ErrInvalidURL):
		return fmt.Errorf("%w: %s: %w", reason(class, reasonUnsafeURL), what, err)
	case errors.Is(err, safehttp.ErrTooLarge):
		return fmt.Errorf("%w: %w: %s: %w", reason(class, reasonFetch), reason(class, reasonResponseTooBig), what, err)
	default:
		return fmt.Errorf("%w: %s: %w", reason(class, reasonFetch), what, err)
	}
}
