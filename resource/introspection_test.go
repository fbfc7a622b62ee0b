package resource_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/resource"
)

// introspectionAS is an https authorization server on loopback whose
// client "rs-client" may introspect tokens (RFC 7662).
func introspectionAS(t *testing.T) *oauthtest.AS {
	return oauthtest.NewAS(t, oauthtest.ASOptions{TLS: true,
		PreRegistered: []oauthtest.RegisteredClient{{ID: "rs-client", Secret: "s3cret", Method: "client_secret_basic"}}})
}

// TestIntrospection covers RS-11 and RS-18 for opaque tokens.
func TestIntrospection(t *testing.T) {
	t.Parallel()
	as := introspectionAS(t)
	f := newFixture(t, func(c *resource.Config) {
		c.Introspection = &resource.IntrospectionConfig{
			Endpoint: as.URL + "/introspect", ClientID: "rs-client", ClientSecret: "s3cret",
			HTTPClient: as.Client(),
		}
	})
	exp := f.clock.Now().Add(time.Hour).Unix()
	active := func(extra map[string]any) map[string]any {
		m := map[string]any{"active": true, "iss": testIssuer, "aud": testResource, "exp": exp,
			"sub": "user-9", "client_id": "c-9", "scope": "mcp:tools"}
		for k, v := range extra {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	tests := []struct {
		name    string
		answer  any
		wantErr error
	}{
		{"RS-11 active", active(nil), nil},
		{"RS-11 active without iss means the configured issuer", active(map[string]any{"iss": nil}), nil},
		{"RS-11 inactive", map[string]any{"active": false}, resource.ErrInactive},
		{"RS-11 active with a foreign audience", active(map[string]any{"aud": "https://other.example/mcp"}), resource.ErrAudience},
		{"RS-11 active without audience", active(map[string]any{"aud": nil}), resource.ErrAudience},
		{"RS-11 active without exp", active(map[string]any{"exp": nil}), resource.ErrMissingExpiry},
		{"RS-11 active but expired", active(map[string]any{"exp": f.clock.Now().Add(-time.Hour).Unix()}), resource.ErrExpired},
		{"RS-11 another issuer", active(map[string]any{"iss": otherIssuer}), resource.ErrIssuer},
		{"RS-18 refresh token", active(map[string]any{"token_type": "refresh_token"}), resource.ErrTokenType},
		{"RS-18 DPoP-bound token", active(map[string]any{"cnf": map[string]any{"jkt": "abc"}}), resource.ErrBoundToken},
		{"RS-11 malformed scope", active(map[string]any{"scope": "a\\b"}), resource.ErrMalformedToken},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tok := "opaque-token-" + itoa(int64(i)) + "-0123456789"
			as.SetIntrospection(tok, tt.answer)
			info, err := f.v.Verify(context.Background(), tok)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err == nil && (info.Subject != "user-9" || info.ClientID != "c-9" || info.Issuer != testIssuer || len(info.Claims) == 0) {
				t.Errorf("info = %+v", info)
			}
			if err != nil && !errors.Is(err, resource.ErrInvalidToken) {
				t.Errorf("class of %v", err)
			}
		})
	}
}

// TestIntrospectionFailsClosed: no usable answer means 503, never access.
func TestIntrospectionFailsClosed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		status int
		secret string
	}{
		{"endpoint error", 500, "s3cret"},
		{"endpoint refuses our credentials", 200, "wrong"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			as := introspectionAS(t)
			if tt.status != http.StatusOK {
				as.Update(func(o *oauthtest.ASOptions) {
					o.Faults = map[string]http.HandlerFunc{"/introspect": func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(tt.status) }}
				})
			}
			f := newFixture(t, func(c *resource.Config) {
				c.Introspection = &resource.IntrospectionConfig{Endpoint: as.URL + "/introspect", ClientID: "rs-client",
					ClientSecret: tt.secret, HTTPClient: as.Client()}
			})
			as.SetIntrospection("opaque-abcdefghijklmnop", map[string]any{"active": true})
			_, err := f.v.Verify(context.Background(), "opaque-abcdefghijklmnop")
			if !errors.Is(err, resource.ErrIntrospection) || !errors.Is(err, resource.ErrUnavailable) {
				t.Errorf("err = %v", err)
			}
			rec, s := f.serve(mcpPost("opaque-abcdefghijklmnop", ""))
			if rec.Code != 503 || s.count() != 0 {
				t.Errorf("status %d", rec.Code)
			}
		})
	}
	t.Run("unreachable endpoint", func(t *testing.T) {
		t.Parallel()
		as := introspectionAS(t)
		url := as.URL + "/introspect"
		client := as.Client()
		as.Close()
		f := newFixture(t, func(c *resource.Config) {
			c.Introspection = &resource.IntrospectionConfig{Endpoint: url, ClientID: "rs-client", ClientSecret: "s3cret", HTTPClient: client}
		})
		if _, err := f.v.Verify(context.Background(), "opaque-abcdefghijklmnop"); !errors.Is(err, resource.ErrIntrospection) {
			t.Errorf("err = %v", err)
		}
	})
}

// TestIntrospectionCaching covers RS-11's cache bounds: positive results
// live no longer than the TTL and exp, negative ones briefly.
func TestIntrospectionCaching(t *testing.T) {
	t.Parallel()
	as := introspectionAS(t)
	f := newFixture(t, func(c *resource.Config) {
		c.Introspection = &resource.IntrospectionConfig{Endpoint: as.URL + "/introspect", ClientID: "rs-client", ClientSecret: "s3cret",
			HTTPClient: as.Client(), CacheTTL: time.Minute, NegativeTTL: 5 * time.Second}
	})
	now := f.clock.Now()
	as.SetIntrospection("long-lived-token-0123456789", map[string]any{"active": true, "aud": testResource, "exp": now.Add(time.Hour).Unix()})
	as.SetIntrospection("short-lived-token-0123456789", map[string]any{"active": true, "aud": testResource, "exp": now.Add(10 * time.Second).Unix()})
	verify := func(tok string) error { _, err := f.v.Verify(context.Background(), tok); return err }
	calls := func() int { return as.Hits("/introspect") }

	for i := 0; i < 3; i++ {
		if err := verify("long-lived-token-0123456789"); err != nil {
			t.Fatal(err)
		}
	}
	if calls() != 1 {
		t.Errorf("positive result not cached: %d calls", calls())
	}
	_ = verify("short-lived-token-0123456789")
	_ = verify("revoked-token-0123456789")
	_ = verify("revoked-token-0123456789")
	if calls() != 3 {
		t.Errorf("calls = %d, want 3 (negative result cached)", calls())
	}
	f.clock.Advance(6 * time.Second)
	_ = verify("revoked-token-0123456789")
	if calls() != 4 {
		t.Errorf("negative cache outlived NegativeTTL: %d calls", calls())
	}
	f.clock.Advance(5 * time.Second) // 11 s: past the short token's exp, within the leeway
	if err := verify("short-lived-token-0123456789"); err != nil {
		t.Errorf("short-lived token within the leeway: %v", err)
	}
	if calls() != 5 {
		t.Errorf("cache outlived exp: %d calls", calls())
	}
	f.clock.Advance(time.Minute)
	_ = verify("long-lived-token-0123456789")
	if calls() != 6 {
		t.Errorf("cache outlived CacheTTL: %d calls", calls())
	}
	// A JWT never goes to introspection.
	before := calls()
	if err := verify(f.token(nil)); err != nil {
		t.Fatal(err)
	}
	if calls() != before {
		t.Error("a JWT was introspected")
	}
}
