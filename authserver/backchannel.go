package authserver

import (
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpauth/mcpauth/internal/httpform"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// backChannel is the common start of the endpoints a client calls
// directly with its authentication: token, introspection and revocation.
// Each reads the form, applies the per-(address, client_id) rate limit,
// authenticates the client and applies the per-client limit through it.
type backChannel struct {
	maxBody int64 // Config.MaxBodyBytes
	limits  *rateLimits
	clients *clientRegistry
	errs    *errorWriter
}

// form parses a client's POST form and applies the per-(address,
// client_id) rate limit, writing the error response itself; it reports
// whether the handler may go on. The token, introspection and revocation
// endpoints all start with it (after the per-IP limit), and call
// allowClient once the client has authenticated.
func (b *backChannel) form(w http.ResponseWriter, r *http.Request) (url.Values, bool) {
	form, oe := b.parseForm(w, r)
	if oe != nil {
		b.errs.write(w, r, oe)
		return nil, false
	}
	if !b.limits.allowAttempt(w, r, form) {
		return nil, false
	}
	return form, true
}

// tokenRequest starts the introspection and revocation endpoints (RFC
// 7662 §2.1, RFC 7009 §2.1): the form, the client's authentication
// (confidential: public clients refused), its rate limit, and the required
// "token" parameter. On false the response has been written.
func (b *backChannel) tokenRequest(w http.ResponseWriter, r *http.Request, confidential bool) (*Client, string, bool) {
	form, ok := b.form(w, r)
	if !ok {
		return nil, "", false
	}
	client, err := b.clients.authenticate(r.Context(), r, form, confidential)
	if err != nil {
		b.errs.write(w, r, err)
		return nil, "", false
	}
	if !b.limits.allowClient(w, client) {
		return nil, "", false
	}
	token := form.Get("token")
	if token == "" {
		b.errs.write(w, r, oauthErr(oauthmeta.CodeInvalidRequest, "token is required"))
		return nil, "", false
	}
	return client, token, true
}

// parseForm reads an application/x-www-form-urlencoded body of at most
// MaxBodyBytes. Parameters must not repeat (RFC 6749 §3.2), except the
// target parameters that may: resource (RFC 8707 §2), and audience in a
// token exchange (RFC 8693 §2.1), whose handler answers more than one
// target with invalid_target; query parameters are ignored.
func (b *backChannel) parseForm(w http.ResponseWriter, r *http.Request) (url.Values, *oauthmeta.Error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/x-www-form-urlencoded" {
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "body must be application/x-www-form-urlencoded")
	}
	form, err := httpform.Post(w, r, b.maxBody)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, oauthErr(oauthmeta.CodeInvalidRequest, "request body too large")
		}
		return nil, oauthErr(oauthmeta.CodeInvalidRequest, "malformed form body")
	}
	exchange := form.Get("grant_type") == oauthmeta.GrantTypeTokenExchange
	for k, v := range form {
		if len(v) > 1 && k != "resource" && (k != "audience" || !exchange) {
			return nil, oauthErr(oauthmeta.CodeInvalidRequest, "parameter repeated: "+safeParamName(k))
		}
	}
	return form, nil
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

// hasClientCredentials reports whether a request carries a secret or an
// assertion (anything but auth method none).
func hasClientCredentials(r *http.Request, form url.Values) bool {
	return r.Header.Get("Authorization") != "" || form.Has("client_secret") || form.Has("client_assertion") ||
		form.Has("client_assertion_type")
}
