package client

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Authorizer obtains one authorization response: "visit this URL and bring
// back the redirect". Authorize calls req.Start with the redirect URI it
// will receive the response on, gets the user (or an HTTP client) to the
// URL Start returns, and returns the URL the authorization server
// redirected to, query included. The client checks everything in it; an
// Authorizer only transports it. Implementations: [Loopback] (a browser
// and a one-shot listener on 127.0.0.1), [Paste] (print the URL, read the
// redirect back), [FollowRedirects] (automation against an authorization
// server that approves without a person).
type Authorizer interface {
	Authorize(ctx context.Context, req *AuthorizationRequest) (*url.URL, error)
}

// AuthorizerFunc adapts a function to [Authorizer].
type AuthorizerFunc func(ctx context.Context, req *AuthorizationRequest) (*url.URL, error)

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, req *AuthorizationRequest) (*url.URL, error) {
	return f(ctx, req)
}

// DefaultRedirectURI is the redirect URI of [FollowRedirects] and [Paste]
// when none is configured. Nothing needs to listen there.
const DefaultRedirectURI = "http://127.0.0.1/callback"

// FollowRedirects is an [Authorizer] for automation against an
// authorization server that approves without a person (a test server, the
// MCP conformance suite's mocks): it GETs the authorization URL with
// [AuthorizationRequest.HTTPClient], follows redirects (each hop under the
// SSRF guards), and captures the redirect to the redirect URI instead of
// visiting it. The zero value is ready to use.
type FollowRedirects struct {
	// RedirectURI is the redirect URI to request. Empty means
	// DefaultRedirectURI.
	RedirectURI string
}

// Authorize implements [Authorizer].
func (f *FollowRedirects) Authorize(ctx context.Context, req *AuthorizationRequest) (*url.URL, error) {
	redirectURI := cmp.Or(f.RedirectURI, DefaultRedirectURI)
	authURL, err := req.Start(ctx, redirectURI)
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := req.HTTPClient().Do(hreq)
	if err != nil {
		return nil, wrapFetch(ErrAuthorization, "authorization request", unwrapURLError(err))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 300 || resp.StatusCode > 399 {
		return nil, fmt.Errorf("authorization server answered %d instead of redirecting", resp.StatusCode)
	}
	loc, err := resp.Location()
	if err != nil || !atRedirectURI(loc, redirectURI) {
		return nil, fmt.Errorf("authorization server redirected elsewhere than the redirect URI")
	}
	return loc, nil
}

// Paste is an [Authorizer] for a terminal without a local browser: it
// prints the authorization URL to Out and reads back, from In, the URL the
// browser ended up at (which shows an error page, as nothing listens at
// the redirect URI; its address bar holds the response). Reading In cannot
// be interrupted by ctx.
type Paste struct {
	// RedirectURI is the redirect URI to request. Empty means
	// DefaultRedirectURI.
	RedirectURI string
	// Out receives the instructions. Required.
	Out io.Writer
	// In supplies the pasted URL, one line. Required.
	In io.Reader
}

// Authorize implements [Authorizer].
func (p *Paste) Authorize(ctx context.Context, req *AuthorizationRequest) (*url.URL, error) {
	if p.Out == nil || p.In == nil {
		return nil, fmt.Errorf("%w: Paste needs Out and In", ErrConfig)
	}
	redirectURI := cmp.Or(p.RedirectURI, DefaultRedirectURI)
	authURL, err := req.Start(ctx, redirectURI)
	if err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintf(p.Out, "Open this URL in a browser to authorize access to %s:\n\n  %s\n\nThen paste the address the browser ends up at: ", req.Resource(), authURL); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(io.LimitReader(p.In, 16<<10)).ReadString('\n')
	if err != nil && line == "" {
		return nil, fmt.Errorf("reading the pasted URL: %w", err)
	}
	u, err := url.Parse(strings.TrimSpace(line))
	if err != nil || !atRedirectURI(u, redirectURI) {
		return nil, fmt.Errorf("the pasted text is not a URL at the redirect URI")
	}
	return u, nil
}
