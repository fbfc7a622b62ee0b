package authserver

import (
	"context"
	"net/http"
	"net/url"

	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// A grantHandler runs one grant type at the token endpoint, as fosite's
// TokenEndpointHandler does. handleToken has parsed the form,
// authenticated the client, applied the rate limits, checked that the
// client may use the grant and checked the DPoP proof; the handler checks
// the grant's own parameters, records what it grants and answers with the
// tokens (or a *oauthmeta.Error). client is nil only for a JWT-bearer
// request without client authentication (RFC 7523 §3.1); jkt is the
// thumbprint of the request's DPoP proof key, "" without a proof.
type grantHandler interface {
	grant(ctx context.Context, client *Client, form url.Values, jkt string) (*oauthmeta.TokenResponse, error)
}

// grantRoute registers a grantHandler under its grant_type.
type grantRoute struct {
	grantType string
	handler   grantHandler
	// bearer: the grant's tokens are never bound to a DPoP key, so the
	// request's proof is not checked (the token exchange: an ID-JAG or an
	// exchanged token is a Bearer token).
	bearer bool
	// proofWhen, for a bearer grant, names the requests whose proof is
	// checked after all (a delegation by token exchange, whose token is
	// bound to the actor's key); nil means none.
	proofWhen func(form url.Values) bool
	// bound returns the DPoP key thumbprint the request's grant is
	// already bound to, for the proof check (see dpopChecker.check); nil
	// for the grants that start a new grant.
	bound func(ctx context.Context, client *Client, form url.Values) string
}

// tokenEndpoint is the token endpoint (OAuth 2.1 §3.2): the registry of
// grant handlers by grant_type, and the steps every grant shares.
type tokenEndpoint struct {
	front *backChannel
	dpop  *dpopChecker // nil when DPoP is off
	// routes holds the offered grants; supported lists them in
	// registration order, as grant_types_supported.
	routes    map[string]grantRoute
	supported []string
}

// newTokenEndpoint registers routes, in the order of
// grant_types_supported.
func newTokenEndpoint(front *backChannel, dpop *dpopChecker, routes ...grantRoute) *tokenEndpoint {
	e := &tokenEndpoint{front: front, dpop: dpop, routes: make(map[string]grantRoute, len(routes))}
	for _, rt := range routes {
		e.routes[rt.grantType] = rt
		e.supported = append(e.supported, rt.grantType)
	}
	return e
}

// grantTypes returns grant_types_supported: the registered grants.
func (e *tokenEndpoint) grantTypes() []string { return e.supported }

// handleToken is the token endpoint (OAuth 2.1 §3.2): the
// authorization_code, refresh_token and client_credentials grants, the
// JWT-bearer grant with TrustedIssuers (RFC 7523) and the token exchange
// (RFC 8693) with IdentityProvider, Vault or DownstreamAPIs; client
// authentication none, client_secret_basic, client_secret_post or
// private_key_jwt; DPoP-bound tokens for requests with a proof (RFC 9449);
// JSON answers with Cache-Control: no-store (requirement AS-10). It
// parses, authenticates, rate-limits, checks the proof and dispatches to
// the grant's handler.
func (e *tokenEndpoint) handleToken(w http.ResponseWriter, r *http.Request) {
	form, ok := e.front.form(w, r)
	if !ok {
		return
	}
	gt := form.Get("grant_type")
	if _, ok := e.routes[gt]; ok {
		noteGrantType(r.Context(), gt)
	}
	client, err := e.client(r, form, gt)
	if err != nil {
		e.front.errs.write(w, r, err)
		return
	}
	if !e.front.limits.allowClient(w, client) {
		return
	}
	route, oe := e.route(gt)
	if oe != nil {
		e.front.errs.write(w, r, oe)
		return
	}
	if client != nil && !client.allowsGrant(gt) {
		e.front.errs.write(w, r, oauthErr(oauthmeta.CodeUnauthorizedClient, "client may not use this grant type"))
		return
	}
	jkt := ""
	if !route.bearer || (route.proofWhen != nil && route.proofWhen(form)) {
		if jkt, err = e.dpop.check(r, func() string { return e.knownBinding(r.Context(), gt, client, form) }); err != nil {
			e.writeDPoPError(w, r, err)
			return
		}
	}
	resp, err := route.handler.grant(r.Context(), client, form, jkt)
	if err != nil {
		e.front.errs.write(w, r, err)
		return
	}
	e.dpop.setNonce(r.Context(), w)
	writeJSON(w, http.StatusOK, resp)
}

// route returns the handler of grant_type gt, refusing a missing or
// unsupported grant_type.
func (e *tokenEndpoint) route(gt string) (grantRoute, *oauthmeta.Error) {
	if gt == "" {
		return grantRoute{}, oauthErr(oauthmeta.CodeInvalidRequest, "grant_type is required")
	}
	route, ok := e.routes[gt]
	if !ok {
		return grantRoute{}, oauthErr(oauthmeta.CodeUnsupportedGrantType, "grant_type is not supported")
	}
	return route, nil
}

// client authenticates the client of a token request. The JWT-bearer
// grant may come without client authentication (RFC 7523 §3.1), and so may
// a delegation, whose actor_token authenticates the actor: a request
// with no credentials and a client_id nobody registered has a nil client.
// That holds whether or not the grant is offered, so that such a request
// is told unsupported_grant_type rather than invalid_client.
func (e *tokenEndpoint) client(r *http.Request, form url.Values, gt string) (*Client, error) {
	noAuthGrant := gt == oauthmeta.GrantTypeJWTBearer || (gt == oauthmeta.GrantTypeTokenExchange && wantsDelegation(form))
	if noAuthGrant && !hasClientCredentials(r, form) {
		id := form.Get("client_id")
		if id == "" || e.front.clients.unregistered(r.Context(), id) {
			return nil, nil
		}
	}
	return e.front.clients.authenticate(r.Context(), r, form, false)
}

// knownBinding returns the DPoP key thumbprint a token request's grant is
// already bound to, before its proof is checked: what the grant's
// handler says (for a refresh_token request, the key of the refresh
// token's grant when the token exists and belongs to client); ""
// otherwise (the grant then refuses the request with its own error).
func (e *tokenEndpoint) knownBinding(ctx context.Context, gt string, client *Client, form url.Values) string {
	route, ok := e.routes[gt]
	if !ok || route.bound == nil || client == nil || e.dpop == nil {
		return ""
	}
	return route.bound(ctx, client, form)
}

// writeDPoPError answers a token request whose proof failed: the RFC 9449
// §5 error body, and with use_dpop_nonce a fresh nonce (§8).
func (e *tokenEndpoint) writeDPoPError(w http.ResponseWriter, r *http.Request, err error) {
	if dpop.IsNonceError(err) {
		e.dpop.setNonce(r.Context(), w)
	}
	e.front.errs.write(w, r, dpop.OAuthError(err))
}
