package oauthtest

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpauth/mcpauth/internal/httpform"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/pkce"
)

func (s *AS) token(w http.ResponseWriter, r *http.Request, o ASOptions) {
	form, err := httpform.Post(w, r, 64<<10)
	if err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	locked(&s.mu, func() { s.tokens = append(s.tokens, TokenRequest{Form: form, Header: r.Header.Clone()}) })
	cl, ok := s.authenticate(r, form, o)
	if !ok {
		oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	var g Grant
	switch form.Get("grant_type") {
	case "authorization_code":
		s.mu.Lock()
		c, found := s.codes[form.Get("code")]
		delete(s.codes, form.Get("code"))
		s.mu.Unlock()
		if !found || c.ClientID != cl.ID || c.redirectURI != form.Get("redirect_uri") ||
			!pkce.Verify(form.Get("code_verifier"), c.challenge) || o.EchoSecrets {
			s.grantError(w, r, form, o)
			return
		}
		if c.Resource != form.Get("resource") {
			oauthError(w, http.StatusBadRequest, "invalid_target")
			return
		}
		g = c.Grant
	case "refresh_token":
		rt := form.Get("refresh_token")
		s.mu.Lock()
		prev, found := s.refresh[rt]
		if found && o.RotateRefreshTokens {
			delete(s.refresh, rt)
		}
		s.mu.Unlock()
		if !found || prev.ClientID != cl.ID || o.EchoSecrets {
			s.grantError(w, r, form, o)
			return
		}
		if res := form.Get("resource"); res != "" && res != prev.Resource {
			oauthError(w, http.StatusBadRequest, "invalid_target")
			return
		}
		g = prev
	case oauthmeta.GrantTypeTokenExchange:
		s.exchange(w, form, o)
		return
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	s.issue(w, form.Get("grant_type"), o, g)
}

func (s *AS) issue(w http.ResponseWriter, grantType string, o ASOptions, g Grant) {
	at := "at-" + pkce.GenerateVerifier()
	resp := tokenResponse(o, at, cmp.Or(o.ExpiresIn, 3600), g.Scopes)
	s.mu.Lock()
	s.access[at] = g
	s.secrets = append(s.secrets, at)
	if o.IssueRefreshTokens && (grantType == "authorization_code" || o.RotateRefreshTokens) {
		rt := "rt-" + pkce.GenerateVerifier()
		s.refresh[rt] = g
		s.secrets = append(s.secrets, rt)
		resp["refresh_token"] = rt
	}
	s.mu.Unlock()
	if o.PadTokenResponse > 0 {
		resp["padding"] = strings.Repeat("x", o.PadTokenResponse)
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, resp)
}

// tokenResponse is a successful token response; expiresIn < 1 is left
// out.
func tokenResponse(o ASOptions, token string, expiresIn int64, scopes []string) map[string]any {
	resp := map[string]any{"access_token": token}
	switch o.TokenType {
	case "":
		resp["token_type"] = "Bearer"
	case "-":
	default:
		resp["token_type"] = o.TokenType
	}
	if expiresIn > 0 {
		resp["expires_in"] = expiresIn
	}
	if len(scopes) > 0 {
		resp["scope"] = strings.Join(scopes, " ")
	}
	return resp
}

// exchange answers a token exchange of an access token (RFC 8693) for one
// of o.Exchanges, named by either its audience or its resource.
func (s *AS) exchange(w http.ResponseWriter, f url.Values, o ASOptions) {
	if _, issued := s.Lookup(f.Get("subject_token")); f.Get("subject_token_type") != oauthmeta.TokenTypeAccessToken ||
		!issued && !slices.Contains(o.SubjectTokens, f.Get("subject_token")) {
		oauthError(w, http.StatusBadRequest, "invalid_grant")
		return
	}
	target, ok := o.Exchanges[cmp.Or(f.Get("audience"), f.Get("resource"))]
	if !ok || f.Has("audience") && f.Has("resource") {
		oauthError(w, http.StatusBadRequest, "invalid_target")
		return
	}
	scopes := strings.Fields(f.Get("scope"))
	if slices.ContainsFunc(scopes, func(sc string) bool { return !slices.Contains(target.Scopes, sc) || slices.Contains(o.DenyScopes, sc) }) {
		oauthError(w, http.StatusBadRequest, "invalid_scope")
		return
	}
	if len(scopes) == 0 {
		scopes = target.Scopes
	}
	resp := tokenResponse(o, target.Token, target.ExpiresIn, scopes)
	resp["issued_token_type"] = oauthmeta.TokenTypeAccessToken
	locked(&s.mu, func() { s.secrets = append(s.secrets, target.Token) })
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, resp)
}

// SetIntrospection makes the introspection endpoint (RFC 7662) answer
// answer for token; it answers {"active":false} for other tokens.
func (s *AS) SetIntrospection(token string, answer any) {
	locked(&s.mu, func() { s.introspection[token] = answer })
}

// introspect answers an authenticated client that names the token type,
// as the resource servers of this module do.
func (s *AS) introspect(w http.ResponseWriter, r *http.Request, o ASOptions) {
	form, err := httpform.Post(w, r, 64<<10)
	if err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	if _, ok := s.authenticate(r, form, o); !ok {
		oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	if form.Get("token_type_hint") != "access_token" {
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	var answer any = map[string]any{"active": false}
	locked(&s.mu, func() {
		if a, ok := s.introspection[form.Get("token")]; ok {
			answer = a
		}
	})
	writeJSON(w, http.StatusOK, answer)
}

// grantError answers invalid_grant, echoing the credentials received when
// the options say so (a careless server).
func (s *AS) grantError(w http.ResponseWriter, r *http.Request, form url.Values, o ASOptions) {
	resp := map[string]string{"error": "invalid_grant"}
	if o.EchoSecrets {
		_, secret, _ := r.BasicAuth()
		resp["error_description"] = "rejected code=" + form.Get("code") + " verifier=" + form.Get("code_verifier") +
			" refresh_token=" + form.Get("refresh_token") + " secret=" + secret + form.Get("client_secret")
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusBadRequest, resp)
}

// authenticate applies the client's registered token endpoint
// authentication method.
func (s *AS) authenticate(r *http.Request, form url.Values, o ASOptions) (RegisteredClient, bool) {
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = form.Get("client_id"), form.Get("client_secret")
	}
	cl, ok := s.client(id, o)
	if !ok {
		return RegisteredClient{}, false
	}
	switch cl.Method {
	case "client_secret_basic":
		return cl, basic && secret == cl.Secret
	case "client_secret_post":
		return cl, !basic && secret == cl.Secret && form.Get("client_secret") != ""
	default:
		return cl, !basic && form.Get("client_secret") == ""
	}
}

func (s *AS) register(w http.ResponseWriter, r *http.Request, o ASOptions) {
	var md oauthmeta.ClientMetadata
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&md); err != nil || len(md.RedirectURIs) == 0 {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata")
		return
	}
	method := cmp.Or(o.RegisterMethod, md.TokenEndpointAuthMethod, "client_secret_basic")
	cl := RegisteredClient{ID: "dcr-" + pkce.GenerateVerifier(), Method: method, RedirectURIs: md.RedirectURIs}
	if method != "none" {
		cl.Secret = "secret-" + pkce.GenerateVerifier()
	}
	locked(&s.mu, func() {
		s.registrations = append(s.registrations, md)
		s.clients[cl.ID] = cl
	})
	resp := map[string]any{"client_id": cl.ID, "redirect_uris": md.RedirectURIs, "token_endpoint_auth_method": method,
		"client_name": md.ClientName, "grant_types": md.GrantTypes}
	if cl.Secret != "" {
		resp["client_secret"] = cl.Secret
	}
	writeJSON(w, http.StatusCreated, resp)
}

// ClientIDs returns the client_ids seen at the authorization and token
// endpoints, in order.
func (s *AS) ClientIDs() []string {
	var out []string
	for _, q := range s.Authorizations() {
		out = append(out, q.Get("client_id"))
	}
	for _, tr := range s.TokenRequests() {
		id := tr.Form.Get("client_id")
		if h := tr.Header.Get("Authorization"); strings.HasPrefix(h, "Basic ") {
			id = "(basic)"
		}
		out = append(out, id)
	}
	return slices.Compact(out)
}
