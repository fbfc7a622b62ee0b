package resource

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"time"

	"github.com/mcpauth/mcpauth/internal/ascii"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/internal/tokenclient"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Defaults applied to zero-valued [IntrospectionConfig] fields.
const (
	DefaultIntrospectionTTL         = time.Minute
	DefaultIntrospectionNegativeTTL = 10 * time.Second
	DefaultIntrospectionConcurrency = 16
	maxIntrospectionBody            = 64 << 10
)

// IntrospectionConfig configures RFC 7662 introspection of access tokens
// that are not JWTs. The resource server authenticates to the
// endpoint with client_secret_basic (RFC 7662 §2.1).
type IntrospectionConfig struct {
	// Endpoint is the introspection endpoint URL. REQUIRED; https (plain
	// http only to loopback with Config.InsecureAllowHTTPLoopback).
	Endpoint string
	// Issuer is the issuer whose tokens the endpoint describes; it must be
	// one of Config.Issuers. An "iss" in a response must equal it; an absent
	// "iss" means this issuer. Empty means the only configured issuer
	// (an error when there are several).
	Issuer string
	// ClientID and ClientSecret authenticate the resource server. REQUIRED.
	ClientID     string
	ClientSecret string
	// HTTPClient sends the requests; redirects are never followed. Nil
	// means a client with a 10 s timeout.
	HTTPClient *http.Client
	// CacheTTL bounds how long an active result is reused (never past the
	// token's "exp"). Zero means [DefaultIntrospectionTTL].
	CacheTTL time.Duration
	// NegativeTTL is how long an inactive or rejected token is remembered.
	// Zero means [DefaultIntrospectionNegativeTTL].
	NegativeTTL time.Duration
	// MaxConcurrent bounds the introspection calls in flight; further
	// requests wait for a slot until their context ends. Zero means
	// [DefaultIntrospectionConcurrency].
	MaxConcurrent int
}

type introspector struct {
	cfg    IntrospectionConfig
	v      *Verifier
	client *tokenclient.Client
	pos    *tokenCache
	neg    *tokenCache
	sem    chan struct{}
}

func newIntrospector(cfg IntrospectionConfig, v *Verifier) (*introspector, error) {
	if cfg.Endpoint == "" || cfg.ClientID == "" || cfg.ClientSecret == "" {
		return nil, fmt.Errorf("%w: introspection needs an endpoint and client credentials", ErrInvalidConfig)
	}
	p := oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: v.insecure}
	if err := p.CheckURL(cfg.Endpoint); err != nil {
		return nil, fmt.Errorf("%w: introspection endpoint: %w", ErrInvalidConfig, err)
	}
	if cfg.Issuer == "" {
		if len(v.issuerOrder) != 1 {
			return nil, fmt.Errorf("%w: introspection issuer required with several issuers", ErrInvalidConfig)
		}
		cfg.Issuer = v.issuerOrder[0]
	}
	if _, ok := v.issuers[cfg.Issuer]; !ok {
		return nil, fmt.Errorf("%w: introspection issuer is not a configured issuer", ErrInvalidConfig)
	}
	if cfg.CacheTTL < 0 || cfg.NegativeTTL < 0 || cfg.MaxConcurrent < 0 {
		return nil, fmt.Errorf("%w: negative introspection bound", ErrInvalidConfig)
	}
	in := &introspector{cfg: cfg, v: v, sem: make(chan struct{}, cmp.Or(cfg.MaxConcurrent, DefaultIntrospectionConcurrency))}
	in.client = tokenclient.New(tokenclient.Config{Endpoint: cfg.Endpoint, ClientID: cfg.ClientID,
		ClientSecret: cfg.ClientSecret, HTTPClient: cfg.HTTPClient, MaxBytes: maxIntrospectionBody})
	in.pos, _ = newTokenCache(CacheConfig{MaxAge: cmp.Or(cfg.CacheTTL, DefaultIntrospectionTTL)})
	in.neg, _ = newTokenCache(CacheConfig{MaxAge: cmp.Or(cfg.NegativeTTL, DefaultIntrospectionNegativeTTL)})
	return in, nil
}

// introspect asks the endpoint about raw, with positive and negative
// caching, and applies the same checks as to a JWT: active, issuer,
// audience, expiry (required), nbf/iat, and no confirmation claim unless
// DPoP is enabled. The result does not depend on the scheme the token came
// with, so a bound token sent as Bearer by a thief is never negatively
// cached and cannot lock its owner out; Verifier.checkScheme decides that
// per request. Any failure to get an answer fails closed with
// [ErrUnavailable] (503, reason "introspection failed").
func (in *introspector) introspect(ctx context.Context, raw string, now time.Time) (*authValue, error) {
	if av := in.pos.get(raw, now); av != nil {
		return av, nil
	}
	if av := in.neg.get(raw, now); av != nil {
		return nil, errInactive
	}
	select {
	case in.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, errIntrospectionBusy
	}
	body, resp, err := in.call(ctx, raw)
	<-in.sem
	if err != nil {
		return nil, errors.Join(errIntrospection, err)
	}
	info, err := in.check(body, resp, now)
	if err != nil {
		in.neg.put(newAuthValue(raw), now.Add(time.Hour), now)
		return nil, err
	}
	av := &authValue{info: info, token: raw, bound: resp.Cnf != nil}
	in.pos.put(av, info.Expiry, now)
	return av, nil
}

func (in *introspector) check(body []byte, r *oauthmeta.IntrospectionResponse, now time.Time) (*TokenInfo, error) {
	if !r.Active {
		return nil, errInactive
	}
	iss := cmp.Or(r.Iss, in.cfg.Issuer)
	if iss != in.cfg.Issuer {
		return nil, errIssuer
	}
	var jkt string
	if r.Cnf != nil {
		jkt = r.Cnf.JKT
	}
	switch ascii.ToLower(r.TokenType) {
	case "", "bearer", "access_token", oauthmeta.TokenTypeAccessToken:
	case "dpop": // RFC 9449 §6.2, with its binding
		if in.v.dpop == nil || jkt == "" {
			return nil, errTokenType
		}
	default:
		return nil, errTokenType // refresh tokens, …
	}
	c := jwtverify.Claims{Issuer: iss, Audience: r.Aud,
		Expiry: numericDate(r.Exp), NotBefore: numericDate(r.Nbf), IssuedAt: numericDate(r.Iat)}
	exp, iat, err := in.v.checkClaims(&c, r.Cnf != nil, now, in.v.dpop != nil, nil)
	if err != nil {
		return nil, err
	}
	scopes, err := oauthmeta.ParseScope(r.Scope)
	if err != nil {
		return nil, errMalformedToken
	}
	if r.Act.Validate() != nil {
		return nil, errMalformedActor
	}
	return &TokenInfo{
		Scheme: schemeFor(jkt), Issuer: iss, Subject: r.Sub, ClientID: r.ClientID,
		Audience: r.Aud, Scopes: scopes, Expiry: exp, IssuedAt: iat, ID: r.Jti, JKT: jkt, Claims: body,
		Actors: r.Act.Chain(),
	}, nil
}

// numericDate is an introspection time as a JWT claim: nil when absent (0).
func numericDate(v int64) *float64 {
	if v == 0 {
		return nil
	}
	f := float64(v)
	return &f
}

// call performs the RFC 7662 §2.1 request. Errors never include the token.
func (in *introspector) call(ctx context.Context, raw string) ([]byte, *oauthmeta.IntrospectionResponse, error) {
	resp, err := in.client.Post(ctx, url.Values{"token": {raw}, "token_type_hint": {"access_token"}})
	if err != nil {
		return nil, nil, fmt.Errorf("resource: introspection call failed: %w", err)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil, nil, errors.New("resource: introspection response is not application/json")
	}
	r, err := oauthmeta.ParseIntrospectionResponse(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	return resp.Body, r, nil
}
