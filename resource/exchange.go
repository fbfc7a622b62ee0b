package resource

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/internal/lru"
	"github.com/mcpauth/mcpauth/internal/safehttp"
	"github.com/mcpauth/mcpauth/internal/tokenclient"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Bounds of the token exchange.
const (
	// DefaultExchangeTimeout bounds one exchange when ExchangeConfig.HTTPClient is nil.
	DefaultExchangeTimeout = 10 * time.Second
	// DefaultExchangeCacheTTL bounds how long a cached exchanged token is reused.
	DefaultExchangeCacheTTL = time.Minute
	// maxExchangeResponse bounds the token endpoint's answer.
	maxExchangeResponse = 64 << 10
	// exchangeCacheMargin: a cached token this close to its expiry is not reused.
	exchangeCacheMargin = 30 * time.Second
)

// ErrExchange is wrapped by every failed [Exchanger.Exchange]. A refusal
// by the authorization server also wraps its *[oauthmeta.Error] (for
// example invalid_grant once the user's grant is revoked: the user must
// log in again); a server that could not be reached in time, or that
// answered 503 or temporarily_unavailable, also [ErrExchangeUnavailable].
// [ExchangeStatus] and [Verifier.DenyExchange] turn the error into an
// HTTP answer.
var ErrExchange = errors.New("resource: token exchange failed")

// ErrExchangeUnavailable is wrapped, beside [ErrExchange], by an exchange
// that failed because the authorization server could not be reached or
// did not answer in time, or answered 503 or temporarily_unavailable: a
// later attempt may succeed.
var ErrExchangeUnavailable = errors.New("resource: token exchange unavailable")

// ExchangeConfig configures [NewExchanger]: this resource server as a
// confidential client of the authorization server, allowed the RFC 8693
// token exchange.
type ExchangeConfig struct {
	// TokenEndpoint is the authorization server's token endpoint. Required:
	// https, or http to a loopback host with InsecureAllowHTTPLoopback. The
	// request's access token is sent there only when it has the origin of
	// the token's issuer ("iss"), and never on a redirect.
	TokenEndpoint string
	// ClientID and ClientSecret are this resource server's credentials
	// (client_secret_basic). Required.
	ClientID, ClientSecret string
	// HTTPClient sends the exchange; redirects are never followed whatever
	// its CheckRedirect says. Nil means a client with a
	// [DefaultExchangeTimeout] timeout.
	HTTPClient *http.Client
	// CacheSize is how many (access token, audience) results are kept and
	// reused until CacheTTL passes or the upstream token nears expiry.
	// Zero means no cache: every call exchanges.
	CacheSize int
	// CacheTTL bounds the reuse of a cached result. Zero means
	// [DefaultExchangeCacheTTL].
	CacheTTL time.Duration
	// InsecureAllowHTTPLoopback permits a plain-http token endpoint on a
	// loopback host, for tests and local development.
	InsecureAllowHTTPLoopback bool
	// TracerProvider, when set, makes each exchange record an
	// OpenTelemetry span, a child of the context's span, with its target
	// and outcome (never a token). Nil means no tracing.
	TracerProvider trace.TracerProvider
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// ExchangedToken is a token for another service, as the exchange returned
// it: the user's access token at the upstream identity provider's API
// ([Exchanger.Exchange]), or a token the authorization server issued for
// a downstream API ([Exchanger.ExchangeResource]).
type ExchangedToken struct {
	// AccessToken is the token to send to that service, never elsewhere.
	AccessToken string
	// TokenType is the scheme to send it with, normally "Bearer".
	TokenType string
	// Expiry is when it expires; zero when the server did not say.
	Expiry time.Time
	// Scopes are the scopes the server said the token carries ("scope");
	// nil when it did not say.
	Scopes []string
}

// Exchanger trades the access token of the request being served for the
// same user's token at another service (RFC 8693 token exchange), so that
// a tool handler acts there as the user without ever seeing the MCP
// access token, which is never passed through: [Exchanger.Exchange] for
// the upstream provider's token, [Exchanger.ExchangeResource] for a token
// for a downstream API. Both take one path to the token endpoint. It is
// safe for concurrent use.
type Exchanger struct {
	cfg      ExchangeConfig
	endpoint *url.URL
	client   *tokenclient.Client
	now      clock.Func
	cache    *lru.Cache[[sha256.Size]byte, *ExchangedToken] // nil without CacheSize
	tracer   trace.Tracer                                   // nil without TracerProvider
}

// NewExchanger validates cfg. It does no I/O.
func NewExchanger(cfg ExchangeConfig) (*Exchanger, error) {
	p := oauthmeta.URLPolicy{InsecureAllowHTTPLoopback: cfg.InsecureAllowHTTPLoopback}
	if err := p.CheckURL(cfg.TokenEndpoint); err != nil {
		return nil, fmt.Errorf("%w: exchange token endpoint: %w", ErrInvalidConfig, err)
	}
	if cfg.ClientID == "" || cfg.ClientSecret == "" {
		return nil, fmt.Errorf("%w: the exchange needs client credentials", ErrInvalidConfig)
	}
	if cfg.CacheSize < 0 || cfg.CacheTTL < 0 {
		return nil, fmt.Errorf("%w: negative exchange cache bound", ErrInvalidConfig)
	}
	e := &Exchanger{cfg: cfg, now: cfg.Now}
	if cfg.TracerProvider != nil {
		e.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	e.endpoint, _ = url.Parse(cfg.TokenEndpoint)
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: DefaultExchangeTimeout}
	}
	e.client = tokenclient.New(tokenclient.Config{Endpoint: cfg.TokenEndpoint, ClientID: cfg.ClientID,
		ClientSecret: cfg.ClientSecret, HTTPClient: hc, MaxBytes: maxExchangeResponse})
	if cfg.CacheSize > 0 {
		e.cache = lru.New[[sha256.Size]byte, *ExchangedToken](cfg.CacheSize, cfg.Now, nil)
	}
	return e, nil
}

// Exchange returns the user's token for audience (the name the
// authorization server gives the other service, e.g. "github"), obtained
// with the access token of the request whose context is ctx, as verified
// by [Verifier.Middleware]. Without a verified request it fails with
// [ErrNoToken]; a refusal wraps [ErrExchange] and the server's
// *[oauthmeta.Error].
//
// In a stateful go-sdk server, tools run with the context of the session's
// initialize request, whose token may have expired since: exchange from a
// stateless server, or expect invalid_grant once it has.
func (e *Exchanger) Exchange(ctx context.Context, audience string) (*ExchangedToken, error) {
	return e.do(ctx, exchangeTarget{param: "audience", value: audience})
}

// ExchangeResource returns a token of this resource server's own for the
// API whose resource URI (RFC 8707) is resource, acting for the user of
// the request whose context is ctx: the authorization server issues it
// (authserver.DownstreamAPI) in exchange for the request's verified access
// token, which the API never sees. scopes, when given, are requested
// ("scope"; each must be one the user granted the MCP client and the API
// accepts, else invalid_scope); none means every such scope. Errors are
// those of [Exchanger.Exchange]; an unknown resource, or one this server
// may not ask for, is invalid_target. An invalid_scope refusal of scopes
// the request's token does not carry also wraps a [*ScopeError] whose
// Required is the token's scopes and those, so that
// [Verifier.DenyExchange] answers 403 insufficient_scope and the MCP
// client can step up (the user then consents to the API's scopes).
func (e *Exchanger) ExchangeResource(ctx context.Context, resource string, scopes ...string) (*ExchangedToken, error) {
	if _, err := oauthmeta.CanonicalResource(resource); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrExchange, err)
	}
	for _, sc := range scopes {
		if !oauthmeta.ValidScopeToken(sc) {
			return nil, fmt.Errorf("%w: invalid scope token", ErrExchange)
		}
	}
	tok, err := e.do(ctx, exchangeTarget{param: "resource", value: resource, scope: oauthmeta.FormatScope(scopes)})
	if err != nil && errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidScope}) {
		if se := stepUpFor(ctx, scopes); se != nil {
			return nil, fmt.Errorf("%w: %w", se, err)
		}
	}
	return tok, err
}

// stepUpFor is the step-up that a refusal of the requested scopes calls
// for, when the request's token lacks some of them; nil when it carries
// them all (the user may not have them: a new authorization would not
// help) or there is no verified request.
func stepUpFor(ctx context.Context, requested []string) *ScopeError {
	info := TokenInfoFromContext(ctx)
	if info == nil {
		return nil
	}
	var missing []string
	for _, sc := range requested {
		if !slices.Contains(info.Scopes, sc) && !slices.Contains(missing, sc) {
			missing = append(missing, sc)
		}
	}
	if missing == nil {
		return nil
	}
	return &ScopeError{Required: append(slices.Clone(info.Scopes), missing...), Missing: missing}
}

// exchangeTarget is what an exchange asks for: the target, as "audience"
// or "resource", and the requested scope ("" for none).
type exchangeTarget struct {
	param, value, scope string
}

// do runs the exchange for t with the request's verified token, through
// the cache when there is one.
func (e *Exchanger) do(ctx context.Context, t exchangeTarget) (*ExchangedToken, error) {
	if e.tracer == nil {
		tok, _, err := e.run(ctx, t)
		return tok, err
	}
	ctx, span := e.tracer.Start(ctx, "mcpauth.resource.exchange", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("mcpauth.exchange."+t.param, t.value)))
	defer span.End()
	tok, cached, err := e.run(ctx, t)
	outcome := "ok"
	if err != nil {
		outcome = "error"
		if oe := (*oauthmeta.Error)(nil); errors.As(err, &oe) {
			outcome = string(oe.Code)
		}
		span.SetStatus(codes.Error, outcome)
	}
	span.SetAttributes(attribute.String("mcpauth.outcome", outcome), attribute.Bool("mcpauth.exchange.cached", cached))
	return tok, err
}

// run is do: the token, and whether it came from the cache.
func (e *Exchanger) run(ctx context.Context, t exchangeTarget) (*ExchangedToken, bool, error) {
	ra, ok := ctx.Value(ctxKey{}).(*requestAuth)
	if !ok || ra.av.token == "" {
		return nil, false, fmt.Errorf("%w: %w: no verified request in the context", ErrExchange, ErrNoToken)
	}
	iss, err := url.Parse(ra.tokenInfo().Issuer)
	if err != nil || !safehttp.SameOrigin(iss, e.endpoint) {
		return nil, false, fmt.Errorf("%w: the token endpoint is not at the origin of the token's issuer", ErrExchange)
	}
	key := sha256.Sum256([]byte(ra.av.token + "\x00" + t.param + "\x00" + t.value + "\x00" + t.scope))
	if e.cache != nil {
		if tok, ok := e.cache.Get(key); ok {
			return tok, true, nil
		}
	}
	tok, err := e.exchange(ctx, ra.av.token, t)
	if err != nil {
		return nil, false, err
	}
	if e.cache != nil {
		until := e.now.Now().Add(cmp.Or(e.cfg.CacheTTL, DefaultExchangeCacheTTL))
		if !tok.Expiry.IsZero() && tok.Expiry.Add(-exchangeCacheMargin).Before(until) {
			until = tok.Expiry.Add(-exchangeCacheMargin)
		}
		if until.After(e.now.Now()) {
			e.cache.Add(key, tok, until)
		}
	}
	return tok, false, nil
}

func (e *Exchanger) exchange(ctx context.Context, token string, target exchangeTarget) (*ExchangedToken, error) {
	req := oauthmeta.TokenExchangeRequest{SubjectToken: token, SubjectTokenType: oauthmeta.TokenTypeAccessToken,
		RequestedTokenType: oauthmeta.TokenTypeAccessToken, Scope: target.scope}
	if target.param == "resource" {
		req.Resource = []string{target.value}
	} else {
		req.Audience = []string{target.value}
	}
	r, err := e.client.Token(ctx, req.Form())
	var se *tokenclient.StatusError
	switch {
	case errors.Is(err, tokenclient.ErrUnavailable):
		return nil, fmt.Errorf("%w: %w: %w", ErrExchange, ErrExchangeUnavailable, err)
	case errors.As(err, &se) && se.OAuth != nil:
		if se.StatusCode == http.StatusBadRequest && se.OAuth.Code == oauthmeta.CodeInvalidGrant && target.param == "audience" {
			if cr := e.connectRequired(target.value, se.OAuth); cr != nil {
				return nil, fmt.Errorf("%w: %w", ErrExchange, cr)
			}
		}
		return nil, fmt.Errorf("%w: %w", ErrExchange, se.OAuth)
	case errors.As(err, &se):
		return nil, fmt.Errorf("%w: status %d", ErrExchange, se.StatusCode)
	case err != nil:
		return nil, fmt.Errorf("%w: malformed token exchange response", ErrExchange)
	}
	if (r.IssuedTokenType != "" && r.IssuedTokenType != oauthmeta.TokenTypeAccessToken) || r.TokenType == "" {
		return nil, fmt.Errorf("%w: malformed token exchange response", ErrExchange)
	}
	t := &ExchangedToken{AccessToken: r.AccessToken, TokenType: r.TokenType}
	if t.Scopes, err = oauthmeta.ParseScope(r.Scope); err != nil {
		return nil, fmt.Errorf("%w: malformed token exchange response", ErrExchange)
	}
	if secs := r.ExpiresIn; secs > 0 && secs < 10*365*24*3600 {
		t.Expiry = e.now.Now().Add(time.Duration(secs) * time.Second)
	}
	return t, nil
}

// Reasons of a failed token exchange, as [Verifier.DenyExchange] answers
// them.
var (
	// The authorization server refused the request's token for the
	// exchange (invalid_grant): the token, or its grant, was revoked or
	// has expired, or the grant holds no upstream token. The user must
	// log in again, which a 401 invalid_token makes an MCP client do.
	errExchangeGrant error = newReason(ErrInvalidToken.(*class), "the upstream token is unavailable; log in again")
	// The authorization server could not be reached in time (503).
	errExchangeUnavailable error = newReason(ErrUnavailable.(*class), "token exchange unavailable")
)

// ExchangeStatus is the HTTP status that answers a request whose
// [Exchanger.Exchange] failed with err:
//
//   - 401 when the authorization server refused the request's token
//     (invalid_grant: revoked, expired, issued for another resource, or
//     a grant without upstream tokens), or the request was not verified;
//   - 403 when [Exchanger.ExchangeResource] asked for scopes the
//     request's token lacks (a [*ScopeError]): the answer is an
//     insufficient_scope challenge naming them, for a step-up; and when
//     the user has not connected the provider ([ErrConnectRequired]),
//     which only an MCP answer can ask them to do
//     ([Connector.ProviderToken]);
//   - 503 when it could not be reached or answer in time, or said
//     temporarily_unavailable ([ErrExchangeUnavailable]);
//   - 502 for every other failure (a refusal of this server's client
//     credentials or of the audience, a malformed answer): a
//     configuration fault the user cannot mend.
//
// It is 200 for a nil err.
func ExchangeStatus(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, ErrInsufficientScope), errors.Is(err, ErrConnectRequired):
		return http.StatusForbidden
	case errors.Is(err, &oauthmeta.Error{Code: oauthmeta.CodeInvalidGrant}), errors.Is(err, ErrNoToken):
		return http.StatusUnauthorized
	case errors.Is(err, ErrExchangeUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusBadGateway
}
