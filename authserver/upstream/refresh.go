package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/internal/tokenclient"
)

// maxExpiresIn bounds the lifetime read from a token response: nine
// digits of seconds, some thirty years. A longer one is no lifetime.
const maxExpiresIn = 999_999_999

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

// refreshAt redeems an upstream refresh token (RFC 6749 §6) at the
// provider's token endpoint through the module's token-endpoint client,
// authenticated as at the code exchange (client_secret_basic or _post,
// private_key_jwt, or none), through the SSRF-guarded client, without
// following redirects, reading at most 64 KiB.
func (u *client) refreshAt(ctx context.Context, k kind, refreshToken string) (*vaultedToken, error) {
	m, err := k.metadata(ctx)
	if err != nil {
		return nil, err
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}}
	cc := tokenclient.Config{Endpoint: m.TokenEndpoint, HTTPClient: u.fetcher.Client()}
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
		cc.ClientID, cc.ClientSecret, cc.AuthStyle = u.cfg.ClientID, u.cfg.ClientSecret, tokenclient.AuthHeader
	default:
		cc.ClientID, cc.ClientSecret, cc.AuthStyle = u.cfg.ClientID, u.cfg.ClientSecret, tokenclient.AuthParams
	}
	tr, err := tokenclient.New(cc).Token(ctx, form)
	if se, ok := errors.AsType[*tokenclient.StatusError](err); ok {
		status, code := se.StatusCode, ""
		if se.OAuth != nil {
			code = string(se.OAuth.Code)
		}
		if status == http.StatusOK { // an error member in a 200 answer
			status = http.StatusBadGateway
		}
		return nil, &upstreamTokenError{Status: status, Code: code}
	}
	if errors.Is(err, tokenclient.ErrResponse) {
		return nil, &upstreamTokenError{Status: http.StatusBadGateway, Code: "unusable token response"}
	}
	if err != nil {
		return nil, fmt.Errorf("upstream token endpoint: %w", err)
	}
	t := &vaultedToken{AccessToken: tr.AccessToken, RefreshToken: tr.RefreshToken, TokenType: tr.TokenType}
	if tr.ExpiresIn > 0 && tr.ExpiresIn <= maxExpiresIn {
		t.Expiry = u.now().Add(time.Duration(tr.ExpiresIn) * time.Second)
	}
	return t, nil
}
