package authserver

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/mcpauth/mcpauth/internal/safehttp"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/pkce"
)

// authRequest is a validated authorization request.
type authRequest struct {
	client          *Client
	redirectURI     string
	redirectURISent bool
	state           string
	challenge       string
	scopes          []string
	resources       []string
	subject         string // the user; empty until known (see userOf)
	upstreamTokens  string // the login's record in the token vault, if any
	// browser is the hash of the remember cookie of the browser that a
	// remembered consent may apply to (see rememberingBrowser) or that
	// approved req on our page (approvingBrowser); empty otherwise.
	browser string
	// provider is the name of the identity provider chosen for the login
	// ([LoginProvider.Name]); empty until chosen, and with one provider.
	provider string
	// loginHint is the address that chose provider, for the provider's
	// login_hint; empty otherwise.
	loginHint string
	// consented records, while the choice page waits, that the user
	// approved on our consent page before it.
	consented bool
	// device is the Key of the device code whose user code was entered
	// on the verification page; empty for the browser flow. userCode is
	// that code, shown on the consent page.
	device, userCode string
}

// handleAuthorize is the authorization endpoint (OAuth 2.1 §4.1.1): code
// flow with S256 PKCE only. A request whose client or redirect URI cannot be
// trusted gets an HTML error page and no redirect (requirements AS-05,
// CIMD-07); every other error is redirected back with state and iss
// (AS-06, AS-07).
func (s *Server) handleAuthorize(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		s.renderError(w, r, http.StatusBadRequest, oauthErr(oauthmeta.CodeInvalidRequest, "malformed query string"))
		return
	}
	req, err := s.clientAndRedirect(r.Context(), q)
	if err != nil {
		if oe, ok := errors.AsType[*oauthmeta.Error](err); ok {
			status := http.StatusBadRequest
			if oe.Code == oauthmeta.CodeTemporarilyUnavailable { // a store is down
				status = http.StatusServiceUnavailable
			}
			s.renderError(w, r, status, oe)
			return
		}
		s.log.ErrorContext(r.Context(), "authorization request failed", "err", err)
		s.renderError(w, r, http.StatusInternalServerError, oauthErr(oauthmeta.CodeServerError, "internal error"))
		return
	}
	if oe := s.checkAuthorizeParams(req, q); oe != nil {
		s.redirectError(w, r, req, oe)
		return
	}
	req.browser = s.rememberingBrowser(r)           // used only when the consent page may be skipped
	req.provider, req.loginHint = s.login.hinted(q) // a login_hint at a home realm skips the choice
	s.advance(w, r, req, authorized, false)
}

// clientAndRedirect validates client_id and redirect_uri, the two values
// that decide whether redirecting is safe at all.
func (s *Server) clientAndRedirect(ctx context.Context, q url.Values) (*authRequest, error) {
	if len(q["client_id"]) != 1 {
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "exactly one client_id is required")
	}
	client, err := s.clients.lookup(ctx, q.Get("client_id"))
	if err != nil {
		return nil, err
	}
	req := &authRequest{client: client, state: q.Get("state")}
	switch n := len(q["redirect_uri"]); {
	case n > 1:
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "redirect_uri must appear once")
	case n == 1:
		req.redirectURI, req.redirectURISent = q.Get("redirect_uri"), true
		if !matchRedirectURI(client.RedirectURIs, req.redirectURI) {
			return nil, oauthErr(oauthmeta.CodeInvalidRequest, "redirect_uri is not registered for this client")
		}
	case len(client.RedirectURIs) == 1:
		req.redirectURI = client.RedirectURIs[0]
	default:
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "redirect_uri is required")
	}
	own, _ := url.Parse(s.cfg.issuerOrigin)
	if u, err := url.Parse(req.redirectURI); err != nil || safehttp.SameOrigin(u, own) {
		// An authorization response sent back into this server would be
		// a navigation from our own origin to whatever the client put in
		// its redirect URI, such as our /authorize for another client,
		// where a remembered consent applies (see rememberingBrowser).
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "redirect_uri may not point at this authorization server")
	}
	return req, nil
}

// singleValued parameters must not repeat (RFC 6749 §3.1).
func singleValued() []string {
	return []string{"response_type", "state", "code_challenge", "code_challenge_method", "scope", "response_mode"}
}

// checkAuthorizeParams validates everything else and fills req; the error
// is redirected to the client.
func (s *Server) checkAuthorizeParams(req *authRequest, q url.Values) *oauthmeta.Error {
	for _, p := range singleValued() {
		if len(q[p]) > 1 {
			return oauthErr(oauthmeta.CodeInvalidRequest, p+" must appear at most once")
		}
	}
	switch rt := q.Get("response_type"); {
	case rt == "":
		return oauthErr(oauthmeta.CodeInvalidRequest, "response_type is required")
	case rt != "code":
		return oauthErr(oauthmeta.CodeUnsupportedResponseType, "only response_type=code is supported")
	}
	if rm := q.Get("response_mode"); rm != "" && rm != "query" {
		return oauthErr(oauthmeta.CodeInvalidRequest, "only response_mode=query is supported")
	}
	if q.Has("request") || q.Has("request_uri") {
		return oauthErr("request_not_supported", "request objects are not supported")
	}
	if !req.client.allowsGrant(oauthmeta.GrantTypeAuthorizationCode) {
		return oauthErr(oauthmeta.CodeUnauthorizedClient, "client may not use the authorization code grant")
	}
	if oe := checkPKCE(q); oe != nil {
		return oe
	}
	req.challenge = q.Get("code_challenge")
	scopes, oe := s.scopes.grantable(req.client, q.Get("scope"))
	if oe != nil {
		return oe
	}
	req.scopes = scopes
	for _, res := range q["resource"] {
		if oe := s.resources.check(res); oe != nil {
			return oe
		}
		req.resources = appendNew(req.resources, res)
	}
	return nil
}

// checkPKCE requires an S256 code challenge (requirement AS-04; RFC 7636
// §4.4.1: a missing method means "plain", which is refused).
func checkPKCE(q url.Values) *oauthmeta.Error {
	if q.Get("code_challenge") == "" {
		return oauthErr(oauthmeta.CodeInvalidRequest, "code_challenge is required (PKCE S256)")
	}
	if q.Get("code_challenge_method") != oauthmeta.PKCEMethodS256 {
		return oauthErr(oauthmeta.CodeInvalidRequest, "code_challenge_method must be S256")
	}
	if !pkce.ValidChallenge(q.Get("code_challenge")) {
		return oauthErr(oauthmeta.CodeInvalidRequest, "code_challenge is not an S256 challenge")
	}
	return nil
}

// userOf is the subject of req: the upstream user once logged in, else the
// configured fixed subject.
func (s *Server) userOf(req *authRequest) string {
	if req.subject != "" {
		return req.subject
	}
	return s.cfg.Subject
}

// approve issues a code and redirects it to the client; for a device
// login it approves the device code instead.
func (s *Server) approve(w http.ResponseWriter, r *http.Request, req *authRequest) {
	if req.device != "" {
		s.answerDevice(w, r, req, true)
		return
	}
	code, err := s.issueCode(r.Context(), req)
	if err != nil {
		s.log.ErrorContext(r.Context(), "issuing an authorization code failed", "err", err)
		oe := oauthErr(oauthmeta.CodeServerError, "internal error")
		errors.As(err, &oe) // a store's temporarily_unavailable goes to the client as is
		s.redirectError(w, r, req, oe)
		return
	}
	s.log.InfoContext(r.Context(), "authorization approved", "client_id", req.client.ID)
	redirect(w, r, s.redirectTarget(req.redirectURI, url.Values{"code": {code}}, req.state))
}

// redirectError sends an error authorization response (RFC 6749 §4.1.2.1).
func (s *Server) redirectError(w http.ResponseWriter, r *http.Request, req *authRequest, oe *oauthmeta.Error) {
	noteRefusal(r.Context(), oe.Code, oe.Code == oauthmeta.CodeServerError)
	if req.device != "" {
		s.deviceRefused(w, r, req, oe)
		return
	}
	params := url.Values{"error": {string(oe.Code)}}
	if oe.Description != "" {
		params.Set("error_description", oe.Description)
	}
	redirect(w, r, s.redirectTarget(req.redirectURI, params, req.state))
}

// issueCode stores a new single-use code bound to the request (requirement
// AS-09) and returns it.
func (s *Server) issueCode(ctx context.Context, req *authRequest) (string, error) {
	code := randomToken(32)
	now := s.clock.Now()
	err := s.store.Codes.SaveCode(ctx, &Code{
		Key:             tokenKey(code),
		ClientID:        req.client.ID,
		RedirectURI:     req.redirectURI,
		RedirectURISent: req.redirectURISent,
		Challenge:       req.challenge,
		Scopes:          req.scopes,
		Resources:       req.resources,
		Subject:         s.userOf(req),
		UpstreamTokens:  req.upstreamTokens,
		Refresh:         req.client.allowsGrant(oauthmeta.GrantTypeRefreshToken),
		IssuedAt:        now,
		ExpiresAt:       now.Add(s.cfg.CodeTTL),
	})
	return code, err
}
