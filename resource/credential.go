package resource

import (
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpauth/mcpauth/internal/ascii"
	"github.com/mcpauth/mcpauth/internal/jwtverify"
)

// schemeBearer is the RFC 6750 authentication scheme. Schemes are carried
// as data (credential.scheme, TokenInfo.Scheme, the challenge list), beside
// RFC 9449's DPoP (schemeDPoP).
const schemeBearer = "Bearer"

// credential is the access token a request presented, with its scheme.
// On an extraction error, scheme is still set when the request used one
// scheme unambiguously (it decides which challenge carries the error, RFC
// 9449 §7.2), and empty otherwise.
type credential struct {
	scheme string
	token  string
	shape  tokenShape // what the b64token scan learned of token
}

// extractCredential finds the request's access token. Only the
// Authorization header is accepted (RFC 6750 §2.1): MCP forbids the query
// string (RFC 6750 §2.3) and MCP bodies are JSON, so a form body is
// refused too (§2.2). More than one credential, or a header that is not
// "<scheme> <b64token>", is a malformed request. The scheme name is
// matched case-insensitively, so "bearer x" is accepted (RFC 9110 §11.1).
//
// A token longer than maxToken is refused before it is even scanned.
//
// With withDPoP, the RFC 9449 §7.1 scheme "DPoP <token>" is recognised
// too, with the same token syntax; otherwise it counts as an unsupported
// scheme.
func extractCredential(r *http.Request, maxToken int, withDPoP bool) (credential, error) {
	vals := r.Header["Authorization"]
	inQuery := queryHasToken(r.URL.RawQuery)
	switch {
	case len(vals) > 1:
		return credential{}, errMultipleCredentials
	case len(vals) == 1 && inQuery:
		return credential{}, errMultipleCredentials
	case inQuery:
		return credential{scheme: schemeBearer}, errTokenInQuery
	case isFormBody(r):
		return credential{scheme: schemeBearer}, errTokenInBody
	case len(vals) == 0:
		return credential{}, ErrNoToken
	}
	return parseAuthorization(vals[0], maxToken, withDPoP)
}

// parseAuthorization splits "<scheme> 1*SP <b64token>" (RFC 6750 §2.1,
// RFC 9449 §7.1). An unsupported scheme counts as no credentials: the
// response is the plain challenge naming the schemes that are supported.
func parseAuthorization(h string, maxToken int, withDPoP bool) (credential, error) {
	name, rest, _ := strings.Cut(h, " ")
	var scheme string
	switch {
	case ascii.EqualFold(name, schemeBearer):
		scheme = schemeBearer
	case withDPoP && ascii.EqualFold(name, schemeDPoP):
		scheme = schemeDPoP
	default:
		return credential{}, ErrNoToken
	}
	tok := strings.TrimLeft(rest, " ")
	if len(tok) > maxToken {
		return credential{scheme: scheme}, errTokenTooLarge
	}
	// A token of base64url characters and dots is a b64token; it has the
	// JWS compact shape exactly when it splits in three. Any other token
	// is opaque, if it is a b64token at all: one scan for a JWS.
	shape := shapeOpaque
	switch {
	case tok != "" && compactChars.All(tok):
		if _, _, _, ok := jwtverify.Split(tok); ok {
			shape = shapeJWS
		}
	case !isB64Token(tok):
		return credential{scheme: scheme}, errMalformedCredentials
	}
	return credential{scheme: scheme, token: tok, shape: shape}, nil
}

// b64TokenChars is the RFC 6750 §2.1 character set before any "="
// padding: ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/". Read-only.
var b64TokenChars = jwtverify.NewByteSet(jwtverify.Base64URLAlphabet + ".~+/")

// compactChars is the base64url alphabet (RFC 4648 §5) and ".": the
// characters of a JWS in compact serialization, all of them b64token
// characters. Read-only.
var compactChars = jwtverify.NewByteSet(jwtverify.Base64URLAlphabet + ".")

// isB64Token reports whether s matches RFC 6750 §2.1
// b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func isB64Token(s string) bool {
	body := strings.TrimRight(s, "=")
	return body != "" && b64TokenChars.All(body)
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
		if ascii.EqualFold(k, "access_token") {
			return true
		}
	}
	return false
}

func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if ascii.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

func isFormBody(r *http.Request) bool {
	ct := r.Header["Content-Type"]
	if len(ct) == 0 || !strings.Contains(ascii.ToLower(ct[0]), "form") {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct[0])
	return err != nil || mt == "application/x-www-form-urlencoded" || mt == "multipart/form-data"
}
