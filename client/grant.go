package client

import (
	"context"
	"crypto"
	"fmt"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Grant obtains tokens without a user, in place of the interactive
// authorization code flow: [ClientCredentials] (OAuth 2.1 §4.2),
// [EnterpriseAuthorization] (an ID-JAG from the enterprise IdP, then the
// JWT-bearer grant) and [WorkloadIdentity] (a platform-issued JWT and the
// JWT-bearer grant). Discovery is the same as for interactive clients: the
// MCP server's 401 leads to its authorization server, and the grant runs
// there. A failed grant is reported as is: the client never retries it or
// falls back to another grant. The interface is sealed.
type Grant interface {
	prepare(c *Client) (grantFlow, error)
}

// grantFlow is a validated Grant.
type grantFlow interface {
	// clientID is the client_id tokens from issuer are stored under, or
	// ok false when the grant may not be used with issuer.
	clientID(issuer string) (id string, ok bool)
	// run obtains a token at the authorization server of g.d, which
	// clientID allows.
	run(ctx context.Context, g *grantRun) (*tokenstore.Token, error)
	// authentication is how the client authenticates at the token
	// endpoint (and, on logout, the revocation endpoint).
	authentication() *clientAuth
}

// Credentials authenticate a machine client at a token endpoint (OAuth 2.1
// §2.4): a client secret (client_secret_basic, or client_secret_post), or a
// private key for private_key_jwt (RFC 7523 §2.2; the assertion's "aud" is
// the authorization server's issuer identifier, its "iss" and "sub" the
// client_id, with a fresh "jti" and a 60-second lifetime).
type Credentials struct {
	// ClientID is the client identifier at the server. Required, except
	// that a [WorkloadIdentity] may go without one.
	ClientID string
	// ClientSecret is the shared secret. Empty means none.
	ClientSecret string
	// PrivateKey signs private_key_jwt assertions: ECDSA (P-256, P-384,
	// P-521), RSA (2048 bits or more) or Ed25519, or any crypto.Signer over
	// one of those. Nil means none.
	PrivateKey crypto.Signer
	// PrivateKeyPEM is the private key in PEM (PKCS #8, SEC 1 or PKCS #1),
	// when PrivateKey is nil.
	PrivateKeyPEM []byte
	// Algorithm is the assertion's JWS "alg". Empty means ES256, ES384 or
	// ES512 by curve, RS256 for RSA, EdDSA for Ed25519.
	Algorithm string
	// KeyID is the assertion's "kid". Empty omits it.
	KeyID string
	// AuthMethod is the token endpoint authentication method. Empty means
	// private_key_jwt with a key, client_secret_basic with a secret, and
	// none (client_id in the body) otherwise.
	AuthMethod string
}

// prepare validates the credentials; what names them in errors.
func (cr *Credentials) prepare(c *Client, what string) (*clientAuth, error) {
	a := &clientAuth{method: cr.AuthMethod, clientID: cr.ClientID, secret: cr.ClientSecret}
	key := cr.PrivateKey
	if key == nil && len(cr.PrivateKeyPEM) > 0 {
		k, err := jwtassert.ParsePrivateKeyPEM(cr.PrivateKeyPEM)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrConfig, what, err)
		}
		key = k
	}
	if a.method == "" {
		switch {
		case key != nil:
			a.method = oauthmeta.AuthMethodPrivateKeyJWT
		case a.secret != "":
			a.method = oauthmeta.AuthMethodClientSecretBasic
		default:
			a.method = oauthmeta.AuthMethodNone
		}
	}
	switch a.method {
	case oauthmeta.AuthMethodPrivateKeyJWT:
		if key == nil || a.clientID == "" {
			return nil, fmt.Errorf("%w: %s: private_key_jwt needs ClientID and a private key", ErrConfig, what)
		}
		s, err := jwtassert.NewClientAssertionSigner(jwtassert.ClientAssertionSignerConfig{
			ClientID: a.clientID, Key: key, Algorithm: cr.Algorithm, KeyID: cr.KeyID, Now: c.clock,
		})
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrConfig, what, err)
		}
		a.signer = s
	case oauthmeta.AuthMethodClientSecretBasic, oauthmeta.AuthMethodClientSecretPost:
		if a.secret == "" || a.clientID == "" {
			return nil, fmt.Errorf("%w: %s: %s needs ClientID and ClientSecret", ErrConfig, what, a.method)
		}
	case oauthmeta.AuthMethodNone:
		if a.secret != "" {
			return nil, fmt.Errorf("%w: %s: a secret cannot be sent with auth method none", ErrConfig, what)
		}
	default:
		return nil, fmt.Errorf("%w: %s: unsupported token endpoint auth method", ErrConfig, what)
	}
	return a, nil
}

// issuerBinding is the authorization servers a grant may talk to: exactly
// Issuer, or with InsecureAnyIssuer any server a resource names.
type issuerBinding struct {
	issuer string
	any    bool
}

func newIssuerBinding(c *Client, issuer string, anyIssuer bool, auth *clientAuth, what string) (issuerBinding, error) {
	if issuer != "" {
		if err := c.policy.CheckIssuer(issuer); err != nil {
			return issuerBinding{}, fmt.Errorf("%w: %s: Issuer: %w", ErrConfig, what, err)
		}
		return issuerBinding{issuer: issuer}, nil
	}
	// A shared secret shown to whichever server a resource names could be
	// collected by a malicious resource; an assertion
	// is bound to the server's issuer and needs no binding.
	if auth != nil && auth.secret != "" && !anyIssuer {
		return issuerBinding{}, fmt.Errorf("%w: %s: a client secret needs Issuer (or InsecureAnyIssuer)", ErrConfig, what)
	}
	return issuerBinding{any: true}, nil
}

func (b issuerBinding) allows(issuer string) bool { return b.any || b.issuer == issuer }

// ClientCredentials is the client credentials grant (OAuth 2.1 §4.2, the MCP
// "OAuth Client Credentials" extension) for a client acting on its own
// behalf, authenticated with a client secret or private_key_jwt.
type ClientCredentials struct {
	// Issuer is the authorization server the credentials belong to; a
	// resource naming another server gets [ErrDiscovery]. Required with a
	// client secret unless InsecureAnyIssuer is set; empty with a private
	// key means any server, each getting assertions addressed to itself
	// alone.
	Issuer string
	// Credentials authenticate the client. ClientID is required.
	Credentials Credentials
	// Scopes are requested. Nil means chosen as for a login: the
	// challenge's scope, else the resource's scopes_supported.
	Scopes []string
	// InsecureAnyIssuer offers a client secret to whichever authorization
	// server a resource names. A malicious resource can then collect it.
	InsecureAnyIssuer bool
}

// WorkloadIdentity is workload identity federation (the MCP "Workload
// Identity Federation" extension): a JWT issued by the workload's platform
// (a Kubernetes service account token, a cloud identity token, a CI job
// token) is presented with the JWT-bearer grant (RFC 7523 §2.1). Before
// sending it the client checks, without verifying the signature, that its
// "aud" names the authorization server (issuer or token endpoint) and that
// it has not expired, so a token meant for another audience is never shown
// to this server ([ErrTokenRequest]).
type WorkloadIdentity struct {
	// Assertion returns a fresh platform JWT for audience (the
	// authorization server's issuer identifier). Either Assertion or
	// AssertionFile is required.
	Assertion func(ctx context.Context, audience string) (string, error)
	// AssertionFile is a file holding the JWT (a projected service account
	// token), read on every grant, at most 64 KiB.
	AssertionFile string
	// Issuer restricts the grant to one authorization server. Empty means
	// any server whose issuer the assertion names.
	Issuer string
	// Credentials optionally authenticate the client as well; ClientID
	// alone sends client_id with auth method none.
	Credentials Credentials
	// Scopes are requested. Nil means chosen as for a login.
	Scopes []string
}

// EnterpriseAuthorization is the MCP "Enterprise-Managed Authorization"
// extension (draft-ietf-oauth-identity-assertion-authz-grant): the user's
// ID token from the enterprise IdP is exchanged there (RFC 8693) for an
// Identity Assertion JWT Authorization Grant (ID-JAG) addressed to the MCP
// server's authorization server and resource, which the client then
// presents with the JWT-bearer grant (RFC 7523).
//
// Before asking the IdP, the client reads the authorization server's
// metadata (the extension's §6): without the JWT-bearer grant in
// grant_types_supported, or with an authorization_grant_profiles_supported
// that does not list "urn:ietf:params:oauth:grant-profile:id-jag", the
// grant fails with [ErrDiscovery] and the ID token is never sent. The
// member is optional, so a server that omits it is tried; if it then
// refuses the ID-JAG, the error says the profile was not advertised.
type EnterpriseAuthorization struct {
	// IdPTokenEndpoint is the IdP's token endpoint. Required; https, or
	// http to loopback with Config.InsecureAllowHTTPLoopback.
	IdPTokenEndpoint string
	// IdPCredentials authenticate the client at the IdP. ClientID is
	// required; without a secret or key it is sent with auth method none.
	IdPCredentials Credentials
	// IDToken returns the user's ID token from the IdP's single sign-on.
	// Required.
	IDToken func(ctx context.Context) (string, error)
	// Issuer is the MCP authorization server the credentials belong to;
	// see ClientCredentials.Issuer.
	Issuer string
	// Credentials authenticate the client at the MCP authorization server.
	// ClientID is required: the ID-JAG names it.
	Credentials Credentials
	// Scopes are requested. Nil means chosen as for a login.
	Scopes []string
	// InsecureAnyIssuer: see ClientCredentials.InsecureAnyIssuer.
	InsecureAnyIssuer bool
}
