package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/internal/ascii"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// attempts counts the authorizations one operation has started, and whether it
// already replaced a dynamic registration the token endpoint refused (at most
// once). The zero value is a fresh budget.
type attempts struct {
	n            int
	reregistered bool
}

// respond reacts to a 401 or 403 from the MCP server resource (canonical).
// sent is the access token the refused request carried, "" for none. A nil
// result means a retry may now succeed.
//
//   - 401: if the refused token is the stored one and it has a refresh
//     token, refresh first (unless the challenge asks for scopes the token
//     lacks, which a refresh cannot add); otherwise authorize again, with
//     discovery bypassing the cache when a token was refused (the resource
//     may have moved to another authorization server, SEP-2352).
//   - 403 with error="insufficient_scope": authorize again with the union
//     of the previously requested and the challenged scopes (step-up,
//     SEP-2350). No refresh: it cannot widen scopes. If the refused token
//     was granted every challenged scope already, a new authorization
//     cannot help: errInsufficientScope.
//   - anything else: errForbiddenStatus.
func (c *Client) respond(ctx context.Context, resource string, status int, h http.Header, sent string, a *attempts) error {
	ch := parseChallenge(h)
	switch {
	case status == http.StatusUnauthorized:
		return c.unauthorized(ctx, resource, ch, sent, a)
	case status == http.StatusForbidden && insufficientScope(ch.Challenge):
		return c.stepUp(ctx, resource, ch, sent, a)
	default:
		return fmt.Errorf("%w: status %d", errForbiddenStatus, status)
	}
}

// insufficientScope reports a challenge with error="insufficient_scope".
func insufficientScope(ch oauthmeta.Challenge) bool {
	return ascii.EqualFold(ch.Value(oauthmeta.ParamError), string(oauthmeta.CodeInsufficientScope))
}

func (c *Client) unauthorized(ctx context.Context, resource string, ch challenge, sent string, a *attempts) error {
	st, unlock, err := c.lockedState(ctx, resource)
	if err != nil {
		return err
	}
	defer unlock()
	if st != nil && st.tok != nil {
		switch {
		case st.tok.AccessToken != sent && st.tok.Valid(c.clock.Now(), expiryLeeway):
			return nil // another request obtained a new token meanwhile
		case st.tok.AccessToken == sent:
			if c.refreshAfterRejection(ctx, st, ch.Challenge) {
				return nil
			}
			_ = c.store.DeleteToken(ctx, st.key)
		}
	}
	return c.login(ctx, resource, ch, sent != "", nil, a)
}

// lockedState takes the login lock of resource, so that one authorization
// at a time runs for it, and reads its token state under the lock. The
// caller must call unlock.
func (c *Client) lockedState(ctx context.Context, resource string) (st *tokenState, unlock func(), err error) {
	if unlock, err = c.logins.lock(ctx, resource); err != nil {
		return nil, nil, err
	}
	if st, err = c.tokenState(ctx, resource); err != nil {
		unlock()
		return nil, nil, err
	}
	return st, unlock, nil
}

// refreshAfterRejection tries one refresh for a token the resource
// refused, unless it was itself the product of such a refresh or the
// challenge needs scopes the grant does not have.
func (c *Client) refreshAfterRejection(ctx context.Context, st *tokenState, ch oauthmeta.Challenge) bool {
	if st.tok.RefreshToken == "" || st.tok.RefreshedAfterRejection {
		return false
	}
	if need := ch.Scopes(); !subset(need, union(st.tok.Scopes, st.tok.RequestedScopes)) {
		return false
	}
	_, err := c.refresh(ctx, st, true)
	return err == nil
}

func (c *Client) stepUp(ctx context.Context, resource string, ch challenge, sent string, a *attempts) error {
	st, unlock, err := c.lockedState(ctx, resource)
	if err != nil {
		return err
	}
	defer unlock()
	var prev []string
	if st != nil && st.tok != nil {
		need := ch.Scopes()
		switch {
		case st.tok.AccessToken != sent && st.tok.Valid(c.clock.Now(), expiryLeeway) && subset(need, st.tok.Scopes):
			return nil // another request stepped up meanwhile
		case st.tok.AccessToken == sent && len(need) > 0 && subset(need, st.tok.Scopes):
			return errInsufficientScope // asking again would change nothing
		}
		prev = st.tok.RequestedScopes
	}
	return c.login(ctx, resource, ch, false, union(prev, ch.Scopes()), a)
}

// login runs one authorization for resource: discovery, the choice of
// the DPoP key (which may refuse before anything is sent to the
// authorization server), then the Authorizer, then the response checks and
// the code exchange; the token is stored under (issuer, resource
// indicator, client_id). scopes nil means chosen by the MCP strategy.
func (c *Client) login(ctx context.Context, resource string, ch challenge, fresh bool, scopes []string, a *attempts) error {
	if a.n >= MaxAuthorizationAttempts {
		return fmt.Errorf("%w (%d)", errAttemptLimit, MaxAuthorizationAttempts)
	}
	a.n++
	prev, _ := c.store.Discovery(ctx, resource)
	d, err := c.discover(ctx, resource, ch.Value(oauthmeta.ParamResourceMetadata), fresh)
	if err != nil {
		return err
	}
	if err := c.checkIssuerChange(ctx, prev, d); err != nil {
		return err
	}
	key, err := c.planDPoP(ctx, d, ch)
	if err != nil {
		return err
	}
	if scopes == nil {
		scopes = selectScopes(ch.Challenge, d)
	}
	if c.flow != nil {
		return c.grantLogin(ctx, &grantRun{d: d, scopes: scopes, dpop: key})
	}
	scopes = c.adjustOfflineAccess(scopes, d.AuthServer)
	if c.cfg.Authorizer == nil {
		return c.deviceLogin(ctx, d, scopes, key, a)
	}
	req := &AuthorizationRequest{c: c, d: d, scopes: scopes, dpop: key}
	redirect, err := c.cfg.Authorizer.Authorize(ctx, req)
	state := req.State()
	if err != nil && errors.Is(err, ErrNoBrowser) && c.cfg.Device != nil && offersDevice(d.AuthServer) {
		c.pending.Remove(state)
		c.log.InfoContext(ctx, "no browser; authorizing on another device", "resource", resource, "error", err)
		return c.deviceLogin(ctx, d, scopes, key, a)
	}
	switch {
	case state == "" && err != nil:
		return err // Start failed: discovery, registration or URL checks
	case state == "":
		return errNotStarted
	case err != nil:
		c.pending.Remove(state)
		return fmt.Errorf("%w: %w", errAuthorizer, err)
	case redirect == nil:
		c.pending.Remove(state)
		return fmt.Errorf("%w: no redirect", errAuthorizer)
	}
	rec, tok, err := c.complete(ctx, redirect, state)
	if err != nil {
		c.pending.Remove(state)
		if rec != nil && refusedClient(err) && c.replaceRegistration(ctx, rec, a) {
			// The code is bound to the refused client_id: a fresh
			// authorization with a new registration, not the same code.
			return c.login(ctx, resource, ch, fresh, scopes, a)
		}
		return err
	}
	tk := tokenstore.Key{Issuer: rec.issuer, Resource: rec.indicator, ClientID: rec.registration.ClientID}
	if err := c.store.PutToken(ctx, tk, tok); err != nil {
		return err
	}
	c.log.InfoContext(ctx, "authorized", "resource", resource, "issuer", rec.issuer, "scopes", tok.Scopes)
	return nil
}

// grantLogin obtains a token with the configured Grant and stores it under
// (issuer, resource indicator, client_id). A failure is returned as is:
// no retry, no other grant.
func (c *Client) grantLogin(ctx context.Context, g *grantRun) error {
	d := g.d
	id, ok := c.flow.clientID(d.Issuer)
	var tok *tokenstore.Token
	err := errIssuerChanged
	if ok {
		tok, err = c.flow.run(ctx, g)
	}
	if err != nil {
		c.log.WarnContext(ctx, "grant failed", "resource", d.Resource, "issuer", d.Issuer, "error", err)
		return err
	}
	if err := c.store.PutToken(ctx, tokenstore.Key{Issuer: d.Issuer, Resource: d.ResourceIndicator, ClientID: id}, tok); err != nil {
		return err
	}
	c.log.InfoContext(ctx, "token obtained", "resource", d.Resource, "issuer", d.Issuer, "scopes", tok.Scopes)
	return nil
}

// checkIssuerChange applies requirement CL-18's SHOULD: when a resource
// used with pre-registered credentials now names an authorization server
// they are not bound to, that is an error for the user to resolve, not a
// reason to register elsewhere. The previous discovery state is kept,
// marked stale, so every later attempt checks again.
func (c *Client) checkIssuerChange(ctx context.Context, prev, d *tokenstore.Discovery) error {
	if prev == nil || prev.Issuer == d.Issuer || c.preRegistered(prev.Issuer) == nil || c.preRegistered(d.Issuer) != nil {
		return nil
	}
	prev.Expires = c.clock.Now()
	_ = c.store.PutDiscovery(ctx, prev)
	c.log.WarnContext(ctx, "authorization server changed away from pre-registered credentials", "resource", d.Resource,
		"previous_issuer", prev.Issuer, "issuer", d.Issuer)
	return errIssuerChanged
}

// challenge is what a 401 or 403 said: its Bearer challenge, else its
// DPoP one, and what it tells of DPoP (RFC 9449 §7.1).
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
