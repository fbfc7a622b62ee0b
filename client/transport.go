package client

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mcpauth/mcpauth/internal/safehttp"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// maxReplayBody bounds the request body a Transport keeps to resend after
// an authorization; a larger body without GetBody is sent once.
const maxReplayBody = 16 << 20

// maxRoundTrips bounds the sends of one request, whatever happens.
const maxRoundTrips = 2*MaxAuthorizationAttempts + 2

// Transport is an http.RoundTripper that authorizes requests to one MCP
// server. It sends the stored access token in the Authorization header
// (never in the URL) and only to that server's URL; a
// DPoP-bound token goes with the DPoP scheme and a fresh proof, and a
// use_dpop_nonce challenge is answered by one resend with the server's
// nonce (RFC 9449 §7.1, §9).
// On 401 it refreshes or authorizes and resends; on 403 insufficient_scope
// it steps up and resends. One request starts at most
// MaxAuthorizationAttempts authorizations; after that the last 401 or 403
// response is returned as is. The caller's request is never modified.
//
// Create it with [Client.Transport]. It is safe for concurrent use.
type Transport struct {
	c        *Client
	resource string
	base     http.RoundTripper
}

// HTTPClient returns an *http.Client using t, with no overall timeout (MCP
// responses may be long-lived event streams; bound them with contexts).
func (t *Transport) HTTPClient() *http.Client { return &http.Client{Transport: t} }

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = safehttp.OnRedirect(req)
	if !t.forResource(req) {
		return t.base.RoundTrip(req)
	}
	ctx := req.Context()
	replay, err := replayable(req)
	if err != nil {
		return nil, err
	}
	a := &attempts{}
	nonceRetried := false
	for i := 0; ; i++ {
		tok, err := t.c.currentToken(ctx, t.resource)
		if err != nil {
			return nil, err
		}
		out := req.Clone(ctx)
		if replay != nil {
			out.Body, _ = replay()
		}
		sent := ""
		if tok != nil {
			sent = tok.AccessToken
			if err := t.c.setAuthorization(out, tok); err != nil {
				return nil, err
			}
		}
		resp, err := t.base.RoundTrip(out)
		canResend := replay != nil || req.Body == nil || req.Body == http.NoBody
		if err == nil && t.c.dpopNonceChallenge(out, resp) && sent != "" && !nonceRetried && canResend && i < maxRoundTrips {
			nonceRetried = true // RFC 9449 §9: once more with the resource server's nonce
			drain(resp)
			continue
		}
		if err != nil || !challengeStatus(resp) || !canResend || i >= maxRoundTrips {
			return resp, err
		}
		herr := t.c.respond(ctx, t.resource, resp.StatusCode, resp.Header, sent, a)
		switch {
		case errors.Is(herr, ErrForbidden):
			return resp, nil // give the caller the server's answer
		case herr != nil:
			drain(resp)
			return nil, herr
		}
		drain(resp)
	}
}

// forResource reports whether req goes to the MCP server itself (its
// canonical URL, ignoring any query).
func (t *Transport) forResource(req *http.Request) bool {
	u := *req.URL
	u.RawQuery, u.ForceQuery, u.Fragment = "", false, ""
	r, err := oauthmeta.CanonicalResource(u.String())
	return err == nil && r == t.resource
}

// challengeStatus reports a response that authorization may fix: a 401,
// or a 403 whose challenge (Bearer, else DPoP) is insufficient_scope.
func challengeStatus(resp *http.Response) bool {
	return resp.StatusCode == http.StatusUnauthorized ||
		resp.StatusCode == http.StatusForbidden && insufficientScope(parseChallenge(resp.Header).Challenge)
}

// replayable returns a function producing fresh copies of req's body, or
// nil when there is no body or it is too large to keep.
func replayable(req *http.Request) (func() (io.ReadCloser, error), error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	if req.GetBody != nil {
		req.Body.Close() // every send uses a fresh copy
		return req.GetBody, nil
	}
	if req.ContentLength > maxReplayBody {
		return nil, nil
	}
	data, err := io.ReadAll(io.LimitReader(req.Body, maxReplayBody+1))
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("client: reading the request body: %w", err)
	}
	if len(data) > maxReplayBody {
		return nil, fmt.Errorf("client: request body over %d bytes without GetBody", maxReplayBody)
	}
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }, nil
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

func defaultBaseTransport() http.RoundTripper {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
	}
}
