package upstream

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/internal/flight"
	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/internal/jwa"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/remotekeys"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// metadataTTL is how long discovery and keys are reused.
const metadataTTL = time.Hour

// oidcProvider is the login at an OpenID Connect provider: its discovered
// metadata and keys, cached.
type oidcProvider struct {
	*client

	// discovery runs one fetch of the metadata at a time, shared by every
	// login that needs it meanwhile; each stops waiting when its own
	// request ends, so a hanging provider never queues logins behind one
	// another.
	discovery singleflight.Group

	mu      sync.Mutex // guards the fields below
	meta    *oauthmeta.AuthServerMetadata
	metaAt  time.Time
	keys    keySource // nil until discovery
	keysURI string
	closed  bool // after Close, discovery sets up no key source
}

func newOIDC(c *client) *oidcProvider { return &oidcProvider{client: c} }

// Issuer implements [authserver.Login].
func (u *oidcProvider) Issuer() string { return u.cfg.Issuer }

// AuthorizationEndpoint implements [authserver.Login], discovering the
// provider first when needed.
func (u *oidcProvider) AuthorizationEndpoint(ctx context.Context) (string, error) {
	return u.authorizationEndpoint(ctx, u)
}

// Start implements [authserver.Login]: the authorization request carries
// the PKCE challenge and the nonce.
func (u *oidcProvider) Start(ctx context.Context, l *authserver.LoginRequest) (string, error) {
	return u.start(ctx, u, l)
}

// Callback implements [authserver.Login]: it exchanges the code with the
// PKCE verifier and verifies the ID token.
func (u *oidcProvider) Callback(ctx context.Context, q url.Values, l *authserver.LoginRequest) (*authserver.UpstreamIdentity, *oauth2.Token, error) {
	return u.callback(ctx, u, q, l)
}

// Ready implements [authserver.Readier]: the provider's metadata is
// younger than an hour (else fetched again, as a login would) and its key
// set was fetched and is fresh (else fetched once, see remotekeys.Set's
// Ready). The error names what is missing, for the log.
func (u *oidcProvider) Ready(ctx context.Context) error {
	if _, err := u.metadata(ctx); err != nil {
		return err
	}
	u.mu.Lock()
	keys := u.keys
	u.mu.Unlock()
	if keys == nil {
		return fmt.Errorf("upstream keys: %w", keyset.ErrUnavailable)
	}
	if err := keys.Ready(ctx); err != nil {
		return fmt.Errorf("upstream keys: %w", err)
	}
	return nil
}

func (u *oidcProvider) refresh(ctx context.Context, refreshToken string) (*vaultedToken, error) {
	return u.refreshAt(ctx, u, refreshToken)
}

func (u *oidcProvider) authParams(l *authserver.LoginRequest) []oauth2.AuthCodeOption {
	return []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("nonce", l.Nonce)}
}

// assertionAudience is the OpenID provider's issuer; at a multi-tenant
// provider, whose metadata names an issuer template, its token endpoint.
func (u *oidcProvider) assertionAudience(m *oauthmeta.AuthServerMetadata) string {
	if strings.Contains(m.Issuer, TenantPlaceholder) {
		return m.TokenEndpoint
	}
	return m.Issuer
}

// identity is the user of the verified ID token.
func (u *oidcProvider) identity(ctx context.Context, tok *oauth2.Token, nonce string) (*authserver.UpstreamIdentity, error) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, fmt.Errorf("%w: the token response has none", errIDToken)
	}
	return u.verifyIDToken(ctx, raw, nonce)
}

// metadata returns the provider metadata, fetching it when missing or
// older than metadataTTL. A failed fetch is not cached.
func (u *oidcProvider) metadata(ctx context.Context) (*oauthmeta.AuthServerMetadata, error) {
	u.mu.Lock()
	m, at := u.meta, u.metaAt
	u.mu.Unlock()
	if m != nil && u.now().Sub(at) < metadataTTL {
		return m, nil
	}
	// The shared fetch outlives any one caller's cancellation; the
	// fetcher's timeout bounds it.
	shared := context.WithoutCancel(ctx)
	m, err := flight.Do(ctx, &u.discovery, "", func() (*oauthmeta.AuthServerMetadata, error) { return u.discover(shared) })
	if err != nil && err == ctx.Err() {
		return nil, fmt.Errorf("upstream discovery: %w", err)
	}
	return m, err
}

// discover fetches and checks the metadata and points the key source at
// its jwks_uri.
func (u *oidcProvider) discover(ctx context.Context) (*oauthmeta.AuthServerMetadata, error) {
	wk := strings.TrimSuffix(u.cfg.Issuer, "/") + "/.well-known/openid-configuration"
	resp, err := u.fetcher.Get(ctx, wk, "application/json")
	if err != nil {
		return nil, fmt.Errorf("upstream discovery: %w", err)
	}
	var m oauthmeta.AuthServerMetadata
	if err := jsonx.DecodeObject(resp.Body, &m); err != nil {
		return nil, fmt.Errorf("upstream discovery: %w", err)
	}
	if err := u.checkMetadata(&m); err != nil {
		return nil, fmt.Errorf("upstream discovery: %w", err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := u.useJWKSURI(m.JWKSURI); err != nil {
		return nil, fmt.Errorf("upstream discovery: jwks_uri: %w", err)
	}
	u.meta, u.metaAt = &m, u.now()
	return &m, nil
}

// checkMetadata applies OpenID Connect Discovery §4.3 (the issuer must be
// the configured one, exactly; at a multi-tenant provider, the configured
// template) and the fetcher's URL rules to every endpoint.
func (u *oidcProvider) checkMetadata(m *oauthmeta.AuthServerMetadata) error {
	want := u.cfg.Issuer
	if u.tenants != nil {
		want = u.tenants.template
	}
	if m.Issuer != want {
		return fmt.Errorf("issuer %.200q does not match the configured issuer", m.Issuer)
	}
	for name, v := range map[string]string{
		"authorization_endpoint": m.AuthorizationEndpoint, "token_endpoint": m.TokenEndpoint, "jwks_uri": m.JWKSURI,
	} {
		if v == "" {
			return fmt.Errorf("%s is missing", name)
		}
		if err := u.fetcher.CheckURL(v); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if len(m.CodeChallengeMethodsSupported) > 0 && !slices.Contains(m.CodeChallengeMethodsSupported, "S256") {
		return fmt.Errorf("the provider does not support PKCE S256")
	}
	return nil
}

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
// Core §3.1.3.7) on the module's one JWT signature path: a JWS with one
// signature by an asymmetric algorithm, made by a key of the provider's
// JWK Set that fits the algorithm; "iss"
// the configured issuer, "aud" containing our client_id, "azp" our
// client_id when present (and present when there are several audiences),
// "exp" required and not passed, "nonce" the one we sent.
func (u *oidcProvider) verifyIDToken(ctx context.Context, raw, nonce string) (*authserver.UpstreamIdentity, error) {
	if len(raw) > maxIDTokenBytes {
		return nil, fmt.Errorf("%w: too large", errIDToken)
	}
	jws, err := jwtverify.ParseCompact(raw, idTokenAlgorithms)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errIDToken, err)
	}
	switch _, err := jwtverify.VerifySignature(ctx, jws, providerKeys{u}); {
	case errors.Is(err, jwtverify.ErrUnknownKey), errors.Is(err, jwtverify.ErrSignature):
		return nil, fmt.Errorf("%w: no key of the provider verifies the signature: %w", errIDToken, err)
	case err != nil:
		return nil, fmt.Errorf("%w: provider keys: %w", errIDToken, err)
	}
	payload := jws.UnsafePayloadWithoutVerification() // verified above
	var c idTokenClaims
	var all map[string]any
	if err := jwtverify.DecodeClaims(payload, &c); err != nil {
		return nil, fmt.Errorf("%w: %w", errIDToken, err)
	}
	if err := jsonx.DecodeObject(payload, &all); err != nil {
		return nil, fmt.Errorf("%w: %w", errIDToken, err)
	}
	issuer := u.cfg.Issuer
	if u.tenants != nil {
		if issuer, err = u.tenants.issuer(all["tid"], c.Issuer); err != nil {
			return nil, err
		}
	}
	if err := u.checkIDClaims(&c, issuer, nonce); err != nil {
		return nil, err
	}
	groups, listed := all[u.cfg.GroupsClaim]
	return &authserver.UpstreamIdentity{
		Issuer: issuer, Subject: c.Subject, Email: c.Email, Name: c.Name,
		EmailVerified:    c.EmailVerified == true || c.EmailVerified == "true",
		Groups:           stringList(groups),
		GroupsIncomplete: !listed && groupOverage(all, u.cfg.GroupsClaim),
	}, nil
}

// groupOverage reports whether the ID token claims say the user's groups
// are elsewhere rather than in the claim groupsClaim: a distributed claim
// of that name (OpenID Connect Core §5.6.2: "_claim_names" maps it to a
// source of "_claim_sources"), as Microsoft Entra ID sends when a user is
// in too many groups, or Entra's "hasgroups": true.
func groupOverage(claims map[string]any, groupsClaim string) bool {
	if claims["hasgroups"] == true {
		return true
	}
	names, _ := claims["_claim_names"].(map[string]any)
	_, distributed := names[groupsClaim]
	return distributed
}

// checkIDClaims checks the ID token's claims; issuer is the one its "iss"
// must be.
func (u *oidcProvider) checkIDClaims(c *idTokenClaims, issuer, nonce string) error {
	switch {
	case c.Issuer != issuer:
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
	keyset.Source
	authserver.Readier
	Close() error
}

// providerKeys is the provider's current key source as a keyset.Source;
// before discovery it has no keys.
type providerKeys struct{ u *oidcProvider }

func (p providerKeys) Keys(ctx context.Context, kid string) ([]keyset.Key, error) {
	p.u.mu.Lock()
	keys := p.u.keys
	p.u.mu.Unlock()
	if keys == nil {
		return nil, keyset.ErrUnavailable
	}
	return keys.Keys(ctx, kid)
}

// useJWKSURI points the key source at the discovered jwks_uri, replacing
// (and closing) one for another URI. Called with u.mu held.
func (u *oidcProvider) useJWKSURI(uri string) error {
	if u.closed {
		return errors.New("the server is closed")
	}
	if u.keys != nil && u.keysURI == uri {
		return nil
	}
	cfg := remotekeys.Config{
		JWKSURI: uri, TLSConfig: u.cfg.TLSConfig, InsecureAllowHTTPLoopback: u.cfg.InsecureAllowHTTPLoopback,
		Timeout: u.timeout, Now: u.now,
	}
	nethook.Set(&cfg, nethook.Of(&u.cfg))
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
func (u *oidcProvider) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.closed = true
	if u.keys != nil {
		return u.keys.Close()
	}
	return nil
}
