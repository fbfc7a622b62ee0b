package client

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/jwa"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// challenge is what a 401 or 403 said: its Bearer challenge, else its
// DPoP one (CL-01), and what it tells of DPoP (RFC 9449 §7.1).
type challenge struct {
	oauthmeta.Challenge
	// dpopOnly: a DPoP challenge and no Bearer one, so the resource
	// accepts DPoP-bound tokens only.
	dpopOnly bool
	// dpopAlgs are the DPoP challenge's "algs"; nil when absent.
	dpopAlgs []string
}

// parseChallenge reads the WWW-Authenticate fields of h. A malformed
// header counts as no challenge: discovery then falls back to the
// well-known URLs.
func parseChallenge(h http.Header) challenge {
	chs, err := oauthmeta.ParseChallenges(h.Values("WWW-Authenticate")...)
	if err != nil {
		return challenge{}
	}
	bearer, hasBearer := oauthmeta.FindChallenge(chs, "Bearer")
	d, hasDPoP := oauthmeta.FindChallenge(chs, dpop.Scheme)
	out := challenge{Challenge: bearer, dpopOnly: hasDPoP && !hasBearer}
	if !hasBearer {
		out.Challenge = d // RFC 9449 §7.1: the same parameters
	}
	if hasDPoP {
		if algs := d.Value(oauthmeta.ParamAlgs); algs != "" {
			out.dpopAlgs = strings.Fields(algs)
		}
	}
	return out
}

// planDPoP chooses, before an authorization for the resource of d starts,
// the DPoP key its tokens will be bound to: nil for a Bearer token. See
// [DPoPConfig] for the rules. It fails with ErrDPoPUnsupported when the
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
		return nil, fmt.Errorf("%w: %s accepts only DPoP-bound tokens and the client has no DPoP configuration", ErrDPoPUnsupported, d.Resource)
	case c.dpop == nil:
		return nil, nil
	case required && len(asAlgs) == 0:
		return nil, fmt.Errorf("%w: %s accepts only DPoP-bound tokens and the authorization server %s does not advertise dpop_signing_alg_values_supported",
			ErrDPoPUnsupported, d.Resource, d.Issuer)
	}
	k, err := c.dpop.keyFor(asAlgs, rsAlgs)
	if err != nil {
		return nil, err
	}
	if k == nil {
		what := fmt.Sprintf("no DPoP proof algorithm of the client (%s) is accepted by both the authorization server (%s) and the resource (%s)",
			c.dpop.describe(), describeAlgs(asAlgs), describeAlgs(rsAlgs))
		if required {
			return nil, fmt.Errorf("%w: %s", ErrDPoPUnsupported, what)
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
