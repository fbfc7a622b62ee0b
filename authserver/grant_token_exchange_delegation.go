package authserver

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/mcpauth/mcpauth/internal/clock"
	"github.com/mcpauth/mcpauth/internal/jwtassert"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// DefaultDelegationDepth is the longest actor chain a delegated token may
// carry when [DelegationConfig.MaxDepth] is zero.
const DefaultDelegationDepth = 4

// DelegationConfig turns on delegation by token exchange (RFC 8693 §1.1):
// the holder of an access token of this server (subject_token) obtains a
// narrower token for another party, the actor, which presents its own
// credential as actor_token. The result names the chain in nested "act"
// claims (§4.1), current actor outermost, and at every hop its scopes,
// audience and lifetime are within the subject token's: a request for
// more is refused (invalid_scope, invalid_target, invalid_request), never
// trimmed. Delegated tokens belong to the subject token's grant, so
// revoking that grant (or any token of the chain) ends them all.
//
// The actor_token is one of:
//   - a private_key_jwt client assertion (actor_token_type
//     urn:ietf:params:oauth:token-type:jwt, "iss" = "sub" = client_id,
//     "aud" the issuer, single-use "jti") of a registered client allowed
//     the token exchange grant: the actor is that client;
//   - a workload JWT of a GrantWorkload [TrustedIssuer] (same type): the
//     actor is the workload, and its issuer's rules must allow the
//     delegated token's resources and scopes;
//   - a DPoP key (actor_token_type [oauthmeta.TokenTypeDPoPJKT], the key's
//     thumbprint), proven by the request's DPoP proof: the actor is the key.
//
// A delegated token is bound to the request's DPoP key when the request
// carries a proof; the delegation of a DPoP-bound subject token requires
// one and an actor that is a client or a workload, never a key alone
// (anyone can make a key, so a stolen bound token could otherwise be
// rebound to the thief's), or is refused, with RefuseDPoPBound.
// Assertions and proofs are single-use through [Config.Replay].
type DelegationConfig struct {
	// MaxDepth bounds the actors of a delegated token's chain; a subject
	// token whose chain is that long cannot be delegated further
	// (invalid_grant). Zero means [DefaultDelegationDepth]; at most
	// oauthmeta.MaxActorDepth.
	MaxDepth int
	// TokenTTL bounds a delegated token's lifetime, which never exceeds
	// its subject token's. Zero means Config.AccessTokenTTL.
	TokenTTL time.Duration
	// RefuseDPoPBound refuses to delegate DPoP-bound subject tokens.
	// False delegates them to a token bound to the actor's DPoP key.
	RefuseDPoPBound bool
	// MayAct names, per holder (a client_id for the tokens issued to that
	// client, or an actor's "sub" for the delegated tokens it holds), the
	// only party that may act for the holder's tokens: the tokens carry it
	// as "may_act" (RFC 8693 §4.4), and an exchange by any other actor is
	// refused (invalid_grant). A holder without an entry may delegate to
	// any actor.
	MayAct map[string]oauthmeta.Actor
}

// delegation is the delegation token exchange (see DelegationConfig).
type delegation struct {
	cfg       DelegationConfig // MaxDepth and TokenTTL set
	tokens    *accessTokens
	live      *accessTokenExchange // grant and revocation checks
	clients   *clientRegistry
	workloads *jwtGrants // nil without trusted issuers
	clock     clock.Func
	log       *slog.Logger
}

// newDelegation returns the delegation exchange of cfg, nil when it is off.
func newDelegation(cfg *settings) (*delegation, error) {
	d := cfg.Delegation
	if d == nil {
		return nil, nil
	}
	c := *d
	c.MaxDepth = cmp.Or(c.MaxDepth, DefaultDelegationDepth)
	c.TokenTTL = cmp.Or(c.TokenTTL, cfg.AccessTokenTTL)
	switch {
	case c.MaxDepth < 1 || c.MaxDepth > oauthmeta.MaxActorDepth:
		return nil, configErr("Delegation.MaxDepth", fmt.Sprintf("must be between 1 and %d", oauthmeta.MaxActorDepth))
	case c.TokenTTL < 0:
		return nil, configErr("Delegation.TokenTTL", "must not be negative")
	}
	for holder, a := range c.MayAct {
		if holder == "" || (&a).Validate() != nil || a.Act != nil {
			return nil, configErr("Delegation.MayAct", "each entry needs a holder and an actor with a sub")
		}
	}
	return &delegation{cfg: c}, nil
}

// wantsDelegation reports whether a token exchange request is a delegation: it
// names an actor.
func wantsDelegation(form url.Values) bool {
	return form.Has("actor_token") || form.Has("actor_token_type")
}

// actorOf is a verified actor credential.
type actorOf struct {
	actor    oauthmeta.Actor
	clientID string    // a registered client's actor, else ""
	workload *workload // a workload actor, else nil
	rules    workloadRules
	keyOnly  bool // the actor is a DPoP key and nothing more
}

// exchange answers a delegation request. client is the authenticated
// caller, nil when it presented no credentials; jkt is the thumbprint of
// the request's verified DPoP proof key.
func (d *delegation) exchange(ctx context.Context, client *Client, form url.Values, jkt string) (*oauthmeta.TokenResponse, error) {
	if oe := checkDelegationParams(form); oe != nil {
		return nil, oe
	}
	now := d.clock.Now()
	parent, oe := d.subject(ctx, form.Get("subject_token"), now)
	if oe != nil {
		return nil, oe
	}
	if parent.Act.Depth() >= d.cfg.MaxDepth {
		return nil, oauthErr(oauthmeta.CodeInvalidGrant, "subject_token's delegation chain is at its maximum depth")
	}
	// The checks that need no actor come first, so that a request refused
	// by them spends no single-use actor credential.
	scopes, oe := delegatedScopes(parent.Scope, form)
	if oe != nil {
		return nil, oe
	}
	audience, oe := delegatedAudience(parent.Audience, form)
	if oe != nil {
		return nil, oe
	}
	exp, oe := delegatedExpiry(parent.Expires, now, d.cfg.TokenTTL, form)
	if oe != nil {
		return nil, oe
	}
	if parent.Cnf != nil && d.cfg.RefuseDPoPBound {
		return nil, oauthErr(oauthmeta.CodeInvalidGrant, "DPoP-bound tokens may not be delegated")
	}
	if parent.Cnf != nil && jkt == "" {
		return nil, oauthErr(oauthmeta.CodeInvalidGrant, "a DPoP proof of the actor's key is required to delegate a DPoP-bound token")
	}
	act, oe := d.verifyActor(ctx, form, jkt)
	if oe != nil {
		return nil, oe
	}
	if parent.Cnf != nil && act.keyOnly {
		// Anyone can make a key: a stolen DPoP-bound token must not be
		// rebound to the thief's by naming it the actor.
		return nil, oauthErr(oauthmeta.CodeInvalidGrant, "a DPoP-bound token may be delegated only to an authenticated actor")
	}
	if parent.MayAct != nil && !parent.MayAct.Matches(&act.actor) {
		return nil, oauthErr(oauthmeta.CodeInvalidGrant, "the actor is not the party subject_token's may_act names")
	}
	if act.workload != nil {
		never := func(string) bool { return false } // no scope beyond the parent's
		if _, _, oe := act.rules.authorize(act.workload, audience, scopes, never); oe != nil {
			return nil, oe
		}
	}
	chain := &oauthmeta.Actor{Subject: act.actor.Subject, Issuer: act.actor.Issuer, Act: parent.Act}
	claims := &accessClaims{
		Issuer:   d.tokens.issuer,
		Subject:  parent.Subject,
		Audience: oauthmeta.Audience(audience),
		ClientID: cmp.Or(act.clientID, parent.ClientID),
		Scope:    oauthmeta.FormatScope(scopes),
		IssuedAt: now.Unix(),
		Expires:  exp,
		// The root grant's ID keeps introspection and revocation working
		// for the whole chain.
		JTI:           grantIDFromJTI(parent.JTI) + jtiSeparator + randomToken(12),
		Act:           chain,
		MayAct:        d.tokens.mayActFor(act.actor.Subject),
		DelegatedFrom: append(slices.Clone(parent.DelegatedFrom), parent.JTI),
	}
	if jkt != "" {
		claims.Cnf = &oauthmeta.Confirmation{JKT: jkt}
	}
	access, err := d.tokens.sign(ctx, claims, now)
	if err != nil {
		return nil, err
	}
	d.log.InfoContext(ctx, "delegated token issued", "sub", parent.Subject, "act", chain.String(),
		"aud", audience, "scope", claims.Scope, "depth", chain.Depth())
	resp := d.tokens.response(access, "", scopes, jkt)
	resp.IssuedTokenType = oauthmeta.TokenTypeAccessToken
	resp.ExpiresIn = max(exp-now.Unix(), 1)
	return resp, nil
}

// checkDelegationParams checks the RFC 8693 §2.1 parameters of a
// delegation: an access token of ours as subject, an actor token with its
// type, an access token requested.
func checkDelegationParams(form url.Values) *oauthmeta.Error {
	switch {
	case form.Get("subject_token") == "":
		return oauthErr(oauthmeta.CodeInvalidRequest, "subject_token is required")
	case form.Get("subject_token_type") != oauthmeta.TokenTypeAccessToken:
		return oauthErr(oauthmeta.CodeInvalidRequest, "subject_token_type must be "+oauthmeta.TokenTypeAccessToken)
	case form.Get("actor_token") == "" || form.Get("actor_token_type") == "":
		return oauthErr(oauthmeta.CodeInvalidRequest, "actor_token and actor_token_type go together")
	case form.Get("requested_token_type") != "" && form.Get("requested_token_type") != oauthmeta.TokenTypeAccessToken:
		return oauthErr(oauthmeta.CodeInvalidRequest, "requested_token_type must be "+oauthmeta.TokenTypeAccessToken)
	}
	for _, k := range []string{"subject_token", "actor_token", "actor_token_type", "scope", "expires_in"} {
		if len(form[k]) > 1 {
			return oauthErr(oauthmeta.CodeInvalidRequest, k+" must not repeat")
		}
	}
	return nil
}

// subject verifies the subject token: a live access token of ours, its
// grant live, neither it nor any token it was derived from revoked, its
// chain well-formed.
func (d *delegation) subject(ctx context.Context, raw string, now time.Time) (*accessClaims, *oauthmeta.Error) {
	claims, err := d.tokens.parse(raw, now)
	if err != nil {
		return nil, oauthErr(oauthmeta.CodeInvalidGrant, "subject_token is not a valid access token of this server")
	}
	if claims.Act.Validate() != nil || claims.MayAct.Validate() != nil || len(claims.DelegatedFrom) > oauthmeta.MaxActorDepth {
		return nil, oauthErr(oauthmeta.CodeInvalidGrant, "subject_token has a malformed delegation chain")
	}
	if _, oe := d.live.liveGrantOf(ctx, claims, now); oe != nil {
		return nil, oe
	}
	for _, jti := range claims.DelegatedFrom {
		revoked, err := d.live.revocations.AccessTokenRevoked(ctx, jti)
		if err != nil {
			return nil, d.live.storeFailure(ctx, err)
		}
		if revoked {
			return nil, oauthErr(oauthmeta.CodeInvalidGrant, "subject_token is expired or revoked")
		}
	}
	return claims, nil
}

// verifyActor verifies the actor_token (see DelegationConfig).
func (d *delegation) verifyActor(ctx context.Context, form url.Values, jkt string) (*actorOf, *oauthmeta.Error) {
	tok := form.Get("actor_token")
	switch form.Get("actor_token_type") {
	case oauthmeta.TokenTypeDPoPJKT:
		if jkt == "" || tok != jkt {
			return nil, oauthErr(oauthmeta.CodeInvalidRequest, "actor_token must be the thumbprint of the request's DPoP proof key")
		}
		return &actorOf{actor: oauthmeta.Actor{Subject: oauthmeta.JWKThumbprintURI(jkt)}, keyOnly: true}, nil
	case oauthmeta.TokenTypeJWT:
	default:
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "actor_token_type is not supported")
	}
	var peek jwtverify.Claims
	if len(tok) > jwtassert.DefaultMaxSize || jwtverify.UnsafeClaimsWithoutVerification(tok, &peek) != nil {
		return nil, oauthErr(oauthmeta.CodeInvalidGrant, "actor_token is not a JWT")
	}
	if rules, ok := d.workloads.rulesOf(peek.Issuer); ok {
		g, err := d.workloads.workload.Verify(ctx, tok, "")
		if err != nil {
			d.log.InfoContext(ctx, "actor workload refused", "err", err)
			return nil, actorRefused(err)
		}
		w := newWorkload(g.Subject, g.Audience, g.Claims)
		return &actorOf{actor: oauthmeta.Actor{Subject: g.Subject, Issuer: g.Issuer}, workload: &w, rules: rules}, nil
	}
	id, err := jwtassert.UnverifiedClientID(tok)
	if err != nil {
		return nil, actorRefused(err)
	}
	cl, err := d.clients.lookup(ctx, id)
	if err != nil {
		return nil, oauthErr(oauthmeta.CodeInvalidGrant, "actor_token names no registered client")
	}
	if !cl.usesKeys() || !cl.allowsGrant(oauthmeta.GrantTypeTokenExchange) {
		return nil, oauthErr(oauthmeta.CodeInvalidGrant, "the actor client may not act in token exchanges")
	}
	if err := d.clients.checkAssertion(ctx, cl, tok); err != nil {
		d.log.InfoContext(ctx, "actor assertion refused", "client_id", id, "err", err)
		return nil, actorRefused(err)
	}
	return &actorOf{actor: oauthmeta.Actor{Subject: cl.ID}, clientID: cl.ID}, nil
}

// actorRefused is the answer to an actor_token that failed verification:
// invalid_grant (the caller's own client authentication is not at fault),
// or the store's temporarily_unavailable.
func actorRefused(err error) *oauthmeta.Error {
	oe := jwtassert.OAuthError(err)
	if oe.Code == oauthmeta.CodeTemporarilyUnavailable || oe.Code == oauthmeta.CodeServerError {
		return oe
	}
	return oauthErr(oauthmeta.CodeInvalidGrant, "actor_token refused: "+oe.Description)
}

// rulesOf returns the rules of a trusted workload issuer.
func (g *jwtGrants) rulesOf(issuer string) (workloadRules, bool) {
	if g == nil || g.workload == nil {
		return nil, false
	}
	r, ok := g.rules[issuer]
	return r, ok
}

// delegatedScopes returns the delegated token's scopes: the requested ones,
// each held by the subject token, or all of the subject token's.
func delegatedScopes(held string, form url.Values) ([]string, *oauthmeta.Error) {
	have, err := oauthmeta.ParseScope(held)
	if err != nil {
		return nil, oauthErr(oauthmeta.CodeInvalidGrant, "subject_token has a malformed scope")
	}
	if !form.Has("scope") {
		return have, nil
	}
	want, err := oauthmeta.ParseScope(form.Get("scope"))
	if err != nil || len(want) == 0 {
		return nil, oauthErr(oauthmeta.CodeInvalidScope, "malformed scope")
	}
	if !subset(want, have) {
		return nil, oauthErr(oauthmeta.CodeInvalidScope, "a delegated token cannot have a scope its subject token lacks")
	}
	return want, nil
}

// delegatedAudience returns the delegated token's audience: the requested
// targets ("audience" and "resource"), each an audience of the subject
// token, or all of the subject token's.
func delegatedAudience(held oauthmeta.Audience, form url.Values) ([]string, *oauthmeta.Error) {
	want := append(slices.Clone(form["audience"]), form["resource"]...)
	if len(want) == 0 {
		return slices.Clone([]string(held)), nil
	}
	if len(want) > 16 {
		return nil, oauthErr(oauthmeta.CodeInvalidTarget, "too many targets")
	}
	for _, t := range want {
		if !hasResource(held, t) {
			return nil, oauthErr(oauthmeta.CodeInvalidTarget, "a delegated token cannot be for an audience its subject token lacks")
		}
	}
	return appendNew(nil, want...), nil
}

// delegatedExpiry returns the delegated token's "exp": at most ttl from now
// and never after the subject token's; "expires_in" (seconds, an mcpauth
// extension) asks for less, and asking for more than the subject token
// has left is invalid_request.
func delegatedExpiry(parentExp int64, now time.Time, ttl time.Duration, form url.Values) (int64, *oauthmeta.Error) {
	exp := min(parentExp, now.Add(ttl).Unix())
	if !form.Has("expires_in") {
		return exp, nil
	}
	n, err := strconv.ParseInt(form.Get("expires_in"), 10, 64)
	switch {
	case err != nil || n < 1:
		return 0, oauthErr(oauthmeta.CodeInvalidRequest, "expires_in must be a positive number of seconds")
	case n > parentExp-now.Unix():
		return 0, oauthErr(oauthmeta.CodeInvalidRequest, "a delegated token cannot outlive its subject token")
	}
	return min(exp, now.Unix()+n), nil
}
