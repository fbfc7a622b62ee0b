package client

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/ascii"
	"github.com/mcpauth/mcpauth/internal/jwa"
	"github.com/mcpauth/mcpauth/internal/lru"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// Bounds of a Client's DPoP state.
const (
	maxNonceOrigins = 64 // server-provided DPoP nonces kept
	maxStoredKeys   = 64 // parsed keys of stored tokens kept
)

// DPoPConfig makes the client request sender-constrained access tokens
// (OAuth 2.0 Demonstrating Proof of Possession, RFC 9449): every token
// request carries a proof signed with the client's key, and a token issued
// with token_type DPoP is presented with the DPoP authorization scheme and
// a fresh proof bound to it ("ath") on every request.
//
// Before it starts an authorization the client picks the proof algorithm
// both servers accept: the authorization server's
// dpop_signing_alg_values_supported (RFC 9449 §5.1) and the resource's
// (the "algs" of its DPoP challenge, RFC 9449 §7.1, else its metadata's
// dpop_signing_alg_values_supported). An absent list does not restrict.
// When the resource accepts only DPoP-bound tokens (a DPoP challenge
// without a Bearer one, or dpop_bound_access_tokens_required) and there
// is no such algorithm, or the authorization server advertises none, the
// client fails with [ErrDiscovery] before any authorization or token
// request; it never falls back to Bearer there. Where the resource also
// accepts Bearer tokens, it asks for a Bearer token instead and logs a
// warning.
type DPoPConfig struct {
	// Key signs the proofs: an *ecdsa.PrivateKey, *rsa.PrivateKey (2048
	// bits or more), ed25519.PrivateKey, or any crypto.Signer over one of
	// those (a key in an HSM or KMS). Its algorithm must be one both
	// servers accept. Nil means the client generates a key per
	// authorization, for the first algorithm both servers accept in the
	// order ES256, EdDSA, ES384, ES512, PS256, RS256, PS384, RS384, PS512,
	// RS512, and keeps it with the token in the Store
	// ([tokenstore.Token.DPoPKey], a private JWK): a later Client sharing
	// the store presents and refreshes that token with it.
	Key crypto.Signer
	// Algorithm is the JWS "alg" of the proofs. With Key, empty means
	// ES256, ES384 or ES512 by curve, RS256 for RSA and EdDSA for Ed25519.
	// Without Key, it is the only algorithm generated keys may have; empty
	// means any of the list above.
	Algorithm string
}

// generatedAlgorithms are the algorithms a generated key may have, in the
// order of preference: small, fast keys first.
var generatedAlgorithms = []string{
	jwa.ES256, jwa.EdDSA, jwa.ES384, jwa.ES512,
	jwa.PS256, jwa.RS256, jwa.PS384, jwa.RS384, jwa.PS512, jwa.RS512,
}

// dpopState is a Client's DPoP configuration, the parsed keys of stored
// tokens and the nonces servers handed out (RFC 9449 §8, §9). It is safe
// for concurrent use.
type dpopState struct {
	fixed  *dpop.Prover // Config.DPoP.Key; nil: a key per authorization
	alg    string       // Config.DPoP.Algorithm without Key
	now    func() time.Time
	nonces *lru.Cache[string, string]       // origin → latest DPoP-Nonce
	stored *lru.Cache[string, *dpop.Prover] // thumbprint → prover of a stored key
}

func newDPoPState(cfg *DPoPConfig, now func() time.Time) (*dpopState, error) {
	s := &dpopState{
		now:    now,
		nonces: lru.New[string, string](maxNonceOrigins, now, nil),
		stored: lru.New[string, *dpop.Prover](maxStoredKeys, now, nil),
	}
	if cfg.Key == nil {
		if cfg.Algorithm != "" && !slices.Contains(generatedAlgorithms, cfg.Algorithm) {
			return nil, fmt.Errorf("%w: DPoP: unsupported algorithm %q", ErrConfig, cfg.Algorithm)
		}
		s.alg = cfg.Algorithm
		return s, nil
	}
	p, err := dpop.NewProver(dpop.ProverConfig{Key: cfg.Key, Algorithm: cfg.Algorithm, Now: now})
	if err != nil {
		return nil, fmt.Errorf("%w: DPoP: %w", ErrConfig, err)
	}
	s.fixed = p
	return s, nil
}

// dpopKey is the key the tokens of one authorization (and their
// refreshes) are bound to.
type dpopKey struct {
	p   *dpop.Prover
	jwk []byte // a generated key's private JWK, stored with the token; nil for Config.DPoP.Key
	// required: the resource accepts only DPoP-bound tokens, so a Bearer
	// token from the authorization server is refused.
	required bool
}

// originOf returns scheme://host[:port] of u: nonces are per server.
func originOf(u *url.URL) string { return ascii.ToLower(u.Scheme) + "://" + ascii.ToLower(u.Host) }

func (s *dpopState) nonce(u *url.URL) string {
	n, _ := s.nonces.Get(originOf(u))
	return n
}

// remember keeps the DPoP-Nonce a response from u carried, if any, and
// reports whether there was one. Any response may carry one (RFC 9449
// §8.2, §9): a first 401 without credentials included.
func (s *dpopState) remember(u *url.URL, h http.Header) bool {
	n := h.Get(dpop.NonceHeader)
	if n == "" || len(n) > 1024 {
		return false
	}
	s.nonces.Add(originOf(u), n, time.Time{})
	return true
}

// proof returns a fresh proof of k for a request to u with method;
// accessToken is the token presented with it ("" at a token endpoint).
func (s *dpopState) proof(k *dpopKey, method string, u *url.URL, accessToken string) (string, error) {
	return k.p.Proof(dpop.Request{Method: method, URL: u.String(), AccessToken: accessToken, Nonce: s.nonce(u)})
}

// forToken returns the key tok is bound to when this client holds it: the
// configured key, or the generated one stored with tok. It returns nil
// for a Bearer token and for a DPoP-bound token whose key is unavailable.
func (s *dpopState) forToken(tok *tokenstore.Token) *dpopKey {
	if s == nil || tok == nil || !ascii.EqualFold(tok.TokenType, dpop.TokenType) || tok.DPoPJKT == "" {
		return nil
	}
	if s.fixed != nil && s.fixed.JKT() == tok.DPoPJKT {
		return &dpopKey{p: s.fixed}
	}
	if len(tok.DPoPKey) == 0 {
		return nil
	}
	if p, ok := s.stored.Get(tok.DPoPJKT); ok {
		return &dpopKey{p: p, jwk: tok.DPoPKey}
	}
	p, err := parseStoredKey(tok.DPoPKey, s.now)
	if err != nil || p.JKT() != tok.DPoPJKT {
		return nil
	}
	s.stored.Add(tok.DPoPJKT, p, time.Time{})
	return &dpopKey{p: p, jwk: tok.DPoPKey}
}

// tokenUsable reports whether tok can be used by this client: a DPoP-bound
// token only with the key it is bound to.
func (c *Client) tokenUsable(tok *tokenstore.Token) bool {
	if tok == nil || !ascii.EqualFold(tok.TokenType, dpop.TokenType) {
		return true
	}
	return c.dpop.forToken(tok) != nil
}

// setAuthorization puts tok on an outgoing resource request: the Bearer
// scheme, or for a DPoP-bound token the DPoP scheme with a fresh proof
// (RFC 9449 §7.1, "ath" = hash of the token).
func (c *Client) setAuthorization(req *http.Request, tok *tokenstore.Token) error {
	tok.SetAuthHeader(req) // the stored token_type: "Bearer" or "DPoP"
	if !ascii.EqualFold(tok.TokenType, dpop.TokenType) {
		return nil
	}
	k := c.dpop.forToken(tok)
	if k == nil {
		return fmt.Errorf("%w: %w: DPoP-bound token without its DPoP key", errTokenResponse, errTokenType)
	}
	p, err := c.dpop.proof(k, req.Method, req.URL, tok.AccessToken)
	if err != nil {
		return fmt.Errorf("client: DPoP proof: %w", err)
	}
	req.Header.Set(dpop.HeaderName, p)
	return nil
}

// dpopNonceChallenge remembers the DPoP-Nonce of any response to a
// resource request (the first 401 included, so that the first request
// with a token already carries it) and reports whether resp is a resource
// server's request to retry with the nonce it sent (RFC 9449 §9): a 401
// whose DPoP challenge has error="use_dpop_nonce" and a DPoP-Nonce header.
func (c *Client) dpopNonceChallenge(req *http.Request, resp *http.Response) bool {
	if c.dpop == nil {
		return false
	}
	fresh := c.dpop.remember(req.URL, resp.Header)
	if resp.StatusCode != http.StatusUnauthorized || !fresh {
		return false
	}
	chs, err := oauthmeta.ParseChallenges(resp.Header.Values("WWW-Authenticate")...)
	if err != nil {
		return false
	}
	ch, ok := oauthmeta.FindChallenge(chs, dpop.Scheme)
	return ok && ch.Value(oauthmeta.ParamError) == string(oauthmeta.CodeUseDPoPNonce)
}

// presentedToken returns the access token of an Authorization header in
// the Bearer or DPoP scheme, or "".
func presentedToken(v string) string {
	scheme, tok, ok := strings.Cut(v, " ")
	if !ok || (!ascii.EqualFold(scheme, "Bearer") && !ascii.EqualFold(scheme, dpop.Scheme)) {
		return ""
	}
	return strings.TrimSpace(tok)
}

// planDPoP chooses, before an authorization for the resource of d starts,
// the DPoP key its tokens will be bound to: nil for a Bearer token. See
// [DPoPConfig] for the rules. It fails with errDPoPUnsupported when the
// resource accepts only DPoP-bound tokens and they cannot be had.
func (c *Client) planDPoP(ctx context.Context, d *tokenstore.Discovery, ch challenge) (*dpopKey, error) {
	required := ch.dpopOnly || d.DPoPBoundAccessTokensRequired
	rsAlgs := ch.dpopAlgs
	if rsAlgs == nil {
		rsAlgs = d.DPoPSigningAlgValuesSupported
	}
	var asAlgs []string
	if d.AuthServer != nil {
		asAlgs = d.AuthServer.DPoPSigningAlgValuesSupported
	}
	switch {
	case c.dpop == nil && required:
		return nil, fmt.Errorf("%w: %s accepts only DPoP-bound tokens and the client has no DPoP configuration", errDPoPUnsupported, d.Resource)
	case c.dpop == nil:
		return nil, nil
	case required && len(asAlgs) == 0:
		return nil, fmt.Errorf("%w: %s accepts only DPoP-bound tokens and the authorization server %s does not advertise dpop_signing_alg_values_supported",
			errDPoPUnsupported, d.Resource, d.Issuer)
	}
	k, err := c.dpop.keyFor(asAlgs, rsAlgs)
	if err != nil {
		return nil, err
	}
	if k == nil {
		what := fmt.Sprintf("no DPoP proof algorithm of the client (%s) is accepted by both the authorization server (%s) and the resource (%s)",
			c.dpop.describe(), describeAlgs(asAlgs), describeAlgs(rsAlgs))
		if required {
			return nil, fmt.Errorf("%w: %s", errDPoPUnsupported, what)
		}
		c.log.WarnContext(ctx, what+"; requesting a Bearer token", "resource", d.Resource, "issuer", d.Issuer)
		return nil, nil
	}
	k.required = required
	return k, nil
}

// keyFor returns the configured key if both lists accept its algorithm,
// else nil; or, without a configured key, a new key for the first
// algorithm of generatedAlgorithms (or Config.DPoP.Algorithm) both accept,
// else nil. A nil list accepts anything.
func (s *dpopState) keyFor(asAlgs, rsAlgs []string) (*dpopKey, error) {
	accept := func(alg string) bool { // names compared exactly (RFC 7515 §4.1.1)
		return (asAlgs == nil || slices.Contains(asAlgs, alg)) && (rsAlgs == nil || slices.Contains(rsAlgs, alg))
	}
	if s.fixed != nil {
		if accept(s.fixed.Algorithm()) {
			return &dpopKey{p: s.fixed}, nil
		}
		return nil, nil
	}
	candidates := generatedAlgorithms
	if s.alg != "" {
		candidates = []string{s.alg}
	}
	if i := slices.IndexFunc(candidates, accept); i >= 0 {
		return s.generate(candidates[i])
	}
	return nil, nil
}

// describe names the algorithms the client can sign with.
func (s *dpopState) describe() string {
	switch {
	case s.fixed != nil:
		return s.fixed.Algorithm()
	case s.alg != "":
		return s.alg
	}
	return strings.Join(generatedAlgorithms, " ")
}

func describeAlgs(algs []string) string {
	if algs == nil {
		return "any"
	}
	if len(algs) == 0 {
		return "none"
	}
	return strings.Join(algs, " ")
}

// generate makes a new key for alg and its private JWK.
func (s *dpopState) generate(alg string) (*dpopKey, error) {
	key, err := jwa.GenerateKey(alg)
	if err != nil {
		return nil, fmt.Errorf("client: DPoP key: %w", err)
	}
	jwk, err := jose.JSONWebKey{Key: key, Algorithm: alg, Use: "sig"}.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("client: DPoP key: %w", err)
	}
	p, err := dpop.NewProver(dpop.ProverConfig{Key: key, Algorithm: alg, Now: s.now})
	if err != nil {
		return nil, fmt.Errorf("client: DPoP key: %w", err)
	}
	return &dpopKey{p: p, jwk: jwk}, nil
}

// errStoredKey: a stored DPoP key is not a private signing JWK with a
// supported algorithm.
var errStoredKey = errors.New("client: unusable stored DPoP key")

// parseStoredKey reads a private JWK written by generate.
func parseStoredKey(data []byte, now func() time.Time) (*dpop.Prover, error) {
	var jwk jose.JSONWebKey
	if err := jwk.UnmarshalJSON(data); err != nil || jwk.IsPublic() || !jwa.Supported(jwk.Algorithm) {
		return nil, errStoredKey
	}
	signer, ok := jwk.Key.(crypto.Signer)
	if !ok {
		return nil, errStoredKey
	}
	return dpop.NewProver(dpop.ProverConfig{Key: signer, Algorithm: jwk.Algorithm, Now: now})
}
