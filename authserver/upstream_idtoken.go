package authserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/internal/jwa"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/remotekeys"
)

// Bounds of ID token verification.
const (
	idTokenLeeway   = time.Minute
	maxIDTokenBytes = 16 << 10
	maxSubjectLen   = 255 // OpenID Connect Core §2
)

// errIDToken is wrapped by every ID token refusal.
var errIDToken = errors.New("upstream ID token refused")

// idTokenAlgorithms are the asymmetric JWS algorithms accepted on ID
// tokens; "none" and the HMAC family never are.
var idTokenAlgorithms = jwa.JOSE[jose.SignatureAlgorithm](jwa.Defaults(jwa.IDToken))

// idTokenClaims are the ID token claims read here (OpenID Connect Core §2,
// §5.1), decoded by the module's one JSON policy.
type idTokenClaims struct {
	jwtverify.Claims `json:",inline"`
	Nonce            string `json:"nonce"`
	AZP              string `json:"azp"`
	Email            string `json:"email"`
	EmailVerified    any    `json:"email_verified"`
	Name             string `json:"name"`
}

// verifyIDToken checks an ID token from the token endpoint (OpenID Connect
// Core §3.1.3.7): a JWS with one signature by an asymmetric algorithm,
// made by a key of the provider's JWK Set that fits the algorithm; "iss"
// the configured issuer, "aud" containing our client_id, "azp" our
// client_id when present (and present when there are several audiences),
// "exp" required and not passed, "nonce" the one we sent.
func (u *upstream) verifyIDToken(ctx context.Context, raw, nonce string) (*UpstreamIdentity, error) {
	if len(raw) > maxIDTokenBytes {
		return nil, fmt.Errorf("%w: too large", errIDToken)
	}
	jws, err := jose.ParseSigned(raw, idTokenAlgorithms)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errIDToken, err)
	}
	if len(jws.Signatures) != 1 {
		return nil, fmt.Errorf("%w: exactly one signature is required", errIDToken)
	}
	h := jws.Signatures[0].Protected
	keys, err := u.providerKeys(ctx, h.KeyID)
	if err != nil {
		return nil, fmt.Errorf("%w: provider keys: %w", errIDToken, err)
	}
	var payload []byte
	for k := range jwa.Candidates(keys, h.KeyID, h.Algorithm) {
		if payload, err = jws.Verify(k.Public); err == nil {
			break
		}
	}
	if payload == nil {
		return nil, fmt.Errorf("%w: no key of the provider verifies the signature", errIDToken)
	}
	var c idTokenClaims
	var all map[string]any
	if err := jwtverify.DecodeClaims(payload, &c); err != nil {
		return nil, fmt.Errorf("%w: %w", errIDToken, err)
	}
	if err := jsonx.DecodeObject(payload, &all); err != nil {
		return nil, fmt.Errorf("%w: %w", errIDToken, err)
	}
	if err := u.checkIDClaims(&c, nonce); err != nil {
		return nil, err
	}
	return &UpstreamIdentity{
		Issuer: c.Issuer, Subject: c.Subject, Email: c.Email, Name: c.Name,
		EmailVerified: c.EmailVerified == true || c.EmailVerified == "true",
		Groups:        stringList(all[u.cfg.GroupsClaim]),
	}, nil
}

func (u *upstream) checkIDClaims(c *idTokenClaims, nonce string) error {
	switch {
	case c.Issuer != u.cfg.Issuer:
		return fmt.Errorf("%w: iss is another issuer", errIDToken)
	case !c.Audience.Contains(u.cfg.ClientID):
		return fmt.Errorf("%w: aud does not contain our client_id", errIDToken)
	case c.Subject == "" || len(c.Subject) > maxSubjectLen:
		return fmt.Errorf("%w: sub is missing or too long", errIDToken)
	case len(c.Audience) > 1 && c.AZP == "":
		return fmt.Errorf("%w: azp is required with several audiences", errIDToken)
	case c.AZP != "" && c.AZP != u.cfg.ClientID:
		return fmt.Errorf("%w: azp is another client", errIDToken)
	case nonce == "" || subtle.ConstantTimeCompare([]byte(c.Nonce), []byte(nonce)) != 1:
		// A login record without a nonce (damaged, or written by other
		// code) must not accept an ID token without one.
		return fmt.Errorf("%w: nonce does not match this login", errIDToken)
	}
	if _, _, err := (jwtverify.Times{Leeway: idTokenLeeway}).Check(&c.Claims, u.now()); err != nil {
		return fmt.Errorf("%w: %w", errIDToken, err)
	}
	return nil
}

// stringList reads a claim that is an array of strings or one string.
func stringList(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// keySource is the provider's JWK Set, from the module's key home
// (remotekeys.Set: fetched through the guarded fetcher, refetched on an
// unknown "kid" at most once per interval, refreshed by its cache headers).
// It is set by useJWKSURI after discovery.
type keySource interface {
	Keys(ctx context.Context, kid string) ([]jwa.Key, error)
	Close() error
}

// providerKeys returns the provider's keys with kid; before discovery
// there are none.
func (u *upstream) providerKeys(ctx context.Context, kid string) ([]jwa.Key, error) {
	u.mu.Lock()
	keys := u.keys
	u.mu.Unlock()
	if keys == nil {
		return nil, remotekeys.ErrUnavailable
	}
	return keys.Keys(ctx, kid)
}

// useJWKSURI points the key source at the discovered jwks_uri, replacing
// (and closing) one for another URI. Called with u.mu held.
func (u *upstream) useJWKSURI(uri string) error {
	if u.closed {
		return errors.New("the server is closed")
	}
	if u.keys != nil && u.keysURI == uri {
		return nil
	}
	cfg := remotekeys.Config{
		JWKSURI: uri, TLSConfig: u.cfg.Fetch.TLSConfig, InsecureAllowHTTPLoopback: u.cfg.Fetch.InsecureAllowHTTPLoopback,
		Timeout: u.timeout, Now: u.now,
	}
	nethook.Set(&cfg, nethook.Of(&u.cfg.Fetch))
	k, err := remotekeys.New(cfg)
	if err != nil {
		return err
	}
	if u.keys != nil {
		_ = u.keys.Close()
	}
	u.keys, u.keysURI = k, uri
	return nil
}

// Close stops the key set's background refresh; a discovery still under
// way when Close is called starts none.
func (u *upstream) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.closed = true
	if u.keys != nil {
		return u.keys.Close()
	}
	return nil
}
