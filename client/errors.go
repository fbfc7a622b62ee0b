package client

import (
	"errors"
	"fmt"

	"github.com/mcpauth/mcpauth/internal/safehttp"
)

// Sentinel errors. Every error the package returns wraps at least one of
// them (and, for protocol errors from a server, an *oauthmeta.Error); test
// with errors.Is and errors.As. Messages name the failed rule, never a
// token, secret, code or verifier.
var (
	// ErrConfig: the Config given to New is invalid.
	ErrConfig = errors.New("client: invalid configuration")

	// ErrNoResourceMetadata: no protected resource metadata was found at
	// the challenge's URL, the path-inserted URL or the root URL
	// (requirement CL-02).
	ErrNoResourceMetadata = errors.New("client: no protected resource metadata")
	// ErrResourceMismatch: the metadata names another resource (requirement
	// CL-03). It also matches oauthmeta.ErrResourceMismatch.
	ErrResourceMismatch = errors.New("client: protected resource metadata is for another resource")
	// ErrNoAuthServer: no authorization server listed for the resource is
	// reachable and valid (requirement CL-05).
	ErrNoAuthServer = errors.New("client: no usable authorization server")
	// ErrNoAuthServerMetadata: an authorization server publishes no metadata
	// at any of the well-known URLs (requirement CL-06).
	ErrNoAuthServerMetadata = errors.New("client: no authorization server metadata")
	// ErrIssuerMismatch: metadata names an issuer not identical to the one
	// it was fetched for (requirement CL-07). It also matches
	// oauthmeta.ErrIssuerMismatch.
	ErrIssuerMismatch = errors.New("client: authorization server metadata issuer mismatch")
	// ErrPKCEUnsupported: the authorization server does not advertise the
	// S256 code challenge method (requirement CL-08).
	ErrPKCEUnsupported = errors.New("client: authorization server does not support PKCE S256")
	// ErrInvalidMetadata: a metadata document is malformed or names an
	// unsafe endpoint (requirements CL-22, CL-23).
	ErrInvalidMetadata = errors.New("client: invalid metadata document")
	// ErrUnsafeURL: a URL the client would visit or redirect to is not https
	// (or http to loopback when allowed), or uses a dangerous scheme
	// (requirements CL-21, CL-22). It also matches oauthmeta.ErrUnsafeURL.
	ErrUnsafeURL = errors.New("client: unsafe URL")
	// ErrBlockedAddress: a fetch was refused because the target resolves
	// to a private, loopback, link-local or other special-use address
	// (requirement CL-23). No connection was made.
	ErrBlockedAddress = errors.New("client: address not allowed")
	// ErrFetch: a document could not be fetched (status, size, content
	// type, redirect, timeout, network).
	ErrFetch = errors.New("client: fetch failed")

	// ErrNoRegistration: the authorization server offers no registration
	// path this client can use: no pre-registered credentials for it, no
	// Client ID Metadata Document support, no dynamic registration
	// (requirement CL-16).
	ErrNoRegistration = errors.New("client: no way to register with the authorization server")
	// ErrIssuerChanged: the resource now names an authorization server the
	// client's pre-registered credentials are not bound to: it used them
	// with another issuer before, or they are the only credentials the
	// client has (requirement CL-18). They are never offered to the new
	// server, and the client does not register there on its own.
	ErrIssuerChanged = errors.New("client: the authorization server changed and pre-registered credentials are bound to another issuer")
	// ErrRegistration: dynamic client registration failed or was refused
	// (requirement CL-17). A refusal also wraps the server's
	// *oauthmeta.Error.
	ErrRegistration = errors.New("client: dynamic client registration failed")

	// ErrUnknownState: the authorization response carries no state, several,
	// or one that is unknown, expired or already used (requirement CL-10).
	// No token request is made.
	ErrUnknownState = errors.New("client: unknown or replayed state")
	// ErrIssuerMissing: the authorization server advertises RFC 9207 but the
	// response has no iss (requirement CL-12).
	ErrIssuerMissing = errors.New("client: authorization response lacks the iss parameter")
	// ErrIssuerParameterMismatch: the response's iss is not identical to the
	// issuer recorded before the redirect (requirement CL-12; a mix-up
	// attack). The response's error and code are not used.
	ErrIssuerParameterMismatch = errors.New("client: authorization response iss does not match the authorization server")
	// ErrRedirectMismatch: the authorization response did not arrive at the
	// redirect URI of the request.
	ErrRedirectMismatch = errors.New("client: authorization response arrived at another redirect URI")
	// ErrAuthorizationResponse: the authorization server answered with an
	// error (which is wrapped as *oauthmeta.Error) or without a code.
	ErrAuthorizationResponse = errors.New("client: authorization failed")
	// ErrAuthorizer: the Authorizer could not obtain an authorization
	// response (timeout, browser failure, user cancelled).
	ErrAuthorizer = errors.New("client: authorizer failed")

	// ErrTokenResponse: the token endpoint's answer is unusable: not a
	// strict JSON object, no access_token, a token_type that is missing or
	// not Bearer (nor DPoP after a request with a proof), or a body over
	// 1 MiB. An error response from the server
	// also wraps its *oauthmeta.Error.
	ErrTokenResponse = errors.New("client: token request failed")
	// ErrTokenType: the token endpoint issued a token_type other than
	// Bearer. It always comes with ErrTokenResponse.
	ErrTokenType = errors.New("client: unsupported token_type")
	// ErrResponseTooLarge: a response body exceeded its size cap.
	ErrResponseTooLarge = errors.New("client: response too large")

	// ErrAttemptLimit: an operation already used its authorization attempts
	// (MaxAuthorizationAttempts, requirement CL-15); the server keeps
	// refusing and the client stops instead of looping.
	ErrAttemptLimit = errors.New("client: too many authorization attempts for one operation")
	// ErrInsufficientScope: the resource answered 403 insufficient_scope
	// for a token that already carries every scope the challenge names;
	// another authorization would ask for the same scopes, so the client
	// does not start one.
	ErrInsufficientScope = errors.New("client: insufficient scope although the token carries the challenged scopes")
	// ErrForbidden: the resource answered 403 for a reason authorization
	// cannot fix (no insufficient_scope challenge).
	ErrForbidden = errors.New("client: forbidden")

	// ErrRevocation: [Client.Logout] deleted the token locally, but
	// revoking it at the authorization server (RFC 7009) failed or was
	// refused (the server's *oauthmeta.Error is wrapped when it sent
	// one): the server may still honour it until it expires. A warning,
	// not a reason to retry the logout.
	ErrRevocation = errors.New("client: token revocation at the authorization server failed")

	// ErrGrantUnsupported: the authorization server does not list the
	// grant type of the configured Grant in grant_types_supported, or,
	// for an [EnterpriseAuthorization], lists
	// authorization_grant_profiles_supported without the ID-JAG profile.
	// Nothing was sent to the IdP or the token endpoint.
	ErrGrantUnsupported = errors.New("client: authorization server does not support the grant type")
	// ErrAssertion: a JWT the client would present as a grant (a workload
	// identity token, an ID-JAG) could not be obtained, is not addressed to
	// the authorization server, or has expired. It was not sent.
	ErrAssertion = errors.New("client: unusable authorization grant assertion")
	// ErrTokenExchange: the identity provider did not exchange the ID
	// token for an ID-JAG (Enterprise-Managed Authorization). An error
	// response also wraps the IdP's *oauthmeta.Error.
	ErrTokenExchange = errors.New("client: ID-JAG token exchange failed")

	// ErrDPoPTransport: the token is DPoP-bound but would be sent without
	// a proof: by the SDK, which does not send its requests through
	// [OAuthHandler.HTTPClient], or by x/oauth2 code using
	// [Client.TokenSource].
	ErrDPoPTransport = errors.New("client: a DPoP-bound token needs a proof: send it through Client.Transport or OAuthHandler.HTTPClient")
	// ErrDPoPUnsupported: the resource accepts only DPoP-bound tokens
	// (RFC 9449 §7.1: a DPoP challenge without a Bearer one, or RFC 9728
	// dpop_bound_access_tokens_required) and they cannot be had: the
	// client has no DPoP configuration, the authorization server does not
	// advertise DPoP, no proof algorithm is accepted by the authorization
	// server, the resource and the client's key, or the authorization
	// server issued a Bearer token anyway. Apart from the last case it is
	// returned before any authorization or token request; the client never
	// falls back to a Bearer token there.
	ErrDPoPUnsupported = errors.New("client: the resource requires DPoP-bound tokens and none can be obtained")
)

// wrapFetch maps a safehttp error to this package's sentinels, keeping
// the original in the chain.
func wrapFetch(what string, err error) error {
	switch {
	case errors.Is(err, safehttp.ErrBlockedAddress):
		return fmt.Errorf("%w: %s: %w", ErrBlockedAddress, what, err)
	case errors.Is(err, safehttp.ErrScheme), errors.Is(err, safehttp.ErrInvalidURL):
		return fmt.Errorf("%w: %s: %w", ErrUnsafeURL, what, err)
	case errors.Is(err, safehttp.ErrTooLarge):
		return fmt.Errorf("%w: %w: %s: %w", ErrFetch, ErrResponseTooLarge, what, err)
	default:
		return fmt.Errorf("%w: %s: %w", ErrFetch, what, err)
	}
}
