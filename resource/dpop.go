package resource

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/mcpauth/mcpauth/dpop"
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
	// "cnf" claim) is refused whatever the scheme, and the DPoP
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

// DPoPConfig configures DPoP (RFC 9449) on a [Verifier]: the mode, and
// the proof checks of package dpop. The zero value is DPoP disabled; with a
// mode set, the zero value of each other field means the default documented
// on [dpop.VerifierConfig] and never turns a check off. Fields other than
// Mode must be zero while DPoP is disabled.
//
// The proof algorithms are advertised in the challenges ("algs") and the
// metadata ("dpop_signing_alg_values_supported"). NonceKey (or Nonces)
// makes the Verifier require server-provided nonces (RFC 9449 §9); the
// nonces are labelled with the resource unless NonceLabel is set. Replay
// nil means a store private to the Verifier: instances behind one load
// balancer that serve the same resource must share one (package
// redisreplay keeps one on Redis). Now must be nil: the Verifier's clock
// is [Config.Now].
type DPoPConfig struct {
	// Mode selects which tokens are accepted. Zero means [DPoPDisabled].
	Mode DPoPMode
	dpop.VerifierConfig
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
	vc := cfg.VerifierConfig
	switch cfg.Mode {
	case DPoPDisabled:
		if !reflect.ValueOf(vc).IsZero() {
			return nil, fmt.Errorf("%w: DPoP settings given but DPoP is disabled", ErrInvalidConfig)
		}
		return nil, nil
	case DPoPAllowed, DPoPRequired:
	default:
		return nil, fmt.Errorf("%w: unknown DPoP mode %d", ErrInvalidConfig, int(cfg.Mode))
	}
	if vc.Now != nil {
		return nil, fmt.Errorf("%w: DPoP.Now is set; the clock is Config.Now", ErrInvalidConfig)
	}
	vc.Now = now
	if vc.NonceKey != nil && vc.NonceLabel == "" {
		vc.NonceLabel = "mcpauth resource nonce " + resource
	}
	v, err := dpop.NewVerifier(vc)
	if err != nil {
		return nil, fmt.Errorf("%w: DPoP: %w", ErrInvalidConfig, err)
	}
	return &dpopState{mode: cfg.Mode, verifier: v, algs: v.Algorithms(), nonces: vc.Nonces != nil || vc.NonceKey != nil}, nil
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
		return errDPoPUnboundToken
	}
	if _, err := d.verifier.Verify(ctx, proof, dpop.Request{Method: method, URL: resource, AccessToken: token, JKT: jkt}); err != nil {
		return refusal(ErrInvalidDPoPProof, err, true)
	}
	return nil
}
