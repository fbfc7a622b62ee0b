package attack

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

// TestForgedTokensRS plays an attacker who holds no valid token for this
// resource and forges or bends one (RFC 8725 §2, §3; RFC 9068 §4;
// requirements RS-07…RS-10, RS-16…RS-18). Every request must be refused
// with the right status and challenge before the MCP handler runs, the
// audit event must name the right reason, the attacker's own key server
// must never be contacted, and no token may appear in logs, headers or
// bodies.
func TestForgedTokensRS(t *testing.T) {
	t.Parallel()
	e := newRSEnv(t)
	evilKey := oauthtest.NewKey(t, oauthtest.ES256, "evil-1")
	evil := newKeyIssuer(t, e.net, "evil.example.com", evilKey)
	now := e.clock.Now()
	validPayload := func(mutate func(m map[string]any)) []byte {
		m := e.claims().Claims()
		if mutate != nil {
			mutate(m)
		}
		return oauthtest.MustJSON(t, m)
	}
	valid := e.token(nil)
	parts := strings.Split(valid, ".")

	cases := []struct {
		name   string
		token  string
		status int
		reason error
	}{
		{"RS-10 alg none", oauthtest.Unsigned(t, map[string]any{"typ": "at+jwt", "kid": "es-1"}, validPayload(nil)), 401, resource.ErrInvalidToken},
		{"RS-10 alg none with an empty kid", oauthtest.Unsigned(t, map[string]any{"typ": "at+jwt"}, validPayload(nil)), 401, resource.ErrInvalidToken},
		{"RS-10 HS256 keyed with the RSA public key PEM", oauthtest.HMAC(t, e.rsa.PublicPEM(t), oauthtest.Header{KeyID: "rsa-1"}, validPayload(nil)), 401, reasonAlgorithm},
		{"RS-10 HS256 keyed with the EC public key PEM", oauthtest.HMAC(t, e.es.PublicPEM(t), oauthtest.Header{KeyID: "es-1"}, validPayload(nil)), 401, reasonAlgorithm},
		{"RS-10 typ JWT (legacy, not at+jwt)", e.es.MintWith(t, oauthtest.Header{Type: "JWT"}, e.claims()), 401, reasonTokenType},
		{"RS-18 ID token (no typ, aud is the client)", e.es.MintWith(t, oauthtest.Header{OmitType: true}, func() oauthtest.AccessToken {
			c := e.claims()
			c.Audience = []string{"app"}
			c.Extra = map[string]any{"nonce": "n-0S6_WzA2Mj", "auth_time": now.Unix()}
			return c
		}()), 401, resource.ErrInvalidToken},
		{"RS-10 typ id_token+jwt", e.es.MintWith(t, oauthtest.Header{Type: "id_token+jwt"}, e.claims()), 401, reasonTokenType},
		{"RS-07 expired", e.token(func(c *oauthtest.AccessToken) { c.IssuedAt = now.Add(-2 * time.Hour); c.Expiry = now.Add(-time.Hour) }), 401, reasonExpired},
		{"RS-10 nbf in the future", e.token(func(c *oauthtest.AccessToken) { c.NotBefore = now.Add(time.Hour) }), 401, reasonNotYetValid},
		{"RS-10 iat in the future", e.token(func(c *oauthtest.AccessToken) { c.IssuedAt = now.Add(time.Hour) }), 401, reasonIssuedInFuture},
		{"RS-10 missing exp", e.token(func(c *oauthtest.AccessToken) { c.Expiry = time.Time{} }), 401, reasonMissingExpiry},
		{"RS-08 foreign aud", e.token(func(c *oauthtest.AccessToken) { c.Audience = []string{"https://other.example.com/mcp"} }), 401, reasonAudience},
		{"RS-08 aud prefix of the resource", e.token(func(c *oauthtest.AccessToken) { c.Audience = []string{"https://mcp.example.com"} }), 401, reasonAudience},
		{"RS-08 aud with a trailing slash", e.token(func(c *oauthtest.AccessToken) { c.Audience = []string{mcpResource + "/"} }), 401, reasonAudience},
		{"RS-08 aud as a number", e.token(func(c *oauthtest.AccessToken) { c.Extra = map[string]any{"aud": 42} }), 401, resource.ErrInvalidToken},
		{"RS-08 no aud", e.token(func(c *oauthtest.AccessToken) { c.Audience = nil }), 401, resource.ErrInvalidToken},
		{"RS-09 unknown issuer, validly signed by its own key", func() string {
			c := e.claims()
			c.Issuer = evil.Issuer
			tok := evilKey.Mint(t, c)
			e.sec.Add(tok)
			return tok
		}(), 401, reasonIssuer},
		{"RS-10 jku pointing at the attacker", evilKey.MintWith(t, oauthtest.Header{Extra: map[string]any{"jku": evil.Issuer + "/jwks"}}, e.claims()), 401, resource.ErrInvalidToken},
		{"RS-10 x5u pointing at the attacker", evilKey.MintWith(t, oauthtest.Header{Extra: map[string]any{"x5u": evil.Issuer + "/cert.pem"}}, e.claims()), 401, resource.ErrInvalidToken},
		{"RS-10 embedded jwk of the attacker", evilKey.MintWith(t, oauthtest.Header{EmbedJWK: true}, e.claims()), 401, resource.ErrInvalidToken},
		{"RS-10 kid of the honest key, signed by the attacker", evilKey.MintWith(t, oauthtest.Header{KeyID: "es-1"}, e.claims()), 401, reasonSignature},
		{"RS-10 ES256 signature presented as RS256 (alg/key-type binding)", e.es.MintWith(t, oauthtest.Header{KeyID: "rsa-1"}, e.claims()), 401, resource.ErrInvalidToken},
		{"RS-18 sender-constrained (cnf) token as bearer", e.token(func(c *oauthtest.AccessToken) {
			c.Extra = map[string]any{"cnf": map[string]any{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}}
		}), 401, reasonBoundToken},
		{"64 KiB token", e.token(func(c *oauthtest.AccessToken) { c.Extra = map[string]any{"pad": strings.Repeat("A", 64<<10)} }), 401, reasonTokenTooLarge},
		{"truncated signature", parts[0] + "." + parts[1] + "." + parts[2][:len(parts[2])-7], 401, resource.ErrInvalidToken},
		{"truncated payload base64", parts[0] + "." + parts[1][:len(parts[1])-3] + "." + parts[2], 401, resource.ErrInvalidToken},
		{"trailing base64 padding", valid + "==", 401, resource.ErrInvalidToken},
		{"two segments", parts[0] + "." + parts[1], 401, resource.ErrInvalidToken},
		{"four segments", valid + "." + parts[2], 401, resource.ErrInvalidToken},
		{"duplicate aud, foreign first", e.es.Sign(t, oauthtest.Header{}, dupPayload(e.iss.Issuer, now,
			`"aud":"https://other.example.com/mcp","aud":"`+mcpResource+`"`)), 401, reasonMalformedToken},
		{"duplicate exp, expired first", e.es.Sign(t, oauthtest.Header{}, dupPayload(e.iss.Issuer, now,
			fmt.Sprintf(`"aud":"%s","exp":%d,"exp":%d`, mcpResource, now.Add(-time.Hour).Unix(), now.Add(time.Hour).Unix()))), 401, reasonMalformedToken},
		{"case-variant claim name", e.es.Sign(t, oauthtest.Header{}, dupPayload(e.iss.Issuer, now,
			fmt.Sprintf(`"AUD":"%s","exp":%d`, mcpResource, now.Add(time.Hour).Unix()))), 401, resource.ErrInvalidToken},
		{"payload is not JSON", e.es.Sign(t, oauthtest.Header{}, []byte("not json")), 401, reasonMalformedToken},
		{"RS-18 opaque string (a refresh token) without introspection", "rt_9d8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b", 401, resource.ErrInvalidToken},
	}
	for _, tc := range cases {
		e.sec.Add(tc.token)
		before := e.served.Load()
		res := e.send(rpc{auth: []string{"Bearer " + tc.token}})
		if res.status != tc.status || res.errorCode() != string(oauthmeta.CodeInvalidToken) {
			t.Errorf("%s: status %d, error %q; want %d invalid_token", tc.name, res.status, res.errorCode(), tc.status)
		}
		if res.challenge == nil || res.challenge.Value(oauthmeta.ParamResourceMetadata) == "" {
			t.Errorf("%s: challenge without resource_metadata (RS-25)", tc.name)
		}
		if ev := e.lastEvent(); ev.Decision != resource.DecisionDeny || !refused(ev.Err, tc.reason) {
			t.Errorf("%s: audit %s %v; want deny matching %v", tc.name, ev.Decision, ev.Err, tc.reason)
		}
		if e.served.Load() != before {
			t.Errorf("%s: the MCP handler ran", tc.name)
		}
	}
	if evil.Fetches() != 0 || e.net.Hits("evil.example.com") != 0 {
		t.Errorf("RS-10: the attacker's host was contacted %d times; jku/x5u/jwk and foreign issuers must never be fetched", e.net.Hits("evil.example.com"))
	}
	// The positive control: the untouched token is served.
	if res := e.send(rpc{auth: []string{"Bearer " + valid}}); res.status != http.StatusOK {
		t.Errorf("valid token: status %d, body %s", res.status, clip(res.body, 200))
	}
	e.sec.Check(t)
}

// dupPayload is a claims object with the given raw members in the middle,
// for duplicate and case-variant names that a map cannot express.
func dupPayload(iss string, now time.Time, members string) []byte {
	return []byte(fmt.Sprintf(`{"iss":%q,"sub":"user-1","client_id":"app","scope":"mcp:tools","iat":%d,%s}`,
		iss, now.Unix(), members))
}

// TestCredentialPlacementRS: tokens in the query string, several
// credentials, malformed schemes (RS-16, RS-17). None is ever served.
func TestCredentialPlacementRS(t *testing.T) {
	t.Parallel()
	e := newRSEnv(t)
	tok := e.token(nil)
	q := url.Values{"access_token": {tok}}.Encode()
	cases := []struct {
		name   string
		r      rpc
		status int
		code   string
		reason error
	}{
		{"RS-17 token in the query only", rpc{query: q}, 400, "invalid_request", reasonTokenInQuery},
		{"RS-17 token in the query and the header", rpc{query: q, auth: []string{"Bearer " + tok}}, 400, "invalid_request", resource.ErrInvalidRequest},
		{"RS-16 two Authorization headers", rpc{auth: []string{"Bearer " + tok, "Bearer " + tok}}, 400, "invalid_request", reasonMultipleCredentials},
		{"RS-16 Bearer with two tokens", rpc{auth: []string{"Bearer " + tok + " " + tok}}, 400, "invalid_request", reasonMalformedCredentials},
		{"RS-16 Bearer without a token", rpc{auth: []string{"Bearer"}}, 400, "invalid_request", resource.ErrInvalidRequest},
		{"RS-06 Basic credentials only", rpc{auth: []string{"Basic dXNlcjpwYXNz"}}, 401, "", resource.ErrNoToken},
		{"RS-06 no credentials", rpc{}, 401, "", resource.ErrNoToken},
		{"RS-16 characters outside b64token", rpc{auth: []string{"Bearer " + tok[:20] + "=" + tok[20:]}}, 400, "invalid_request", reasonMalformedCredentials},
		{"RS-16 scheme only, lower case, with a token in the query", rpc{auth: []string{"bearer"}, query: q}, 400, "invalid_request", resource.ErrInvalidRequest},
	}
	for _, tc := range cases {
		before := e.served.Load()
		res := func() (r result) {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("%s: %v", tc.name, p)
				}
			}()
			return e.send(tc.r)
		}()
		if res.status != tc.status || res.errorCode() != tc.code {
			t.Errorf("%s: status %d error %q; want %d %q", tc.name, res.status, res.errorCode(), tc.status, tc.code)
		}
		if ev := e.lastEvent(); !refused(ev.Err, tc.reason) {
			t.Errorf("%s: audit reason %v; want %v", tc.name, ev.Err, tc.reason)
		}
		if e.served.Load() != before {
			t.Errorf("%s: the MCP handler ran", tc.name)
		}
	}
	e.sec.Check(t)
}
