package authserver

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// IdentityProviderConfig makes the server play the enterprise identity
// provider of Enterprise-Managed Authorization
// (draft-ietf-oauth-identity-assertion-authz-grant §4.3): a client
// authenticated here exchanges a user's ID token (RFC 8693 token exchange,
// requested_token_type urn:ietf:params:oauth:token-type:id-jag) for an
// ID-JAG: a JWT with typ oauth-id-jag+jwt, signed with this server's
// signing key (published in its JWKS), whose "aud" is the resource
// authorization server, "client_id" the client's identifier there,
// "resource" the MCP server and "sub" the user.
type IdentityProviderConfig struct {
	// IDTokenIssuers are the OpenID providers whose ID tokens are accepted
	// as subject_token (Kind and Scopes are ignored); an ID token's "aud"
	// must be the client_id of the client asking here. Required.
	IDTokenIssuers []TrustedIssuer
	// Audiences are the resource authorization servers ID-JAGs may be
	// issued for. Required.
	Audiences []IDJAGAudience
	// Lifetime is how long an ID-JAG is valid. Zero means
	// jwtassert's default of five minutes; at most one hour.
	Lifetime time.Duration
}

// IDJAGAudience is one resource authorization server ID-JAGs may be
// issued for.
type IDJAGAudience struct {
	// Issuer is its issuer identifier, the "aud" of the ID-JAGs. Required.
	Issuer string
	// ClientIDs maps the client_id of a client of this server to its
	// client_id at Issuer, the ID-JAG's "client_id". A client not listed
	// gets invalid_target.
	ClientIDs map[string]string
	// Resources are the resource indicators that may be requested. Empty
	// means any absolute https URI (http to loopback with
	// InsecureAllowHTTPLoopback).
	Resources []string
}

// idjagExchange is the token exchange of the identity provider role
// (Config.IdentityProvider): ID tokens for ID-JAGs.
type idjagExchange struct {
	idTokens  *jwtassert.GrantVerifier
	audiences map[string]*IDJAGAudience
	lifetime  time.Duration
	// keys sign the ID-JAGs, as issuer.
	keys             *keyring
	issuer           string
	clock            clock.Func
	insecureLoopback bool // InsecureAllowHTTPLoopback, for the resources
}

// newIDJAGExchange validates cfg.IdentityProvider and returns its
// exchange, nil when it is not set. It does no I/O.
func newIDJAGExchange(cfg *settings, keys *keyring, sets *remoteKeySets) (*idjagExchange, error) {
	c := cfg.IdentityProvider
	if c == nil {
		return nil, nil
	}
	if len(c.IDTokenIssuers) == 0 || len(c.Audiences) == 0 {
		return nil, configErr("IdentityProvider", "IDTokenIssuers and Audiences are required")
	}
	x := &idjagExchange{
		audiences: make(map[string]*IDJAGAudience), lifetime: c.Lifetime,
		keys: keys, issuer: cfg.Issuer, clock: cfg.Now, insecureLoopback: cfg.InsecureAllowHTTPLoopback,
	}
	var clients []string
	for i := range c.Audiences {
		a := &c.Audiences[i]
		if a.Issuer == "" || len(a.ClientIDs) == 0 {
			return nil, configErr("IdentityProvider.Audiences", "each needs Issuer and ClientIDs")
		}
		x.audiences[a.Issuer] = a
		for id := range a.ClientIDs {
			clients = appendNew(clients, id)
		}
	}
	var issuers []jwtassert.TrustedIssuer
	for i := range c.IDTokenIssuers {
		t, err := trustedKeys(sets, &c.IDTokenIssuers[i], fmt.Sprintf("IdentityProvider.IDTokenIssuers[%d]", i))
		if err != nil {
			return nil, err
		}
		issuers = append(issuers, t)
	}
	v, err := jwtassert.NewGrantVerifier(jwtassert.GrantVerifierConfig{
		Audiences: clients, Issuers: issuers, Profile: jwtassert.ProfileIDToken, Now: cfg.Now,
		MaxLifetime: 24 * time.Hour,
	})
	if err != nil {
		return nil, configErr("IdentityProvider", err.Error())
	}
	x.idTokens = v
	return x, nil
}

// exchange answers an RFC 8693 token exchange for an ID-JAG (§4.3 of the
// ID-JAG draft): the subject token must be an ID token of a trusted
// provider issued to this client, the audience a configured resource
// authorization server that knows this client, the resource acceptable.
func (x *idjagExchange) exchange(ctx context.Context, client *Client, form url.Values) (*oauthmeta.TokenResponse, error) {
	switch {
	case form.Get("requested_token_type") != oauthmeta.TokenTypeIDJAG:
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "requested_token_type must be "+oauthmeta.TokenTypeIDJAG)
	case form.Get("subject_token_type") != oauthmeta.TokenTypeIDToken:
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "subject_token_type must be "+oauthmeta.TokenTypeIDToken)
	case form.Get("subject_token") == "" || form.Get("audience") == "":
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "subject_token and audience are required")
	case len(form["audience"]) > 1:
		return nil, oauthErr(oauthmeta.CodeInvalidTarget, "one audience only")
	}
	aud, ok := x.audiences[form.Get("audience")]
	target, known := "", false
	if ok {
		target, known = aud.ClientIDs[client.ID]
	}
	if !known {
		return nil, oauthErr(oauthmeta.CodeInvalidTarget, "no ID-JAG can be issued for this audience and client")
	}
	resources := form["resource"]
	for _, res := range resources {
		if oe := x.checkResource(aud, res); oe != nil {
			return nil, oe
		}
	}
	idt, err := x.idTokens.Verify(ctx, form.Get("subject_token"), "")
	if err != nil {
		return nil, jwtassert.OAuthError(err)
	}
	if !slices.Contains(idt.Audience, client.ID) {
		return nil, oauthErr(oauthmeta.CodeInvalidGrant, "ID token was issued to another client")
	}
	scopes, err := oauthmeta.ParseScope(form.Get("scope"))
	if err != nil {
		return nil, oauthErr(oauthmeta.CodeInvalidScope, "malformed scope")
	}
	jag, err := x.sign(ctx, jwtassert.IDJAGClaims{
		Subject: idt.Subject, Audience: aud.Issuer, ClientID: target, Resource: resources, Scope: scopes,
	})
	if err != nil {
		return nil, err
	}
	lifetime := cmp.Or(x.lifetime, jwtassert.DefaultIDJAGLifetime)
	return &oauthmeta.TokenResponse{
		AccessToken: jag, IssuedTokenType: oauthmeta.TokenTypeIDJAG, TokenType: "N_A",
		ExpiresIn: int64(lifetime.Seconds()), Scope: oauthmeta.FormatScope(scopes),
	}, nil
}

// checkResource checks a resource requested for an ID-JAG for aud.
func (x *idjagExchange) checkResource(aud *IDJAGAudience, res string) *oauthmeta.Error {
	policy := oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: x.insecureLoopback}
	if checkResourceSyntax(res) != nil || policy.CheckURL(res) != nil {
		return oauthErr(oauthmeta.CodeInvalidTarget, "resource must be an absolute https URI without fragment")
	}
	if len(aud.Resources) > 0 && !hasResource(aud.Resources, res) {
		return oauthErr(oauthmeta.CodeInvalidTarget, "resource is not allowed for this audience")
	}
	return nil
}

// sign signs an ID-JAG with the current signing key.
func (x *idjagExchange) sign(ctx context.Context, c jwtassert.IDJAGClaims) (string, error) {
	key, err := x.keys.signingKey(ctx, x.clock.Now())
	if err != nil {
		return "", err
	}
	signer, err := jwtassert.NewIDJAGSigner(jwtassert.IDJAGSignerConfig{
		Issuer: x.issuer, Key: key.private, Algorithm: key.meta.Algorithm, KeyID: key.meta.ID,
		Lifetime: x.lifetime, Now: x.clock,
	})
	if err != nil {
		return "", fmt.Errorf("authserver: ID-JAG signer: %w", err)
	}
	return signer.Sign(c)
}
