package authserver

import (
	"cmp"
	"context"
	"net/url"
	"slices"

	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// clientCredentials is the client credentials grant (OAuth 2.1 §4.2): a
// confidential client obtains a token for itself (sub = client_id), for the
// requested resources and scopes. No refresh token is issued (RFC 6749
// §4.4.3).
func (s *Server) clientCredentials(ctx context.Context, client *Client, form url.Values, jkt string) (*oauthmeta.TokenResponse, error) {
	if client == nil || client.public() {
		return nil, oauthErr(oauthmeta.CodeUnauthorizedClient, "client_credentials needs an authenticated confidential client")
	}
	scopes, oe := s.grantableScopes(client, form.Get("scope"))
	if oe != nil {
		return nil, oe
	}
	return s.issueStandalone(ctx, client.ID, client.ID, scopes, form, jkt)
}

// jwtBearer is the JWT-bearer grant (RFC 7523 §2.1): an ID-JAG (typ
// oauth-id-jag+jwt) from a GrantIDJAG issuer, presented by the confidential
// client it names; otherwise a workload identity assertion from a
// GrantWorkload issuer, with or without client authentication. The token's
// subject is the assertion's "sub".
func (s *Server) jwtBearer(ctx context.Context, client *Client, form url.Values, jkt string) (*oauthmeta.TokenResponse, error) {
	assertion := form.Get("assertion")
	if assertion == "" {
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "assertion is required")
	}
	clientID := ""
	if client != nil {
		clientID = client.ID
	}
	var g *jwtassert.Grant
	var err error
	if isIDJAG(assertion) {
		if s.grants.idjag == nil {
			return nil, oauthErr(oauthmeta.CodeInvalidGrant, "ID-JAGs are not accepted")
		}
		if client == nil || client.public() {
			return nil, oauthErr(oauthmeta.CodeInvalidClient, "an ID-JAG must be presented by an authenticated confidential client")
		}
		g, err = s.grants.idjag.Verify(ctx, assertion, clientID)
	} else {
		if s.grants.workload == nil {
			return nil, oauthErr(oauthmeta.CodeInvalidGrant, "workload assertions are not accepted")
		}
		g, err = s.grants.workload.Verify(ctx, assertion, clientID)
	}
	if err != nil {
		s.log.InfoContext(ctx, "authorization grant refused", "err", err)
		return nil, jwtassert.OAuthError(err)
	}
	scopes, oe := s.assertionScopes(g, client, form.Get("scope"))
	if oe != nil {
		return nil, oe
	}
	if len(g.Resource) > 0 {
		for _, res := range form["resource"] {
			if !hasResource(g.Resource, res) {
				return nil, oauthErr(oauthmeta.CodeInvalidTarget, "resource is not named by the grant")
			}
		}
		if len(form["resource"]) == 0 {
			form["resource"] = g.Resource
		}
	}
	return s.issueStandalone(ctx, cmp.Or(clientID, g.ClientID, g.Subject), g.Subject, scopes, form, jkt)
}

// assertionScopes returns the scopes for a JWT-bearer grant: the requested
// ones (or DefaultScopes), each supported, allowed for the issuer and the
// client, and within the grant's own "scope" claim when it has one.
func (s *Server) assertionScopes(g *jwtassert.Grant, client *Client, requested string) ([]string, *oauthmeta.Error) {
	scopes, oe := s.grantableScopes(cmp.Or(client, &Client{}), requested)
	if oe != nil {
		return nil, oe
	}
	allowed := s.grants.scopes[g.Issuer]
	out := scopes[:0:0]
	for _, sc := range scopes {
		okIssuer := allowed == nil || slices.Contains(allowed, sc)
		okGrant := len(g.Scope) == 0 || slices.Contains(g.Scope, sc)
		if okIssuer && okGrant {
			out = append(out, sc)
		} else if requested != "" {
			return nil, oauthErr(oauthmeta.CodeInvalidScope, "scope not allowed for this grant: "+sc)
		}
	}
	return out, nil
}

// issueStandalone records a grant without refresh tokens and issues an
// access token for it: the audience is the requested resources (each
// checked, requirement AS-08) or DefaultResource.
func (s *Server) issueStandalone(ctx context.Context, clientID, subject string, scopes []string, form url.Values, jkt string) (*oauthmeta.TokenResponse, error) {
	resources := form["resource"]
	for _, res := range resources {
		if oe := s.checkResource(res); oe != nil {
			return nil, oe
		}
	}
	now := s.clock.Now()
	grant := &Grant{
		ID: randomToken(16), ClientID: clientID, Subject: subject, Scopes: scopes, Resources: resources,
		CreatedAt: now, ExpiresAt: now.Add(s.cfg.AccessTokenTTL),
	}
	if err := s.store.Grants.SaveGrant(ctx, grant); err != nil {
		return nil, err
	}
	return s.issueTokens(ctx, grant, scopes, resources, false, now, jkt)
}

// isIDJAG reports whether a compact JWT's header says typ oauth-id-jag+jwt
// (the verifier checks it again; this only picks the verifier).
func isIDJAG(jwt string) bool {
	var h struct {
		Typ string `json:"typ"`
	}
	return len(jwt) <= jwtassert.DefaultMaxSize && jwtverify.UnsafeHeaderWithoutVerification(jwt, &h) == nil &&
		jwtverify.TypeIs(h.Typ, jwtassert.IDJAGType)
}
