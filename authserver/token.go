package authserver

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpauth/mcpauth/clientmeta"
	"github.com/mcpauth/mcpauth/dpop"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// handleToken is the token endpoint (OAuth 2.1 §3.2): the
// authorization_code, refresh_token and client_credentials grants, the
// JWT-bearer grant with TrustedIssuers (RFC 7523) and the ID-JAG token
// exchange with IdentityProvider (RFC 8693); client authentication none,
// client_secret_basic, client_secret_post or private_key_jwt; DPoP-bound
// tokens for requests with a proof (RFC 9449); JSON answers with
// Cache-Control: no-store (requirement AS-10).
func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	form, ok := s.clientForm(w, r)
	if !ok {
		return
	}
	gt := form.Get("grant_type")
	client, err := s.tokenClient(r, form, gt)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !s.allowClient(w, client) {
		return
	}
	if oe := s.checkGrantType(gt); oe != nil {
		s.writeError(w, r, oe)
		return
	}
	if client != nil && !client.allowsGrant(gt) {
		s.writeError(w, r, oauthErr(oauthmeta.CodeUnauthorizedClient, "client may not use this grant type"))
		return
	}
	jkt := ""
	if gt != oauthmeta.GrantTypeTokenExchange { // an ID-JAG is not a DPoP token
		if jkt, err = s.checkDPoP(r, func() string { return s.knownBinding(r.Context(), gt, client, form) }); err != nil {
			s.writeDPoPError(w, r, err)
			return
		}
	}
	resp, err := s.grant(r.Context(), gt, client, form, jkt)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.setDPoPNonce(r.Context(), w)
	s.writeJSON(w, http.StatusOK, resp)
}

// checkGrantType refuses a missing or unsupported grant_type.
func (s *Server) checkGrantType(gt string) *oauthmeta.Error {
	switch {
	case gt == "":
		return oauthErr(oauthmeta.CodeInvalidRequest, "grant_type is required")
	case !slices.Contains(s.grantTypes(), gt):
		return oauthErr(oauthmeta.CodeUnsupportedGrantType, "grant_type is not supported")
	}
	return nil
}

// tokenClient authenticates the client of a token request. The JWT-bearer
// grant may come without client authentication (RFC 7523 §3.1): a request
// with no credentials and a client_id nobody registered has a nil client.
func (s *Server) tokenClient(r *http.Request, form url.Values, gt string) (*Client, error) {
	if gt == oauthmeta.GrantTypeJWTBearer && !hasClientCredentials(r, form) {
		id := form.Get("client_id")
		if id == "" {
			return nil, nil
		}
		if !clientmeta.IsURLClientID(id) {
			if _, err := s.store.Clients.Client(r.Context(), id); errors.Is(err, ErrNotFound) {
				return nil, nil
			}
		}
	}
	return s.authenticateClient(r.Context(), r, form, false)
}

// hasClientCredentials reports whether a request carries a secret or an
// assertion (anything but auth method none).
func hasClientCredentials(r *http.Request, form url.Values) bool {
	return r.Header.Get("Authorization") != "" || form.Has("client_secret") || form.Has("client_assertion") ||
		form.Has("client_assertion_type")
}

// grant runs the grant gt for client.
func (s *Server) grant(ctx context.Context, gt string, client *Client, form url.Values, jkt string) (*oauthmeta.TokenResponse, error) {
	switch gt {
	case oauthmeta.GrantTypeAuthorizationCode:
		return s.exchangeCode(ctx, client, form, jkt)
	case oauthmeta.GrantTypeRefreshToken:
		return s.refresh(ctx, client, form, jkt)
	case oauthmeta.GrantTypeClientCredentials:
		return s.clientCredentials(ctx, client, form, jkt)
	case oauthmeta.GrantTypeJWTBearer:
		return s.jwtBearer(ctx, client, form, jkt)
	default:
		if s.idp == nil || form.Get("subject_token_type") == tokenTypeAccessToken {
			return s.exchangeAccessToken(ctx, client, form)
		}
		return s.exchangeForIDJAG(ctx, client, form)
	}
}

// clientForm parses a client's POST form and applies the per-(address,
// client_id) rate limit, writing the error response itself; it reports
// whether the handler may go on. The token, introspection and revocation
// endpoints all start with it (after the per-IP limit), and call
// allowClient once the client has authenticated.
func (s *Server) clientForm(w http.ResponseWriter, r *http.Request) (url.Values, bool) {
	form, oe := s.parseForm(w, r)
	if oe != nil {
		s.writeError(w, r, oe)
		return nil, false
	}
	if !s.allowAttempt(w, r, form) {
		return nil, false
	}
	return form, true
}

// tokenRequest starts the introspection and revocation endpoints (RFC
// 7662 §2.1, RFC 7009 §2.1): the form, the client's authentication
// (confidential: public clients refused), its rate limit, and the required
// "token" parameter. On false the response has been written.
func (s *Server) tokenRequest(w http.ResponseWriter, r *http.Request, confidential bool) (*Client, string, bool) {
	form, ok := s.clientForm(w, r)
	if !ok {
		return nil, "", false
	}
	client, err := s.authenticateClient(r.Context(), r, form, confidential)
	if err != nil {
		s.writeError(w, r, err)
		return nil, "", false
	}
	if !s.allowClient(w, client) {
		return nil, "", false
	}
	token := form.Get("token")
	if token == "" {
		s.writeError(w, r, oauthErr(oauthmeta.CodeInvalidRequest, "token is required"))
		return nil, "", false
	}
	return client, token, true
}

// parseForm reads an application/x-www-form-urlencoded body of at most
// MaxBodyBytes. Parameters must not repeat (RFC 6749 §3.2), except the
// target parameters that may: resource (RFC 8707 §2), and audience in a
// token exchange (RFC 8693 §2.1), whose handler answers more than one
// target with invalid_target; query parameters are ignored.
func (s *Server) parseForm(w http.ResponseWriter, r *http.Request) (url.Values, *oauthmeta.Error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/x-www-form-urlencoded" {
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "body must be application/x-www-form-urlencoded")
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, oauthErr(oauthmeta.CodeInvalidRequest, "request body too large")
		}
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "malformed form body")
	}
	exchange := r.PostForm.Get("grant_type") == oauthmeta.GrantTypeTokenExchange
	for k, v := range r.PostForm {
		if len(v) > 1 && k != "resource" && (k != "audience" || !exchange) {
			return nil, oauthErr(oauthmeta.CodeInvalidRequest, "parameter repeated: "+safeParamName(k))
		}
	}
	return r.PostForm, nil
}

// safeParamName returns k if it is a short plain parameter name, so an
// error description never echoes arbitrary input.
func safeParamName(k string) string {
	if len(k) > 40 || strings.ContainsFunc(k, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-')
	}) {
		return "(parameter)"
	}
	return k
}

// claimedClientID is the client_id a request names, before authentication,
// for the per-(address, client_id) rate limit: the Basic user name, else
// the client_id parameter (empty when there is neither).
func claimedClientID(r *http.Request, form url.Values) string {
	if id, _, ok := parseBasic(r.Header.Get("Authorization")); ok {
		return id
	}
	return form.Get("client_id")
}

// tokenResponse builds the RFC 6749 §5.1 response; token_type is DPoP for a
// token bound to the key jkt (RFC 9449 §5).
func (s *Server) tokenResponse(access, refresh string, scopes []string, jkt string) *oauthmeta.TokenResponse {
	tt := "Bearer"
	if jkt != "" {
		tt = dpop.TokenType
	}
	return &oauthmeta.TokenResponse{
		AccessToken:  access,
		TokenType:    tt,
		ExpiresIn:    int64(s.cfg.AccessTokenTTL.Seconds()),
		RefreshToken: refresh,
		Scope:        oauthmeta.FormatScope(scopes),
	}
}

// narrowResources returns the audience for a token request (RFC 8707 §2.2,
// requirement AS-08): the requested resources, each of which must be
// within the grant, or the grant's resources when none are requested.
func narrowResources(granted, requested []string) ([]string, *oauthmeta.Error) {
	if len(requested) == 0 {
		return granted, nil
	}
	out := make([]string, 0, len(requested))
	for _, res := range requested {
		if !hasResource(granted, res) {
			return nil, oauthErr(oauthmeta.CodeInvalidTarget, "resource was not part of the authorization")
		}
		out = appendNew(out, res)
	}
	return out, nil
}
