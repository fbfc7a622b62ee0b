package attack

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/oauthmeta"
	"github.com/mcpauth/mcpauth/resource"
)

// Fuzz targets for the parsers no other package fuzzes (found by
// TestFuzzCoverage). Seeds come from the packages' testdata where one fits.

func seedFile(f *testing.F, path string) {
	f.Helper()
	if b, err := os.ReadFile(filepath.Join(moduleRoot, path)); err == nil {
		f.Add(b)
	}
}

// FuzzParseTokenResponse: hostile token endpoint bodies never panic, and a
// parsed response has an access token.
func FuzzParseTokenResponse(f *testing.F) {
	for _, s := range []string{
		`{"access_token":"a","token_type":"Bearer","expires_in":3600,"refresh_token":"r","scope":"a b"}`,
		`{"access_token":"a","token_type":"Bearer","expires_in":-1}`,
		`{"access_token":"a","access_token":"b","token_type":"Bearer"}`,
		`{"access_token":"","token_type":"Bearer"}`,
		`{"access_token":"a","token_type":"Bearer","expires_in":1e400}`,
		`{"Access_Token":"a","token_type":"Bearer"}`, `[]`, `null`, `{"access_token":7}`,
	} {
		f.Add([]byte(s))
	}
	seedFile(f, "oauthmeta/testdata/error_invalid_grant.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := oauthmeta.ParseTokenResponse(data)
		if err == nil && (tr == nil || tr.AccessToken == "") {
			t.Fatalf("accepted %q without an access token", data)
		}
	})
}

// FuzzParseIntrospectionResponse: hostile introspection bodies never panic.
func FuzzParseIntrospectionResponse(f *testing.F) {
	seedFile(f, "oauthmeta/testdata/introspection_active.json")
	for _, s := range []string{`{"active":false}`, `{"active":"true"}`, `{"active":true,"active":false}`,
		`{"active":true,"aud":42}`, `{"active":true,"aud":["a","b"],"exp":1e99}`, `{}`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = oauthmeta.ParseIntrospectionResponse(data)
	})
}

// FuzzParseScope: parsing never panics, accepted tokens use only the legal
// characters, and formatting then parsing again is stable.
func FuzzParseScope(f *testing.F) {
	for _, s := range []string{"a b c", "  a  a ", "files:read offline_access", "a\"b", "a\\b", "é", "a\tb", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		scopes, err := oauthmeta.ParseScope(s)
		if err != nil {
			return
		}
		for _, sc := range scopes {
			if !oauthmeta.ValidScopeToken(sc) {
				t.Fatalf("ParseScope(%q) returned the invalid token %q", s, sc)
			}
		}
		again, err := oauthmeta.ParseScope(oauthmeta.FormatScope(scopes))
		if err != nil || !slices.Equal(again, scopes) {
			t.Fatalf("round trip of %q: %q, %v", s, again, err)
		}
	})
}

// FuzzParseConsentMode: only the three names parse.
func FuzzParseConsentMode(f *testing.F) {
	for _, s := range []string{"consent", "auto", "deny", "AUTO", "", "auto "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := authserver.ParseConsentMode(s); err == nil && s != "consent" && s != "auto" && s != "deny" {
			t.Fatalf("ParseConsentMode accepted %q", s)
		}
	})
}

// FuzzRemoteKeysJWKS serves hostile JWK Sets to resource.RemoteKeys (the
// key parsing inside resource, on top of jwx): it never panics, and any key
// it returns is an asymmetric public key of a supported type.
func FuzzRemoteKeysJWKS(f *testing.F) {
	key := oauthtest.NewKey(f, oauthtest.ES256, "k")
	set := string(oauthtest.MustJSON(f, oauthtest.JWKS(key, oauthtest.NewKey(f, oauthtest.RS256, "r"), oauthtest.NewKey(f, oauthtest.EdDSA, "e"))))
	for _, s := range []string{set, `{"keys":[]}`, `{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"k"}]}`,
		`{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA","kid":"k"}]}`,
		`{"keys":[{"kty":"RSA","n":"AQ","e":"AQAB","kid":"k"}]}`, `{"keys":{}}`, `{"keys":[null]}`, `not json`,
		strings.Replace(set, `"use":"sig"`, `"use":"enc"`, 1)} {
		f.Add([]byte(s))
	}
	var body atomic.Pointer[[]byte]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Write(*body.Load())
	}))
	f.Cleanup(srv.Close)
	clock := oauthtest.NewClock(oauthtest.Epoch())
	f.Fuzz(func(t *testing.T, data []byte) {
		body.Store(&data)
		rk, err := resource.NewRemoteKeys(resource.RemoteKeysConfig{JWKSURI: srv.URL + "/jwks", InsecureAllowHTTPLoopback: true,
			Timeout: 2 * time.Second, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		defer rk.Close()
		keys, err := rk.Keys(context.Background(), "")
		if err != nil {
			if !errors.Is(err, keyset.ErrUnknownKey) && !errors.Is(err, keyset.ErrUnavailable) {
				t.Fatalf("error outside the documented classes: %v", err)
			}
			return
		}
		for _, k := range keys {
			switch k.Public.(type) {
			case *ecdsa.PublicKey, *rsa.PublicKey, ed25519.PublicKey:
			default:
				t.Fatalf("key %q of type %T returned", k.ID, k.Public)
			}
		}
	})
}
