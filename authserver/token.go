package authserver

import (
	"errors"
	"mime"
	"net/http"
	"net/url"

	"github.com/mcpauth/mcpauth/oauthmeta"
)

// handleToken is the token endpoint (OAuth 2.1 §3.2): authorization_code
// and refresh_token grants, client authentication none,
// client_secret_basic or client_secret_post, JSON answers with
// Cache-Control: no-store (requirement AS-10).
func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	form, oe := s.parseForm(w, r)
	if oe != nil {
		s.writeError(w, r, oe)
		return
	}
	if !s.allowClient(w, claimedClientID(r, form)) {
		return
	}
	client, err := s.authenticateClient(r.Context(), r, form, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	gt := form.Get("grant_type")
	switch gt {
	case oauthmeta.GrantTypeAuthorizationCode, oauthmeta.GrantTypeRefreshToken:
	case "":
		s.writeError(w, r, oauthErr(oauthmeta.CodeInvalidRequest, "grant_type is required"))
		return
	default:
		s.writeError(w, r, oauthErr(oauthmeta.CodeUnsupportedGrantType, "only authorization_code and refresh_token are supported"))
		return
	}
	if !client.allowsGrant(gt) {
		s.writeError(w, r, oauthErr(oauthmeta.CodeUnauthorizedClient, "client may not use this grant type"))
		return
	}
	var resp *oauthmeta.TokenResponse
	if gt == oauthmeta.GrantTypeAuthorizationCode {
		resp, err = s.exchangeCode(r.Context(), client, form)
	} else {
		resp, err = s.refresh(r.Context(), client, form)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, resp)
}

// parseForm reads an application/x-www-form-urlencoded body of at most
// MaxBodyBytes. Parameters other than resource must not repeat (RFC 6749
// §3.2); query parameters are ignored.
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
	for k, v := range r.PostForm {
		if len(v) > 1 && k != "resource" {
			return nil, oauthErr(oauthmeta.CodeInvalidRequest, "parameter repeated: "+safeParamName(k))
		}
	}
	return r.PostForm, nil
}

// safeParamName returns k if it is a short plain parameter name, so an
// error description never echoes arbitrary input.
func safeParamName(k string) string {
	if len(k) > 40 {
		return "(parameter)"
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return "(parameter)"
		}
	}
	return k
}

// claimedClientID is the client_id a request names, before authentication,
// for the per-client rate limit.
func claimedClientID(r *http.Request, form url.Values) string {
	if id, _, ok := parseBasic(r.Header.Get("Authorization")); ok {
		return id
	}
	return form.Get("client_id")
}

// tokenResponse builds the RFC 6749 §5.1 response.
func (s *Server) tokenResponse(access, refresh string, scopes []string) *oauthmeta.TokenResponse {
	return &oauthmeta.TokenResponse{
		AccessToken:  access,
		TokenType:    "Bearer",
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
		ok := false
		for _, g := range granted {
			if oauthmeta.SameResource(g, res) {
				ok = true
				break
			}
		}
		if !ok {
			return nil, oauthErr(oauthmeta.CodeInvalidTarget, "resource was not part of the authorization")
		}
		if !containsString(out, res) {
			out = append(out, res)
		}
	}
	return out, nil
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
