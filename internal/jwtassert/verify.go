package jwtassert

import (
	"context"
	"encoding/base64"
	"errors"
	"math"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/jsonx"
	"github.com/mcpauth/mcpauth/internal/jwtassert/jwa"
	"github.com/mcpauth/mcpauth/internal/jwtassert/replay"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Defaults shared by the verifiers.
const (
	// DefaultLeeway is the clock skew allowed on exp, nbf and iat.
	DefaultLeeway = 30 * time.Second
	// DefaultMaxSize bounds an assertion: 16 KiB.
	DefaultMaxSize = 16 << 10
)

// defaultVerifyAlgs is the allowlist when none is configured.
func defaultVerifyAlgs() []string { return []string{jwa.ES256, jwa.RS256, jwa.PS256, jwa.EdDSA} }

// core holds what both verifiers share: the allowlist, time rules, size
// bound, replay store and clock. It is read-only after construction.
type core struct {
	algs     []string
	joseAlgs []jose.SignatureAlgorithm
	leeway   time.Duration
	maxLife  time.Duration
	maxSize  int
	replay   replay.Store
	now      func() time.Time
	code     oauthmeta.ErrorCode // invalid_client or invalid_grant
	b64      *base64.Encoding
}

// coreConfig is the common part of the verifier configs.
type coreConfig struct {
	algs             []string
	leeway, maxLife  time.Duration
	defLife          time.Duration
	maxSize          int
	replay           replay.Store
	maxReplayEntries int
	now              func() time.Time
	code             oauthmeta.ErrorCode
}

func newCore(c coreConfig) (*core, error) {
	algs, err := jwa.Allowlist(c.algs, defaultVerifyAlgs())
	if err != nil {
		return nil, err
	}
	if c.leeway < 0 || c.maxLife < 0 || c.maxSize < 0 {
		return nil, errors.New("jwtassert: negative Leeway, MaxLifetime or MaxSize")
	}
	k := &core{
		algs: algs, leeway: c.leeway, maxLife: c.maxLife, maxSize: c.maxSize,
		replay: c.replay, now: c.now, code: c.code, b64: base64.RawURLEncoding.Strict(),
	}
	for _, a := range algs {
		k.joseAlgs = append(k.joseAlgs, jose.SignatureAlgorithm(a))
	}
	if k.leeway == 0 {
		k.leeway = DefaultLeeway
	}
	if k.maxLife == 0 {
		k.maxLife = c.defLife
	}
	if k.maxSize == 0 {
		k.maxSize = DefaultMaxSize
	}
	if k.replay == nil {
		r, err := replay.New(replay.Config{MaxEntries: c.maxReplayEntries, Now: c.now})
		if err != nil {
			return nil, err
		}
		k.replay = r
	}
	return k, nil
}

func (k *core) clock() time.Time {
	if k.now == nil {
		return time.Now()
	}
	return k.now()
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
	Iss      string             `json:"iss"`
	Sub      string             `json:"sub"`
	Aud      oauthmeta.Audience `json:"aud"`
	Exp      *float64           `json:"exp"`
	Nbf      *float64           `json:"nbf"`
	Iat      *float64           `json:"iat"`
	JTI      string             `json:"jti"`
	ClientID string             `json:"client_id"`
	Resource oauthmeta.Audience `json:"resource"`
	Scope    string             `json:"scope"`
}

// parsedJWT is a parsed, not yet verified JWT.
type parsedJWT struct {
	obj     *jose.JSONWebSignature
	hdr     wireHeader
	claims  wireClaims
	payload []byte
}

// parse checks size, shape and algorithm, then decodes header and claims.
// Nothing in the result is authenticated yet.
func (k *core) parse(jwt string) (*parsedJWT, error) {
	if jwt == "" {
		return nil, k.fail(ErrMalformed, "empty")
	}
	if len(jwt) > k.maxSize {
		return nil, k.fail(ErrTooLarge, "")
	}
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return nil, k.fail(ErrMalformed, "not a compact JWS")
	}
	var p parsedJWT
	hdr, err := k.b64.DecodeString(parts[0])
	if err != nil || jsonx.DecodeObject(hdr, &p.hdr) != nil {
		return nil, k.fail(ErrMalformed, "header")
	}
	if !jwa.Supported(p.hdr.Alg) || !containsAlg(k.algs, p.hdr.Alg) {
		return nil, k.fail(ErrAlgNotAllowed, "")
	}
	if p.hdr.Crit != nil {
		return nil, k.fail(ErrMalformed, "crit is not supported")
	}
	if _, err := k.b64.DecodeString(parts[2]); err != nil {
		return nil, k.fail(ErrMalformed, "signature")
	}
	p.obj, err = jose.ParseSignedCompact(jwt, k.joseAlgs)
	if err != nil {
		return nil, k.fail(ErrMalformed, "not a compact JWS")
	}
	if p.payload, err = k.b64.DecodeString(parts[1]); err != nil {
		return nil, k.fail(ErrMalformed, "payload")
	}
	if err := jsonx.DecodeObject(p.payload, &p.claims); err != nil {
		return nil, k.fail(ErrMalformed, "claims")
	}
	return &p, nil
}

func containsAlg(algs []string, alg string) bool {
	for _, a := range algs {
		if a == alg {
			return true
		}
	}
	return false
}

// typeIs matches a "typ" value against a media type, case-insensitively and
// with or without the "application/" prefix (RFC 7515 §4.1.9).
func typeIs(typ, want string) bool {
	typ = strings.ToLower(typ)
	want = strings.ToLower(want)
	return typ == want || typ == "application/"+want
}

// checkAudience applies RFC 7523 §3 item 3: aud must name an accepted
// audience, compared exactly.
func (k *core) checkAudience(aud oauthmeta.Audience, accepted []string) error {
	if len(aud) == 0 {
		return k.fail(ErrMissingClaim, "aud")
	}
	for _, a := range accepted {
		if aud.Contains(a) {
			return nil
		}
	}
	return k.fail(ErrAudience, "")
}

// maxUnixSeconds bounds the NumericDates this package converts (year 3000).
const maxUnixSeconds = 32503680000

// times applies RFC 7523 §3 items 4–6 and returns exp. requireIAT makes
// "iat" mandatory.
func (k *core) times(c *wireClaims, requireIAT bool) (exp time.Time, err error) {
	now := float64(k.clock().UnixNano()) / 1e9
	leeway := k.leeway.Seconds()
	switch {
	case c.Exp == nil:
		return time.Time{}, k.fail(ErrMissingClaim, "exp")
	case math.IsNaN(*c.Exp) || *c.Exp+leeway <= now:
		return time.Time{}, k.fail(ErrExpired, "")
	case *c.Exp > now+k.maxLife.Seconds()+leeway || *c.Exp > maxUnixSeconds:
		return time.Time{}, k.fail(ErrLifetimeTooLong, "")
	}
	if c.Nbf != nil && (math.IsNaN(*c.Nbf) || *c.Nbf > now+leeway) {
		return time.Time{}, k.fail(ErrNotYetValid, "")
	}
	if c.Iat == nil && requireIAT {
		return time.Time{}, k.fail(ErrMissingClaim, "iat")
	}
	if c.Iat != nil && (math.IsNaN(*c.Iat) || *c.Iat > now+leeway) {
		return time.Time{}, k.fail(ErrIssuedInFuture, "")
	}
	return numericDate(*c.Exp), nil
}

// numericDate converts a checked NumericDate to a time.
func numericDate(v float64) time.Time {
	sec, frac := math.Modf(v)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC()
}

func optionalDate(v *float64) time.Time {
	if v == nil || math.IsNaN(*v) || *v > maxUnixSeconds || *v < -maxUnixSeconds {
		return time.Time{}
	}
	return numericDate(*v)
}

// verifySignature resolves keys and lets go-jose check the signature with
// each candidate in turn. It returns the key that verified.
func (k *core) verifySignature(ctx context.Context, p *parsedJWT, keys KeySource) (Key, error) {
	if keys == nil {
		return Key{}, k.fail(ErrUnknownKey, "no key source")
	}
	all, err := keys.Keys(ctx, p.hdr.Kid)
	if err != nil {
		return Key{}, k.fail(ErrKeySourceUnavailable, "")
	}
	cands := candidates(all, p.hdr.Kid, p.hdr.Alg)
	if len(cands) == 0 {
		return Key{}, k.fail(ErrUnknownKey, "")
	}
	for _, key := range cands {
		if _, err := p.obj.Verify(key.Public); err == nil {
			return key, nil
		}
	}
	return Key{}, k.fail(ErrBadSignature, "")
}

// useJTI records (namespace, issuer, jti) until exp plus leeway, the last
// instant the JWT could be accepted.
func (k *core) useJTI(ctx context.Context, ns, iss, jti string, exp time.Time) error {
	err := k.replay.Use(ctx, ns+"\x00"+iss+"\x00"+jti, exp.Add(k.leeway+time.Second))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, replay.ErrReplayed):
		return k.fail(ErrReplayed, "")
	default:
		return k.fail(ErrReplayCheckUnavailable, "")
	}
}
