package dpop

import (
	"cmp"
	"context"
	"crypto"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/internal/jwa"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/internal/lru"
	"github.com/mcpauth/mcpauth/replay"
)

// Defaults for the zero values of [VerifierConfig].
const (
	// DefaultIATWindow is how old a proof may be: five minutes, the window
	// the MCP DPoP profile asks servers to accept.
	DefaultIATWindow = 5 * time.Minute
	// DefaultLeeway is how far in the future "iat" may lie (client clock
	// skew): also five minutes, for the MCP profile's ±5 minutes.
	DefaultLeeway = 5 * time.Minute
	// defaultMaxProofSize bounds a proof: 8 KiB holds an RSA-4096 proof.
	defaultMaxProofSize = 8 << 10
	// defaultKeyCacheSize is how many distinct proof headers (client keys)
	// stay parsed between requests.
	defaultKeyCacheSize = 1024
)

// VerifierConfig configures a [Verifier]. Zero values of the optional fields
// mean the documented defaults, never "check disabled".
type VerifierConfig struct {
	// Algorithms is the allowlist of proof "alg" values, also what
	// [Verifier.Algorithms] reports for the "algs" challenge parameter and
	// "dpop_signing_alg_values_supported". Nil or empty means
	// [DefaultAlgorithms].
	// Allowed members: ES256, ES384, ES512, RS256, RS384, RS512, PS256, PS384,
	// PS512, EdDSA; anything else (none, HS256, ...) is a configuration error.
	Algorithms []string
	// IATWindow is the maximum age of a proof ("iat" ≥ now − IATWindow).
	// Zero means DefaultIATWindow; negative is an error.
	IATWindow time.Duration
	// Leeway is the allowed clock skew into the future ("iat" ≤ now +
	// Leeway). Zero means DefaultLeeway; negative is an error.
	Leeway time.Duration
	// MaxProofSize bounds the proof length in bytes. Zero means
	// 8 KiB, enough for an RSA-4096 proof; negative is an error.
	MaxProofSize int
	// Replay records accepted (key thumbprint, jti) pairs until the proof
	// could no longer be accepted ("iat" + IATWindow). A key the store
	// reports with an error wrapping replay.ErrReplayed refuses the proof
	// with [ErrReplayedProof]; any other error with
	// [ErrReplayCheckUnavailable] (fail closed). Nil means a private
	// replay.Memory of MaxReplayEntries entries; share a store between
	// instances that serve the same URIs (package redisreplay keeps one on
	// Redis).
	Replay replay.Store
	// MaxReplayEntries sizes the private replay cache used when Replay is
	// nil. Zero means 1 048 576 (about 100 MB when full). A full cache refuses new
	// proofs (ErrReplayCheckUnavailable) rather than forget live ones: size it
	// for peak proofs per second × (IATWindow + Leeway).
	MaxReplayEntries int
	// Nonces, when set, makes every proof carry a nonce it accepts (RFC 9449
	// §8, §9). Nil means NonceKey decides.
	Nonces NonceSource
	// NonceKey, when set, makes every proof carry a nonce this Verifier
	// issued: stateless [HMACNonces] under this key (at least 32 random
	// bytes, the same on every instance that must accept each other's
	// nonces) and NonceLabel, rotated every NoncePeriod and accepted for two
	// periods. It and Nonces are exclusive. With neither, no server nonce is
	// required (a per-request Request.Nonce still is).
	NonceKey []byte
	// NonceLabel separates the nonces of servers that share NonceKey (see
	// HMACNonceConfig.Label). Empty means "dpop-nonce".
	NonceLabel string
	// NoncePeriod is the rotation period of the NonceKey nonces. Zero means
	// [DefaultNoncePeriod]; at least one second. Only with NonceKey.
	NoncePeriod time.Duration
	// KeyCacheSize bounds the cache of validated proof headers (one per client
	// key in use). Zero means 1024; negative is an error. The cache only saves
	// work: a miss re-parses the header.
	KeyCacheSize int
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
}

// Verifier checks DPoP proofs (RFC 9449 §4.3): the resource-server and
// authorization-server side. Create it with [NewVerifier]; it is safe for
// concurrent use.
type Verifier struct {
	algs     []string
	joseAlgs []jose.SignatureAlgorithm
	window   time.Duration
	leeway   time.Duration
	maxSize  int
	replay   replay.Store
	nonces   NonceSource
	now      clock.Func
	headers  *lru.Cache[string, *proofHeader] // by first segment of verified proofs
	lastURL  atomic.Pointer[urlMemo]
	b64      *base64.Encoding // strict: canonical base64url only
}

// urlMemo remembers the last request URL's normalization: a server checks
// proofs against few distinct URLs.
type urlMemo struct{ raw, norm string }

// NewVerifier validates cfg and returns a Verifier. It starts nothing in the
// background.
func NewVerifier(cfg VerifierConfig) (*Verifier, error) {
	algs, err := jwa.Allowlist(cfg.Algorithms, DefaultAlgorithms())
	if err != nil {
		return nil, fmt.Errorf("dpop: %w", err)
	}
	v := &Verifier{
		algs:     algs,
		joseAlgs: jwa.JOSE[jose.SignatureAlgorithm](algs),
		window:   cmp.Or(cfg.IATWindow, DefaultIATWindow),
		leeway:   cmp.Or(cfg.Leeway, DefaultLeeway),
		maxSize:  cmp.Or(cfg.MaxProofSize, defaultMaxProofSize),
		replay:   cfg.Replay,
		nonces:   cfg.Nonces,
		now:      cfg.Now,
		b64:      base64.RawURLEncoding.Strict(),
	}
	if cfg.IATWindow < 0 || cfg.Leeway < 0 || cfg.MaxProofSize < 0 || cfg.KeyCacheSize < 0 {
		return nil, errors.New("dpop: negative IATWindow, Leeway, MaxProofSize or KeyCacheSize")
	}
	switch {
	case cfg.Nonces != nil && cfg.NonceKey != nil:
		return nil, errors.New("dpop: NonceKey and Nonces are exclusive")
	case cfg.NonceKey != nil:
		n, err := NewHMACNonces(HMACNonceConfig{Key: cfg.NonceKey, Label: cfg.NonceLabel, Period: cfg.NoncePeriod, Now: cfg.Now})
		if err != nil {
			return nil, err
		}
		v.nonces = n
	case cfg.NoncePeriod != 0 || cfg.NonceLabel != "":
		return nil, errors.New("dpop: NoncePeriod or NonceLabel without NonceKey")
	}
	if v.replay == nil {
		c, err := replay.NewMemory(replay.MemoryConfig{MaxEntries: cfg.MaxReplayEntries, Now: cfg.Now})
		if err != nil {
			return nil, fmt.Errorf("dpop: %w", err)
		}
		v.replay = c
	}
	v.headers = lru.New[string, *proofHeader](cmp.Or(cfg.KeyCacheSize, defaultKeyCacheSize), nil, nil)
	return v, nil
}

// Algorithms returns the accepted proof algorithms, for the "algs" challenge
// parameter (RFC 9449 §7.1) and "dpop_signing_alg_values_supported" (§5.1,
// RFC 9728 §2). The slice is a copy.
func (v *Verifier) Algorithms() []string { return slices.Clone(v.algs) }

// Nonce returns a fresh nonce from VerifierConfig.Nonces for the DPoP-Nonce
// response header, or "" when no NonceSource is configured.
func (v *Verifier) Nonce(ctx context.Context) (string, error) {
	if v.nonces == nil {
		return "", nil
	}
	return v.nonces.Nonce(ctx)
}

// Proof is a verified DPoP proof.
type Proof struct {
	// JKT is the RFC 7638 SHA-256 thumbprint of the proof key: compare it
	// with the access token's "cnf.jkt" ([Proof.CheckBinding]) or bind a new
	// token to it.
	JKT string
	// PublicKey is the key the proof was signed with.
	PublicKey crypto.PublicKey
	// Algorithm is the proof's JWS "alg".
	Algorithm string
	// JTI, HTM, HTU and Nonce are the claims of the same names.
	JTI, HTM, HTU, Nonce string
	// IssuedAt is the "iat" claim.
	IssuedAt time.Time
}

// CheckBinding returns nil if jkt (the "cnf.jkt" of the access token
// presented with the proof) names the proof's key, and an error wrapping
// [ErrKeyMismatch] (code invalid_token) otherwise, including for an empty
// jkt: a DPoP proof cannot vouch for an unbound token.
func (p *Proof) CheckBinding(jkt string) error {
	if jkt == "" || subtle.ConstantTimeCompare([]byte(jkt), []byte(p.JKT)) != 1 {
		return fail(ErrKeyMismatch, "")
	}
	return nil
}

// Verify checks proof, the value of the request's single DPoP header, for
// req (RFC 9449 §4.3). Sending at most one DPoP header is the client's
// obligation and checking it the caller's: use [ProofFromHeader], which
// refuses a missing, repeated or comma-joined header. When req.AccessToken
// is set, pass the token's "cnf.jkt" in req.JKT: Verify then refuses a
// proof of any other key with [ErrKeyMismatch] before it touches the
// replay store. (Comparing afterwards with [Proof.CheckBinding] is as
// strict but lets anyone holding a stolen token, signing with their own
// key, fill a bounded replay store.)
//
// Checks run from cheap to expensive: size and shape, header (cached per
// key), claims (htm, htu, iat, ath), the signature, the nonce, the key
// binding (req.JKT), and last the jti replay check, so only a proof that
// passed everything else consumes a replay-cache entry. Every error wraps a
// sentinel of this package and an *oauthmeta.Error.
//
// The header checks are the compact JWS shape and size, typ, the algorithm
// allowlist (asymmetric only) and its fit with the key type, and a
// public-only "jwk"; a header already seen is not checked again (a small
// bounded cache). Every signature, known header or not, is verified with
// the embedded key (go-jose DetachedVerify), the one signature path; a
// validation costs about one signature verification plus 17%. "ath" must
// be present exactly when a token is presented, and equal its hash. The
// jti replay check is keyed by key thumbprint and jti, in a bounded
// in-memory store unless VerifierConfig.Replay names a shared
// replay.Store.
func (v *Verifier) Verify(ctx context.Context, proof string, req Request) (*Proof, error) {
	if proof == "" {
		return nil, fail(ErrMissingProof, "")
	}
	if len(proof) > v.maxSize {
		return nil, fail(errProofTooLarge, "")
	}
	if !validMethod(req.Method) {
		return nil, fail(ErrInvalidRequest, "method is not an HTTP token")
	}
	htu, err := v.normalizeRequestURL(req.URL)
	if err != nil {
		return nil, err
	}
	hseg, pseg, sseg, ok := jwtverify.Split(proof)
	if !ok {
		return nil, fail(ErrMalformedProof, "not three base64url segments")
	}
	hdr, cached := v.headers.Get(hseg)
	if !cached {
		if hdr, err = v.parseHeader(proof, hseg); err != nil {
			return nil, err
		}
	}
	payload, sig, ok := v.decodeBody(pseg, sseg)
	if !ok {
		return nil, fail(ErrMalformedProof, "payload or signature is not base64url")
	}
	c, err := v.checkClaims(payload, req, htu)
	if err != nil {
		return nil, err
	}
	if err := hdr.verifySignature(payload, sig); err != nil {
		return nil, err
	}
	if !cached {
		v.headers.Add(hseg, hdr, time.Time{})
	}
	if err := v.checkNonce(ctx, c.nonce, req.Nonce); err != nil {
		return nil, err
	}
	if req.JKT != "" && subtle.ConstantTimeCompare([]byte(req.JKT), []byte(hdr.jkt)) != 1 {
		return nil, fail(ErrKeyMismatch, "")
	}
	until := c.iat.Add(v.window + time.Second)
	if err := v.replay.Use(ctx, "dpop\x00"+hdr.jkt+"\x00"+c.jti, until); err != nil {
		if errors.Is(err, replay.ErrReplayed) {
			return nil, fail(ErrReplayedProof, "")
		}
		return nil, fail(ErrReplayCheckUnavailable, "")
	}
	return &Proof{
		JKT: hdr.jkt, PublicKey: hdr.key, Algorithm: hdr.alg,
		JTI: c.jti, HTM: req.Method, HTU: c.htu, Nonce: c.nonce, IssuedAt: c.iat,
	}, nil
}

func (v *Verifier) normalizeRequestURL(raw string) (string, error) {
	if m := v.lastURL.Load(); m != nil && m.raw == raw {
		return m.norm, nil
	}
	norm, err := normalizeHTU(raw)
	if err != nil {
		return "", err
	}
	v.lastURL.Store(&urlMemo{raw: raw, norm: norm})
	return norm, nil
}

// decodeBody decodes the payload and signature segments of a proof into one
// allocation.
func (v *Verifier) decodeBody(pseg, sseg string) (payload, sig []byte, ok bool) {
	np, ns := v.b64.DecodedLen(len(pseg)), v.b64.DecodedLen(len(sseg))
	buf := make([]byte, np+ns)
	n, err := v.b64.Decode(buf[:np], []byte(pseg))
	if err != nil {
		return nil, nil, false
	}
	m, err := v.b64.Decode(buf[np:], []byte(sseg))
	if err != nil {
		return nil, nil, false
	}
	return buf[:n:n], buf[np : np+m : np+m], true
}

// checkNonce applies RFC 9449 §4.3 check 10 for a per-request nonce and for
// the configured NonceSource.
func (v *Verifier) checkNonce(ctx context.Context, got, want string) error {
	if want == "" && v.nonces == nil {
		return nil
	}
	if got == "" {
		return fail(ErrNonceRequired, "")
	}
	if want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return fail(ErrNonceInvalid, "")
	}
	if v.nonces != nil {
		if err := v.nonces.CheckNonce(ctx, got); err != nil {
			return fail(ErrNonceInvalid, "")
		}
	}
	return nil
}
