package loadgen

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// FixtureConfig configures NewFixture.
type FixtureConfig struct {
	// Remote makes the verifier fetch the issuer's keys over HTTP
	// (resource.RemoteKeys, from the fixture's own metadata and JWK Set
	// endpoints); false gives it the public key directly (StaticKeys).
	Remote bool
	// CachedTokens is the size of the pool of valid tokens that repeat (and
	// hit the verified-token cache). Zero means 256.
	CachedTokens int
	// Logger, if set, receives the middleware's audit records.
	Logger func(context.Context, resource.Event)
	// Now is the clock for token times. Nil means time.Now.
	Now clock.Func
	// Audience is the aud of the valid tokens the fixture mints. Empty
	// means the fixture's own URL; set it to another resource's identifier
	// (an mcpauth protect proxy's) to use the fixture as its issuer only:
	// the fixture's own middleware then refuses those tokens.
	Audience string
}

// Fixture is an in-process MCP server (go-sdk, stateless Streamable HTTP,
// one tool "whoami") behind resource's middleware, listening on 127.0.0.1,
// whose listener also serves the issuer's RFC 8414 metadata, the same as
// an OpenID Connect Discovery document, and its JWK Set.
// Close releases it. Its methods are safe for concurrent use.
type Fixture struct {
	// URL is the MCP endpoint (also the resource identifier).
	URL string
	// Issuer is the trusted issuer (the listener's origin).
	Issuer string
	// Verifier is the middleware's verifier.
	Verifier *resource.Verifier
	// Served counts requests that reached the MCP handler.
	Served atomic.Int64

	srv      *httptest.Server
	key      *ecdsa.PrivateKey
	kid      string
	signer   jose.Signer
	rogue    jose.Signer // a key the issuer never published, same kid
	unknown  jose.Signer // a key under an unpublished kid
	pool     []string
	invalid  map[string]string
	jti      atomic.Int64
	cfg      FixtureConfig
	jwksHits atomic.Int64
}

// NewFixture starts the fixture. It listens on 127.0.0.1 only.
func NewFixture(cfg FixtureConfig) (*Fixture, error) {
	if cfg.CachedTokens <= 0 {
		cfg.CachedTokens = 256
	}
	f := &Fixture{cfg: cfg, kid: "load-1", invalid: map[string]string{}}
	var err error
	if f.key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		return nil, err
	}
	if f.signer, err = newSigner(f.key, f.kid); err != nil {
		return nil, err
	}
	rogueKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if f.rogue, err = newSigner(rogueKey, f.kid); err != nil {
		return nil, err
	}
	if f.unknown, err = newSigner(rogueKey, "unpublished"); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	f.srv = httptest.NewUnstartedServer(mux)
	origin := "http://" + f.srv.Listener.Addr().String()
	f.Issuer, f.URL = origin, origin+"/mcp"
	if f.cfg.Audience == "" {
		f.cfg.Audience = f.URL
	}
	if err := f.mount(mux); err != nil {
		f.srv.Close()
		return nil, err
	}
	f.srv.Start()
	if err := f.mintPools(); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func newSigner(key *ecdsa.PrivateKey, kid string) (jose.Signer, error) {
	opts := (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", kid)
	return jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, opts)
}

func (f *Fixture) mount(mux *http.ServeMux) error {
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", serveJSON(f.authServerMetadata))
	mux.HandleFunc("GET /.well-known/openid-configuration", serveJSON(f.openIDConfiguration))
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		f.jwksHits.Add(1)
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
			{Key: &f.key.PublicKey, KeyID: f.kid, Algorithm: "ES256", Use: "sig"}}})
	})
	var keys keyset.Source = keyset.Static{{ID: f.kid, Algorithm: "ES256", Public: &f.key.PublicKey}}
	if f.cfg.Remote {
		rk, err := resource.NewRemoteKeys(resource.RemoteKeysConfig{Issuer: f.Issuer, InsecureAllowHTTPLoopback: true, Now: f.cfg.Now})
		if err != nil {
			return err
		}
		keys = rk
	}
	v, err := resource.New(resource.Config{Resource: f.URL, InsecureAllowHTTPLoopback: true, Now: f.cfg.Now,
		Issuers: []resource.Issuer{{Issuer: f.Issuer, Keys: keys}}, Audit: f.cfg.Logger})
	if err != nil {
		return err
	}
	f.Verifier = v
	h := whoamiHandler("load", func(ctx context.Context, _ *mcp.CallToolRequest) (string, error) {
		if info := resource.TokenInfoFromContext(ctx); info != nil {
			return info.Subject, nil
		}
		return "", errors.New("no identity")
	})
	v.Mount(mux, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.Served.Add(1)
		h.ServeHTTP(w, r)
	}))
	return nil
}

// JWKSFetches reports how many JWK Set requests the fixture answered.
func (f *Fixture) JWKSFetches() int64 { return f.jwksHits.Load() }

// Close stops the listener and the verifier.
func (f *Fixture) Close() {
	f.srv.Close()
	if f.Verifier != nil {
		f.Verifier.Close()
	}
}

// Client returns an HTTP client for the fixture with enough idle
// connections for concurrency workers.
func (f *Fixture) Client(concurrency int) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        concurrency * 2,
		MaxIdleConnsPerHost: concurrency * 2,
		IdleConnTimeout:     30 * time.Second,
	}}
}

type claims struct {
	Iss      string `json:"iss"`
	Sub      string `json:"sub"`
	Aud      any    `json:"aud"`
	ClientID string `json:"client_id"`
	Scope    string `json:"scope"`
	JTI      string `json:"jti"`
	Iat      int64  `json:"iat"`
	Exp      int64  `json:"exp,omitempty"`
	Cnf      *cnf   `json:"cnf,omitempty"`
}

// cnf is the RFC 9449 §6 confirmation claim of a DPoP-bound token.
type cnf struct {
	JKT string `json:"jkt"`
}

func (f *Fixture) claims(jti string) claims {
	now := f.cfg.Now.Now()
	return claims{Iss: f.Issuer, Sub: "user-" + jti, Aud: f.cfg.Audience, ClientID: "load", Scope: "mcp:tools",
		JTI: jti, Iat: now.Unix(), Exp: now.Add(time.Hour).Unix()}
}

func sign(s jose.Signer, c any) (string, error) {
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	jws, err := s.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}

// FreshToken mints a valid token never sent before (a cache miss).
func (f *Fixture) FreshToken() (string, error) {
	return sign(f.signer, f.claims(fmt.Sprintf("fresh-%d", f.jti.Add(1))))
}

// BoundToken mints a valid token never sent before, bound to the DPoP key
// with thumbprint jkt ("cnf.jkt", RFC 9449 §6).
func (f *Fixture) BoundToken(jkt string) (string, error) {
	c := f.claims(fmt.Sprintf("bound-%d", f.jti.Add(1)))
	c.Cnf = &cnf{JKT: jkt}
	return sign(f.signer, c)
}

func (f *Fixture) mintPools() error {
	for i := range f.cfg.CachedTokens {
		tok, err := sign(f.signer, f.claims(fmt.Sprintf("pool-%d", i)))
		if err != nil {
			return err
		}
		f.pool = append(f.pool, tok)
	}
	now := f.cfg.Now.Now()
	expired := f.claims("expired")
	expired.Iat, expired.Exp = now.Add(-2*time.Hour).Unix(), now.Add(-time.Hour).Unix()
	foreign := f.claims("foreign")
	foreign.Aud = "https://other.example.com/mcp"
	noExp := f.claims("noexp")
	noExp.Exp = 0
	for kind, mint := range map[string]func() (string, error){
		"expired":       func() (string, error) { return sign(f.signer, expired) },
		"foreign-aud":   func() (string, error) { return sign(f.signer, foreign) },
		"missing-exp":   func() (string, error) { return sign(f.signer, noExp) },
		"bad-signature": func() (string, error) { return sign(f.rogue, f.claims("rogue")) },
		"unknown-kid":   func() (string, error) { return sign(f.unknown, f.claims("unknown")) },
		"alg-none": func() (string, error) {
			h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"at+jwt","kid":"load-1"}`))
			p, _ := json.Marshal(f.claims("none"))
			return h + "." + base64.RawURLEncoding.EncodeToString(p) + ".", nil
		},
		"garbage": func() (string, error) { return "not-a-jwt-" + strings.Repeat("x", 40), nil },
	} {
		tok, err := mint()
		if err != nil {
			return err
		}
		f.invalid[kind] = tok
	}
	return nil
}

// Mix is the share, in percent, of each kind of request Next produces;
// the rest of 100 goes to the invalid kinds in turn.
type Mix struct {
	CachedValid int // a valid token from the pool (cache hit after first use)
	FreshValid  int // a valid token minted for this request (cache miss)
	Missing     int // no Authorization header
	InQuery     int // a valid token in the query string only
}

// DefaultMix is the mix cmd/mcpauth-load uses: 50 % cached valid, 10 %
// fresh valid, 10 % missing, 5 % token in the query and 25 % invalid tokens
// of seven kinds (expired, foreign audience, missing exp, bad signature,
// unknown kid, alg none, garbage).
func DefaultMix() Mix { return Mix{CachedValid: 50, FreshValid: 10, Missing: 10, InQuery: 5} }

// InvalidKinds lists the kinds of invalid token Next sends, in turn.
func InvalidKinds() []string {
	return []string{"expired", "foreign-aud", "missing-exp", "bad-signature", "unknown-kid", "alg-none", "garbage"}
}

// Next returns a Config.Next for mix: deterministic per (worker, i), with
// the expected status of each kind (200 valid, 401 refused, 400 for a
// token in the query).
func (f *Fixture) Next(mix Mix) func(w, i int) Request {
	invalidKinds := InvalidKinds()
	return func(w, i int) Request {
		n := (w*7919 + i*104729) % 100
		switch {
		case n < mix.CachedValid:
			return Request{Kind: "valid-cached", Token: f.pool[(w*31+i)%len(f.pool)], WantStatus: http.StatusOK}
		case n < mix.CachedValid+mix.FreshValid:
			tok, err := f.FreshToken()
			if err != nil {
				return Request{Kind: "mint-error", WantStatus: -1}
			}
			return Request{Kind: "valid-fresh", Token: tok, WantStatus: http.StatusOK}
		case n < mix.CachedValid+mix.FreshValid+mix.Missing:
			return Request{Kind: "missing", WantStatus: http.StatusUnauthorized}
		case n < mix.CachedValid+mix.FreshValid+mix.Missing+mix.InQuery:
			return Request{Kind: "query", Token: f.pool[i%len(f.pool)], InQuery: true, WantStatus: http.StatusBadRequest}
		default:
			kind := invalidKinds[(w+i)%len(invalidKinds)]
			return Request{Kind: kind, Token: f.invalid[kind], WantStatus: http.StatusUnauthorized}
		}
	}
}
