package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"

	identityrules "github.com/mcpauth/mcpauth/internal/identity"
	"github.com/mcpauth/mcpauth/resource"
)

// forwardedIdentity is the set of identity headers of one verified token, in
// canonical form, ready to be put on every request that presents it.
// Its value slices are shared between requests and have no spare
// capacity, so that an Add to the outgoing header copies rather than
// writes into them.
type forwardedIdentity struct {
	names  [maxIdentityHeaders]string
	values [maxIdentityHeaders][]string
	n      int
	// storage the values slices point into
	storage [maxIdentityHeaders]string
}

// maxIdentityHeaders is the number of identity headers the proxy sets.
const maxIdentityHeaders = 6

// identityHeaders returns the identity headers of a request's verified
// token, computed once per verification (resource.Derived) rather than
// decoding the claims for every request. Values that are not printable
// ASCII, and an email that is not an address by the rules of
// internal/identity (the authorization server's allow-list rules: one "@",
// no "%", quotes or spaces, an ASCII domain name), are left out (and
// logged, once per verification) rather than mangled, so that an upstream
// matching X-Forwarded-Email by its domain never reads
// "attacker@evil.com@example.com" as an address at example.com.
func identityHeaders(logger *slog.Logger) *resource.Derived[*forwardedIdentity] {
	return resource.NewDerived(func(info *resource.TokenInfo) *forwardedIdentity {
		var claims struct {
			Email             string `json:"email"`
			PreferredUsername string `json:"preferred_username"`
		}
		if mayHoldIdentityClaims(info.Claims) {
			_ = json.Unmarshal(info.Claims, &claims)
		}
		id := &forwardedIdentity{}
		for _, kv := range [...][2]string{
			{headerUser, info.Subject},
			{headerEmail, claims.Email},
			{headerPreferredUsername, claims.PreferredUsername},
			{headerScopes, strings.Join(info.Scopes, " ")},
			{headerClientID, info.ClientID},
			{headerIssuer, info.Issuer},
		} {
			switch {
			case kv[1] == "":
			case !printableASCII(kv[1]):
				logger.Warn("identity value not forwarded: not printable ASCII", "header", kv[0])
			case kv[0] == headerEmail && !acceptedEmail(kv[1]):
				logger.Warn("identity value not forwarded: not an accepted email address", "header", kv[0])
			default:
				id.storage[id.n] = kv[1]
				id.names[id.n], id.values[id.n] = kv[0], id.storage[id.n:id.n+1:id.n+1]
				id.n++
			}
		}
		return id
	})
}

// acceptedEmail reports whether s is an email address by the rules of
// internal/identity.
func acceptedEmail(s string) bool {
	_, err := identityrules.ParseEmail(s)
	return err == nil
}

// len is the number of identity headers; 0 for nil (no verified token).
func (id *forwardedIdentity) len() int {
	if id == nil {
		return 0
	}
	return id.n
}

// set puts the identity headers on h, replacing any of the same name;
// nothing for nil.
func (id *forwardedIdentity) set(h http.Header) {
	if id == nil {
		return
	}
	for i := range id.n {
		h[id.names[i]] = id.values[i]
	}
}

// mayHoldIdentityClaims reports whether claims may have an "email" or
// "preferred_username" member: most access tokens have neither, and the
// decoding is then skipped. A name written with escapes is caught by the
// backslash.
func mayHoldIdentityClaims(claims []byte) bool {
	return bytes.Contains(claims, []byte(`"email"`)) || bytes.Contains(claims, []byte(`"preferred_username"`)) ||
		bytes.IndexByte(claims, '\\') >= 0
}
