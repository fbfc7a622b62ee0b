package client

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// grantRun is one grant at the authorization server of d.
type grantRun struct {
	d      *tokenstore.Discovery
	scopes []string // chosen by the MCP strategy (CL-14)
	dpop   *dpopKey // the key the token is bound to; nil: Bearer
}

func pickScopes(configured, chosen []string) []string {
	if configured != nil {
		return configured
	}
	return chosen
}

// ccFlow is a prepared ClientCredentials.
type ccFlow struct {
	c      *Client
	b      issuerBinding
	auth   *clientAuth
	scopes []string
}

func (g *ClientCredentials) prepare(c *Client) (grantFlow, error) {
	auth, err := g.Credentials.prepare(c, "ClientCredentials")
	if err != nil {
		return nil, err
	}
	if auth.method == oauthmeta.AuthMethodNone {
		return nil, fmt.Errorf("%w: ClientCredentials: the client must authenticate (a secret or a private key)", ErrConfig)
	}
	b, err := newIssuerBinding(c, g.Issuer, g.InsecureAnyIssuer, auth, "ClientCredentials")
	if err != nil {
		return nil, err
	}
	return &ccFlow{c: c, b: b, auth: auth, scopes: g.Scopes}, nil
}

func (f *ccFlow) clientID(issuer string) (string, bool) { return f.auth.clientID, f.b.allows(issuer) }

func (f *ccFlow) authentication() *clientAuth { return f.auth }

func (f *ccFlow) run(ctx context.Context, g *grantRun) (*tokenstore.Token, error) {
	form := url.Values{"grant_type": {oauthmeta.GrantTypeClientCredentials}}
	return f.c.grantToken(ctx, g, form, f.auth, pickScopes(f.scopes, g.scopes))
}

// wifFlow is a prepared WorkloadIdentity.
type wifFlow struct {
	c    *Client
	w    WorkloadIdentity
	b    issuerBinding
	auth *clientAuth
}

func (w *WorkloadIdentity) prepare(c *Client) (grantFlow, error) {
	if (w.Assertion == nil) == (w.AssertionFile == "") {
		return nil, fmt.Errorf("%w: WorkloadIdentity: exactly one of Assertion and AssertionFile is required", ErrConfig)
	}
	auth, err := w.Credentials.prepare(c, "WorkloadIdentity")
	if err != nil {
		return nil, err
	}
	b, err := newIssuerBinding(c, w.Issuer, false, auth, "WorkloadIdentity")
	if err != nil {
		return nil, err
	}
	return &wifFlow{c: c, w: *w, b: b, auth: auth}, nil
}

// anonymousWorkload is the client_id tokens of a WorkloadIdentity without
// a ClientID are stored under.
const anonymousWorkload = "workload-identity"

func (f *wifFlow) clientID(issuer string) (string, bool) {
	return cmp.Or(f.auth.clientID, anonymousWorkload), f.b.allows(issuer)
}

func (f *wifFlow) authentication() *clientAuth { return f.auth }

func (f *wifFlow) run(ctx context.Context, g *grantRun) (*tokenstore.Token, error) {
	a, err := f.w.assertion(ctx, g.d.AuthServer.Issuer)
	if err != nil {
		return nil, err
	}
	return f.c.jwtBearer(ctx, g, a, f.auth, pickScopes(f.w.Scopes, g.scopes))
}

// emaFlow is a prepared EnterpriseAuthorization.
type emaFlow struct {
	c       *Client
	e       EnterpriseAuthorization
	b       issuerBinding
	auth    *clientAuth
	idpAuth *clientAuth
}

func (e *EnterpriseAuthorization) prepare(c *Client) (grantFlow, error) {
	if e.IDToken == nil {
		return nil, fmt.Errorf("%w: EnterpriseAuthorization: IDToken is required", ErrConfig)
	}
	if err := c.policy.CheckURL(e.IdPTokenEndpoint); err != nil {
		return nil, fmt.Errorf("%w: EnterpriseAuthorization: IdPTokenEndpoint: %w", ErrConfig, err)
	}
	idpAuth, err := e.IdPCredentials.prepare(c, "EnterpriseAuthorization.IdPCredentials")
	if err != nil {
		return nil, err
	}
	auth, err := e.Credentials.prepare(c, "EnterpriseAuthorization.Credentials")
	if err != nil {
		return nil, err
	}
	if auth.clientID == "" || idpAuth.clientID == "" {
		return nil, fmt.Errorf("%w: EnterpriseAuthorization: both client IDs are required", ErrConfig)
	}
	b, err := newIssuerBinding(c, e.Issuer, e.InsecureAnyIssuer, auth, "EnterpriseAuthorization")
	if err != nil {
		return nil, err
	}
	return &emaFlow{c: c, e: *e, b: b, auth: auth, idpAuth: idpAuth}, nil
}

func (f *emaFlow) clientID(issuer string) (string, bool) { return f.auth.clientID, f.b.allows(issuer) }

func (f *emaFlow) authentication() *clientAuth { return f.auth }

func (f *emaFlow) run(ctx context.Context, g *grantRun) (*tokenstore.Token, error) {
	advertised, err := checkIDJAGSupport(g.d.AuthServer)
	if err != nil {
		return nil, err
	}
	scopes := pickScopes(f.e.Scopes, g.scopes)
	jag, err := f.exchange(ctx, g.d.AuthServer.Issuer, g.d.ResourceIndicator, scopes)
	if err != nil {
		return nil, err
	}
	tok, err := f.c.jwtBearer(ctx, g, jag, f.auth, scopes)
	if err != nil && !advertised {
		return nil, fmt.Errorf("%w (the authorization server does not advertise %s in authorization_grant_profiles_supported)",
			err, oauthmeta.GrantProfileIDJAG)
	}
	return tok, err
}

// checkIDJAGSupport decides, before the user's ID token goes to the IdP,
// whether the authorization server of md can take an ID-JAG
// (Enterprise-Managed Authorization §6): it must list the JWT-bearer grant,
// and a non-empty authorization_grant_profiles_supported must name the
// ID-JAG profile. The member is optional (a SHOULD for the server in the
// ID-JAG draft §7.2; the extension says a client "can" check it), so its
// absence is tolerated and reported as advertised false, for a failure to
// mention.
func checkIDJAGSupport(md *oauthmeta.AuthServerMetadata) (advertised bool, err error) {
	if !md.SupportsGrantType(oauthmeta.GrantTypeJWTBearer) {
		return false, fmt.Errorf("%w: %s", errGrantUnsupported, oauthmeta.GrantTypeJWTBearer)
	}
	profiles := md.AuthorizationGrantProfilesSupported
	if len(profiles) == 0 {
		return false, nil
	}
	if !slices.Contains(profiles, oauthmeta.GrantProfileIDJAG) {
		return false, fmt.Errorf("%w: authorization_grant_profiles_supported does not list %s",
			errGrantUnsupported, oauthmeta.GrantProfileIDJAG)
	}
	return true, nil
}

// exchange obtains an ID-JAG for (issuer, resource) at the IdP: an RFC
// 8693 token exchange of the user's ID token with requested_token_type
// id-jag (draft-ietf-oauth-identity-assertion-authz-grant §4.3).
func (f *emaFlow) exchange(ctx context.Context, issuer, resource string, scopes []string) (string, error) {
	idt, err := f.e.IDToken(ctx)
	if err != nil {
		return "", fmt.Errorf("%w: ID token: %w", errTokenExchange, err)
	}
	form := url.Values{
		"grant_type":           {oauthmeta.GrantTypeTokenExchange},
		"requested_token_type": {oauthmeta.TokenTypeIDJAG},
		"subject_token":        {idt},
		"subject_token_type":   {oauthmeta.TokenTypeIDToken},
		"audience":             {issuer},
		"resource":             {resource},
	}
	if len(scopes) > 0 {
		form.Set("scope", oauthmeta.FormatScope(scopes))
	}
	tok, err := f.c.postToken(ctx, f.e.IdPTokenEndpoint, form, f.idpAuth, f.e.IdPTokenEndpoint, nil, idt)
	if err == nil {
		err = sameReading(tok)
	}
	if err != nil {
		return "", fmt.Errorf("%w: %w", errTokenExchange, err)
	}
	if tok.Extra("issued_token_type") != oauthmeta.TokenTypeIDJAG {
		return "", fmt.Errorf("%w: issued_token_type is not an ID-JAG", errTokenExchange)
	}
	return tok.AccessToken, nil
}

// assertionClaims are the claims the client checks in a JWT it is about to
// present as an authorization grant.
type assertionClaims struct {
	Aud oauthmeta.Audience `json:"aud"`
	Exp *float64           `json:"exp"`
}

// parseAssertionClaims decodes the payload of a compact JWS without
// verifying it: the client only checks that the grant it holds is addressed
// to this server and current.
func parseAssertionClaims(jwt string) (*assertionClaims, error) {
	if len(jwt) > jwtassert.DefaultMaxSize {
		return nil, fmt.Errorf("%w: too large", errAssertion)
	}
	var c assertionClaims
	if err := jwtverify.UnsafeClaimsWithoutVerification(jwt, &c); err != nil {
		return nil, fmt.Errorf("%w: %w", errAssertion, err)
	}
	return &c, nil
}

// checkAssertion refuses to present a grant JWT whose "aud" names neither
// the issuer nor the token endpoint of md, or whose "exp" is missing or
// past (RFC 7523 §3 items 3 and 4, checked before sending: a workload token
// for another audience is a credential for somebody else).
func checkAssertion(jwt string, md *oauthmeta.AuthServerMetadata, now time.Time) error {
	c, err := parseAssertionClaims(jwt)
	if err != nil {
		return err
	}
	if !c.Aud.Contains(md.Issuer) && !c.Aud.Contains(md.TokenEndpoint) {
		return fmt.Errorf("%w: aud does not name this authorization server", errAssertion)
	}
	if c.Exp == nil || float64(now.Unix()) >= *c.Exp {
		return fmt.Errorf("%w: expired or without exp", errAssertion)
	}
	return nil
}

// maxAssertionFile bounds AssertionFile.
const maxAssertionFile = 64 << 10

func (w *WorkloadIdentity) assertion(ctx context.Context, audience string) (string, error) {
	if w.Assertion != nil {
		a, err := w.Assertion(ctx, audience)
		if err != nil {
			return "", fmt.Errorf("%w: %w", errAssertion, err)
		}
		return strings.TrimSpace(a), nil
	}
	f, err := os.Open(w.AssertionFile)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errAssertion, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxAssertionFile+1))
	if err != nil {
		return "", fmt.Errorf("%w: %w", errAssertion, err)
	}
	if len(data) > maxAssertionFile {
		return "", fmt.Errorf("%w: assertion file over %d bytes", errAssertion, maxAssertionFile)
	}
	return strings.TrimSpace(string(data)), nil
}
