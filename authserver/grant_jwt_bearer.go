package authserver

import (
	"cmp"
	"context"
	"crypto"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"slices"

	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/replay"
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
// one of JWKS, JWKSURI, Discover and PublicKeys. A GrantWorkload issuer
// also needs Rules: which of its workloads get tokens for what.
type TrustedIssuer struct {
	// Issuer is the exact "iss". Required.
	Issuer string
	// Kind is GrantWorkload (the zero value) or GrantIDJAG.
	Kind GrantKind
	// JWKS is the issuer's JWK set (RFC 7517 §5).
	JWKS json.RawMessage
	// JWKSURI is where the issuer's JWK set is fetched (see KeyFetch).
	JWKSURI string
	// Discover fetches the issuer's JWK set from the jwks_uri of its
	// OpenID Connect Discovery or RFC 8414 metadata, found from Issuer
	// and fetched as JWKSURI is (see KeyFetch). False means the keys come
	// from another field.
	Discover bool
	// PublicKeys are the issuer's keys given directly.
	PublicKeys []crypto.PublicKey
	// Scopes are the scopes its grants may obtain (each must be in
	// Config.Scopes). Nil means any of Config.Scopes. A request naming no
	// scope gets Config.DefaultScopes that are allowed here.
	Scopes []string
	// Rules decide which workloads of a GrantWorkload issuer may get
	// tokens, for which resources and scopes (see [WorkloadRule]); a
	// workload no rule matches gets none. Required for GrantWorkload
	// issuers (a workload issuer without rules is a configuration
	// error); ignored for GrantIDJAG ones, which must have none.
	Rules []WorkloadRule
}

// jwtGrants verifies the JWT-bearer grant's assertions.
type jwtGrants struct {
	workload *jwtassert.GrantVerifier // nil without GrantWorkload issuers
	idjag    *jwtassert.GrantVerifier // nil without GrantIDJAG issuers
	scopes   map[string][]string      // issuer → TrustedIssuer.Scopes
	rules    map[string]workloadRules // workload issuer → its rules
}

// trustedKeys resolves a trusted issuer's key source.
func trustedKeys(sets *remoteKeySets, ti *TrustedIssuer, field string) (jwtassert.TrustedIssuer, error) {
	n := 0
	for _, set := range []bool{len(ti.JWKS) > 0, ti.JWKSURI != "", ti.Discover, len(ti.PublicKeys) > 0} {
		if set {
			n++
		}
	}
	if ti.Issuer == "" || n != 1 {
		return jwtassert.TrustedIssuer{}, configErr(field, "needs Issuer and exactly one of JWKS, JWKSURI, Discover and PublicKeys")
	}
	if ti.Discover || ti.JWKSURI != "" {
		keys, err := sets.trusted(ti.Issuer, ti.JWKSURI)
		if err != nil {
			return jwtassert.TrustedIssuer{}, configErr(field, err.Error())
		}
		return jwtassert.TrustedIssuer{Issuer: ti.Issuer, Keys: keys}, nil
	}
	keys, err := sets.keySource(ti.JWKS, ti.JWKSURI, ti.PublicKeys)
	if err != nil {
		return jwtassert.TrustedIssuer{}, configErr(field, err.Error())
	}
	return jwtassert.TrustedIssuer{Issuer: ti.Issuer, Keys: keys}, nil
}

// newJWTGrants builds the verifiers of cfg.TrustedIssuers (nil when
// there are none), for assertions addressed to the issuer or, workload
// tokens, to the token endpoint tokenURL; the issuers' jwks_uri sets come
// from sets, and the assertions' jtis are recorded in replays (nil: in
// memory). It does no I/O.
func newJWTGrants(cfg *settings, tokenURL string, sets *remoteKeySets, replays replay.Store) (*jwtGrants, error) {
	if len(cfg.TrustedIssuers) == 0 {
		return nil, nil
	}
	g := &jwtGrants{scopes: make(map[string][]string), rules: make(map[string]workloadRules)}
	var workload, idjag []jwtassert.TrustedIssuer
	for i := range cfg.TrustedIssuers {
		ti := &cfg.TrustedIssuers[i]
		field := fmt.Sprintf("TrustedIssuers[%d]", i)
		t, err := trustedKeys(sets, ti, field)
		if err != nil {
			return nil, err
		}
		if !subset(ti.Scopes, cfg.Scopes) {
			return nil, configErr(field, "every scope must be in Scopes")
		}
		if _, dup := g.scopes[ti.Issuer]; dup {
			return nil, configErr(field, "issuer listed twice")
		}
		g.scopes[ti.Issuer] = ti.Scopes
		switch ti.Kind {
		case GrantWorkload:
			if g.rules[ti.Issuer], err = compileWorkloadRules(ti, field, cfg.Scopes); err != nil {
				return nil, err
			}
			workload = append(workload, t)
		case GrantIDJAG:
			if len(ti.Rules) > 0 {
				return nil, configErr(field, "Rules are for GrantWorkload issuers")
			}
			idjag = append(idjag, t)
		default:
			return nil, configErr(field, "unknown Kind")
		}
	}
	var err error
	if len(workload) > 0 {
		// The MCP workload identity extension lets the platform token name
		// the issuer or the token endpoint.
		g.workload, err = jwtassert.NewGrantVerifier(jwtassert.GrantVerifierConfig{
			Audiences: []string{cfg.Issuer, tokenURL}, Issuers: workload, Now: cfg.Now,
			Replay: namespaced(replays, "workload-grant"),
		})
		if err != nil {
			return nil, configErr("TrustedIssuers", err.Error())
		}
	}
	if len(idjag) > 0 {
		g.idjag, err = jwtassert.NewGrantVerifier(jwtassert.GrantVerifierConfig{
			Audiences: []string{cfg.Issuer}, Issuers: idjag, Profile: jwtassert.ProfileIDJAG, Now: cfg.Now,
			Replay: namespaced(replays, "id-jag"),
		})
		if err != nil {
			return nil, configErr("TrustedIssuers", err.Error())
		}
	}
	return g, nil
}

// profiles returns authorization_grant_profiles_supported: the ID-JAG
// profile when GrantIDJAG issuers are trusted, else none (the field is
// then omitted).
func (g *jwtGrants) profiles() []string {
	if g == nil || g.idjag == nil {
		return nil
	}
	return []string{oauthmeta.GrantProfileIDJAG}
}

// jwtBearerGrant is the JWT-bearer grant handler.
type jwtBearerGrant struct {
	assertions *jwtGrants
	scopes     *scopePolicy
	resources  *resourcePolicy
	ledger     *grantLedger
	log        *slog.Logger
}

// grant is the JWT-bearer grant (RFC 7523 §2.1): an ID-JAG (typ
// oauth-id-jag+jwt) from a GrantIDJAG issuer, presented by the confidential
// client it names; otherwise a workload identity assertion from a
// GrantWorkload issuer, with or without client authentication (client is
// then nil). The token's subject is the assertion's "sub".
func (h *jwtBearerGrant) grant(ctx context.Context, client *Client, form url.Values, jkt string) (*oauthmeta.TokenResponse, error) {
	assertion := form.Get("assertion")
	if assertion == "" {
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "assertion is required")
	}
	clientID := ""
	if client != nil {
		clientID = client.ID
	}
	var g *jwtassert.Grant
	var err error
	if isIDJAG(assertion) {
		if h.assertions.idjag == nil {
			return nil, oauthErr(oauthmeta.CodeInvalidGrant, "ID-JAGs are not accepted")
		}
		if client == nil || client.public() {
			return nil, oauthErr(oauthmeta.CodeInvalidClient, "an ID-JAG must be presented by an authenticated confidential client")
		}
		g, err = h.assertions.idjag.Verify(ctx, assertion, clientID)
	} else {
		if h.assertions.workload == nil {
			return nil, oauthErr(oauthmeta.CodeInvalidGrant, "workload assertions are not accepted")
		}
		g, err = h.assertions.workload.Verify(ctx, assertion, clientID)
	}
	if err != nil {
		h.log.InfoContext(ctx, "authorization grant refused", "err", err)
		return nil, jwtassert.OAuthError(err)
	}
	if rules, ok := h.assertions.rules[g.Issuer]; ok {
		return h.workloadGrant(ctx, client, g, rules, form, jkt)
	}
	scopes, oe := h.assertionScopes(g, client, form.Get("scope"))
	if oe != nil {
		return nil, oe
	}
	if len(g.Resource) > 0 {
		for _, res := range form["resource"] {
			if !hasResource(g.Resource, res) {
				return nil, oauthErr(oauthmeta.CodeInvalidTarget, "resource is not named by the grant")
			}
		}
		if len(form["resource"]) == 0 {
			form["resource"] = g.Resource
		}
	}
	if oe := h.resources.checkAll(form["resource"]); oe != nil {
		return nil, oe
	}
	return h.ledger.standalone(ctx, cmp.Or(clientID, g.ClientID, g.Subject), g.Subject, scopes, form["resource"], jkt)
}

// workloadGrant answers a workload's JWT-bearer grant by its issuer's
// rules: the scopes named must pass the checks of assertionScopes and one
// rule covering every resource; without "scope", the rule's scopes that
// the issuer, the assertion and the client allow.
func (h *jwtBearerGrant) workloadGrant(ctx context.Context, client *Client, g *jwtassert.Grant, rules workloadRules, form url.Values, jkt string) (*oauthmeta.TokenResponse, error) {
	var requested []string
	if form.Get("scope") != "" {
		var oe *oauthmeta.Error
		if requested, oe = h.assertionScopes(g, client, form.Get("scope")); oe != nil {
			return nil, oe
		}
	}
	resources := form["resource"]
	if len(resources) == 0 {
		resources = g.Resource
	}
	for _, res := range resources {
		if len(g.Resource) > 0 && !hasResource(g.Resource, res) {
			return nil, oauthErr(oauthmeta.CodeInvalidTarget, "resource is not named by the grant")
		}
	}
	w := newWorkload(g.Subject, g.Audience, g.Claims)
	resources, scopes, oe := rules.authorize(&w, resources, requested, h.usableScope(g, client))
	if oe != nil {
		h.log.InfoContext(ctx, "workload refused by the rules", "iss", g.Issuer, "sub", g.Subject, "error", oe.Code)
		return nil, oe
	}
	if oe := h.resources.checkAll(resources); oe != nil {
		return nil, oe
	}
	clientID := ""
	if client != nil {
		clientID = client.ID
	}
	return h.ledger.standalone(ctx, cmp.Or(clientID, g.ClientID, g.Subject), g.Subject, scopes, resources, jkt)
}

// usableScope reports whether a scope no request named may be granted
// for assertion g: supported, allowed for its issuer and the client, and
// within the assertion's own "scope" claim when it has one.
func (h *jwtBearerGrant) usableScope(g *jwtassert.Grant, client *Client) func(string) bool {
	allowed := h.assertions.scopes[g.Issuer]
	return func(sc string) bool {
		return slices.Contains(h.scopes.supported, sc) && (allowed == nil || slices.Contains(allowed, sc)) &&
			(len(g.Scope) == 0 || slices.Contains(g.Scope, sc)) && (client == nil || client.allowsScope(sc))
	}
}

// assertionScopes returns the scopes for a JWT-bearer grant: the requested
// ones (or DefaultScopes), each supported, allowed for the issuer and the
// client, and within the grant's own "scope" claim when it has one.
func (h *jwtBearerGrant) assertionScopes(g *jwtassert.Grant, client *Client, requested string) ([]string, *oauthmeta.Error) {
	scopes, oe := h.scopes.grantable(cmp.Or(client, &Client{}), requested)
	if oe != nil {
		return nil, oe
	}
	allowed := h.assertions.scopes[g.Issuer]
	out := scopes[:0:0]
	for _, sc := range scopes {
		okIssuer := allowed == nil || slices.Contains(allowed, sc)
		okGrant := len(g.Scope) == 0 || slices.Contains(g.Scope, sc)
		if okIssuer && okGrant {
			out = append(out, sc)
		} else if requested != "" {
			return nil, oauthErr(oauthmeta.CodeInvalidScope, "scope not allowed for this grant: "+sc)
		}
	}
	return out, nil
}

// isIDJAG reports whether a compact JWT's header says typ oauth-id-jag+jwt
// (the verifier checks it again; this only picks the verifier).
func isIDJAG(jwt string) bool {
	var h struct {
		Typ string `json:"typ"`
	}
	return len(jwt) <= jwtassert.DefaultMaxSize && jwtverify.UnsafeHeaderWithoutVerification(jwt, &h) == nil &&
		jwtverify.TypeIs(h.Typ, jwtassert.IDJAGType)
}
