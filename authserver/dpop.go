package authserver

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// DPoPConfig turns on OAuth 2.0 Demonstrating Proof of Possession (RFC
// 9449) at the token endpoint; [Config.DPoP] nil leaves it off (metadata
// does not advertise it, DPoP headers are ignored, every token is a Bearer
// token). The zero value supports DPoP: a token request with a valid proof
// gets a DPoP-bound access token (token_type DPoP, "cnf.jkt"), a public
// client's grant and refresh tokens are bound to the proof key, and
// requests without a proof get Bearer tokens.
type DPoPConfig struct {
	// Algorithms are the accepted proof algorithms, published as
	// dpop_signing_alg_values_supported. Nil means [dpop.DefaultAlgorithms]
	// (every asymmetric algorithm go-jose verifies).
	Algorithms []string
	// Required refuses token requests without a proof
	// (invalid_dpop_proof): every token is DPoP-bound. False means proofs
	// are optional.
	Required bool
	// RequireNonce makes every proof carry a nonce this server issued
	// (RFC 9449 §8): a proof without one, or with a stale one, gets
	// use_dpop_nonce and a fresh DPoP-Nonce header. False means no nonce.
	RequireNonce bool
	// NonceKey authenticates the nonces (HMAC-SHA-256): at least 32 random
	// bytes, the same on every instance behind one issuer. Empty means a
	// random key drawn by New, so nonces are accepted only by this process.
	NonceKey []byte
	// NoncePeriod is how often nonces rotate; a nonce lives one to two
	// periods. Zero means 5 minutes.
	NoncePeriod time.Duration
}

// initDPoP builds the proof verifier of the token endpoint.
func (s *Server) initDPoP() error {
	c := s.cfg.DPoP
	if c == nil {
		return nil
	}
	vc := dpop.VerifierConfig{Algorithms: c.Algorithms, Now: s.cfg.Now, Replay: s.replayStore("dpop")}
	if c.RequireNonce {
		key := c.NonceKey
		if len(key) == 0 {
			key = make([]byte, 32)
			_, _ = rand.Read(key) // never fails (crypto/rand, Go 1.24+)
		}
		n, err := dpop.NewHMACNonces(dpop.HMACNonceConfig{
			Key: key, Label: "authserver-token:" + s.cfg.Issuer, Period: c.NoncePeriod, Now: s.cfg.Now,
		})
		if err != nil {
			return configErr("DPoP", err.Error())
		}
		vc.Nonces = n
	}
	v, err := dpop.NewVerifier(vc)
	if err != nil {
		return configErr("DPoP.Algorithms", err.Error())
	}
	s.dpop = v
	return nil
}

// checkDPoP verifies the DPoP proof of a token request (RFC 9449 §4.3,
// §5) and returns the thumbprint of its key, or "" when the request
// carries no proof and none is required. The proof must be for POST to
// this server's token endpoint, carry no "ath", and not be replayed.
//
// bound returns the thumbprint the request's grant is already bound to
// ("" if none, see knownBinding); it is called only when the request
// carries a proof, or carries none where one is required, so a Bearer
// request to a server with optional DPoP costs no store read. A proof of
// another key is refused inside Verify, before its jti is recorded, so
// someone holding a stolen refresh token cannot fill the replay store with
// proofs of their own key; the answer is the one refresh gives for a wrong
// key (invalid_grant). A bound refresh token without any proof gets
// [errRefreshNoProof] whether or not proofs are required.
func (s *Server) checkDPoP(r *http.Request, bound func() string) (string, error) {
	if s.dpop == nil {
		return "", nil
	}
	proof, err := dpop.ProofFromHeader(r.Header)
	if errors.Is(err, dpop.ErrMissingProof) && !s.cfg.DPoP.Required {
		return "", nil // refresh refuses a bound grant without a proof
	}
	if errors.Is(err, dpop.ErrMissingProof) && bound() != "" {
		return "", errRefreshNoProof()
	}
	if err != nil {
		return "", err
	}
	p, err := s.dpop.Verify(r.Context(), proof, dpop.Request{Method: http.MethodPost, URL: s.endpoint(pathToken), JKT: bound()})
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

// knownBinding returns the DPoP key thumbprint a token request's grant is
// already bound to, before its proof is checked: for a refresh_token
// request, the key of the refresh token's grant when the token exists and
// belongs to client; "" otherwise (refresh then refuses the request
// with its own error).
func (s *Server) knownBinding(ctx context.Context, gt string, client *Client, form url.Values) string {
	if gt != oauthmeta.GrantTypeRefreshToken || client == nil || s.dpop == nil {
		return ""
	}
	raw := form.Get("refresh_token")
	if raw == "" {
		return ""
	}
	rec, err := s.store.RefreshTokens.RefreshToken(ctx, tokenKey(raw))
	if err != nil || rec.ClientID != client.ID {
		return ""
	}
	g, err := s.store.Grants.Grant(ctx, rec.GrantID)
	if err != nil {
		return ""
	}
	return g.DPoPJKT
}

// writeDPoPError answers a token request whose proof failed: the RFC 9449
// §5 error body, and with use_dpop_nonce a fresh nonce (§8).
func (s *Server) writeDPoPError(w http.ResponseWriter, r *http.Request, err error) {
	if dpop.IsNonceError(err) {
		s.setDPoPNonce(r.Context(), w)
	}
	s.writeError(w, r, dpop.OAuthError(err))
}

// setDPoPNonce sends a fresh nonce when nonces are on; the client uses it
// in its next proof (RFC 9449 §8).
func (s *Server) setDPoPNonce(ctx context.Context, w http.ResponseWriter) {
	if s.dpop == nil || !s.cfg.DPoP.RequireNonce {
		return
	}
	if n, err := s.dpop.Nonce(ctx); err == nil && n != "" {
		w.Header().Set(dpop.NonceHeader, n)
	}
}

// dpopAlgorithms returns dpop_signing_alg_values_supported, nil when DPoP
// is off.
func (s *Server) dpopAlgorithms() []string {
	if s.dpop == nil {
		return nil
	}
	return s.dpop.Algorithms()
}
