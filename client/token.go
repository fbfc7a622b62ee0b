package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/internal/dpop"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// maxTokenResponse caps a token endpoint response body; a larger one is
// refused, not truncated.
const maxTokenResponse = 1 << 20

// maxExpiresIn bounds expires_in so a hostile value cannot overflow.
const maxExpiresIn = 10 * 365 * 24 * 3600

// oauth2Context returns ctx carrying hc as the HTTP client of
// golang.org/x/oauth2, which reads its client from a context value. This
// is the only place the package uses that idiom.
func oauth2Context(ctx context.Context, hc *http.Client) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, hc)
}

// exchangeCode redeems an authorization code at the token endpoint
// recorded before the redirect (requirement CL-13), with the PKCE
// verifier, the redirect URI and the resource indicator (CL-04, CL-24).
// golang.org/x/oauth2 builds and sends the request; the token transport
// applies this package's response rules.
func (c *Client) exchangeCode(ctx context.Context, rec *pendingAuthorization, code string) (*tokenstore.Token, error) {
	if err := c.fetcher.CheckURL(rec.tokenEndpoint); err != nil {
		return nil, wrapFetch("token endpoint", err)
	}
	capture := &tokenCapture{sent: []string{code, rec.verifier, rec.registration.ClientSecret}}
	hc := c.tokenClient(capture, c.dpopFor(rec.authServer))
	id, secret, style := oauth2Credentials(rec.registration, rec.authMethod)
	cfg := oauth2.Config{
		ClientID:     id,
		ClientSecret: secret,
		Endpoint:     oauth2.Endpoint{TokenURL: rec.tokenEndpoint, AuthStyle: style},
		RedirectURL:  rec.redirectURI,
	}
	_, err := cfg.Exchange(oauth2Context(ctx, hc), code,
		oauth2.VerifierOption(rec.verifier),
		oauth2.SetAuthURLParam("resource", rec.indicator))
	if err := capture.result(err); err != nil {
		return nil, err
	}
	return c.newToken(capture.resp, rec.scopes, nil)
}

// refreshToken renews old at the authorization server of d (OAuth 2.1
// §4.3). x/oauth2 cannot add the resource parameter to a refresh request
// (requirement CL-04), so this is a small direct implementation; the
// per-issuer OmitResourceOnRefresh switch leaves it out for servers that
// refuse it.
func (c *Client) refreshToken(ctx context.Context, d *tokenstore.Discovery, reg *tokenstore.Registration, old *tokenstore.Token) (*tokenstore.Token, error) {
	md := d.AuthServer
	if err := c.fetcher.CheckURL(md.TokenEndpoint); err != nil {
		return nil, wrapFetch("token endpoint", err)
	}
	form := url.Values{
		"grant_type":    {oauthmeta.GrantTypeRefreshToken},
		"refresh_token": {old.RefreshToken},
	}
	if !c.cfg.AuthServers[d.Issuer].OmitResourceOnRefresh {
		form.Set("resource", d.ResourceIndicator)
	}
	req, err := newTokenRequest(ctx, md.TokenEndpoint, form, reg, tokenAuthMethod(reg, md))
	if err != nil {
		return nil, err
	}
	capture := &tokenCapture{sent: []string{old.RefreshToken, reg.ClientSecret}}
	hc := c.tokenClient(capture, c.dpopFor(md))
	resp, err := hc.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	if err := capture.result(err); err != nil {
		return nil, err
	}
	tok, err := c.newToken(capture.resp, old.RequestedScopes, old.Scopes)
	if err != nil {
		return nil, err
	}
	if tok.RefreshToken == "" {
		tok.RefreshToken = old.RefreshToken // not rotated (RFC 6749 §6)
	}
	return tok, nil
}

// newTokenRequest builds a token request with the client authentication
// method (requirement CL-24; OAuth 2.1 §2.4).
func newTokenRequest(ctx context.Context, endpoint string, form url.Values, reg *tokenstore.Registration, method string) (*http.Request, error) {
	switch method {
	case oauthmeta.AuthMethodClientSecretPost:
		form.Set("client_id", reg.ClientID)
		form.Set("client_secret", reg.ClientSecret)
	case oauthmeta.AuthMethodClientSecretBasic:
	default:
		form.Set("client_id", reg.ClientID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("%w: token endpoint: %w", ErrUnsafeURL, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if method == oauthmeta.AuthMethodClientSecretBasic {
		// RFC 6749 §2.3.1: form-encode both before Basic encoding.
		req.SetBasicAuth(url.QueryEscape(reg.ClientID), url.QueryEscape(reg.ClientSecret))
	}
	return req, nil
}

// newToken turns a checked token response into a stored token. requested
// are the scopes asked for; prevGranted, on refresh, the scopes granted
// before (a response without scope keeps them).
func (c *Client) newToken(r *oauthmeta.TokenResponse, requested, prevGranted []string) (*tokenstore.Token, error) {
	if r == nil {
		return nil, fmt.Errorf("%w: no response", ErrTokenResponse)
	}
	t := &tokenstore.Token{
		AccessToken:     r.AccessToken,
		TokenType:       "Bearer",
		RefreshToken:    r.RefreshToken,
		RequestedScopes: slices.Clone(requested),
	}
	if strings.EqualFold(r.TokenType, dpop.TokenType) {
		if c.dpop == nil {
			return nil, fmt.Errorf("%w: %w", ErrTokenResponse, ErrTokenType)
		}
		t.TokenType, t.DPoPJKT = dpop.TokenType, c.dpop.prover.JKT()
	}
	if r.ExpiresIn > 0 {
		t.Expiry = c.now().Add(time.Duration(min(r.ExpiresIn, maxExpiresIn)) * time.Second)
	}
	switch {
	case r.Scope != "":
		s, err := oauthmeta.ParseScope(r.Scope)
		if err != nil {
			return nil, fmt.Errorf("%w: scope: %w", ErrTokenResponse, err)
		}
		t.Scopes = s
	case prevGranted != nil:
		t.Scopes = slices.Clone(prevGranted)
	default:
		t.Scopes = slices.Clone(requested) // RFC 6749 §5.1: omitted means as requested
	}
	return t, nil
}

// tokenCapture records what the token transport saw of one response.
type tokenCapture struct {
	sent      []string // credentials in the request, redacted from errors
	status    int
	resp      *oauthmeta.TokenResponse
	oerr      *oauthmeta.Error
	proofSent bool // a DPoP proof went with the request
	// raw accepts any token_type and skips the access token response
	// checks (an RFC 8693 exchange for an ID-JAG answers token_type N_A).
	raw bool
}

// tokenClient returns the guarded client for one token request, whose
// transport checks the response and, with d, sends DPoP proofs.
func (c *Client) tokenClient(capture *tokenCapture, d *dpopState) *http.Client {
	return c.guardedClient(func(rt http.RoundTripper) http.RoundTripper {
		return &tokenTransport{base: rt, capture: capture, dpop: d}
	})
}

// result maps the outcome of a token request to this package's errors.
// x/oauth2's own error is never shown: its text includes the raw body.
func (t *tokenCapture) result(err error) error {
	switch {
	case err == nil && t.resp != nil:
		return nil
	case errors.Is(err, ErrTokenResponse), errors.Is(err, ErrResponseTooLarge):
		return unwrapURLError(err)
	case t.oerr != nil:
		return fmt.Errorf("%w: status %d: %w", ErrTokenResponse, t.status, t.oerr)
	case t.status != 0:
		return fmt.Errorf("%w: status %d", ErrTokenResponse, t.status)
	case err != nil:
		return fmt.Errorf("%w: %w", ErrTokenResponse, wrapFetch("token request", unwrapURLError(err)))
	default:
		return fmt.Errorf("%w: no response", ErrTokenResponse)
	}
}

// tokenTransport reads each token endpoint response in full (refusing
// more than 1 MiB), checks a success response strictly (one JSON object,
// access_token present, token_type present and Bearer, or DPoP when a
// proof was sent) and records an error response's RFC 6749 §5.2 body,
// before anyone else sees them. With dpop set it adds a fresh DPoP proof to
// the request (RFC 9449 §5) and, when the server answers use_dpop_nonce
// with a DPoP-Nonce header, sends the request once more with that nonce
// (§8).
type tokenTransport struct {
	base    http.RoundTripper
	capture *tokenCapture
	dpop    *dpopState
}

// RoundTrip implements http.RoundTripper.
func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, body, err := t.send(req, false)
	if err == nil && t.dpop != nil && t.dpop.remember(req.URL, resp.Header) && resp.StatusCode == http.StatusBadRequest &&
		req.GetBody != nil && isNonceError(body) {
		resp, body, err = t.send(req, true)
		if err == nil {
			t.dpop.remember(req.URL, resp.Header)
		}
	}
	if err != nil {
		return nil, err
	}
	if err := t.capture.inspect(resp.StatusCode, resp.Header, body); err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}

// send makes one attempt, with a fresh proof when DPoP is on, and reads
// the whole body. again means a retry: the body comes from GetBody.
func (t *tokenTransport) send(req *http.Request, again bool) (*http.Response, []byte, error) {
	out := req
	if t.dpop != nil {
		out = req.Clone(req.Context())
		if again {
			b, err := req.GetBody()
			if err != nil {
				return nil, nil, err
			}
			out.Body = b
		}
		p, err := t.dpop.proof(req.Method, req.URL, "")
		if err != nil {
			return nil, nil, fmt.Errorf("client: DPoP proof: %w", err)
		}
		out.Header.Set(dpop.HeaderName, p)
		t.capture.proofSent = true
	}
	resp, err := t.base.RoundTrip(out)
	if err != nil {
		return nil, nil, err
	}
	body, err := readAllCapped(resp.Body, resp.ContentLength, maxTokenResponse)
	resp.Body.Close()
	if err != nil {
		return nil, nil, err
	}
	return resp, body, nil
}

// isNonceError reports an RFC 6749 §5.2 body with error use_dpop_nonce.
func isNonceError(body []byte) bool {
	oe, err := oauthmeta.ParseError(body)
	return err == nil && oe.Code == oauthmeta.CodeUseDPoPNonce
}

// inspect applies the token response rules (RFC 6749 §5.1, §5.2; OAuth 2.1
// §3.2.3; RFC 9449 §5): token_type must be Bearer, or DPoP when the request
// carried a proof.
func (t *tokenCapture) inspect(status int, h http.Header, body []byte) error {
	t.status = status
	if status < 200 || status > 299 {
		if oe, err := oauthmeta.ParseError(body); err == nil {
			t.oerr = sanitizeError(oe, t.sent...)
		}
		return nil
	}
	if !jsonContent(h) {
		return fmt.Errorf("%w: response is not JSON", ErrTokenResponse)
	}
	r, err := oauthmeta.ParseTokenResponse(body)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrTokenResponse, err)
	}
	dpopOK := t.proofSent && strings.EqualFold(r.TokenType, dpop.TokenType)
	if !t.raw && !strings.EqualFold(r.TokenType, "Bearer") && !dpopOK {
		return fmt.Errorf("%w: %w", ErrTokenResponse, ErrTokenType)
	}
	t.resp = r
	return nil
}

// readAllCapped reads r, refusing more than max bytes.
func readAllCapped(r io.Reader, contentLength, max int64) ([]byte, error) {
	if contentLength > max {
		return nil, fmt.Errorf("%w: %w", ErrTokenResponse, ErrResponseTooLarge)
	}
	body, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > max {
		return nil, fmt.Errorf("%w: %w", ErrTokenResponse, ErrResponseTooLarge)
	}
	return body, nil
}
