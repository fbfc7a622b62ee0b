package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
)

// maxUpstreamTokenResponse bounds a token response read from the provider.
const maxUpstreamTokenResponse = 64 << 10

// upstreamTokenError is a refusal by the provider's token endpoint: its
// status and RFC 6749 §5.2 error code, never the body.
type upstreamTokenError struct {
	Status int
	Code   string
}

func (e *upstreamTokenError) Error() string {
	return fmt.Sprintf("upstream token endpoint: status %d, error %q", e.Status, truncateLog(e.Code))
}

// refused reports whether the provider said the refresh token is no good
// (as opposed to being unavailable).
func (e *upstreamTokenError) refused() bool {
	return e.Status >= 400 && e.Status < 500
}

// upstreamTokenResponse is the RFC 6749 §5.1 response read here.
type upstreamTokenResponse struct {
	AccessToken  string          `json:"access_token"`
	TokenType    string          `json:"token_type"`
	RefreshToken string          `json:"refresh_token"`
	ExpiresIn    json.RawMessage `json:"expires_in"`
	Error        string          `json:"error"`
}

// refresh redeems an upstream refresh token (RFC 6749 §6) at the
// provider's token endpoint, authenticated as at the code exchange
// (client_secret_basic or _post, private_key_jwt, or none), through the
// SSRF-guarded client, without following redirects, reading at most
// maxUpstreamTokenResponse bytes.
func (u *client) refreshAt(ctx context.Context, k kind, refreshToken string) (*vaultedToken, error) {
	m, err := k.metadata(ctx)
	if err != nil {
		return nil, err
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}}
	basic := false
	switch {
	case u.assertions != nil:
		jwt, err := u.assertions.Sign(k.assertionAudience(m))
		if err != nil {
			return nil, fmt.Errorf("upstream client assertion: %w", err)
		}
		form.Set("client_id", u.cfg.ClientID)
		form.Set("client_assertion_type", jwtassert.ClientAssertionType)
		form.Set("client_assertion", jwt)
	case u.oauth2Config(m, "").Endpoint.AuthStyle == oauth2.AuthStyleInHeader:
		basic = true
	default:
		form.Set("client_id", u.cfg.ClientID)
		if u.cfg.ClientSecret != "" {
			form.Set("client_secret", u.cfg.ClientSecret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("upstream token endpoint: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		// RFC 6749 §2.3.1: both parts form-encoded first.
		req.SetBasicAuth(url.QueryEscape(u.cfg.ClientID), url.QueryEscape(u.cfg.ClientSecret))
	}
	hc := *u.fetcher.Client()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("upstream token endpoint: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamTokenResponse+1))
	if err != nil || len(body) > maxUpstreamTokenResponse {
		return nil, &upstreamTokenError{Status: http.StatusBadGateway, Code: "unreadable or oversized response"}
	}
	var tr upstreamTokenResponse
	decodeErr := jsonx.DecodeObject(body, &tr)
	if resp.StatusCode != http.StatusOK {
		return nil, &upstreamTokenError{Status: resp.StatusCode, Code: tr.Error}
	}
	if decodeErr != nil || tr.AccessToken == "" {
		return nil, &upstreamTokenError{Status: http.StatusBadGateway, Code: "malformed token response"}
	}
	t := &vaultedToken{AccessToken: tr.AccessToken, RefreshToken: tr.RefreshToken, TokenType: tr.TokenType}
	if secs, ok := expiresIn(tr.ExpiresIn); ok {
		t.Expiry = u.now().Add(time.Duration(secs) * time.Second)
	}
	return t, nil
}

// expiresIn reads expires_in as a positive JSON integer (or, as some
// providers send it, a string of digits) of at most nine digits, some
// thirty years.
func expiresIn(raw json.RawMessage) (int64, bool) {
	s := strings.Trim(string(raw), `"`)
	n, err := strconv.ParseUint(s, 10, 64) // digits only
	return int64(n), err == nil && len(s) <= 9 && n > 0
}
