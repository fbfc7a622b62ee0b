package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/ascii"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// maxTokenResponse caps a token endpoint response body; a larger one is
// refused, not truncated.
const maxTokenResponse = 1 << 20

// maxExpiresIn bounds expires_in so a hostile value cannot overflow.
const maxExpiresIn = 10 * 365 * 24 * 3600

// exchangeCode redeems an authorization code at the token endpoint
// recorded before the redirect, with the PKCE
// verifier, the redirect URI and the resource indicator.
func (c *Client) exchangeCode(ctx context.Context, rec *pendingAuthorization, code string) (*tokenstore.Token, error) {
	tctx, a, err := c.tokenContext(ctx, rec.tokenEndpoint, rec.auth, rec.issuer, rec.dpop)
	if err != nil {
		return nil, err
	}
	cfg := oauth2.Config{
		ClientID:     a.id,
		ClientSecret: a.secret,
		Endpoint:     oauth2.Endpoint{TokenURL: rec.tokenEndpoint, AuthStyle: a.style},
		RedirectURL:  rec.redirectURI,
	}
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(rec.verifier)}
	if c.cfg.AuthServers[rec.issuer].sendsResource(false) {
		opts = append(opts, oauth2.SetAuthURLParam("resource", rec.indicator))
	}
	for k := range a.params {
		opts = append(opts, oauth2.SetAuthURLParam(k, a.params.Get(k)))
	}
	tok, err := cfg.Exchange(tctx, code, opts...)
	if err != nil {
		return nil, tokenError(err, append(a.sent, code, rec.verifier)...)
	}
	return c.newToken(tok, rec.dpop, rec.scopes, nil)
}

// refreshToken renews old at the authorization server of d (OAuth 2.1 §4.3),
// with the resource indicator unless the per-issuer OmitResource or
// OmitResourceOnRefresh switch leaves it out for servers that refuse it. A response without a refresh
// token keeps old's (RFC 6749 §6). A DPoP-bound token is refreshed with a proof
// of its key (RFC 9449 §5); a Bearer token without a proof.
func (c *Client) refreshToken(ctx context.Context, d *tokenstore.Discovery, reg *tokenstore.Registration, old *tokenstore.Token) (*tokenstore.Token, error) {
	md := d.AuthServer
	dp := c.dpop.forToken(old)
	if dp == nil && ascii.EqualFold(old.TokenType, dpop.TokenType) {
		return nil, fmt.Errorf("%w: %w: DPoP-bound token without its DPoP key", errTokenResponse, errTokenType)
	}
	if dp != nil {
		dp.required = d.DPoPBoundAccessTokensRequired
	}
	params := url.Values{"grant_type": {oauthmeta.GrantTypeRefreshToken}, "refresh_token": {old.RefreshToken}}
	if c.cfg.AuthServers[d.Issuer].sendsResource(true) {
		params.Set("resource", d.ResourceIndicator)
	}
	tok, err := c.postToken(ctx, md.TokenEndpoint, params, registeredAuth(reg, md), md.Issuer, dp, old.RefreshToken)
	if err != nil {
		return nil, err
	}
	return c.newToken(tok, dp, old.RequestedScopes, old.Scopes)
}

// postToken sends every token request but the code exchange: x/oauth2's
// clientcredentials.Config sends any grant_type and parameters in
// EndpointParams, where its refresh could not carry "resource".
// secrets are credentials in params, redacted from errors.
func (c *Client) postToken(ctx context.Context, endpoint string, params url.Values, auth *clientAuth, audience string, d *dpopKey, secrets ...string) (*oauth2.Token, error) {
	tctx, a, err := c.tokenContext(ctx, endpoint, auth, audience, d)
	if err != nil {
		return nil, err
	}
	maps.Copy(params, a.params)
	cfg := clientcredentials.Config{ClientID: a.id, ClientSecret: a.secret, TokenURL: endpoint, EndpointParams: params, AuthStyle: a.style}
	tok, err := cfg.Token(tctx)
	if err != nil {
		return nil, tokenError(err, append(a.sent, secrets...)...)
	}
	return tok, nil
}

// tokenContext prepares a request to endpoint: it checks the URL, encodes
// auth (audience: see [clientAuth.encode]) and returns ctx carrying, as
// x/oauth2 expects, the SSRF-guarded client that follows no redirect,
// under a [tokenTransport] sending proofs of d (nil: none).
func (c *Client) tokenContext(ctx context.Context, endpoint string, auth *clientAuth, audience string, d *dpopKey) (context.Context, *oauth2Auth, error) {
	if err := c.fetcher.CheckURL(endpoint); err != nil {
		return nil, nil, wrapFetch(ErrTokenRequest, "token endpoint", err)
	}
	a, err := auth.encode(audience)
	if err != nil {
		return nil, nil, err
	}
	hc := c.guardedClient(func(rt http.RoundTripper) http.RoundTripper { return &tokenTransport{base: rt, state: c.dpop, key: d} })
	return context.WithValue(ctx, oauth2.HTTPClient, hc), a, nil
}

// tokenError maps an error of x/oauth2 to this package's. A refusal keeps
// the server's RFC 6749 §5.2 code and description, decoded under the
// package's JSON rules and cleaned of the credentials sent; x/oauth2's own
// text, which may quote the response body, is never shown.
func tokenError(err error, sent ...string) error {
	var re *oauth2.RetrieveError
	switch {
	case errors.As(err, &re):
		if oe, perr := oauthmeta.ParseError(re.Body); perr == nil {
			return fmt.Errorf("%w: status %d: %w", errTokenResponse, re.Response.StatusCode, sanitizeError(oe, sent...))
		}
		return fmt.Errorf("%w: status %d", errTokenResponse, re.Response.StatusCode)
	case errors.Is(err, ErrTokenRequest):
		return unwrapURLError(err)
	case errors.As(err, new(*url.Error)):
		return fmt.Errorf("%w: %w", errTokenResponse, wrapFetch(ErrTokenRequest, "token request", unwrapURLError(err)))
	default:
		return fmt.Errorf("%w: unusable response", errTokenResponse)
	}
}

// newToken checks a token x/oauth2 returned and makes the stored token.
// token_type must be Bearer, or DPoP when the request carried a proof of
// key (RFC 9449 §5); the token then records the key's thumbprint and, for
// a generated key, the key. A Bearer token is refused when key.required
// (the resource accepts only DPoP-bound tokens: no downgrade). requested
// are the scopes asked for; prevGranted, on refresh, the scopes granted
// before (a response without scope keeps them).
func (c *Client) newToken(tok *oauth2.Token, key *dpopKey, requested, prevGranted []string) (*tokenstore.Token, error) {
	if err := sameReading(tok); err != nil {
		return nil, err
	}
	t := &tokenstore.Token{
		Token:           oauth2.Token{AccessToken: tok.AccessToken, TokenType: "Bearer", RefreshToken: tok.RefreshToken},
		RequestedScopes: slices.Clone(requested),
	}
	switch {
	case ascii.EqualFold(tok.TokenType, "Bearer") && key != nil && key.required:
		return nil, fmt.Errorf("%w: the authorization server issued a Bearer token for a resource that accepts only DPoP-bound tokens", errDPoPUnsupported)
	case ascii.EqualFold(tok.TokenType, "Bearer"):
	case ascii.EqualFold(tok.TokenType, dpop.TokenType) && key != nil:
		t.TokenType, t.DPoPJKT, t.DPoPKey = dpop.TokenType, key.p.JKT(), slices.Clone(key.jwk)
	default:
		return nil, fmt.Errorf("%w: %w", errTokenResponse, errTokenType)
	}
	// x/oauth2's Expiry reads the system clock; this package has its own.
	if n, _ := tok.Extra("expires_in").(float64); n > 0 {
		t.Expiry = c.clock.Now().Add(time.Duration(min(n, maxExpiresIn)) * time.Second)
	}
	scope, _ := tok.Extra("scope").(string)
	switch {
	case scope != "":
		s, err := oauthmeta.ParseScope(scope)
		if err != nil {
			return nil, fmt.Errorf("%w: scope: %w", errTokenResponse, err)
		}
		t.Scopes = s
	case prevGranted != nil:
		t.Scopes = slices.Clone(prevGranted)
	default:
		t.Scopes = slices.Clone(requested) // RFC 6749 §5.1: omitted means as requested
	}
	return t, nil
}

// sameReading refuses a response that x/oauth2, which matches member names
// regardless of case, read differently from [tokenTransport], which
// matched them exactly: {"access_token":"a","ACCESS_TOKEN":"b"}.
func sameReading(tok *oauth2.Token) error {
	for name, v := range map[string]string{"access_token": tok.AccessToken, "token_type": tok.TokenType, "refresh_token": tok.RefreshToken} {
		if x, ok := tok.Extra(name).(string); ok && x != v {
			return fmt.Errorf("%w: %s given twice", errTokenResponse, name)
		}
	}
	return nil
}

// tokenTransport is the transport under x/oauth2 for token requests. It
// asks for JSON and, with key set, adds a fresh DPoP proof (RFC 9449 §5),
// sending the request once more with the server's nonce after a
// use_dpop_nonce error (§8). With DPoP configured it remembers the
// DPoP-Nonce of every response. It refuses a response over 1 MiB, and a
// success response that [oauthmeta.ParseTokenResponse] refuses (RFC 6749
// §5.1, strict JSON), so x/oauth2's lenient decoder reads only what passed.
type tokenTransport struct {
	base  http.RoundTripper
	state *dpopState // nil without Config.DPoP
	key   *dpopKey   // nil: no proof
}

// RoundTrip implements http.RoundTripper.
func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, body, err := t.send(req, false)
	if err == nil && t.state != nil && t.state.remember(req.URL, resp.Header) && t.key != nil &&
		resp.StatusCode == http.StatusBadRequest && req.GetBody != nil && isNonceError(body) {
		resp, body, err = t.send(req, true)
		if err == nil {
			t.state.remember(req.URL, resp.Header)
		}
	}
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		if !jsonContent(resp.Header) {
			return nil, fmt.Errorf("%w: response is not JSON", errTokenResponse)
		}
		if _, err := oauthmeta.ParseTokenResponse(body); err != nil {
			return nil, fmt.Errorf("%w: %w", errTokenResponse, err)
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}

// send makes one attempt and reads the whole body. again means a retry:
// the body comes from GetBody.
func (t *tokenTransport) send(req *http.Request, again bool) (resp *http.Response, body []byte, err error) {
	out := req.Clone(req.Context())
	if again {
		if out.Body, err = req.GetBody(); err != nil {
			return nil, nil, err
		}
	}
	out.Header.Set("Accept", "application/json")
	if t.key != nil {
		p, err := t.state.proof(t.key, req.Method, req.URL, "")
		if err != nil {
			return nil, nil, fmt.Errorf("client: DPoP proof: %w", err)
		}
		out.Header.Set(dpop.HeaderName, p)
	}
	if resp, err = t.base.RoundTrip(out); err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.ContentLength <= maxTokenResponse {
		body, err = io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse+1))
	}
	if err == nil && (resp.ContentLength > maxTokenResponse || len(body) > maxTokenResponse) {
		err = fmt.Errorf("%w: %w", errTokenResponse, reason(ErrTokenRequest, reasonResponseTooBig))
	}
	return resp, body, err
}

// isNonceError reports an RFC 6749 §5.2 body with error use_dpop_nonce.
func isNonceError(body []byte) bool {
	oe, err := oauthmeta.ParseError(body)
	return err == nil && oe.Code == oauthmeta.CodeUseDPoPNonce
}

// grantToken runs a token request for a machine grant at the authorization
// server of d: the resource indicator, the scopes, client
// authentication and, with a DPoP key chosen, a proof. secrets are
// redacted from errors.
func (c *Client) grantToken(ctx context.Context, g *grantRun, form url.Values, auth *clientAuth, scopes []string, secrets ...string) (*tokenstore.Token, error) {
	d := g.d
	md := d.AuthServer
	if gt := form.Get("grant_type"); !md.SupportsGrantType(gt) {
		return nil, fmt.Errorf("%w: %s", errGrantUnsupported, gt)
	}
	o := c.cfg.AuthServers[md.Issuer]
	if o.sendsResource(false) {
		form.Set("resource", d.ResourceIndicator)
	}
	if s := o.requestScopes(scopes); len(s) > 0 {
		form.Set("scope", oauthmeta.FormatScope(s))
	}
	tok, err := c.postToken(ctx, md.TokenEndpoint, form, auth, md.Issuer, g.dpop, secrets...)
	if err != nil {
		return nil, err
	}
	return c.newToken(tok, g.dpop, scopes, nil)
}

// jwtBearer presents the grant JWT a at the authorization server of g
// (RFC 7523 §2.1), once checkAssertion accepts it.
func (c *Client) jwtBearer(ctx context.Context, g *grantRun, a string, auth *clientAuth, scopes []string) (*tokenstore.Token, error) {
	if err := checkAssertion(a, g.d.AuthServer, c.clock.Now()); err != nil {
		return nil, err
	}
	form := url.Values{"grant_type": {oauthmeta.GrantTypeJWTBearer}, "assertion": {a}}
	return c.grantToken(ctx, g, form, auth, scopes, a)
}
