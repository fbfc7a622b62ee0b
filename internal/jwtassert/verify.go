package jwtassert

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/internal/jwa"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/replay"
)

// Defaults shared by the verifiers.
const (
	// DefaultLeeway is the clock skew allowed on exp, nbf and iat.
	DefaultLeeway = 30 * time.Second
	// DefaultMaxSize bounds an assertion: 16 KiB.
	DefaultMaxSize = 16 << 10
)

// core holds what both verifiers share: the accepted audiences, the
// allowlist, time rules, size bound, replay store and clock. It is
// read-only after construction.
type core struct {
	audiences []string
	algs      []string
	joseAlgs  []jose.SignatureAlgorithm
	leeway    time.Duration
	maxLife   time.Duration
	maxSize   int
	replay    replay.Store
	now       clock.Func
	code      oauthmeta.ErrorCode // invalid_client or invalid_grant
	b64       *base64.Encoding
}

// coreConfig is the common part of the verifier configs.
type coreConfig struct {
	audiences        []string
	algs             []string
	leeway, maxLife  time.Duration
	defLife          time.Duration
	maxSize          int
	replay           replay.Store
	maxReplayEntries int
	now              clock.Func
	code             oauthmeta.ErrorCode
}

func newCore(c coreConfig) (*core, error) {
	if len(c.audiences) == 0 {
		return nil, errors.New("jwtassert: Audiences is required (this authorization server's issuer identifier)")
	}
	if slices.Contains(c.audiences, "") {
		return nil, errors.New("jwtassert: empty audience")
	}
	algs, err := jwa.Allowlist(c.algs, jwa.Defaults(jwa.ClientAssertion))
	if err != nil {
		return nil, err
	}
	if c.leeway < 0 || c.maxLife < 0 || c.maxSize < 0 {
		return nil, errors.New("jwtassert: negative Leeway, MaxLifetime or MaxSize")
	}
	k := &core{
		audiences: slices.Clone(c.audiences), algs: algs, joseAlgs: jwa.JOSE[jose.SignatureAlgorithm](algs), leeway: cmp.Or(c.leeway, DefaultLeeway),
		maxLife: cmp.Or(c.maxLife, c.defLife), maxSize: cmp.Or(c.maxSize, DefaultMaxSize),
		replay: c.replay, now: c.now, code: c.code, b64: base64.RawURLEncoding.Strict(),
	}
	if k.replay == nil {
		r, err := replay.NewMemory(replay.MemoryConfig{MaxEntries: c.maxReplayEntries, Now: c.now})
		if err != nil {
			return nil, err
		}
		k.replay = r
	}
	return k, nil
}

func (k *core) fail(sentinel error, detail string) error { return fail(sentinel, k.code, detail) }

// wireHeader is the strict view of a JWT header.
type wireHeader struct {
	Alg  string `json:"alg"`
	Typ  string `json:"typ"`
	Kid  string `json:"kid"`
	Crit any    `json:"crit"`
}

// wireClaims is the strict view of the claims this package reads.
type wireClaims struct {
	jwtverify.Claims `json:",inline"`
	ClientID         string             `json:"client_id"`
	Resource         oauthmeta.Audience `json:"resource"`
	Scope            string             `json:"scope"`
}

// parsedJWT is a parsed, not yet verified JWT.
type parsedJWT struct {
	obj     *jose.JSONWebSignature
	hdr     wireHeader
	claims  wireClaims
	payload []byte
}

// parse checks size, shape and algorithm, decodes header and claims, and
// refuses a "typ" that typeOK does not accept. Nothing in the result is
// authenticated yet.
func (k *core) parse(jwt string, typeOK func(typ string) bool) (*parsedJWT, error) {
	if jwt == "" {
		return nil, k.fail(jwtverify.ErrMalformed, "empty")
	}
	if len(jwt) > k.maxSize {
		return nil, k.fail(ErrTooLarge, "")
	}
	hseg, pseg, sseg, ok := jwtverify.Split(jwt)
	if !ok {
		return nil, k.fail(jwtverify.ErrMalformed, "not a compact JWS")
	}
	var p parsedJWT
	hdr, err := k.b64.DecodeString(hseg)
	if err != nil || jsonx.DecodeObject(hdr, &p.hdr) != nil {
		return nil, k.fail(jwtverify.ErrMalformed, "header")
	}
	if !jwa.Supported(p.hdr.Alg) || !slices.Contains(k.algs, p.hdr.Alg) {
		return nil, k.fail(jwtverify.ErrAlgorithm, "")
	}
	if p.hdr.Crit != nil {
		return nil, k.fail(jwtverify.ErrMalformed, "crit is not supported")
	}
	if _, err := k.b64.DecodeString(sseg); err != nil {
		return nil, k.fail(jwtverify.ErrMalformed, "signature")
	}
	p.obj, err = jwtverify.ParseCompact(jwt, k.joseAlgs)
	if err != nil {
		return nil, k.fail(jwtverify.ErrMalformed, "not a compact JWS")
	}
	if p.payload, err = k.b64.DecodeString(pseg); err != nil {
		return nil, k.fail(jwtverify.ErrMalformed, "payload")
	}
	if err := jwtverify.DecodeClaims(p.payload, &p.claims); err != nil {
		return nil, k.fail(jwtverify.ErrMalformed, "claims")
	}
	if !typeOK(p.hdr.Typ) {
		return nil, k.fail(ErrWrongType, "")
	}
	return &p, nil
}

// checkAudience applies RFC 7523 §3 item 3: aud must name an accepted
// audience, compared exactly.
func (k *core) checkAudience(aud oauthmeta.Audience) error {
	if len(aud) == 0 {
		return k.fail(ErrMissingClaim, "aud")
	}
	if slices.ContainsFunc(k.audiences, aud.Contains) {
		return nil
	}
	return k.fail(ErrAudience, "")
}

// times applies RFC 7523 §3 items 4–6 with the one time rule of
// jwtverify and returns exp; a failure wraps that rule's sentinel.
// requireIAT makes "iat" mandatory.
func (k *core) times(c *wireClaims, requireIAT bool) (time.Time, error) {
	rule := jwtverify.Times{Leeway: k.leeway, MaxLifetime: k.maxLife, RequireIssuedAt: requireIAT}
	exp, _, err := rule.Check(&c.Claims, k.now.Now())
	if err != nil {
		return exp, k.fail(err, "")
	}
	return exp, nil
}

// optionalDate converts a NumericDate claim that has passed times, or
// gives the zero time.
func optionalDate(v *float64) time.Time {
	if v == nil {
		return time.Time{}
	}
	t, _ := jwtverify.NumericDate(*v)
	return t
}

// verifySignature checks the signature with keys through the one JWT
// signature path (jwtverify.VerifySignature) and returns the key that
// verified; a failure wraps that path's sentinel.
func (k *core) verifySignature(ctx context.Context, p *parsedJWT, keys keyset.Source) (keyset.Key, error) {
	key, err := jwtverify.VerifySignature(ctx, p.obj, keys)
	for _, sentinel := range []error{jwtverify.ErrUnknownKey, jwtverify.ErrSignature} {
		if errors.Is(err, sentinel) {
			return keyset.Key{}, k.fail(sentinel, "")
		}
	}
	if err != nil {
		return keyset.Key{}, k.fail(jwtverify.ErrKeysUnavailable, "")
	}
	return key, nil
}

// useJTI records (namespace, issuer, jti) until exp plus leeway, the last
// instant the JWT could be accepted.
func (k *core) useJTI(ctx context.Context, ns, iss, jti string, exp time.Time) error {
	err := k.replay.Use(ctx, ns+"\x00"+iss+"\x00"+jti, exp.Add(k.leeway+time.Second))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, replay.ErrReplayed):
		return k.fail(replay.ErrReplayed, "")
	default:
		return k.fail(ErrReplayCheckUnavailable, "")
	}
}
