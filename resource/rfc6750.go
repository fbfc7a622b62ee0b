package resource

import (
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// schemeBearer is the RFC 6750 authentication scheme. Schemes are carried
// as data (credential.scheme, TokenInfo.Scheme, the challenge list) so that
// another scheme, such as RFC 9449 DPoP, can be added beside it.
const schemeBearer = "Bearer"

// credential is the access token a request presented, with its scheme.
type credential struct {
	scheme string
	token  string
}

// extractCredential finds the request's access token. Only the
// Authorization header is accepted (RFC 6750 §2.1): MCP forbids the query
// string (RS-17; RFC 6750 §2.3) and MCP bodies are JSON, so a form body is
// refused too (§2.2). More than one credential, or a header that is not
// "<scheme> <b64token>", is a malformed request (RS-16). The scheme name is
// matched case-insensitively, so "bearer x" is accepted (RFC 9110 §11.1).
//
// A token longer than maxToken is refused before it is even scanned.
func extractCredential(r *http.Request, maxToken int) (credential, error) {
	vals := r.Header["Authorization"]
	inQuery := queryHasToken(r.URL.RawQuery)
	switch {
	case len(vals) > 1:
		return credential{}, ErrMultipleCredentials
	case len(vals) == 1 && inQuery:
		return credential{}, ErrMultipleCredentials
	case inQuery:
		return credential{}, ErrTokenInQuery
	case isFormBody(r):
		return credential{}, ErrTokenInBody
	case len(vals) == 0:
		return credential{}, ErrNoToken
	}
	return parseAuthorization(vals[0], maxToken)
}

// parseAuthorization splits "<scheme> 1*SP <b64token>" (RFC 6750 §2.1).
// An unsupported scheme counts as no credentials: the response is the
// plain challenge naming the schemes that are supported.
func parseAuthorization(h string, maxToken int) (credential, error) {
	sp := strings.IndexByte(h, ' ')
	if sp <= 0 {
		if strings.EqualFold(h, schemeBearer) {
			return credential{}, ErrMalformedCredentials
		}
		return credential{}, ErrNoToken
	}
	scheme := h[:sp]
	if !strings.EqualFold(scheme, schemeBearer) {
		return credential{}, ErrNoToken
	}
	tok := strings.TrimLeft(h[sp+1:], " ")
	if len(tok) > maxToken {
		return credential{}, ErrTokenTooLarge
	}
	if !isB64Token(tok) {
		return credential{}, ErrMalformedCredentials
	}
	return credential{scheme: schemeBearer, token: tok}, nil
}

// isB64Token reports whether s matches RFC 6750 §2.1
// b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func isB64Token(s string) bool {
	if s == "" {
		return false
	}
	body := strings.TrimRight(s, "=")
	return body != "" && allIn(body, b64TokenTable)
}

// queryHasToken reports whether the query string carries an access_token
// parameter (RFC 6750 §2.3), in any escaping.
func queryHasToken(rawQuery string) bool {
	if rawQuery == "" || !containsFold(rawQuery, "access") {
		return false
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		// Unparseable queries are judged by their raw text.
		return true
	}
	for k := range q {
		if strings.EqualFold(k, "access_token") {
			return true
		}
	}
	return false
}

func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

func isFormBody(r *http.Request) bool {
	ct := r.Header["Content-Type"]
	if len(ct) == 0 || !strings.Contains(strings.ToLower(ct[0]), "form") {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct[0])
	return err != nil || mt == "application/x-www-form-urlencoded" || mt == "multipart/form-data"
}
