package authserver

import (
	"crypto"
	"encoding/json"
	"fmt"

	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// GrantKind says what a trusted issuer's JWTs are.
type GrantKind int

const (
	// GrantWorkload: workload identity assertions (the MCP "Workload
	// Identity Federation" extension; RFC 7523 §2.1). "aud" is this
	// server's issuer or token endpoint, "jti" is required and single-use.
	// The request may come without client authentication.
	GrantWorkload GrantKind = iota
	// GrantIDJAG: Identity Assertion JWT Authorization Grants from an
	// enterprise IdP (Enterprise-Managed Authorization;
	// draft-ietf-oauth-identity-assertion-authz-grant): "typ"
	// oauth-id-jag+jwt, "aud" this server's issuer, "client_id" the
	// authenticated confidential client presenting it.
	GrantIDJAG
)

// TrustedIssuer is an issuer whose JWTs the token endpoint accepts as
// authorization grants (RFC 7523 JWT-bearer grant), with its keys: exactly
// one of JWKS, JWKSURI and PublicKeys.
type TrustedIssuer struct {
	// Issuer is the exact "iss". Required.
	Issuer string
	// Kind is GrantWorkload (the zero value) or GrantIDJAG.
	Kind GrantKind
	// JWKS is the issuer's JWK set (RFC 7517 §5).
	JWKS json.RawMessage
	// JWKSURI is where the issuer's JWK set is fetched (see KeyFetch).
	JWKSURI string
	// PublicKeys are the issuer's keys given directly.
	PublicKeys []crypto.PublicKey
	// Scopes are the scopes its grants may obtain (each must be in
	// Config.Scopes). Nil means any of Config.Scopes. A request naming no
	// scope gets Config.DefaultScopes that are allowed here.
	Scopes []string
}

// jwtGrants verifies the JWT-bearer grant's assertions.
type jwtGrants struct {
	workload *jwtassert.GrantVerifier // nil without GrantWorkload issuers
	idjag    *jwtassert.GrantVerifier // nil without GrantIDJAG issuers
	scopes   map[string][]string      // issuer → TrustedIssuer.Scopes
}

// initExtensions prepares DPoP, private_key_jwt, the JWT-bearer grant and
// the identity provider role. It does no I/O.
func (s *Server) initExtensions() error {
	if err := s.initDPoP(); err != nil {
		return err
	}
	s.clientKeys = newRemoteKeySets(s.cfg.KeyFetch, s.cfg.Now)
	s.closers = append(s.closers, s.clientKeys)
	v, err := jwtassert.NewClientAssertionVerifier(jwtassert.ClientAssertionVerifierConfig{
		Audiences: []string{s.cfg.Issuer}, Now: s.cfg.Now, Replay: s.replayStore("client-assertion"),
	})
	if err != nil {
		return configErr("Issuer", err.Error())
	}
	s.assertions = v
	if err := s.initTrustedIssuers(); err != nil {
		return err
	}
	return s.initIdentityProvider()
}

// trustedKeys resolves a trusted issuer's key source.
func (s *Server) trustedKeys(ti *TrustedIssuer, field string) (jwtassert.TrustedIssuer, error) {
	n := 0
	for _, set := range []bool{len(ti.JWKS) > 0, ti.JWKSURI != "", len(ti.PublicKeys) > 0} {
		if set {
			n++
		}
	}
	if ti.Issuer == "" || n != 1 {
		return jwtassert.TrustedIssuer{}, configErr(field, "needs Issuer and exactly one of JWKS, JWKSURI and PublicKeys")
	}
	keys, err := s.keySource(ti.JWKS, ti.JWKSURI, ti.PublicKeys)
	if err != nil {
		return jwtassert.TrustedIssuer{}, configErr(field, err.Error())
	}
	return jwtassert.TrustedIssuer{Issuer: ti.Issuer, Keys: keys}, nil
}

func (s *Server) initTrustedIssuers() error {
	if len(s.cfg.TrustedIssuers) == 0 {
		return nil
	}
	g := &jwtGrants{scopes: make(map[string][]string)}
	var workload, idjag []jwtassert.TrustedIssuer
	for i := range s.cfg.TrustedIssuers {
		ti := &s.cfg.TrustedIssuers[i]
		field := fmt.Sprintf("TrustedIssuers[%d]", i)
		t, err := s.trustedKeys(ti, field)
		if err != nil {
			return err
		}
		if !subset(ti.Scopes, s.cfg.Scopes) {
			return configErr(field, "every scope must be in Scopes")
		}
		if _, dup := g.scopes[ti.Issuer]; dup {
			return configErr(field, "issuer listed twice")
		}
		g.scopes[ti.Issuer] = ti.Scopes
		switch ti.Kind {
		case GrantWorkload:
			workload = append(workload, t)
		case GrantIDJAG:
			idjag = append(idjag, t)
		default:
			return configErr(field, "unknown Kind")
		}
	}
	var err error
	if len(workload) > 0 {
		// The MCP workload identity extension lets the platform token name
		// the issuer or the token endpoint.
		g.workload, err = jwtassert.NewGrantVerifier(jwtassert.GrantVerifierConfig{
			Audiences: []string{s.cfg.Issuer, s.endpoint(pathToken)}, Issuers: workload, Now: s.cfg.Now,
			Replay: s.replayStore("workload-grant"),
		})
		if err != nil {
			return configErr("TrustedIssuers", err.Error())
		}
	}
	if len(idjag) > 0 {
		g.idjag, err = jwtassert.NewGrantVerifier(jwtassert.GrantVerifierConfig{
			Audiences: []string{s.cfg.Issuer}, Issuers: idjag, Profile: jwtassert.ProfileIDJAG, Now: s.cfg.Now,
			Replay: s.replayStore("id-jag"),
		})
		if err != nil {
			return configErr("TrustedIssuers", err.Error())
		}
	}
	s.grants = g
	return nil
}

// grantProfiles returns authorization_grant_profiles_supported: the ID-JAG
// profile when GrantIDJAG issuers are trusted, else none (the field is
// then omitted).
func (s *Server) grantProfiles() []string {
	if s.grants == nil || s.grants.idjag == nil {
		return nil
	}
	return []string{oauthmeta.GrantProfileIDJAG}
}

// grantTypes returns grant_types_supported.
func (s *Server) grantTypes() []string {
	gts := []string{oauthmeta.GrantTypeAuthorizationCode, oauthmeta.GrantTypeRefreshToken, oauthmeta.GrantTypeClientCredentials}
	if s.grants != nil {
		gts = append(gts, oauthmeta.GrantTypeJWTBearer)
	}
	if s.idp != nil || s.exchangesAccessTokens() {
		gts = append(gts, oauthmeta.GrantTypeTokenExchange)
	}
	return gts
}
