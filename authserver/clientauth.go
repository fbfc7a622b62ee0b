package authserver

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpauth/mcpauth/clientmeta"
	"github.com/mcpauth/mcpauth/internal/ascii"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// checkAssertion verifies a private_key_jwt assertion (RFC 7523 §3)
// against the client's keys: "aud" this issuer, "iss" = "sub" = client_id,
// short-lived, "jti" never seen before (a replayed assertion is
// invalid_client), signature by one of the client's keys (its JWK set, or
// its jwks_uri fetched through the SSRF-guarded fetcher).
func (c *clientRegistry) checkAssertion(ctx context.Context, cl *Client, assertion string) error {
	keys, err := c.keySets.keySource(cl.JWKS, cl.JWKSURI, nil)
	if err != nil {
		c.log.InfoContext(ctx, "client keys unusable", "client_id", cl.ID, "err", err)
		return oauthErr(oauthmeta.CodeInvalidClient, "client has no usable keys")
	}
	if _, err := c.assertions.Verify(ctx, assertion, cl.ID, keys); err != nil {
		return jwtassert.OAuthError(err)
	}
	return nil
}

// presented is the client authentication a request carries (OAuth 2.1
// §2.4): one method, the client_id it names and its credential.
type presented struct {
	method    string
	clientID  string
	secret    string
	assertion string // private_key_jwt
}

// parseClientAuth finds the single authentication method of a request.
// Using more than one is invalid_request (OAuth 2.1 §2.4); no method at all
// means "none" with the client_id from the form.
func parseClientAuth(r *http.Request, form url.Values) (presented, *oauthmeta.Error) {
	var p presented
	scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	for _, m := range [...]struct {
		method  string
		present bool
	}{
		{oauthmeta.AuthMethodClientSecretBasic, ascii.EqualFold(scheme, "Basic")},
		{oauthmeta.AuthMethodClientSecretPost, form.Has("client_secret")},
		{oauthmeta.AuthMethodPrivateKeyJWT, form.Has("client_assertion") || form.Has("client_assertion_type")},
	} {
		if m.present && p.method != "" {
			return p, oauthErr(oauthmeta.CodeInvalidRequest, "more than one client authentication method")
		}
		if m.present {
			p.method = m.method
		}
	}
	formID := form.Get("client_id")
	switch p.method {
	case "":
		p.method, p.clientID = oauthmeta.AuthMethodNone, formID
	case oauthmeta.AuthMethodClientSecretBasic:
		id, secret, ok := parseBasic(r.Header.Get("Authorization"))
		if !ok {
			return p, oauthErr(oauthmeta.CodeInvalidClient, "malformed Basic credentials")
		}
		if formID != "" && formID != id {
			return p, oauthErr(oauthmeta.CodeInvalidRequest, "client_id differs from the Basic credentials")
		}
		p.clientID, p.secret = id, secret
	case oauthmeta.AuthMethodClientSecretPost:
		p.clientID, p.secret = formID, form.Get("client_secret")
	case oauthmeta.AuthMethodPrivateKeyJWT:
		if oe := parseAssertionAuth(&p, form); oe != nil {
			return p, oe
		}
	}
	if p.clientID == "" {
		return p, oauthErr(oauthmeta.CodeInvalidClient, "client authentication or client_id is required")
	}
	return p, nil
}

// parseAssertionAuth reads RFC 7523 §2.2 client authentication: the
// assertion type, the assertion and the client_id (from the form, else the
// assertion's unverified "sub" for the key lookup, RFC 7521 §4.2).
func parseAssertionAuth(p *presented, form url.Values) *oauthmeta.Error {
	if form.Get("client_assertion_type") != jwtassert.ClientAssertionType {
		return oauthErr(oauthmeta.CodeInvalidClient, "client_assertion_type must be "+jwtassert.ClientAssertionType)
	}
	p.assertion = form.Get("client_assertion")
	if p.assertion == "" {
		return oauthErr(oauthmeta.CodeInvalidClient, "client_assertion is required")
	}
	p.clientID = form.Get("client_id")
	if p.clientID == "" {
		id, err := jwtassert.UnverifiedClientID(p.assertion)
		if err != nil {
			return oauthErr(oauthmeta.CodeInvalidClient, "client_assertion names no client")
		}
		p.clientID = id
	}
	return nil
}

// parseBasic decodes RFC 7617 Basic credentials whose parts are
// form-urlencoded (RFC 6749 §2.3.1).
func parseBasic(header string) (id, secret string, ok bool) {
	scheme, rest, found := strings.Cut(header, " ")
	if !found || !ascii.EqualFold(scheme, "Basic") {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(rest))
	if err != nil {
		return "", "", false
	}
	rawID, rawSecret, found := strings.Cut(string(raw), ":")
	if !found {
		return "", "", false
	}
	id, err1 := url.QueryUnescape(rawID)
	secret, err2 := url.QueryUnescape(rawSecret)
	if err1 != nil || err2 != nil {
		return "", "", false
	}
	return id, secret, id != ""
}

// authenticate authenticates the client of a token, introspection or
// revocation request. The presented method must be the client's registered
// one; secrets are compared against their hash in constant time. With
// confidentialOnly, public clients are refused (introspection, RFC 7662
// §2.1).
func (c *clientRegistry) authenticate(ctx context.Context, r *http.Request, form url.Values, confidentialOnly bool) (*Client, error) {
	p, oe := parseClientAuth(r, form)
	if oe != nil {
		return nil, oe
	}
	var cl *Client
	if clientmeta.IsURLClientID(p.clientID) && p.method != oauthmeta.AuthMethodPrivateKeyJWT && p.method != oauthmeta.AuthMethodNone {
		// A URL client_id presenting a secret is the public client of
		// metadataDocumentClient, refused below.
		if c.cimd == nil || clientmeta.ValidateClientID(p.clientID) != nil {
			return nil, errUnknownClient
		}
		cl = metadataDocumentClient(p.clientID)
	} else {
		// For a URL client_id the document says how the client
		// authenticates (CIMD-09): a private_key_jwt client cannot pass as
		// public. Resolved through the cache the authorization request
		// filled.
		var err error
		if cl, err = c.lookup(ctx, p.clientID); err != nil {
			return nil, err
		}
	}
	if cl.AuthMethod != p.method {
		return nil, oauthErr(oauthmeta.CodeInvalidClient, "client must authenticate with "+cl.AuthMethod)
	}
	switch {
	case cl.usesKeys():
		if err := c.checkAssertion(ctx, cl, p.assertion); err != nil {
			return nil, err
		}
	case !cl.public() && !cl.checkSecret(p.secret):
		return nil, oauthErr(oauthmeta.CodeInvalidClient, "client authentication failed")
	}
	if confidentialOnly && cl.public() {
		return nil, oauthErr(oauthmeta.CodeInvalidClient, "this endpoint requires client credentials")
	}
	return cl, nil
}
