package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/client/tokenstore"
	"github.com/mcpauth/mcpauth/internal/nethook"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// FuzzTokenResponse feeds arbitrary token endpoint answers through the
// whole token path (x/oauth2 and the response rules): never a panic, never
// the credential in an error, and an accepted response always has an
// access token of type Bearer.
func FuzzTokenResponse(f *testing.F) {
	f.Add(200, "application/json", []byte(`{"access_token":"a","token_type":"Bearer","expires_in":3600,"scope":"a b"}`))
	f.Add(200, "application/json", []byte(`{"access_token":"a"}`))
	f.Add(200, "application/json", []byte(`{"access_token":"a","token_type":"DPoP"}`))
	f.Add(400, "application/json", []byte(`{"error":"invalid_grant","error_description":"x"}`))
	f.Add(200, "text/plain", []byte(`access_token=a&token_type=bearer`))
	f.Add(200, "application/json", []byte(`{"access_token":"a","token_type":"Bearer","expires_in":9223372036854775807}`))
	f.Add(200, "application/json", []byte(`{"access_token":"a","token_type":"Bearer","ACCESS_TOKEN":"b"}`))
	e := newRawTokenEndpoint(f)
	c, _ := New(Config{Authorizer: &FollowRedirects{}, InsecureAllowHTTPLoopback: true, Now: func() time.Time { return time.Unix(0, 0) }})
	f.Fuzz(func(t *testing.T, status int, ct string, body []byte) {
		status = 200 + int(uint(status)%400)
		tok, err := e.answer(c, false, status, ct, body)
		if err == nil {
			if tok.AccessToken == "" || tok.TokenType != "Bearer" {
				t.Fatalf("accepted %q", body)
			}
			return
		}
		if strings.Contains(err.Error(), "SENT-SECRET") {
			t.Fatalf("credential in error %q", err)
		}
	})
}

// FuzzAuthorizationResponse feeds arbitrary redirect queries to the
// response checks for a pending request whose token endpoint cannot be
// reached: never a panic; a response that does not carry the right state
// and iss never reaches the token endpoint.
func FuzzAuthorizationResponse(f *testing.F) {
	f.Add("code=c&state=STATE&iss=https%3A%2F%2Fas.example.com")
	f.Add("code=c&state=STATE")
	f.Add("error=access_denied&error_description=%00%ff&state=STATE&iss=https%3A%2F%2Fevil.example.com")
	f.Add("state=STATE&state=STATE&code=a&code=b")
	f.Add("%zz&state=STATE")
	f.Fuzz(func(t *testing.T, query string) {
		dialed := false
		c, _ := New(Config{Authorizer: &FollowRedirects{}, netHook: nethook.With(nethook.Net{Resolver: oauthtest.NewResolver(oauthtest.PublicAddr),
			Dial: func(context.Context, string, string) (net.Conn, error) {
				dialed = true
				return nil, errors.New("no network in fuzzing")
			}})})
		rec := &pendingAuthorization{state: "STATE", verifier: "v", issuer: "https://as.example.com", issParameterSupported: true,
			tokenEndpoint: "https://as.example.com/token", redirectURI: DefaultRedirectURI, indicator: "https://mcp.example.com/mcp",
			registration: &tokenstore.Registration{ClientID: "c"}, auth: &clientAuth{method: oauthmeta.AuthMethodNone, clientID: "c"},
			created: c.clock.Now()}
		c.pending.Add(rec.state, rec, rec.created.Add(pendingTTL))
		u, _ := url.Parse(DefaultRedirectURI)
		u.RawQuery = query
		_, _, err := c.complete(context.Background(), u, "STATE")
		if err == nil {
			t.Fatal("a token was obtained without a token endpoint")
		}
		q, perr := url.ParseQuery(query)
		valid := perr == nil && len(q["state"]) == 1 && q.Get("state") == "STATE" && len(q["iss"]) == 1 &&
			q.Get("iss") == "https://as.example.com" && !q.Has("error") && len(q["code"]) == 1 && q.Get("code") != ""
		if dialed && !valid {
			t.Fatalf("token endpoint contacted for %q", query)
		}
	})
}

// FuzzCacheControl: the metadata lifetime is never negative or above
// MaxMetadataTTL.
func FuzzCacheControl(f *testing.F) {
	for _, s := range []string{"max-age=60", "no-store", "max-age=-1", "max-age=99999999999999999999", `max-age="5"`, "public, max-age=0"} {
		f.Add(s)
	}
	c, _ := New(Config{Authorizer: &FollowRedirects{}})
	f.Fuzz(func(t *testing.T, v string) {
		ttl := c.ttl(http.Header{"Cache-Control": {v}})
		if ttl < 0 || ttl > MaxMetadataTTL {
			t.Fatalf("ttl(%q) = %v", v, ttl)
		}
	})
}

// FuzzRedirectAndPrefix: the redirect URI rule only admits https and
// loopback http; the prefix rule only admits same-origin URLs.
func FuzzRedirectAndPrefix(f *testing.F) {
	f.Add("https://h/a", "https://h/a/mcp")
	f.Add("http://127.0.0.1:1/cb", "https://h")
	f.Add("javascript:alert(1)//", "https://h/mcp")
	f.Fuzz(func(t *testing.T, a, b string) {
		if checkRedirectURI(a) == nil {
			u, _ := url.Parse(a)
			if u.Scheme != "https" && !(u.Scheme == "http" && oauthmeta.IsLoopbackHost(u.Hostname())) {
				t.Fatalf("redirect URI %q accepted", a)
			}
		}
		if checkBrowserURL(a) == nil && !strings.HasPrefix(a, "https://") && !strings.HasPrefix(a, "http://") {
			t.Fatalf("browser URL %q accepted", a)
		}
		r, err := oauthmeta.CanonicalResource(b)
		if err != nil {
			return
		}
		if resourcePrefix(a, r) {
			pu, _ := url.Parse(a)
			ru, _ := url.Parse(r)
			if !strings.EqualFold(pu.Scheme, ru.Scheme) || !strings.EqualFold(pu.Hostname(), ru.Hostname()) {
				t.Fatalf("prefix %q accepted for %q", a, r)
			}
		}
	})
}

// FuzzAssertionClaims feeds arbitrary strings to the client's pre-send
// check of grant assertions: never a panic, and an accepted JWT always
// names the authorization server and has not expired.
func FuzzAssertionClaims(f *testing.F) {
	md := &oauthmeta.AuthServerMetadata{Issuer: "https://as.example.com", TokenEndpoint: "https://as.example.com/token"}
	now := time.Unix(1_800_000_000, 0)
	f.Add("eyJhbGciOiJFUzI1NiJ9.eyJhdWQiOiJodHRwczovL2FzLmV4YW1wbGUuY29tIiwiZXhwIjoxOTAwMDAwMDAwfQ.c2ln")
	f.Add("a.b.c")
	f.Add("eyJ9.eyJhdWQiOlsieCIsImh0dHBzOi8vYXMuZXhhbXBsZS5jb20vdG9rZW4iXSwiZXhwIjoxfQ.")
	f.Add("..")
	f.Fuzz(func(t *testing.T, jwt string) {
		err := checkAssertion(jwt, md, now)
		if err != nil {
			if !errors.Is(err, errAssertion) {
				t.Fatalf("error outside errAssertion: %v", err)
			}
			return
		}
		c, perr := parseAssertionClaims(jwt)
		if perr != nil || (!c.Aud.Contains(md.Issuer) && !c.Aud.Contains(md.TokenEndpoint)) || c.Exp == nil || *c.Exp <= float64(now.Unix()) {
			t.Fatalf("accepted %q", jwt)
		}
	})
}
