package resource

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/replay"
)

// schemeDPoP is the RFC 9449 §7.1 authentication scheme.
const schemeDPoP = dpop.Scheme

// dpopNonceHeader carries server-provided nonces (RFC 9449 §9).
const dpopNonceHeader = dpop.NonceHeader

// dpopHeaderKey is dpop.HeaderName in the canonical form http.Header keys
// have, so that deleting it does not allocate a canonical copy per request.
const dpopHeaderKey = "Dpop"

// DPoPMode says which access tokens a [Verifier] accepts with respect to
// DPoP (RFC 9449). The zero value is [DPoPDisabled].
type DPoPMode int

// DPoP modes.
const (
	// DPoPDisabled: only the Bearer scheme; a DPoP-bound token (one with a
	// "cnf" claim) is refused whatever the scheme (RS-18), and the DPoP
	// scheme counts as no credentials.
	DPoPDisabled DPoPMode = iota
	// DPoPAllowed: unbound tokens with the Bearer scheme, DPoP-bound tokens
	// with the DPoP scheme and a valid proof (RFC 9449 §7.2). Every 401
	// carries both challenges.
	DPoPAllowed
	// DPoPRequired: only DPoP-bound tokens with the DPoP scheme and a valid
	// proof; the metadata says dpop_bound_access_tokens_required.
	DPoPRequired
)

// String returns "disabled", "allowed" or "required".
func (m DPoPMode) String() string {
	if names := [...]string{"disabled", "allowed", "required"}; m >= 0 && int(m) < len(names) {
		return names[m]
	}
	return "DPoPMode(" + strconv.Itoa(int(m)) + ")"
}

// DPoPConfig configures DPoP (RFC 9449) on a [Verifier]. The zero value is
// DPoP disabled; with a mode set, the zero value of each other field is
// documented and never turns a check off. Fields other than Mode must be
// zero while DPoP is disabled.
type DPoPConfig struct {
	// Mode selects which tokens are accepted. Zero means [DPoPDisabled].
	Mode DPoPMode
	// Algorithms is the allowlist of proof "alg" values, advertised in
	// the challenges ("algs") and the metadata
	// ("dpop_signing_alg_values_supported"). ES256, ES384, ES512, RS256,
	// RS384, RS512, PS256, PS384, PS512 and EdDSA are accepted. Nil means
	// all of them, [dpop.DefaultAlgorithms], the default the authorization
	// server and the client also use.
	Algorithms []string
	// IATWindow is how old a proof may be. Zero means 5 minutes.
	IATWindow time.Duration
	// Leeway is how far in the future a proof's "iat" may lie (client
	// clock skew). Zero means 5 minutes.
	Leeway time.Duration
	// MaxProofBytes bounds the DPoP header. Zero means 8 KiB.
	MaxProofBytes int
	// Replay records the (key, jti) of every accepted proof until it
	// could no longer be accepted, so a replayed proof is refused (RFC 9449
	// §11.1): a key the store reports with replay.ErrReplayed gets 401
	// invalid_dpop_proof, any other error 503. Nil means an in-memory store
	// private to the Verifier, bounded by MaxReplayEntries; instances behind
	// one load balancer that serve the same resource must share a store
	// (package redisreplay keeps one on Redis).
	Replay replay.Store
	// MaxReplayEntries bounds the in-memory replay store used when Replay
	// is nil: about 100 bytes per entry, each kept for IATWindow plus
	// Leeway at most. A full store refuses new proofs (503) rather than
	// forget live ones. Zero means 1,048,576 (about 100 MB when full).
	MaxReplayEntries int
	// NonceKey, when set, makes the Verifier require server-provided
	// nonces (RFC 9449 §9): stateless HMAC nonces under this key (at least
	// 32 random bytes; the same on every instance), rotated every
	// NoncePeriod and accepted for two periods. Nil means no nonce, unless
	// Nonces is set.
	NonceKey []byte
	// NoncePeriod is the nonce rotation period for NonceKey. Zero means 5
	// minutes.
	NoncePeriod time.Duration
	// Nonces is a custom nonce source, instead of NonceKey. Nil means
	// NonceKey decides.
	Nonces DPoPNonceSource
}

// DPoPNonceSource issues and checks server-provided DPoP nonces (RFC 9449
// §9). Implementations must be safe for concurrent use.
type DPoPNonceSource interface {
	// Nonce returns a nonce for the DPoP-Nonce response header.
	Nonce(ctx context.Context) (string, error)
	// CheckNonce returns nil if nonce is currently acceptable.
	CheckNonce(ctx context.Context, nonce string) error
}

// dpopState is a Verifier's DPoP configuration.
type dpopState struct {
	mode     DPoPMode
	verifier *dpop.Verifier
	algs     []string
	nonces   bool
}

// newDPoP validates cfg; it returns nil when DPoP is disabled.
func newDPoP(cfg DPoPConfig, resource string, now func() time.Time) (*dpopState, error) {
	switch cfg.Mode {
	case DPoPDisabled:
		if cfg.Algorithms != nil || cfg.IATWindow != 0 || cfg.Leeway != 0 || cfg.MaxProofBytes != 0 || cfg.Replay != nil ||
			cfg.MaxReplayEntries != 0 || cfg.NonceKey != nil || cfg.NoncePeriod != 0 || cfg.Nonces != nil {
			return nil, fmt.Errorf("%w: DPoP settings given but DPoP is disabled", ErrInvalidConfig)
		}
		return nil, nil
	case DPoPAllowed, DPoPRequired:
	default:
		return nil, fmt.Errorf("%w: unknown DPoP mode %d", ErrInvalidConfig, int(cfg.Mode))
	}
	vc := dpop.VerifierConfig{Algorithms: cfg.Algorithms, IATWindow: cfg.IATWindow, Leeway: cfg.Leeway,
		MaxProofSize: cfg.MaxProofBytes, Replay: cfg.Replay, MaxReplayEntries: cfg.MaxReplayEntries, Now: now}
	switch {
	case cfg.Nonces != nil && cfg.NonceKey != nil:
		return nil, fmt.Errorf("%w: DPoP NonceKey and Nonces are exclusive", ErrInvalidConfig)
	case cfg.Nonces != nil:
		vc.Nonces = cfg.Nonces
	case cfg.NonceKey != nil:
		n, err := dpop.NewHMACNonces(dpop.HMACNonceConfig{Key: cfg.NonceKey, Period: cfg.NoncePeriod,
			Label: "mcpauth resource nonce " + resource, Now: now})
		if err != nil {
			return nil, fmt.Errorf("%w: DPoP nonces: %w", ErrInvalidConfig, err)
		}
		vc.Nonces = n
	case cfg.NoncePeriod != 0:
		return nil, fmt.Errorf("%w: DPoP NoncePeriod without NonceKey", ErrInvalidConfig)
	}
	v, err := dpop.NewVerifier(vc)
	if err != nil {
		return nil, fmt.Errorf("%w: DPoP: %w", ErrInvalidConfig, err)
	}
	return &dpopState{mode: cfg.Mode, verifier: v, algs: v.Algorithms(), nonces: vc.Nonces != nil}, nil
}

// checkProof checks the request's DPoP proof (RFC 9449 §4.3, §7.1) for a
// token presented with the DPoP scheme and bound to jkt: signature with
// the embedded key, typ, alg, htm = method, htu = the resource, iat
// window, ath = hash of token, nonce, the proof key's thumbprint = jkt,
// and last jti not seen before. The key is compared inside Verify, before
// the replay store is written, so a proof signed by any key but the
// token's never consumes a replay entry: someone holding a stolen token
// cannot fill the bounded store and turn every client away with 503. It
// runs for every request, whether the token came from the verified-token
// cache or not: a proof is valid for one request only. An unbound token
// (empty jkt) is refused before any proof is checked.
//
// htu is compared with the configured canonical resource, never with a
// URL built from the Host header or the request path: the client signs the
// URL it addressed, which is the resource it found in the metadata, while
// the Host and path this process sees may have been rewritten by a proxy
// (or chosen by the attacker, for a direct connection).
func (d *dpopState) checkProof(ctx context.Context, method, resource, proof, token, jkt string) error {
	if jkt == "" { // a DPoP proof cannot vouch for an unbound token
		return dpopReason((&dpop.Proof{}).CheckBinding(""))
	}
	if _, err := d.verifier.Verify(ctx, proof, dpop.Request{Method: method, URL: resource, AccessToken: token, JKT: jkt}); err != nil {
		return dpopReason(err)
	}
	return nil
}

// dpopReasons maps the errors of package dpop to this package's reasons,
// the first match winning; any other error (size, shape, typ, jwk, missing
// claims) is errDPoPMalformed.
var dpopReasons = []struct{ from, to error }{
	{dpop.ErrMissingProof, errDPoPProofMissing},
	{dpop.ErrMultipleProofs, errDPoPMultipleProofs},
	{dpop.ErrAlgNotAllowed, errDPoPAlgorithm}, // also a key type that does not fit alg
	{dpop.ErrBadSignature, errDPoPSignature},
	{dpop.ErrHTMMismatch, errDPoPRequestMismatch},
	{dpop.ErrHTUMismatch, errDPoPRequestMismatch},
	{dpop.ErrStaleProof, errDPoPProofTime},
	{dpop.ErrFutureProof, errDPoPProofTime},
	{dpop.ErrATHMismatch, errDPoPTokenHash}, // also an ath without a token
	{dpop.ErrReplayedProof, errDPoPReplayed},
	{dpop.ErrNonceRequired, errDPoPNonceRequired},
	{dpop.ErrNonceInvalid, errDPoPNonceInvalid},
	{dpop.ErrKeyMismatch, errDPoPKeyMismatch},
	{dpop.ErrReplayCheckUnavailable, errDPoPReplayUnavailable},
}

// dpopReason maps an error of package dpop to this package's reason,
// keeping the original for logs.
func dpopReason(err error) error {
	for _, m := range dpopReasons {
		if errors.Is(err, m.from) {
			return errors.Join(m.to, err)
		}
	}
	return errors.Join(errDPoPMalformed, err)
}
