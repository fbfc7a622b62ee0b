// Package tokenclient is the module's one writer of requests to an OAuth
// token endpoint and the endpoints that share its wire shape (RFC 7662
// introspection, RFC 7009 revocation), for the parts that do not go through
// golang.org/x/oauth2. It keeps x/oauth2's RetrieveToken semantics: a form
// POST asking for JSON, client authentication with client_secret_basic
// (form-encoded id and secret, RFC 6749 §2.3.1) or in the body, no
// redirects followed, the answer read up to a size cap, an RFC 6749 §5.2
// error body decoded into an *oauthmeta.Error, and a token response decoded
// into an oauthmeta.TokenResponse, "expires_in" as a number or a string.
// Errors never contain the form, the credentials or the endpoint's error
// text beyond the OAuth error.
package tokenclient
