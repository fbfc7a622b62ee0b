package client

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/internal/tokenclient"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// ActorCredential returns the credential a sub-agent presents as
// actor_token in a delegation, with its actor_token_type (RFC 8693 §2.1).
// It is called for every exchange: assertions are single-use.
type ActorCredential func(ctx context.Context) (token, tokenType string, err error)

// ActorAssertionConfig configures [ActorAssertion].
type ActorAssertionConfig struct {
	// ClientID is the sub-agent's client_id at the authorization server.
	// Required.
	ClientID string
	// Key signs the assertions; KeyID names it in the client's registered
	// JWK set ("" omits "kid"). Key is required.
	Key   crypto.Signer
	KeyID string
	// Issuer is the authorization server's issuer identifier, the
	// assertions' audience. Required.
	Issuer string
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// ActorAssertion is the credential of a sub-agent registered at the
// authorization server as a private_key_jwt client: a fresh client
// assertion (RFC 7523) for each exchange.
func ActorAssertion(cfg ActorAssertionConfig) (ActorCredential, error) {
	if cfg.Issuer == "" {
		return nil, fmt.Errorf("%w: ActorAssertionConfig.Issuer is required", ErrConfig)
	}
	s, err := jwtassert.NewClientAssertionSigner(jwtassert.ClientAssertionSignerConfig{ClientID: cfg.ClientID, Key: cfg.Key,
		KeyID: cfg.KeyID, Now: cfg.Now})
	if err != nil {
		return nil, fmt.Errorf("%w: actor assertion: %w", ErrConfig, err)
	}
	return func(context.Context) (string, string, error) {
		a, err := s.Sign(cfg.Issuer)
		return a, oauthmeta.TokenTypeJWT, err
	}, nil
}

// ActorJWT is the credential of a sub-agent known by a workload identity
// JWT from a platform the authorization server trusts: mint returns a fresh
// one (read from the platform's projected token file, or asked of its
// metadata service).
func ActorJWT(mint func(ctx context.Context) (string, error)) ActorCredential {
	return func(ctx context.Context) (string, string, error) {
		t, err := mint(ctx)
		return t, oauthmeta.TokenTypeJWT, err
	}
}

// DelegationConfig configures a [Delegation].
type DelegationConfig struct {
	// TokenEndpoint is the token endpoint of the authorization server that
	// issued the parent token. Required; https, or http on loopback.
	TokenEndpoint string
	// Parent supplies the parent's access token, the subject_token (for
	// a host, its own token source; for a sub-agent, its own Delegation).
	// Required.
	Parent oauth2.TokenSource
	// Actor is the sub-agent's credential. Nil means the DPoP key alone
	// (DPoP must then be set): the actor is the key, which the server
	// accepts only for a parent that is not DPoP-bound.
	Actor ActorCredential
	// DPoP is the sub-agent's DPoP key: each exchange carries a proof of
	// it, and the derived token is bound to it (required when the parent
	// token is DPoP-bound). Nil means Bearer tokens.
	DPoP *dpop.Prover
	// Scopes narrow the derived token's scopes; nil keeps the parent's.
	Scopes []string
	// Resources narrow its audience to these resources; nil keeps the
	// parent's.
	Resources []string
	// Lifetime, when positive, asks for a token that lives at most this
	// long (never beyond the parent's). Zero means the server's default.
	Lifetime time.Duration
	// ClientID and ClientSecret authenticate the caller of the token
	// endpoint when it is a confidential client; empty sends none (the
	// actor credential authenticates the actor).
	ClientID, ClientSecret string
	// HTTPClient sends the requests; redirects are never followed. Nil
	// means a client with a 10-second timeout.
	HTTPClient *http.Client
	// InsecureAllowHTTPLoopback permits a plain http token endpoint on a
	// loopback address (tests, local development).
	InsecureAllowHTTPLoopback bool
	// Now is the clock for expiry. Nil means time.Now.
	Now func() time.Time
}

// Delegation derives narrowed access tokens for a sub-agent from a parent
// token by RFC 8693 token exchange: the authorization server answers with a
// token whose "act" claim names the sub-agent (and the actors before it),
// whose scopes, audience and lifetime are within the parent's. A derived
// token is kept until shortly before it expires. It is safe for
// concurrent use and starts no goroutine.
type Delegation struct {
	cfg DelegationConfig
	tc  *tokenclient.Client

	mu  sync.Mutex
	tok *oauth2.Token
}

// ErrDelegation wraps every failure of [Delegation.Token]; a refusal by
// the authorization server also carries its *oauthmeta.Error.
var ErrDelegation = errors.New("client: delegation failed")

// NewDelegation checks cfg and returns a Delegation. It does no I/O.
func NewDelegation(cfg DelegationConfig) (*Delegation, error) {
	switch {
	case cfg.Parent == nil:
		return nil, fmt.Errorf("%w: Parent is required", ErrConfig)
	case cfg.Actor == nil && cfg.DPoP == nil:
		return nil, fmt.Errorf("%w: Actor or DPoP is required", ErrConfig)
	case cfg.Lifetime < 0:
		return nil, fmt.Errorf("%w: Lifetime must not be negative", ErrConfig)
	}
	if err := (oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: cfg.InsecureAllowHTTPLoopback}).CheckURL(cfg.TokenEndpoint); err != nil {
		return nil, fmt.Errorf("%w: TokenEndpoint: %w", ErrConfig, err)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	hc := &http.Client{Timeout: tokenclient.DefaultTimeout}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		hc = &c
	}
	if cfg.DPoP != nil {
		hc.Transport = &delegationProofs{base: hc.Transport, prover: cfg.DPoP, endpoint: cfg.TokenEndpoint}
	}
	tc := tokenclient.New(tokenclient.Config{Endpoint: cfg.TokenEndpoint, ClientID: cfg.ClientID,
		ClientSecret: cfg.ClientSecret, HTTPClient: hc})
	return &Delegation{cfg: cfg, tc: tc}, nil
}

// expiryMargin is how long before its expiry a derived token is replaced.
const expiryMargin = 10 * time.Second

// Token returns a derived token, asking for a new one when there is none
// or it is about to expire.
func (d *Delegation) Token(ctx context.Context) (*oauth2.Token, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.cfg.Now()
	if d.tok != nil && (d.tok.Expiry.IsZero() || now.Add(expiryMargin).Before(d.tok.Expiry)) {
		return d.tok, nil
	}
	tok, err := d.exchange(ctx, now)
	if err != nil {
		return nil, err
	}
	d.tok = tok
	return tok, nil
}

// TokenSource returns d as an oauth2.TokenSource whose requests use ctx.
func (d *Delegation) TokenSource(ctx context.Context) oauth2.TokenSource {
	return delegationSource{ctx: ctx, d: d}
}

type delegationSource struct {
	ctx context.Context
	d   *Delegation
}

func (s delegationSource) Token() (*oauth2.Token, error) { return s.d.Token(s.ctx) }

// exchange performs one token exchange.
func (d *Delegation) exchange(ctx context.Context, now time.Time) (*oauth2.Token, error) {
	parent, err := d.cfg.Parent.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: parent token: %w", ErrDelegation, err)
	}
	req := oauthmeta.TokenExchangeRequest{SubjectToken: parent.AccessToken, SubjectTokenType: oauthmeta.TokenTypeAccessToken,
		Resource: d.cfg.Resources, Scope: oauthmeta.FormatScope(d.cfg.Scopes)}
	if d.cfg.Actor != nil {
		if req.ActorToken, req.ActorTokenType, err = d.cfg.Actor(ctx); err != nil {
			return nil, fmt.Errorf("%w: actor credential: %w", ErrDelegation, err)
		}
	} else {
		req.ActorToken, req.ActorTokenType = d.cfg.DPoP.JKT(), oauthmeta.TokenTypeDPoPJKT
	}
	form := req.Form()
	if d.cfg.Lifetime > 0 {
		form.Set("expires_in", strconv.FormatInt(int64(max(d.cfg.Lifetime/time.Second, 1)), 10))
	}
	resp, err := d.tc.Token(ctx, form)
	if err != nil {
		if oe, ok := errors.AsType[*oauthmeta.Error](err); ok {
			return nil, fmt.Errorf("%w: %w", ErrDelegation, sanitizeError(oe, parent.AccessToken, req.ActorToken))
		}
		return nil, fmt.Errorf("%w: %w", ErrDelegation, err)
	}
	tt := resp.TokenType
	switch {
	case d.cfg.DPoP != nil && tt != dpop.TokenType:
		return nil, fmt.Errorf("%w: token_type %q, want a DPoP-bound token", ErrDelegation, tt)
	case d.cfg.DPoP == nil && tt != "Bearer" && tt != "bearer":
		return nil, fmt.Errorf("%w: token_type %q not usable", ErrDelegation, tt)
	}
	tok := &oauth2.Token{AccessToken: resp.AccessToken, TokenType: tt}
	if resp.ExpiresIn > 0 {
		tok.Expiry = now.Add(time.Duration(min(resp.ExpiresIn, maxExpiresIn)) * time.Second)
	}
	return tok, nil
}

// delegationProofs adds a DPoP proof of the actor's key to each token
// request, and retries once with the server's nonce when it asks for one
// (RFC 9449 §8).
type delegationProofs struct {
	base     http.RoundTripper
	prover   *dpop.Prover
	endpoint string
}

func (t *delegationProofs) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	send := func(nonce string) (*http.Response, error) {
		proof, err := t.prover.Proof(dpop.Request{Method: r.Method, URL: t.endpoint, Nonce: nonce})
		if err != nil {
			return nil, err
		}
		req := r.Clone(r.Context())
		if r.GetBody != nil {
			if req.Body, err = r.GetBody(); err != nil {
				return nil, err
			}
		}
		req.Header.Set("DPoP", proof)
		return base.RoundTrip(req)
	}
	resp, err := send("")
	if err != nil || resp.StatusCode != http.StatusBadRequest || resp.Header.Get("DPoP-Nonce") == "" || r.GetBody == nil {
		return resp, err
	}
	nonce := resp.Header.Get("DPoP-Nonce")
	_ = resp.Body.Close()
	return send(nonce)
}
