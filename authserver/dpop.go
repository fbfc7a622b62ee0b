package authserver

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"time"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/replay"
)

// DPoPConfig turns on OAuth 2.0 Demonstrating Proof of Possession (RFC
// 9449) at the token endpoint; [Config.DPoP] nil leaves it off (metadata
// does not advertise it, DPoP headers are ignored, every token is a Bearer
// token). The zero value supports DPoP: a token request with a valid proof
// gets a DPoP-bound access token (token_type DPoP, "cnf.jkt"), a public
// client's grant and refresh tokens are bound to the proof key, and
// requests without a proof get Bearer tokens.
//
// The proof checks are package dpop's, configured by the embedded
// [dpop.VerifierConfig] with the meanings documented there (the
// algorithms are published as dpop_signing_alg_values_supported); Replay
// nil means [Config.Replay], and Now must be nil (the clock is
// [Config.Now]). NonceKey (or Nonces) makes every proof carry a nonce this
// server issued (RFC 9449 §8): a proof without one, or with a stale one,
// gets use_dpop_nonce and a fresh DPoP-Nonce header.
type DPoPConfig struct {
	dpop.VerifierConfig
	// Required refuses token requests without a proof
	// (invalid_dpop_proof): every token is DPoP-bound. False means proofs
	// are optional.
	Required bool
	// RequireNonce requires nonces as NonceKey does, under a random key
	// drawn by New when NonceKey and Nonces are empty, so nonces are
	// accepted only by this process. False means NonceKey and Nonces decide.
	RequireNonce bool
}

// dpopChecker checks the DPoP proofs of token requests; nil when DPoP is
// off, and every method of a nil checker is a no-op.
type dpopChecker struct {
	verifier *dpop.Verifier
	required bool   // DPoPConfig.Required
	nonces   bool   // proofs must carry a nonce of this server
	tokenURL string // the htu of every proof
}

// newDPoPChecker builds the proof verifier of the token endpoint at
// tokenURL from c (nil: DPoP off, a nil checker), recording proof jtis in
// replays (nil: in memory).
func newDPoPChecker(c *DPoPConfig, issuer, tokenURL string, now func() time.Time, replays replay.Store) (*dpopChecker, error) {
	if c == nil {
		return nil, nil
	}
	vc := c.VerifierConfig
	if vc.Now != nil {
		return nil, configErr("DPoP.Now", "the clock is Config.Now")
	}
	vc.Now, vc.Replay = now, cmp.Or(vc.Replay, replays)
	if c.RequireNonce && vc.NonceKey == nil && vc.Nonces == nil {
		vc.NonceKey = make([]byte, 32)
		_, _ = rand.Read(vc.NonceKey) // never fails (crypto/rand, Go 1.24+)
	}
	if vc.NonceKey != nil && vc.NonceLabel == "" {
		vc.NonceLabel = "authserver-token:" + issuer
	}
	v, err := dpop.NewVerifier(vc)
	if err != nil {
		return nil, configErr("DPoP", err.Error())
	}
	return &dpopChecker{verifier: v, required: c.Required, nonces: vc.NonceKey != nil || vc.Nonces != nil, tokenURL: tokenURL}, nil
}

// check verifies the DPoP proof of a token request (RFC 9449 §4.3,
// §5) and returns the thumbprint of its key, or "" when the request
// carries no proof and none is required. The proof must be for POST to
// this server's token endpoint, carry no "ath", and not be replayed.
//
// bound returns the thumbprint the request's grant is already bound to
// ("" if none, see [tokenEndpoint.knownBinding]); it is called only when
// the request carries a proof, or carries none where one is required, so
// a Bearer request to a server with optional DPoP costs no store read. A
// proof of another key is refused inside Verify, before its jti is
// recorded, so someone holding a stolen refresh token cannot fill the
// replay store with proofs of their own key; the answer is the one
// refresh gives for a wrong key (invalid_grant). A bound refresh token
// without any proof gets [errRefreshNoProof] whether or not proofs are
// required.
func (d *dpopChecker) check(r *http.Request, bound func() string) (string, error) {
	if d == nil {
		return "", nil
	}
	proof, err := dpop.ProofFromHeader(r.Header)
	if errors.Is(err, dpop.ErrMissingProof) && !d.required {
		return "", nil // refresh refuses a bound grant without a proof
	}
	if errors.Is(err, dpop.ErrMissingProof) && bound() != "" {
		return "", errRefreshNoProof()
	}
	if err != nil {
		return "", err
	}
	p, err := d.verifier.Verify(r.Context(), proof, dpop.Request{Method: http.MethodPost, URL: d.tokenURL, JKT: bound()})
	if errors.Is(err, dpop.ErrKeyMismatch) {
		return "", errRefreshOtherKey()
	}
	if err != nil {
		return "", err
	}
	return p.JKT, nil
}

// errRefreshOtherKey refuses a refresh token presented with a proof of a
// key other than the one its grant is bound to.
func errRefreshOtherKey() *oauthmeta.Error {
	return oauthErr(oauthmeta.CodeInvalidGrant, "refresh token is bound to another DPoP key")
}

// errRefreshNoProof refuses a refresh token bound to a DPoP key presented
// without any proof. RFC 9449 §5: the binding "MUST be validated when the
// refresh token is later presented", and the client "MUST present a DPoP
// proof for the same key". A request without a proof carries no invalid
// proof (invalid_dpop_proof, §5 and §12.2, is for a proof that fails the
// §4.3 checks); it presents a refresh token that is not valid for this
// request, which RFC 6749 §5.2 names invalid_grant, as for a proof of
// another key.
func errRefreshNoProof() *oauthmeta.Error {
	return oauthErr(oauthmeta.CodeInvalidGrant, "DPoP proof required: this refresh token is bound to a DPoP key")
}

// setNonce sends a fresh nonce when nonces are on; the client uses it in
// its next proof (RFC 9449 §8).
func (d *dpopChecker) setNonce(ctx context.Context, w http.ResponseWriter) {
	if d == nil || !d.nonces {
		return
	}
	if n, err := d.verifier.Nonce(ctx); err == nil && n != "" {
		w.Header().Set(dpop.NonceHeader, n)
	}
}

// algorithms returns dpop_signing_alg_values_supported, nil when DPoP is
// off.
func (d *dpopChecker) algorithms() []string {
	if d == nil {
		return nil
	}
	return d.verifier.Algorithms()
}
